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
    membership = (
        Membership.objects.select_related("workspace", "user")
        .filter(workspace__slug=workspace_slug, user=user)
        .first()
    )
    if membership is None:
        raise Http404("no such workspace")
    return membership


def documents(workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("parses", queryset=ParseVersion.objects.defer("text"))
    )


def parses(document) -> QuerySet[ParseVersion]:
    return ParseVersion.objects.filter(document=document).select_related("document")


def evalsets(workspace) -> QuerySet[EvalSet]:
    return EvalSet.objects.filter(workspace=workspace)


def anchors_with_resolutions() -> QuerySet[GoldAnchor]:
    # The reference parse's id only: its text can be megabytes, once per anchor row.
    return (
        GoldAnchor.objects.select_related("reference_parse")
        .defer("reference_parse__text")
        .prefetch_related(
            Prefetch(
                "resolutions",
                queryset=AnchorResolution.objects.select_related("parse").defer("parse__text"),
            )
        )
    )


def items(evalset) -> QuerySet[EvalItem]:
    return (
        EvalItem.objects.filter(evalset=evalset)
        .select_related("author", "assignee", "evalset")
        .prefetch_related(Prefetch("anchors", queryset=anchors_with_resolutions()))
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
