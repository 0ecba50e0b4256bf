"""Workspaces, roles, memberships and invitations."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Role(models.TextChoices):
    """A member's role in one workspace, declared highest first.

    Each role may do everything the roles below it may, so a rule names the least role it
    needs and ``at_least`` compares: ``Role.REVIEWER.at_least(Role.ANNOTATOR)`` is true.
    Which role each action needs is in one table, ``evalsets.access.ROLES`` (pages declare
    theirs with ``@requires``), and, for single fields, in ``evalsets.access``.
    """

    OWNER = "owner", "Owner"
    REVIEWER = "reviewer", "Reviewer"
    ANNOTATOR = "annotator", "Annotator"
    VIEWER = "viewer", "Viewer"

    @property
    def rank(self) -> int:
        """0 for a viewer, up to 3 for an owner."""
        members = list(type(self))
        return len(members) - 1 - members.index(self)

    def at_least(self, other: Role | str) -> bool:
        """True when this role is ``other`` or above it."""
        return self.rank >= Role(other).rank


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    #: ``{"parsers": {kind: [parser, ...]}, "reference": {kind: parser}}``; empty means the
    #: defaults of ``evalsets.pure.parsers``.
    parser_settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="one_membership_per_user"),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="membership_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} as {self.role}"

    def allows(self, role: Role | str) -> bool:
        """True when this member's role is ``role`` or above it."""
        return Role(self.role).at_least(role)


class Invitation(models.Model):
    """An owner's offer of a role in a workspace, waiting for the invitee to accept it.

    Nobody becomes a member without consent: adding someone by username only invites them,
    and they see and accept (or decline) it themselves. The invitee is a username, not a
    user row, so inviting a name nobody holds looks exactly like inviting a real user (the
    owner learns nothing about which usernames exist); the name is NFKC-normalised as Django
    normalises user names, and an account later created with it sees the invitation.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Role.choices)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "username"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "username"], name="one_invitation_per_name"
            ),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="invitation_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.username} invited to {self.workspace} as {self.role}"
