"""Our models as real context-grid objects, and back.

context-grid's types are the contract for everything we export, so instead of re-describing
them we build the real ``contextgrid.EvalSet`` / ``EvalItem`` / ``GoldAnchor`` / ``GoldSpan``
and let its own constructors check them. Import and export both pass through here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import contextgrid as cg
from contextgrid.core.span import Span

from evalsets.models import (
    FOUND_STATUSES,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemState,
    ParseVersion,
)


def anchor_to_cg(anchor: GoldAnchor) -> cg.GoldAnchor:
    return cg.GoldAnchor(
        source_id=anchor.source_id,
        quote=anchor.quote,
        grade=anchor.grade,
        page_hint=anchor.page_hint,
        occurrence=anchor.occurrence,
    )


#: The `meta` keys a release writes about review. context-grid's `assess()` counts an item as
#: checked by a person when `meta["reviewed"]` is truthy (its `reviewed_key`), and its review
#: queue skips such items; who approved and when go beside it.
REVIEW_KEYS = ("reviewed", "reviewed_by", "reviewed_at")


@dataclass(frozen=True, slots=True)
class Approval:
    """Who approved an item and when: the latest ``approved`` event of its audit trail."""

    by: str
    at: datetime


def review_meta(meta: Mapping[str, Any], *, approved: bool, approval: Approval | None) -> dict:
    """``meta`` saying what Groundwork's review says, and nothing else about review.

    Approved: ``reviewed: true``, plus ``reviewed_by`` and ``reviewed_at`` (ISO 8601, UTC)
    when the audit trail knows them. Not approved: the review keys are removed, whatever an
    imported file once said, because the workflow state is the truth.
    """
    out = {k: v for k, v in meta.items() if k not in REVIEW_KEYS}
    if approved:
        out["reviewed"] = True
        if approval is not None:
            out["reviewed_by"] = approval.by
            out["reviewed_at"] = approval.at.astimezone(UTC).isoformat()
    return out


#: The `meta` key naming the anchors made from a suggested passage (workspace search or
#: suggested evidence), so a reviewer of the exported set can tell them from those found
#: without help. context-grid's `GoldAnchor` has no meta of its own; the item's carries it.
SUGGESTED_KEY = "suggested_anchors"


def suggested_meta(meta: Mapping[str, Any], anchors: list[GoldAnchor]) -> dict:
    """``meta`` with ``suggested_anchors``: for each anchor made from a suggestion, its
    position in ``anchors``, document, page and what offered it. Absent when none was (an
    imported file's own value is dropped: the anchors' records are the truth)."""
    out = {k: v for k, v in meta.items() if k != SUGGESTED_KEY}
    suggested = [
        {
            "anchor": index,
            "source_id": anchor.source_id,
            "page": anchor.suggested.get("page"),
            "via": anchor.suggested.get("via"),
        }
        for index, anchor in enumerate(anchors)
        if anchor.suggested
    ]
    if suggested:
        out[SUGGESTED_KEY] = suggested
    return out


def anchor_span(anchor: GoldAnchor, parse: ParseVersion | None) -> tuple[int, int] | None:
    """Where ``anchor`` lies in ``parse``: the highlight itself in the parse it was made in,
    otherwise its resolution there when one was found; ``None`` when the parse lacks it.

    The one answer to "where is this evidence in that parse", for gold spans and for every
    format that writes positions. ``anchor.resolutions`` should be prefetched.
    """
    if parse is None:
        return None
    if anchor.reference_parse_id == parse.pk and anchor.ref_start is not None:
        return anchor.ref_start, anchor.ref_end
    for res in anchor.resolutions.all():
        if res.parse_id == parse.pk and res.status in FOUND_STATUSES:
            return res.start, res.end
    return None


def item_to_cg(
    item: EvalItem,
    *,
    anchors: Iterable[GoldAnchor] | None = None,
    gold_parses: dict[int, ParseVersion] | None = None,
    approval: Approval | None = None,
) -> cg.EvalItem:
    """``item`` as a context-grid ``EvalItem``.

    ``gold_parses`` maps a document id to the one parse version whose spans (see
    ``anchor_span``) become the item's ``gold``; anchors not found in that parse contribute
    no gold span. ``meta`` carries the item's review (see ``review_meta``).
    """
    anchors = list(item.anchors.all() if anchors is None else anchors)
    gold: list[cg.GoldSpan] = []
    if gold_parses:
        for anchor in anchors:
            parse = gold_parses.get(anchor.document_id) if anchor.document_id else None
            span = anchor_span(anchor, parse)
            if span is not None:
                gold.append(
                    cg.GoldSpan(
                        span=Span(doc_id=anchor.source_id, start=span[0], end=span[1]),
                        grade=anchor.grade,
                    )
                )
    return cg.EvalItem(
        id=item.item_id,
        question=item.question,
        gold=tuple(gold),
        anchors=tuple(anchor_to_cg(a) for a in anchors),
        qtype=item.qtype,
        answer=item.answer,
        meta=suggested_meta(
            review_meta(
                item.meta or {}, approved=item.state == ItemState.APPROVED, approval=approval
            ),
            anchors,
        ),
    )


def evalset_to_cg(
    evalset: EvalSet,
    items: Iterable[EvalItem] | None = None,
    *,
    version: int | None = None,
    gold_parses: dict[int, ParseVersion] | None = None,
) -> cg.EvalSet:
    if items is None:
        items = evalset.items.prefetch_related("anchors__resolutions")
    return cg.EvalSet(
        id=evalset.slug,
        items=tuple(item_to_cg(i, gold_parses=gold_parses) for i in items),
        version=version or evalset.version,
        source=evalset.source,
        meta=dict(evalset.meta or {}),
    )
