"""The pages' declaration of the role each one needs, checked the way the API checks it.

``@requires(Role.VIEWER)`` on a page view: a visitor who is not logged in goes to the log-in
page; then the caller's membership in the URL's workspace is looked up (404 for anyone who is
not a member, as in the API) and put on ``request.membership``; then the role is compared,
and a refusal is a 403 worded by ``evalsets.access.refusal``. ``@requires(access.SIGNED_IN)``
declares a page about the caller rather than a workspace. What a page offers to do through
the API it asks of the API's own table (``evalsets.access.allows``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from evalsets import access
from evalsets.errors import Forbidden
from evalsets.models import Role
from evalsets.workspaces import selectors as workspaces_selectors


def requires(role: Role | None) -> Callable:
    """Declare the least role a page needs (``access.SIGNED_IN``: any signed-in user)."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if role is not access.SIGNED_IN:
                membership = workspaces_selectors.membership_for(request.user, kwargs["ws"])
                try:
                    access.check(membership, role)
                except Forbidden as refused:
                    raise PermissionDenied(refused.message) from None
                request.membership = membership
            return view(request, *args, **kwargs)

        page = login_required(checked)
        page.required_role = role
        return page

    return decorate
