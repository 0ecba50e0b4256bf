"""Where a file's reader lands: anchors written in the reader's terms, and checked with it.

An anchor's `occurrence` picks one copy of a repeated quote, but which copy depends on how the
reader pages the document. context-grid's resolver narrows candidates to `page_hint`'s page
only when its parse has pages; its text, Markdown, HTML and Word parsers have none, so there
`occurrence` counts copies over the whole document and a count made within one page lands on
another copy. So an anchor is rewritten for the reader of its kind of document
(`anchor_for_reader`), and every written anchor is checked by running context-grid's own
`AnchorResolver` on the text the file was made from (`LandingCheck`); what the reader would
not place where it was highlighted is named in the export notes. Nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from contextgrid.core.documents import Document, ParsedDocument
from contextgrid.core.evalset import EvalItem, GoldAnchor
from contextgrid.score.anchor import AnchorResolver, collapse_whitespace

from evalsets.pure.formats.locating import AnchorPositions, DocumentTexts
from evalsets.pure.formats.notes import Tally
from evalsets.pure.resolver import find_all

#: Document kinds context-grid reads with pages: its PDF parsers (pymupdf, pdfplumber) keep
#: each block's page, so `page_hint` narrows the copies and `occurrence` counts on that page.
#: Every other kind is read as one text without pages.
PAGED_KINDS = frozenset({"pdf"})

#: context-grid's resolver as its readers run it by default (exact, then normalised).
READER = AnchorResolver()


def reader_lands(text: str, anchor: GoldAnchor) -> tuple[int, int] | None:
    """Where context-grid's `AnchorResolver` places `anchor` in `text` read without pages."""
    parsed = ParsedDocument(document=Document(id=anchor.source_id, text=text))
    span = READER.locate(anchor, parsed).span
    return None if span is None else (span.start, span.end)


def unpaged_occurrence(text: str, quote: str, start: int) -> int | None:
    """The `occurrence` that makes context-grid's resolver, reading `text` without pages, take
    the copy of `quote` starting at `start`; `None` when no occurrence does.

    The resolver takes verbatim copies when there are any, and only otherwise copies found
    with runs of whitespace collapsed; both are counted overlapping, from the document's start.
    """
    needle = quote.strip()
    exact = find_all(text, needle)
    if exact:
        return exact.index(start) if start in exact else None
    flat_text, positions = collapse_whitespace(text)
    flat_quote = collapse_whitespace(needle)[0].strip()
    starts = [positions[at] for at in find_all(flat_text, flat_quote)]
    return starts.index(start) if start in starts else None


def anchor_for_reader(
    anchor: GoldAnchor, *, kind: str, text: str | None, span: tuple[int, int] | None
) -> GoldAnchor:
    """`anchor` written so that context-grid, reading a document of `kind`, takes the copy at
    `span` in `text` (the parse the anchor was placed in).

    A PDF anchor is kept as it is: context-grid's PDF parsers page, as ours do. An anchor with
    a `page_hint` in a document of any other kind loses the hint and gets its `occurrence`
    counted over the whole text, the only count a reader without pages can follow (and our own
    importer, which narrows to a hinted page, follows it too). On page 1 the count already
    starts at the document's start, so only the hint goes. Kept as it is when the text or
    span is unknown, or no occurrence reaches that copy.
    """
    if kind in PAGED_KINDS or anchor.page_hint is None:
        return anchor
    if anchor.page_hint == 1:  # page 1 starts the document: its count is the whole one's
        return replace(anchor, page_hint=None)
    if text is None or span is None:
        return anchor
    occurrence = unpaged_occurrence(text, anchor.quote, span[0])
    if occurrence is None:
        return anchor
    return replace(anchor, page_hint=None, occurrence=occurrence)


def _label(item: EvalItem, number: int, anchor: GoldAnchor) -> str:
    quote = " ".join(anchor.quote.split())
    quote = quote if len(quote) <= 40 else quote[:39] + "…"
    return f"{item.id} anchor {number} ({quote!r})"


class LandingCheck:
    """Anchors a context-grid reader would not place where they were highlighted.

    Each anchor is run through context-grid's `AnchorResolver` on the text of the parse the
    file was made from (`documents`), read without pages, and compared with where the anchor
    lies there (`positions`). An anchor with a `page_hint` whose copy a reader without pages
    would reach with another `occurrence` is one only readers with pages place right (a PDF
    quote also on an earlier page); any other that lands elsewhere is placed elsewhere (or
    nowhere) by every context-grid reader of that text, and its gold span, where written,
    disagrees with the resolver.
    """

    def __init__(self, documents: DocumentTexts | None, positions: AnchorPositions | None) -> None:
        self._documents = documents
        self._positions = positions
        self.pages_only = Tally(
            "lands_elsewhere_without_pages",
            "{n} anchor(s) in paged documents (PDF) quote text that also appears on an "
            "earlier page. context-grid's PDF parsers keep pages and land on the highlighted "
            "copy (`occurrence` counts copies on the `page_hint` page); a parser that reads "
            "PDFs without pages counts copies over the whole document and lands on another "
            "copy: {ids}.",
        )
        self.elsewhere = Tally(
            "lands_elsewhere",
            "{n} anchor(s) are not where context-grid's AnchorResolver places them in the text "
            "this file was made from (the evidence was located approximately in this parse, "
            "or the resolver takes another copy): a context-grid reader lands on other text "
            "or none, and where gold spans are written they disagree with where context-grid "
            "resolves the same anchors: {ids}.",
        )

    def check(self, item: EvalItem, anchors: Sequence[GoldAnchor] | None = None) -> None:
        """Check `anchors` (the first ones of `item`; all of them by default)."""
        if self._documents is None or self._positions is None or not item.anchors:
            return
        places = list(self._positions(item))
        chosen = item.anchors if anchors is None else anchors
        for number, anchor in enumerate(chosen, start=1):
            place = places[number - 1] if number - 1 < len(places) else None
            text = self._documents.get(anchor.source_id)
            if place is None or text is None or reader_lands(text, anchor) == tuple(place):
                continue
            counted = unpaged_occurrence(text, anchor.quote, place[0]) is not None
            paged = anchor.page_hint is not None and counted
            (self.pages_only if paged else self.elsewhere).add(_label(item, number, anchor))

    def tallies(self) -> list[Tally]:
        return [self.pages_only, self.elsewhere]
