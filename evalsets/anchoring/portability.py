"""How portable an item or eval set is: in how many parses its anchors were found.

context-grid's ``is_portable`` only asks "does it carry anchors"; a team also needs to know
whether those anchors survive each parser, which is what these summaries add.

Two facts are defined here once and used by every report (the eval set and item APIs, a
parse's health, the dashboard, the review page): ``tally`` turns counts per resolution status
into found, lost and ambiguous; ``reference_span`` says where an anchor sits in its
document's reference parse.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypedDict

from django.db.models import Count

from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ResolutionStatus,
)


class Tally(TypedDict):
    anchors: int
    by_status: dict[str, int]
    found: int
    lost: int
    ambiguous: int
    pending: int
    found_rate: float | None


def tally(statuses: Mapping[str, int], anchors: int | None = None) -> Tally:
    """Found, lost and ambiguous from counts per resolution status, for one parse (or one
    parser across documents).

    ``found`` is the three tiers that place the anchor on a span; ``lost`` is ``not_found``
    only: an ``ambiguous`` anchor was seen more than once and is neither found nor lost.
    ``anchors`` is how many anchors the parse should place (its document's); without it, the
    rows counted. Anchors with no row yet, or a row still ``pending``, are ``pending``.
    """
    by_status = {s.value: statuses.get(s.value, 0) for s in ResolutionStatus if s != "pending"}
    total = sum(statuses.values()) if anchors is None else anchors
    found = sum(by_status[s] for s in FOUND_STATUSES)
    return {
        "anchors": total,
        "by_status": by_status,
        "found": found,
        "lost": by_status[ResolutionStatus.NOT_FOUND],
        "ambiguous": by_status[ResolutionStatus.AMBIGUOUS],
        "pending": max(0, total - sum(by_status.values())),
        "found_rate": found / total if total else None,
    }


@dataclass(frozen=True)
class ReferenceSpan:
    parse_id: int
    start: int
    end: int
    #: The resolution that placed it there; None when this is where it was highlighted.
    resolution: AnchorResolution | None


def reference_span(
    anchor: GoldAnchor, resolutions: Iterable[AnchorResolution]
) -> ReferenceSpan | None:
    """Where ``anchor`` sits in its document's reference parse.

    The span the resolver found there; else where it was highlighted (a highlight is made in
    the reference parse of its day); else None (a typed quote no reference parse placed).
    ``resolutions`` are the anchor's, each with its ``parse`` loaded (``is_reference``).
    """
    for res in resolutions:
        if res.parse.is_reference and res.is_found:
            return ReferenceSpan(res.parse_id, res.start, res.end, res)
    if anchor.reference_parse_id is not None and anchor.ref_start is not None:
        return ReferenceSpan(anchor.reference_parse_id, anchor.ref_start, anchor.ref_end, None)
    return None


def evalset_portability(evalset: EvalSet) -> dict:
    items = EvalItem.objects.filter(evalset=evalset)
    total = items.count()
    with_anchors = items.filter(anchors__isnull=False).distinct().count()
    counts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for parser, version, status, n in (
        AnchorResolution.objects.filter(anchor__item__evalset=evalset)
        .values_list("parse__parser", "parse__parser_version", "status")
        .annotate(n=Count("pk"))
        .order_by("parse__parser", "parse__parser_version")
    ):
        counts[(parser, version)][status] += n
    by_parser = []
    for (parser, version), statuses in sorted(counts.items()):
        row = tally(statuses)
        by_parser.append(
            {
                "parser": parser,
                "parser_version": version,
                "anchors": row["anchors"],
                "found": row["found"],
                "lost": row["lost"],
                "ambiguous": row["ambiguous"],
            }
        )
    return {
        "items": total,
        "answerable": with_anchors,
        "unanswerable": total - with_anchors,
        # context-grid: a set is portable iff every answerable item has anchors; in
        # Groundwork every item's evidence is anchors, so this holds unless evidence is empty.
        "is_portable": True,
        "by_parser": by_parser,
    }


def item_portability(item: EvalItem) -> list[dict]:
    """Per parse version seen: how many of the item's anchors it found, lost, found twice.

    Reads ``item.prefetched_anchors`` and their ``prefetched_resolutions`` (with ``parse``),
    as ``selectors.with_anchors`` attaches them: no query.
    """
    rows: dict[str, dict] = {}
    statuses: dict[str, Counter] = defaultdict(Counter)
    for anchor in item.prefetched_anchors:
        for res in anchor.prefetched_resolutions:
            key = str(res.parse.public_id)
            rows.setdefault(
                key,
                {
                    "parse": key,
                    "parser": res.parse.parser,
                    "parser_version": res.parse.parser_version,
                    "source_id": anchor.source_id,
                },
            )
            statuses[key][res.status] += 1
    for key, row in rows.items():
        counted = tally(statuses[key])
        row.update(found=counted["found"], lost=counted["lost"], ambiguous=counted["ambiguous"])
    return sorted(rows.values(), key=lambda r: (r["source_id"], r["parser"]))
