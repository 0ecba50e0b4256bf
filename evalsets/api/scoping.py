"""The base of every view under ``/api/workspaces/<ws>/``."""

from __future__ import annotations

from django.utils.functional import cached_property

from evalsets.models import Membership, Workspace
from evalsets.workspaces import selectors as workspaces_selectors


class WorkspaceScoped:
    """Resolves ``self.membership`` from the URL's workspace; 404 for non-members.

    Each subclass names its row of ``access.ROLES`` (``resource``: action -> least ``Role``),
    checked by ``RoleRequired`` (the default permission class) before the action runs.
    """

    resource: str

    @cached_property
    def membership(self) -> Membership:
        return workspaces_selectors.membership_for(self.request.user, self.kwargs["ws"])

    @property
    def workspace(self) -> Workspace:
        return self.membership.workspace

    def _fake(self) -> bool:
        return getattr(self, "swagger_fake_view", False)
