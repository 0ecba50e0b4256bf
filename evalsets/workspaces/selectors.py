"""Reads of workspaces, members and invitations."""

from __future__ import annotations

import functools

from django.db import connection
from django.db.models import (
    Case,
    Count,
    QuerySet,
    Value,
    When,
)
from django.http import Http404

from evalsets import sweep, validation, written
from evalsets.models import (
    Invitation,
    Membership,
    ParseStatus,
    ParseVersion,
    Role,
    Workspace,
)

# -- who may see it: the caller's membership, and objects inside that workspace, or 404 --------


def membership_for(user, workspace_slug: str) -> Membership:
    """The caller's membership in the workspace, or 404 (never a hint that it exists)."""
    if not user or not user.is_authenticated:
        raise Http404("no such workspace")
    # One row at most (one membership per user and workspace), read by a query written out:
    # every API request asks it, and the ORM took more CPU to build it than to run it. The
    # workspace whole; the membership's id, role and keys (its creation time when asked).
    fields = written.concrete(Workspace)
    found = written.first(Workspace, fields, _membership_sql(), [workspace_slug, user.pk])
    if found is None:
        raise Http404("no such workspace")
    workspace, (membership_id, role) = found
    membership = Membership.from_db(
        workspace._state.db,
        ["id", "workspace_id", "user_id", "role"],
        [membership_id, workspace.pk, user.pk, role],
    )
    membership.workspace = workspace
    membership.user = user
    return membership


@functools.cache
def _membership_sql() -> str:
    q = connection.ops.quote_name
    columns = written.select_list(Workspace, "w", written.concrete(Workspace))
    return (
        f"SELECT {columns}, m.{q('id')}, m.{q('role')} "
        f"FROM {q(Workspace._meta.db_table)} w "
        f"JOIN {q(Membership._meta.db_table)} m ON m.{q('workspace_id')} = w.{q('id')} "
        f"WHERE w.{q('slug')} = %s AND m.{q('user_id')} = %s"
    )


def invitations_naming(name: str) -> QuerySet[Invitation]:
    """The invitations to ``name``: a user name exactly; an e-mail address whatever the case
    of its ASCII letters, and nothing else folded (``validation.address_key``)."""
    if "@" not in name:
        return Invitation.objects.filter(username=name)
    # The database's case-insensitive match finds every candidate (it folds at least ASCII
    # case); the exact key then decides, so no database's wider folding lets one through.
    key = validation.address_key(name)
    candidates = Invitation.objects.filter(username__iexact=name).values_list("pk", "username")
    return Invitation.objects.filter(
        pk__in=[pk for pk, held in candidates if validation.address_key(held) == key]
    )


def invitations_for(user) -> QuerySet[Invitation]:
    """The invitations waiting for ``user``'s answer: to their username, or to their e-mail
    address (an owner may invite by either)."""
    invited = Invitation.objects.filter(username=user.get_username())
    if getattr(user, "email", ""):
        invited = invited | invitations_naming(user.email)
    return invited.select_related("workspace", "invited_by")


def invitation_for(user, workspace_slug: str) -> Invitation:
    """``user``'s invitation to the workspace, or 404 (the same whether or not it exists)."""
    invitation = invitations_for(user).filter(workspace__slug=workspace_slug).first()
    if invitation is None:
        raise Http404("no such invitation")
    return invitation


# -- the home and workspace pages ---------------------------------------------------------------


def memberships_with_counts(user) -> list[Membership]:
    """The user's memberships, each with its workspace's ``documents`` and ``evalsets``."""
    return list(
        Membership.objects.filter(user=user)
        .select_related("workspace")
        .annotate(
            documents=Count("workspace__documents", distinct=True),
            evalsets=Count("workspace__evalsets", distinct=True),
        )
    )


def ready_parsers_by_kind(workspace) -> dict[str, list[str]]:
    """Per document kind in the workspace, the parsers with a ready parse of one of them (a
    release's gold spans come from one per kind). Ordered on the selected columns only: the
    model's own ordering would add columns to DISTINCT and repeat names."""
    out: dict[str, list[str]] = {}
    pairs = (
        ParseVersion.objects.filter(document__workspace=workspace, status=ParseStatus.READY)
        .order_by("document__kind", "parser")
        .values_list("document__kind", "parser")
        .distinct()
    )
    for kind, parser in pairs:
        out.setdefault(kind, []).append(parser)
    return out


# -- the owner's pages ---------------------------------------------------------------------------


def members(workspace) -> list[Membership]:
    """The workspace's members, owners first, each knowing whether they are its last owner."""
    order = Case(*(When(role=r, then=Value(i)) for i, r in enumerate(Role.values)))
    listed = list(
        Membership.objects.filter(workspace=workspace)
        .select_related("user", "workspace")
        .order_by(order, "user__username")
    )
    owners = sum(1 for m in listed if m.role == Role.OWNER)
    for membership in listed:
        membership.last_owner = membership.role == Role.OWNER and owners == 1
    return listed


def pending_invitations(workspace) -> QuerySet[Invitation]:
    return workspace.invitations.select_related("invited_by").order_by("username")


def background_backlog(workspace) -> dict:
    """What waits in the background in ``workspace`` and how fast it drains (a fixed handful
    of counts; ``evalsets.sweep.pending_summary``), for the workspace page's panel."""
    return sweep.pending_summary(workspace=workspace)
