"""What an experiment's numbers rest on, read once when it starts: each parser's texts and
where each released item's evidence lies in them.

The evidence's place in a parse comes from the stored resolutions (``bridge.anchor_span``:
the highlight itself, else the resolver's found answer), never from searching again. A
released anchor is matched to the live anchor it was frozen from (same item, document,
quote and occurrence); when that anchor has since been deleted, the release's own frozen
position still places it in the parse its files read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evalsets.models import (
    GoldAnchor,
    ParseStatus,
    ParseVersion,
    Release,
    ReleaseItem,
)
from evalsets.releases.bridge import anchor_span


def ready_parses(workspace, parsers: Iterable[str]) -> dict[str, dict[str, ParseVersion]]:
    """``{parser: {source_id: parse}}``: each document's newest ready parse by each parser
    (texts deferred)."""
    found: dict[str, dict[str, ParseVersion]] = {name: {} for name in parsers}
    parses = (
        ParseVersion.objects.filter(
            document__workspace=workspace, status=ParseStatus.READY, parser__in=list(found)
        )
        .select_related("document")
        .defer("text")
        .order_by("created_at", "id")
    )
    for parse in parses:
        found[parse.parser][parse.document.source_id] = parse  # the newest wins
    return found


def run_parses(release: Release, parsers: Iterable[str]) -> dict[str, dict[str, ParseVersion]]:
    """``ready_parses``, except that a document's parse by the parser the release's files
    read is the very parse they read (a team computing offsets reads those files)."""
    found = ready_parses(release.evalset.workspace, parsers)
    chosen = ParseVersion.objects.filter(pk__in=list((release.texts or {}).values()))
    for parse in chosen.select_related("document").defer("text"):
        if parse.parser in found:
            found[parse.parser][parse.document.source_id] = parse
    return found


def parsers_available(workspace) -> list[str]:
    return sorted(
        set(
            ParseVersion.objects.filter(
                document__workspace=workspace, status=ParseStatus.READY
            ).values_list("parser", flat=True)
        )
    )


def released_items(release: Release) -> list[ReleaseItem]:
    return list(release.items.order_by("position"))


def questions(items: Iterable[ReleaseItem]) -> dict[str, str]:
    """``{item_id: question}`` of the items that carry evidence; the others have no ground
    truth and are never scored."""
    return {i.item_id: i.data["question"] for i in items if i.data.get("anchors")}


def _live_anchors(release: Release) -> dict[tuple, GoldAnchor]:
    anchors = GoldAnchor.objects.filter(item__evalset=release.evalset_id).select_related("item")
    return {
        (a.item.item_id, a.source_id, a.quote, a.occurrence): a
        for a in anchors.prefetch_related("resolutions")
    }


def _frozen_position(release: Release, item: ReleaseItem, index: int, parse) -> list | None:
    """The release's own position of anchor ``index``, valid only in the parse its files read."""
    if (release.texts or {}).get(parse.document.source_id) != parse.pk:
        return None
    positions = item.positions or []
    return positions[index] if index < len(positions) else None


def gold_in(
    release: Release, items: Iterable[ReleaseItem], parses: Mapping[str, ParseVersion]
) -> dict[str, list[list]]:
    """``{item_id: [[source_id, start, end, grade], ...]}``: each item's evidence placed in
    ``parses`` (``{source_id: parse}``); an anchor without a span there is left out."""
    live = _live_anchors(release)
    gold: dict[str, list[list]] = {}
    for item in items:
        spans = []
        for index, data in enumerate(item.data.get("anchors") or []):
            parse = parses.get(data["source_id"])
            if parse is None:
                continue
            key = (item.item_id, data["source_id"], data["quote"], data.get("occurrence", 0))
            anchor = live.get(key)
            span = anchor_span(anchor, parse) if anchor is not None else None
            span = span or _frozen_position(release, item, index, parse)
            if span is not None:
                spans.append([data["source_id"], span[0], span[1], int(data.get("grade", 2))])
        gold[item.item_id] = spans
    return gold


def texts(parse_ids: Mapping[str, int]) -> dict[str, str]:
    """``{source_id: text}`` of the frozen parses."""
    by_pk = dict(
        ParseVersion.objects.filter(pk__in=list(parse_ids.values())).values_list("pk", "text")
    )
    return {source: by_pk[pk] for source, pk in parse_ids.items() if pk in by_pk}
