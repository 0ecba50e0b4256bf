"""Passages of a parse and the words a ranking reads in them. Pure Python, no Django.

A passage is a paragraph window of one page: a page's paragraphs (runs of text between
blank lines) joined in order while the window stays within ``size`` code points, a paragraph
longer than that cut at the last space before the limit. A window never crosses a page, so
a passage opens the document at one page, and its offsets are the parse's own code points,
as a highlight's.

``terms`` are what the ranking compares: each word lowered, common English function words
left out, and a light suffix stripping ("policies" and "policy", "mounted" and "mount" meet).
The query goes through the same function, so only the two sides' agreement matters.
``marks`` finds where a query's terms occur in a snippet, for the page to mark them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["Cut", "cut_passages", "marks", "snippet", "terms"]

#: A word: letters and digits (any script), with inner apostrophes dropped by the split.
_WORD = re.compile(r"\w+")
#: Between two paragraphs: a line with nothing but spaces on it.
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")

#: Common English function words: they match everywhere and say nothing about a passage.
_STOP_WORDS = """a an and are as at be been being but by can could did do does doing for from
    had has have having he her here hers him his how i if in into is it its itself me more
    most my no
    nor not of off on once only or other our ours out over own s same she should so some such
    t than that the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


def _stem(word: str) -> str:
    """``word`` without a plural or verb ending: a light stemmer, the same for both sides."""
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, replacement, least in (
        ("ies", "y", 5),
        ("sses", "ss", 5),
        ("ing", "", 6),
        ("ed", "", 5),
        ("es", "", 6),
        ("s", "", 4),
    ):
        if word.endswith(suffix) and len(word) >= least and not word.endswith(("ss", "us", "is")):
            return word[: len(word) - len(suffix)] + replacement
    return word


def _term(word: str) -> str | None:
    lowered = word.lower().replace("_", "")
    if not lowered or lowered in STOP_WORDS or (len(lowered) == 1 and not lowered.isdigit()):
        return None
    return _stem(lowered)


def terms(text: str) -> list[str]:
    """The ranking's words of ``text``, in order (repeats kept: they count)."""
    return [t for t in (_term(m.group()) for m in _WORD.finditer(text)) if t is not None]


@dataclass(frozen=True, slots=True)
class Cut:
    """One passage: the page (from 1) it is on and its code points ``[start, end)``."""

    page: int
    start: int
    end: int


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _paragraphs(text: str, begin: int, end: int) -> Iterator[tuple[int, int]]:
    """The page's paragraphs, trimmed, as ``(start, end)`` in the parse."""
    at = begin
    for gap in _BLANK_LINE.finditer(text, begin, end):
        yield _trimmed(text, at, gap.start())
        at = gap.end()
    yield _trimmed(text, at, end)


def _pieces(text: str, start: int, end: int, size: int) -> Iterator[tuple[int, int]]:
    """A paragraph cut into windows of at most ``size``, at the last space before the limit
    (a hard cut when a whole window holds none)."""
    while end - start > size:
        cut = text.rfind(" ", start + size // 2, start + size)
        cut = start + size if cut <= start else cut
        yield _trimmed(text, start, cut)
        start = cut
    yield _trimmed(text, start, end)


def _windows(spans: Iterable[tuple[int, int]], size: int) -> Iterator[tuple[int, int]]:
    """Consecutive spans joined while the window stays within ``size``."""
    first = last = None
    for start, end in spans:
        if start >= end:
            continue
        if first is not None and end - first > size:
            yield first, last
            first = None
        if first is None:
            first = start
        last = end
    if first is not None:
        yield first, last


def cut_passages(text: str, page_begins: list[int], size: int) -> list[Cut]:
    """The passages of a parse: each page's paragraph windows of at most ``size`` code
    points, in reading order; windows without a word are left out."""
    out: list[Cut] = []
    bounds = [*page_begins, len(text)]
    for number, (begin, stop) in enumerate(pairwise(bounds), start=1):
        pieces = (
            piece
            for start, end in _paragraphs(text, begin, stop)
            for piece in _pieces(text, start, end, size)
        )
        for start, end in _windows(pieces, size):
            if _WORD.search(text, start, end):
                out.append(Cut(number, start, end))
    return out


def marks(text: str, wanted: set[str]) -> list[tuple[int, int]]:
    """Where words of ``text`` whose term is in ``wanted`` are, as ``(start, end)``."""
    return [
        (m.start(), m.end())
        for m in _WORD.finditer(text)
        if (term := _term(m.group())) is not None and term in wanted
    ]


def snippet(text: str, wanted: set[str], width: int) -> tuple[int, str, list[tuple[int, int]]]:
    """At most ``width`` code points of ``text`` around its first marked word: where the
    snippet starts in ``text``, the snippet, and its marks (offsets in the snippet)."""
    found = marks(text, wanted)
    begin = 0
    if found and found[0][0] > width // 4 and len(text) > width:
        begin = text.find(" ", found[0][0] - width // 4, found[0][0]) + 1 or found[0][0]
    begin = min(begin, max(0, len(text) - width))
    part = text[begin : begin + width]
    inside = [(s - begin, e - begin) for s, e in found if s >= begin and e <= begin + width]
    return begin, part, inside
