"""How each parser read one anchor's evidence: each parse's text around its span, as data.

For every ready parse of the anchor's document: where the resolver placed the anchor (status,
score, span, page), the text there with a little context either side, and how that text
differs from the reference parse's (``evalsets.pure.textdiff``). Only bounded windows leave the
database, cut out by the database itself in one query, never whole parse texts. The page
draws it (``static/js/compare.js``); nothing here is markup.
"""

from __future__ import annotations

from django.db.models import F, Value
from django.db.models.functions import Greatest, Least, Substr

from evalsets.models import AnchorResolution, GoldAnchor, ParseStatus, ParseVersion
from evalsets.pure import textdiff
from evalsets.pure.textpages import page_of

#: Characters of context shown on each side of a span.
CONTEXT = 80
#: The longest span compared and shown; a longer one is cut here (``truncated``).
MAX_SPAN = 2000


def _windows(anchor: GoldAnchor) -> dict[int, tuple[int, str]]:
    """parse id -> (where its window starts, the window's text) for each placed resolution."""
    rows = (
        AnchorResolution.objects.filter(anchor=anchor, start__isnull=False, end__isnull=False)
        .annotate(
            window_start=Greatest(F("start") - CONTEXT, Value(0)),
            window_end=Least(F("end"), F("start") + MAX_SPAN) + CONTEXT,
        )
        .annotate(
            window=Substr("parse__text", F("window_start") + 1, F("window_end") - F("window_start"))
        )
        .values_list("parse_id", "window_start", "window")
    )
    return {parse_id: (start, window or "") for parse_id, start, window in rows}


def anchor_comparison(anchor: GoldAnchor) -> dict:
    """The panel's data for ``anchor`` (fetched with ``selectors.anchors_with_resolutions``).

    The reference parse comes first; each other parse's ``segments`` compare its span with
    the reference parse's span (with the anchor's quote when the reference has no span).
    """
    resolutions = {r.parse_id: r for r in anchor.prefetched_resolutions}
    parses = list(
        ParseVersion.objects.filter(document=anchor.document_id, status=ParseStatus.READY)
        .defer("text", "error")
        .order_by("-is_reference", "created_at", "id")
    )
    windows = _windows(anchor) if anchor.document_id else {}
    read: list[dict] = []
    for parse in parses:
        row = resolutions.get(parse.pk)
        entry = {
            "parse": str(parse.public_id),
            "parser": parse.parser,
            "parser_version": parse.parser_version,
            "is_reference": parse.is_reference,
            "status": row.status if row else "pending",
            "score": row.score if row else None,
            "candidates": row.candidates if row else 0,
            "start": None,
            "end": None,
            "page": None,
            "before": "",
            "text": "",
            "after": "",
            "truncated": False,
        }
        if row is not None and parse.pk in windows and row.start is not None:
            window_start, window = windows[parse.pk]
            span_end = min(row.end, row.start + MAX_SPAN)
            a, b = row.start - window_start, span_end - window_start
            entry.update(
                start=row.start,
                end=row.end,
                page=page_of(parse.page_starts, row.start),
                before=window[:a],
                text=window[a:b],
                after=window[b:],
                truncated=row.end > span_end,
            )
        read.append(entry)
    reference = next((e for e in read if e["is_reference"] and e["start"] is not None), None)
    compared_with = reference["text"] if reference else anchor.quote[:MAX_SPAN]
    for entry in read:
        if entry["start"] is None:
            entry["segments"], entry["differences"] = [], {}
        elif entry is reference:
            entry["segments"] = [{"op": "equal", "text": entry["text"], "ref": "", "kind": ""}]
            entry["differences"] = {}
        else:
            entry["segments"] = textdiff.diff_passages(compared_with, entry["text"])
            entry["differences"] = textdiff.tally(entry["segments"])
    return {
        "anchor": str(anchor.public_id),
        "source_id": anchor.source_id,
        "quote": anchor.quote,
        "compared_with": "reference" if reference else "quote",
        "context": CONTEXT,
        "kinds": list(textdiff.KINDS),
        "parses": read,
    }
