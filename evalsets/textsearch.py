"""Find a phrase in a parse's whole text: what the document page's search box asks.

The document page loads a few pages at a time, so the browser's own find cannot see a
1,000-page document; the server searches the whole parse instead. A query matches in any
case, with any run of whitespace (spaces, line breaks, form feeds) where it has one, and
with typographic quotes and dashes read as their ASCII forms ("it's" finds "it\u2019s").

A PDF's text also holds words as the page drew them: "ﬁle" with the one-character ligature,
"infor-" at the end of a line and "mation" on the next. "file" finds the first and
"information" the second.

The text is prepared once per parse (``SearchableText``): a copy with each code point
lowered to exactly one code point, so an offset in the copy is the same offset in the
original. In a text that holds ligatures or words broken at a line's end, the copy also has
each ligature written out and each break taken out, and the few places that changed are
kept (``_Edits``) to map a hit's offsets back. A search is then one compiled regular
expression of the query's words run in C over that copy, stopping after the hits it needs.
Pure Python, no Django.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, islice, repeat
from operator import add

__all__ = ["MAX_QUERY", "Found", "Hit", "QueryError", "SearchableText", "prepare_search"]

#: The longest query, in code points: a sentence or two, not a page.
MAX_QUERY = 200
#: Hits counted from the start of the text before the total is given as "at least".
COUNT_LIMIT = 1000
#: Characters of text shown on each side of a hit.
SNIPPET = 60

_TYPOGRAPHIC = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u2033": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2212": "-",
}


class _LowerTable(dict):
    """``str.translate`` table: each code point to one lowered code point (itself when its
    lower case is longer than one, as for "İ"), filled as characters are met."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        low = _TYPOGRAPHIC.get(ch) or ch.lower()
        value = low if len(low) == 1 else ch
        self[code] = value
        return value


_LOWER = _LowerTable()
_SPACES = re.compile(r"\s+")
#: The ligatures a PDF's text may hold where a word has their letters, longest first.
LIGATURES = {
    "ffi": "\ufb03",
    "ffl": "\ufb04",
    "ff": "\ufb00",
    "fi": "\ufb01",
    "fl": "\ufb02",
    "st": "\ufb06",
}
#: What the search copy writes for a ligature (its letters) and a soft hyphen (nothing).
_WRITTEN = {**{ligature: letters for letters, ligature in LIGATURES.items()}, "\u00ad": ""}
_WRITTEN_OUT = str.maketrans(_WRITTEN)
#: What the search copy changes: a ligature, or a word broken at the end of a line (a hyphen
#: and the line break, or a soft hyphen). Captured, so that one split gives both the pieces
#: between changes and the changes.
_CHANGED = re.compile(f"([{''.join(LIGATURES.values())}]|-[ \\t]*\\r?\\n[ \\t]*|\u00ad)")


class QueryError(ValueError):
    """A query that cannot be searched for (empty, too long), said in words."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One place the query matches: ``text[start:end]`` on ``page`` (from 1), with a few
    words either side (``before`` and ``after``, whitespace runs shown as one space)."""

    start: int
    end: int
    page: int
    before: str
    match: str
    after: str

    def to_dict(self) -> dict:
        return {
            "start": self.start,
            "end": self.end,
            "page": self.page,
            "before": self.before,
            "match": self.match,
            "after": self.after,
        }


@dataclass(frozen=True, slots=True)
class Found:
    """A page of hits from ``after`` on, and how many there are in the whole text.

    ``total`` counts at most ``COUNT_LIMIT + 1`` hits (``total_is_lower_bound`` then says so);
    ``index`` is how many hits come before the first one here (exact while under the limit);
    ``next_after`` is the ``after`` that asks for the next page, None on the last.
    """

    hits: list[Hit]
    total: int
    total_is_lower_bound: bool
    index: int
    next_after: int | None


def _pattern(query: str, written_out: bool = True) -> re.Pattern[str]:
    """The query's words, lowered, with any run of whitespace between them: with
    `written_out`, its ligatures written out and soft hyphens dropped, as the copy searched
    has them."""
    query = query.translate(_LOWER)
    if written_out:
        query = query.translate(_WRITTEN_OUT)
    return re.compile(r"\s+".join(re.escape(w) for w in query.split()))


class _Edits:
    """Where the search copy differs from the lowered text: each change's start and end in
    the copy and in the text, in order, to map offsets between the two."""

    __slots__ = ("copy_ends", "copy_starts", "text_ends", "text_starts")

    def __init__(self, between: list[str], changes: list[str], written: list[str]) -> None:
        """From the pieces of text between the changes, the changes and what the copy
        writes for each; summed in C (``accumulate``), since a PDF may have 100,000s."""
        gaps, changed, wrote = (
            list(map(len, between)),
            list(map(len, changes)),
            list(map(len, written)),
        )
        n = len(changes)
        self.text_starts = array(
            "i", islice(accumulate(map(add, changed, gaps[1:]), initial=gaps[0]), n)
        )
        self.text_ends = array("i", map(add, self.text_starts, changed))
        self.copy_starts = array(
            "i", islice(accumulate(map(add, wrote, gaps[1:]), initial=gaps[0]), n)
        )
        self.copy_ends = array("i", map(add, self.copy_starts, wrote))

    def __len__(self) -> int:
        return len(self.copy_starts)

    def start_in_text(self, at: int) -> int:
        """Where a hit starting at copy offset ``at`` starts in the text (a hit starting
        inside a written-out ligature starts at the ligature)."""
        i = bisect_right(self.copy_starts, at) - 1
        if i < 0:
            return at
        if at < self.copy_ends[i]:
            return self.text_starts[i]
        return at + self.text_ends[i] - self.copy_ends[i]

    def end_in_text(self, at: int) -> int:
        """Where a hit ending at copy offset ``at`` (exclusive) ends in the text."""
        i = bisect_left(self.copy_starts, at) - 1
        if i < 0:
            return at
        if at <= self.copy_ends[i]:
            return self.text_ends[i]
        return at + self.text_ends[i] - self.copy_ends[i]

    def in_copy(self, at: int) -> int:
        """The copy offset of text offset ``at`` (inside a change: where the change starts)."""
        i = bisect_right(self.text_starts, at) - 1
        if i < 0:
            return at
        if at < self.text_ends[i]:
            return self.copy_starts[i]
        return at + self.copy_ends[i] - self.text_ends[i]


#: A text changing more often than once in this many characters is not a PDF's prose (a
#: crafted file): it is searched as it is, without its own copy and the map of changes.
CHANGE_EVERY = 8


def _search_copy(lowered: str) -> tuple[str, _Edits | None, bool]:
    """The lowered text with its ligatures written out and its broken words joined, where it
    changed, and whether it was written out: the text itself and None when it holds
    neither (written out as it is), or too many (not written out)."""
    if _CHANGED.search(lowered) is None:
        return lowered, None, True
    parts = _CHANGED.split(lowered)
    between, changes = parts[::2], parts[1::2]
    if len(changes) > len(lowered) // CHANGE_EVERY:
        return lowered, None, False
    written = list(map(_WRITTEN.get, changes, repeat("")))  # a break: nothing
    copy = "".join(chain.from_iterable(zip(between, [*written, ""], strict=True)))
    return copy, _Edits(between, changes, written), True


def check_query(query: str) -> str:
    """``query`` with its ends trimmed, or ``QueryError`` saying what is wrong with it."""
    trimmed = query.strip()
    if not trimmed:
        raise QueryError("'q' is empty: type a word or phrase to search for")
    if len(trimmed) > MAX_QUERY:
        raise QueryError(
            f"'q' is {len(trimmed)} characters long; search for at most {MAX_QUERY} "
            "(a phrase, not a passage)"
        )
    return trimmed


class SearchableText:
    """One parse's text, lowered once, ready for many searches."""

    __slots__ = ("edits", "lowered", "page_starts", "text", "written_out")

    def __init__(self, text: str, page_starts: Sequence[int] | None = None) -> None:
        self.text = text
        self.page_starts = list(page_starts) if page_starts else [0]
        #: the copy searched (``_search_copy``), and where it differs from the text
        self.lowered, self.edits, self.written_out = _search_copy(text.translate(_LOWER))

    @property
    def size(self) -> int:
        """Code points held (the text and its lowered copy), the map of changes counted as
        the code points its bytes would be."""
        return 2 * len(self.text) + (4 * len(self.edits) if self.edits else 0)

    def _in_text(self, match: re.Match) -> tuple[int, int]:
        """A hit's span in the text (the copy's, mapped back where the copy changed)."""
        if self.edits is None:
            return match.span()
        return self.edits.start_in_text(match.start()), self.edits.end_in_text(match.end())

    def page_at(self, offset: int) -> int:
        return max(1, bisect_right(self.page_starts, offset))

    def _snippet(self, start: int, end: int) -> Hit:
        text = self.text
        before = text[max(0, start - SNIPPET) : start]
        after = text[end : end + SNIPPET]
        return Hit(
            start=start,
            end=end,
            page=self.page_at(start),
            before=_SPACES.sub(" ", before).lstrip(),
            match=_SPACES.sub(" ", text[start:end]),
            after=_SPACES.sub(" ", after).rstrip(),
        )

    def search(self, query: str, *, after: int = 0, limit: int = 50) -> Found:
        """Hits of ``query`` starting at or after code point ``after``, ``limit`` at most."""
        pattern = _pattern(check_query(query), self.written_out)
        matches = pattern.finditer(self.lowered)
        counted = [self._in_text(m) for m in islice(matches, COUNT_LIMIT + 1)]
        complete = len(counted) <= COUNT_LIMIT
        index = sum(1 for s, _ in counted if s < after)
        from_counted = [span for span in counted if span[0] >= after]
        if complete or len(from_counted) > limit:
            spans = from_counted[: limit + 1]
        else:  # past what was counted: search on from ``after`` itself
            begin = self.edits.in_copy(after) if self.edits else after
            matches = pattern.finditer(self.lowered, begin)
            spans = [self._in_text(m) for m in islice(matches, limit + 1)]
        more = len(spans) > limit
        spans = spans[:limit]
        return Found(
            hits=[self._snippet(s, e) for s, e in spans],
            total=len(counted),
            total_is_lower_bound=not complete,
            index=index,
            next_after=spans[-1][0] + 1 if more and spans else None,
        )


def prepare_search(text: str, page_starts: Sequence[int] | None = None) -> SearchableText:
    return SearchableText(text, page_starts)
