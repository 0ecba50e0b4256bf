"""Our models as real context-grid objects, and back.

context-grid's types are the contract for everything we export, so instead of re-describing
them we build the real ``contextgrid.EvalSet`` / ``EvalItem`` / ``GoldAnchor`` / ``GoldSpan``
and let its own constructors check them. Import and export both pass through here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import contextgrid as cg
from contextgrid.core.span import Span

from evalsets.models import FOUND_STATUSES, EvalItem, EvalSet, GoldAnchor, ParseVersion


def anchor_to_cg(anchor: GoldAnchor) -> cg.GoldAnchor:
    return cg.GoldAnchor(
        source_id=anchor.source_id,
        quote=anchor.quote,
        grade=anchor.grade,
        page_hint=anchor.page_hint,
        occurrence=anchor.occurrence,
    )


def item_to_cg(
    item: EvalItem,
    *,
    anchors: Iterable[GoldAnchor] | None = None,
    gold_parses: dict[int, ParseVersion] | None = None,
) -> cg.EvalItem:
    """``item`` as a context-grid ``EvalItem``.

    ``gold_parses`` maps a document id to the one parse version whose resolved spans become
    the item's ``gold``; anchors not found in that parse contribute no gold span.
    """
    anchors = list(item.anchors.all() if anchors is None else anchors)
    gold: list[cg.GoldSpan] = []
    if gold_parses:
        for anchor in anchors:
            parse = gold_parses.get(anchor.document_id) if anchor.document_id else None
            if parse is None:
                continue
            for res in anchor.resolutions.all():
                if res.parse_id == parse.pk and res.status in FOUND_STATUSES:
                    gold.append(
                        cg.GoldSpan(
                            span=Span(doc_id=anchor.source_id, start=res.start, end=res.end),
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
        meta=dict(item.meta or {}),
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


def item_fields_from_cg(item: cg.EvalItem) -> dict[str, Any]:
    """The fields ``services.item_create`` takes, plus the item's anchors as plain dicts."""
    return {
        "item_id": item.id,
        "question": item.question,
        "qtype": item.qtype,
        "answer": item.answer,
        "meta": dict(item.meta),
        "anchors": [a.to_dict() for a in item.anchors],
    }
