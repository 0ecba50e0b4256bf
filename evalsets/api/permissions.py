"""The API's one permission check, reading the role each action needs from ``access.ROLES``.

A view names its row of the table (``resource = "document"``): its actions (a viewset's action
name, or an ``APIView``'s lower-case HTTP method) -> the least ``Role`` each needs, or
``access.SIGNED_IN`` for an action about the caller rather than a workspace. ``RoleRequired``
(the default permission class) looks up the caller's membership in the URL's workspace first,
so anyone who is not a member gets 404 and another workspace's objects look exactly like
missing ones; then it compares roles, and a refusal is a 403 worded by ``access.refusal``. A
view or action without a declaration is a configuration error, and
``tests/test_security_matrix.py`` names it.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import BasePermission

from evalsets import access
from evalsets.models import Role

#: What a request that names no action of the view (OPTIONS, or a method the view does not
#: serve, answered 405) needs: membership where the URL names a workspace.
_NO_ACTION = (None, "metadata", "options")


def action_of(view, request) -> str | None:
    """What ``request`` asks of ``view``: a viewset's action, or an ``APIView``'s lower-case
    HTTP method (HEAD reads as GET)."""
    if hasattr(view, "action_map"):
        return view.action
    return "get" if request.method == "HEAD" else request.method.lower()


def required_role(view, request) -> Role | None:
    """The role the table gives this request's action on ``view``'s resource (``access.SIGNED_IN``
    is None)."""
    action = action_of(view, request)
    declared = access.ROLES.get(getattr(view, "resource", None))
    if declared is None:
        raise ImproperlyConfigured(f"{type(view).__name__} names no resource of access.ROLES")
    if action in declared:
        return declared[action]
    if action in _NO_ACTION or not hasattr(view, action):
        return Role.VIEWER if "ws" in view.kwargs else access.SIGNED_IN
    raise ImproperlyConfigured(f"{type(view).__name__} declares no role for {action!r}")


class RoleRequired(BasePermission):
    """Signed in; then a member of the URL's workspace (else 404); then the declared role."""

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        needed = required_role(view, request)
        if needed is access.SIGNED_IN:
            return True
        membership = view.membership  # 404 for anyone who is not a member
        if membership.allows(needed):
            return True
        self.message = access.refusal(membership.workspace.slug, membership.role, needed)
        return False
