"""Reads that cross relations, shaped so each list costs a fixed number of queries."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Prefetch, QuerySet, prefetch_related_objects
from django.http import Http404

from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    Invitation,
    Membership,
    ParseVersion,
)


def membership_for(user, workspace_slug: str) -> Membership:
    """The caller's membership in the workspace, or 404 (never a hint that it exists)."""
    if not user or not user.is_authenticated:
        raise Http404("no such workspace")
    # One row at most (one membership per user and workspace): no ORDER BY, no user join.
    membership = (
        Membership.objects.select_related("workspace")
        .filter(workspace__slug=workspace_slug, user=user)
        .order_by()[:1]
    )
    membership = next(iter(membership), None)
    if membership is None:
        raise Http404("no such workspace")
    membership.user = user
    return membership


def invitations_for(user) -> QuerySet[Invitation]:
    """The invitations waiting for ``user``'s answer."""
    return Invitation.objects.filter(username=user.get_username()).select_related(
        "workspace", "invited_by"
    )


def invitation_for(user, workspace_slug: str) -> Invitation:
    """``user``'s invitation to the workspace, or 404 (the same whether or not it exists)."""
    invitation = invitations_for(user).filter(workspace__slug=workspace_slug).first()
    if invitation is None:
        raise Http404("no such invitation")
    return invitation


def documents(workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("parses", queryset=ParseVersion.objects.defer("text"))
    )


def parses(document) -> QuerySet[ParseVersion]:
    return ParseVersion.objects.filter(document=document).select_related("document")


def evalsets(workspace) -> QuerySet[EvalSet]:
    if workspace is None:
        return EvalSet.objects.none()
    # Through the workspace's own manager, so every set knows its workspace without a query.
    return workspace.evalsets.all()


#: A parse's columns that a list of anchors never shows: its text can be megabytes and its
#: page starts thousands of numbers, once per anchor row.
PARSE_BULK = ("text", "page_starts", "error")


def anchors_with_resolutions() -> QuerySet[GoldAnchor]:
    """Anchors with their rows in every parse as the list ``prefetched_resolutions``.

    A plain list (``to_attr``), not the related manager's cache: Django builds a filtered
    queryset per parent object for the latter, which costs more than the query itself.
    """
    return (
        GoldAnchor.objects.select_related("reference_parse")
        .defer(*(f"reference_parse__{name}" for name in PARSE_BULK))
        .prefetch_related(
            Prefetch(
                "resolutions",
                queryset=AnchorResolution.objects.select_related("parse").defer(
                    *(f"parse__{name}" for name in PARSE_BULK)
                ),
                to_attr="prefetched_resolutions",
            )
        )
    )


def _user_columns_not_shown(*relations: str) -> list[str]:
    """Every column of the user model but its id and username, under each relation: a list
    of items shows who wrote and holds each, not their password hash or last login."""
    return [
        f"{relation}__{field.attname}"
        for relation in relations
        for field in get_user_model()._meta.concrete_fields
        if field.attname not in ("id", "username")
    ]


def items(evalset) -> QuerySet[EvalItem]:
    """A set's items, each knowing whether it has any anchors (``has_anchors``).

    Pass the ones you show through ``with_anchors``, which attaches their anchors.
    """
    # Through the set's own manager, so every item knows its set without a join.
    return (
        evalset.items.select_related("author", "assignee")
        .defer(*_user_columns_not_shown("author", "assignee"))
        .annotate(has_anchors=Exists(GoldAnchor.objects.filter(item=OuterRef("pk"))))
    )


def with_anchors(items: Iterable[EvalItem]) -> list[EvalItem]:
    """``items`` with their anchors (and those anchors' resolutions) as ``prefetched_anchors``.

    Only items that have anchors are queried for them, so a page of fresh drafts costs no
    query at all; Django skips objects that already carry the ``to_attr`` list.
    """
    items = list(items)
    for item in items:
        if not getattr(item, "has_anchors", True):
            item.prefetched_anchors = []
    prefetch_related_objects(
        items,
        Prefetch("anchors", queryset=anchors_with_resolutions(), to_attr="prefetched_anchors"),
    )
    return items


def parse_in_workspace(workspace, public_id) -> ParseVersion:
    """A parse of one of the workspace's documents, or a 400 naming the field."""
    from evalsets.errors import InvalidInput

    parse = (
        ParseVersion.objects.select_related("document")
        .defer("text")  # megabytes; a highlight reads the part it needs (text_between)
        .filter(public_id=public_id, document__workspace=workspace)
        .first()
    )
    if parse is None:
        raise InvalidInput(f"no parse {str(public_id)!r} in this workspace", field="parse")
    return parse
