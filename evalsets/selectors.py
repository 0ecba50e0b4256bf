"""Reads that cross relations, shaped so each list costs a fixed number of queries."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from django.http import Http404

from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
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
    return (
        GoldAnchor.objects.select_related("reference_parse")
        .defer(*(f"reference_parse__{name}" for name in PARSE_BULK))
        .prefetch_related(
            Prefetch(
                "resolutions",
                queryset=AnchorResolution.objects.select_related("parse").defer(
                    *(f"parse__{name}" for name in PARSE_BULK)
                ),
            )
        )
    )


def items(evalset) -> QuerySet[EvalItem]:
    # Through the set's own manager, so every item knows its set without a join.
    return evalset.items.select_related("author", "assignee").prefetch_related(
        Prefetch("anchors", queryset=anchors_with_resolutions())
    )


def parse_in_workspace(workspace, public_id) -> ParseVersion:
    """A parse of one of the workspace's documents, or a 400 naming the field."""
    from evalsets.errors import InvalidInput

    parse = (
        ParseVersion.objects.select_related("document")
        .filter(public_id=public_id, document__workspace=workspace)
        .first()
    )
    if parse is None:
        raise InvalidInput(f"no parse {str(public_id)!r} in this workspace", field="parse")
    return parse
