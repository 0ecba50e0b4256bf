"""One permission class per role, combined with ``&`` and ``|`` on each view.

A view names its workspace in the URL; ``WorkspaceScoped.membership`` looks up the caller's
membership there and answers 404 when there is none, so another workspace's objects are
indistinguishable from missing ones. Roles rank viewer < annotator < reviewer < owner.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from evalsets.models import Role


class ReadOnly(BasePermission):
    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS


class _HasRole(BasePermission):
    role: str = Role.VIEWER

    @classmethod
    def message_for(cls, membership) -> str:
        return (
            f"your role in {membership.workspace.slug!r} is {membership.role}; "
            f"this needs the {cls.role} role or above"
        )

    def has_permission(self, request, view) -> bool:
        return view.membership.allows(self.role)


class IsViewer(_HasRole):
    role = Role.VIEWER


class IsAnnotator(_HasRole):
    role = Role.ANNOTATOR


class IsReviewer(_HasRole):
    role = Role.REVIEWER


class IsOwner(_HasRole):
    role = Role.OWNER
