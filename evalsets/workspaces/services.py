"""Writes to workspaces, members and invitations: ``<entity>_<action>(*, ...)`` functions,
each one transaction, checking the caller's role and the domain's rules.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from evalsets import access, validation
from evalsets.errors import Conflict, InvalidInput, LimitReached, limit_named
from evalsets.models import (
    Invitation,
    Membership,
    Role,
    Workspace,
)
from evalsets.pure import parsers
from evalsets.workspaces import quotas
from evalsets.workspaces import selectors as workspaces_selectors

# -- workspaces, their settings and members ----------------------------------------------


@transaction.atomic
def workspace_create(*, user, slug: str, name: str = "") -> Workspace:
    slug = (slug or "").strip()
    if Workspace.objects.filter(slug=slug).exists():
        raise Conflict(
            f"a workspace called {slug!r} already exists; pick another slug", field="slug"
        )
    quotas.lock_user(user)
    quotas.check_workspace_count(user)
    workspace = Workspace.objects.create(slug=slug, name=name or slug)
    Membership.objects.create(workspace=workspace, user=user, role=Role.OWNER)
    return workspace


def _check_role(role: str) -> str:
    if role not in Role.values:
        raise InvalidInput(
            f"role must be one of {', '.join(Role.values)}, got {role!r}", field="role"
        )
    return role


@transaction.atomic
def member_invite(*, workspace: Workspace, username: str, role: str, by) -> Invitation:
    """Invite ``username`` (or an e-mail address) to ``workspace`` as ``role`` (again: the new
    role replaces the old).

    Nobody joins without consent: the invitee accepts with ``invitation_accept``. The answer
    is the same whether or not a user by that name exists (see ``Invitation``).
    """
    _check_role(role)
    username = AbstractBaseUser.normalize_username(username.strip())
    if not username:
        raise InvalidInput("name the user to invite", field="username")
    validation.check_invitee_name(username)
    if _is_member(workspace, username):
        raise Conflict(
            f"{username!r} is already a member of {workspace.slug!r}; change their role instead",
            field="username",
        )
    quotas.lock_workspace(workspace)
    _check_open_invitations(workspace, username)
    invitation, _ = Invitation.objects.update_or_create(
        workspace=workspace, username=username, defaults={"role": role, "invited_by": by}
    )
    return invitation


def _is_member(workspace: Workspace, name: str) -> bool:
    """Whether ``name`` (a user name, or an e-mail address: whoever holds it) is a member."""
    members = Membership.objects.filter(workspace=workspace)
    if members.filter(user__username=name).exists():
        return True
    if "@" not in name:
        return False
    key = validation.address_key(name)
    emails = members.filter(user__email__iexact=name).values_list("user__email", flat=True)
    return any(validation.address_key(email) == key for email in emails)


def _check_open_invitations(workspace: Workspace, name: str) -> None:
    """An invitation is shown on a stranger's home page, so neither a workspace nor an invitee
    holds more than a few at once (asking again, which changes the role, always works)."""
    if workspace.invitations.filter(username=name).exists():
        return
    limits = (
        (
            "GROUNDWORK_MAX_OPEN_INVITATIONS_PER_WORKSPACE",
            workspace.invitations.count(),
            f"workspace {workspace.slug!r}",
            "withdraw some, or wait for answers, before inviting more",
        ),
        (
            "GROUNDWORK_MAX_OPEN_INVITATIONS_PER_INVITEE",
            workspaces_selectors.invitations_naming(name).count(),
            repr(name),
            "they must answer some before another can reach them",
        ),
    )
    for setting, held, who, then in limits:
        most = getattr(settings, setting)
        if held >= most:
            raise LimitReached(
                f"{who} has {held:,} open invitations, the most {setting} allows ({most:,}); "
                f"{then}",
                field="username",
                extra=limit_named(setting, most),
            )


@transaction.atomic
def invitation_accept(*, invitation: Invitation, user) -> Membership:
    """The invitee says yes: a member with the invited role from now on."""
    membership, _ = Membership.objects.get_or_create(
        workspace=invitation.workspace, user=user, defaults={"role": invitation.role}
    )
    invitation.delete()
    return membership


def invitation_decline(*, invitation: Invitation) -> None:
    """The invitee says no (or the owner withdraws it): the invitation is gone."""
    invitation.delete()


def _ensure_another_owner(membership: Membership) -> None:
    others = (
        Membership.objects.select_for_update()
        .filter(workspace=membership.workspace_id, role=Role.OWNER)
        .exclude(pk=membership.pk)
    )
    if membership.role == Role.OWNER and not others.exists():
        raise Conflict(
            access.last_owner_refusal(membership.user.username, membership.workspace.slug)
        )


@transaction.atomic
def member_change_role(*, membership: Membership, role: str) -> Membership:
    _check_role(role)
    if role != Role.OWNER:
        _ensure_another_owner(membership)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def member_remove(*, membership: Membership) -> None:
    _ensure_another_owner(membership)
    membership.delete()


def _check_parser_settings(parser_settings: dict) -> dict:
    if not isinstance(parser_settings, dict):
        raise InvalidInput("parser_settings must be an object", field="parser_settings")
    unknown_keys = set(parser_settings) - {"parsers", "reference"}
    if unknown_keys:
        raise InvalidInput(
            f"parser_settings takes 'parsers' and 'reference', not {sorted(unknown_keys)}",
            field="parser_settings",
        )
    chosen = parser_settings.get("parsers", {})
    reference = parser_settings.get("reference", {})
    if not isinstance(chosen, dict) or not isinstance(reference, dict):
        raise InvalidInput(
            'parser_settings looks like {"parsers": {"pdf": ["pypdf", "pdfminer"]}, '
            '"reference": {"pdf": "pypdf"}}',
            field="parser_settings",
        )
    for kind, names in chosen.items():
        known = [p.name for p in parsers.parsers_for(kind)]
        if not known:
            raise InvalidInput(f"there are no parsers for {kind!r} files", field="parser_settings")
        if not isinstance(names, list) or not names:
            raise InvalidInput(
                f"parser_settings.parsers.{kind} must list at least one of {known}",
                field="parser_settings",
            )
        for name in names:
            if name not in known:
                raise InvalidInput(
                    f"{name!r} does not parse {kind} files; choose from {known}",
                    field="parser_settings",
                )
    for kind, name in reference.items():
        allowed = chosen.get(kind) or [p.name for p in parsers.parsers_for(kind)]
        if name not in allowed:
            raise InvalidInput(
                f"the reference parser for {kind} must be one that runs: {allowed}",
                field="parser_settings",
            )
    return parser_settings


@transaction.atomic
def workspace_update(
    *, workspace: Workspace, name: str | None = None, parser_settings: dict | None = None
) -> Workspace:
    if name is not None:
        workspace.name = name
    if parser_settings is not None:
        workspace.parser_settings = _check_parser_settings(parser_settings)
    workspace.save()
    return workspace
