"""Finding text in a document: where a quote lies in a parse's text (overlapping copies
counted as the resolver counts them), the passage around it, and anchors built from a span or
from context. `DocumentTexts` and `AnchorPositions` are what writers are given to look with.
Nothing here imports Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import EvalItem, GoldAnchor

from evalsets.pure.resolver import find_all, occurrence_at

#: Where each anchor of an item lies in the parse whose texts `DocumentTexts` holds: one
#: `(start, end)` per anchor, in the item's order, or `None` for an anchor that parse does
#: not contain. A release builds it from the stored resolutions (the highlight itself in the
#: parse it was made in), so a writer places evidence exactly where the annotator chose it and
#: never searches for the quote again.
AnchorPositions = Callable[[EvalItem], Sequence[tuple[int, int] | None]]

#: `source_id -> text` of one chosen parse. A plain `dict` works; so does a lazy `Mapping`
#: that fetches texts from the database on `__getitem__`. Writers only look up the ids the
#: items name, except BEIR, which iterates it to write the corpus.
DocumentTexts = Mapping[str, str]


#: Every start of a quote, overlapping copies included: the resolver's one counting rule.
all_occurrences = find_all


def locate_quote(text: str, quote: str, occurrence: int = 0) -> tuple[int, int] | None:
    """Where an anchor's quote sits in `text`, the way context-grid's resolver looks for it.

    Exact first (the quote stripped of surrounding whitespace, overlapping repetitions
    counted), then with runs of whitespace collapsed on both sides -- PDF text breaks lines
    mid-sentence. Returns character offsets into `text`, or `None`.
    """
    needle = quote.strip()
    if not needle:
        return None
    exact = all_occurrences(text, needle)
    if occurrence < len(exact):
        start = exact[occurrence]
        return start, start + len(needle)

    words = needle.split()
    pattern = re.compile(r"\s+".join(re.escape(word) for word in words))
    position = 0
    seen = 0
    while True:
        match = pattern.search(text, position)
        if match is None:
            return None
        if seen == occurrence:
            return match.start(), match.end()
        seen += 1
        position = match.start() + 1


def passage_around(text: str, start: int, end: int, radius: int = 200) -> tuple[int, int]:
    """A readable passage containing `text[start:end]`: its paragraph, at most `radius` more
    characters on each side, never cutting a word in half."""
    left = max(0, start - radius)
    paragraph = text.rfind("\n\n", left, start)
    if paragraph != -1:
        left = paragraph + 2
    elif left > 0:
        space = _first_space(text, left, start)
        left = space + 1 if space is not None else left

    right = min(len(text), end + radius)
    paragraph = text.find("\n\n", end, right)
    if paragraph != -1:
        right = paragraph
    elif right < len(text):
        space = text.rfind(" ", end, right)
        right = space if space != -1 else right

    while left < start and text[left].isspace():
        left += 1
    while right > end and text[right - 1].isspace():
        right -= 1
    return left, right


def unique_passage(
    text: str, start: int, end: int, radius: int = 200, limit: int = 2000
) -> tuple[int, int, bool]:
    """`passage_around` widened, a paragraph or `radius` characters a side at a time, until
    it appears only once in `text` (so a reader finding it there finds this copy), or until
    it is `limit` characters long. Returns `(left, right, unique)`."""
    left, right = passage_around(text, start, end, radius)
    while len(all_occurrences(text, text[left:right], limit=1)) > 1:
        if right - left >= limit:
            return left, right, False
        wider = passage_around(
            text, _back_over_space(text, left), _on_over_space(text, right), radius
        )
        if wider == (left, right):
            return left, right, False
        left, right = wider
    return left, right, True


def _back_over_space(text: str, at: int) -> int:
    """`at` moved left over whitespace, and one character further: into the text before."""
    while at > 0 and text[at - 1].isspace():
        at -= 1
    return max(0, at - 1)


def _on_over_space(text: str, at: int) -> int:
    """`at` moved right over whitespace, and one character further: into the text after."""
    while at < len(text) and text[at].isspace():
        at += 1
    return min(len(text), at + 1)


def _first_space(text: str, begin: int, stop: int) -> int | None:
    for index in range(begin, stop):
        if text[index].isspace():
            return index
    return None


def trimmed_span(text: str, source_id: str, start: int, end: int) -> tuple[int, int]:
    """`[start, end)` of `text` without the whitespace around it: what a highlight quotes.

    Raises `EvalSetError` when the span does not fit the text or holds only whitespace.
    """
    if start < 0 or end > len(text) or end <= start:
        raise EvalSetError(
            f"span [{start}, {end}) does not fit {source_id!r}, which has {len(text)} "
            "characters: a span needs 0 <= start < end <= the document's length"
        )
    raw = text[start:end]
    quote = raw.strip()
    if not quote:
        raise EvalSetError("a gold anchor must quote some text")
    begin = start + (len(raw) - len(raw.lstrip()))
    return begin, begin + len(quote)


def anchor_from_span(
    text: str, source_id: str, start: int, end: int, *, grade: int = 2
) -> GoldAnchor:
    """A portable anchor quoting `text[start:end]`, with `occurrence` set so it resolves back
    to exactly that place when the quote appears more than once.

    Surrounding whitespace is trimmed from the quote (context-grid's resolver trims it too)
    and `occurrence` counts the trimmed quote's earlier copies, overlapping ones included.
    Raises `EvalSetError` when the span does not fit the text or quotes only whitespace.
    """
    begin, stop = trimmed_span(text, source_id, start, end)
    quote = text[begin:stop]
    return GoldAnchor(
        source_id=source_id, quote=quote, grade=grade, occurrence=occurrence_at(text, quote, begin)
    )


def anchor_from_context(
    text: str, source_id: str, context: str, start: int, end: int, *, grade: int
) -> tuple[GoldAnchor, str]:
    """The anchor for `context[start:end]`, placed in `text` through its context.

    `span_from_context` finds where; the anchor quotes `text` there, so `occurrence` names
    the copy the label meant. Returns `(anchor, note)`, `note` as `span_from_context` says.
    """
    begin, stop, note = span_from_context(text, source_id, context, start, end)
    return anchor_from_span(text, source_id, begin, stop, grade=grade), note


def span_from_context(
    text: str, source_id: str, context: str, start: int, end: int
) -> tuple[int, int, str]:
    """Where `context[start:end]` lies in `text`, found through its context.

    deepset labels carry a passage (`context`) and the answer's offsets in it, not offsets
    into the file. The passage is found in the file (verbatim, else with runs of whitespace
    collapsed: Excel turns line breaks into CRLF, PDF text breaks lines mid-sentence) and
    the quote taken from where it sits there, not from the first copy in the file. Returns
    `(start, end, note)` in `text`, the quote's whitespace trimmed; `note` is a sentence when
    the place had to be guessed (the context is not in the file, or is there more than once:
    it then says which copy was taken and why), and "" otherwise. Raises `EvalSetError` when
    the quote is not in the file at all.
    """
    piece = context[start:end]
    quote = piece.strip()
    if not quote:
        raise EvalSetError("a gold anchor must quote some text")
    lead = len(piece) - len(piece.lstrip())
    copies = all_occurrences(text, context)
    if copies:
        at = copies[0] + start + lead
        note = ""
        if len(copies) > 1:
            where = ", ".join(f"line {_line_of(text, c)}" for c in copies[:5])
            note = (
                f"the context appears {len(copies)} times in {source_id!r} ({where}) and the "
                f"file cannot say which it means; the first, on line {_line_of(text, at)}, "
                "was used."
            )
        return at, at + len(quote), note
    region = locate_quote(text, context)
    if region is not None:
        left, right = region
        place = _nearest(text[left:right], quote, start + lead)
        if place is not None:
            return left + place[0], left + place[1], ""
    first = locate_quote(text, quote)
    if first is None:
        raise EvalSetError(
            f"the quote {quote[:60]!r} is not in {source_id!r}, nor is the context it was cut from"
        )
    if locate_quote(text, quote, 1) is None:
        return first[0], first[1], ""
    return (
        first[0],
        first[1],
        f"the context was not found in {source_id!r} and the quote appears there more than "
        f"once; the first copy was used (line {_line_of(text, first[0])}).",
    )


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _nearest(passage: str, quote: str, wanted: int) -> tuple[int, int] | None:
    """The copy of `quote` in `passage` (whitespace runs collapsed) starting nearest `wanted`."""
    copies = []
    while (found := locate_quote(passage, quote, len(copies))) is not None:
        copies.append(found)
    return min(copies, key=lambda found: abs(found[0] - wanted), default=None)


def check_span_text(text: str, source_id: str, start: int, end: int, expected: str) -> None:
    """Refuse a span whose text is not `expected` (when given), saying where it really is.

    LegalBench-RAG snippets carry their `answer` next to the span; an off-by-n span would
    otherwise quote the wrong characters without a word.
    """
    wanted = expected.strip()
    if not wanted or text[start:end].strip() == wanted:
        return
    found = all_occurrences(text, wanted)
    nearest = min(found, key=lambda at: abs(at - start), default=None)
    where = (
        f"; the answer is at [{nearest}, {nearest + len(wanted)}) (off by {nearest - start})"
        if nearest is not None
        else f"; the answer is nowhere in {source_id!r}"
    )
    raise EvalSetError(
        f"span [{start}, {end}) of {source_id!r} reads {text[start:end][:60]!r}, not the "
        f"snippet's answer {wanted[:60]!r}{where}"
    )
