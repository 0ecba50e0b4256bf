"""Find a phrase in a parse's whole text: what the document page's search box asks.

The document page loads a few pages at a time, so the browser's own find cannot see a
1,000-page document; the server searches the whole parse instead. A query matches in any
case, with any run of whitespace (spaces, line breaks, form feeds) where it has one, and
with typographic quotes and dashes read as their ASCII forms ("it's" finds "it\u2019s").

A PDF's text also holds words as the page drew them: "ﬁle" with the one-character ligature,
"infor-" at the end of a line and "mation" on the next. "file" finds the first and
"information" the second, wherever the text has such characters at all.

The text is prepared once per parse (``SearchableText``): a copy with each code point
lowered to exactly one code point, so an offset in the copy is the same offset in the
original and no map back is needed. A search is then one compiled regular expression run
in C over that copy, stopping after the hits it needs; the ligatures and line-end breaks it
may step over are in the expression only for a text that has them, since they cost a
plain text's search its speed (``bench/search_bench.py``). Pure Python, no Django.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

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
#: A word broken at the end of a line: a hyphen and the line break, or a soft hyphen.
_BREAK = r"(?:-[ \t]*\r?\n[ \t]*|\u00ad)"
_BREAKS = re.compile(_BREAK)


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


def _pattern(
    query: str, ligatures: frozenset[str] = frozenset(), breaks: bool = False
) -> re.Pattern[str]:
    """The query's words, lowered, with any run of whitespace between them; each word may
    be written with the `ligatures` given (which the text holds) and, with `breaks`, broken
    at a line's end between two of its letters."""
    words = query.translate(_LOWER).split()
    return re.compile(r"\s+".join(_word(w, ligatures, breaks) for w in words))


def _word(word: str, ligatures: frozenset[str], breaks: bool) -> str:
    """One word's expression: its letters in turn, where a run of them is what a ligature of
    the text stands for ("fi"), either spelling; a line-end break allowed between letters."""
    gap = f"{_BREAK}?" if breaks else ""
    out, i = "", 0
    while i < len(word):
        run = next(
            (r for r in LIGATURES if word.startswith(r, i) and _holds_ligature(r, ligatures)),
            word[i],
        )
        if i and gap and word[i - 1].isalpha() and word[i].isalpha():
            out += gap
        spellings = _spellings(run, ligatures, gap)
        out += spellings[0] if len(spellings) == 1 else f"(?:{'|'.join(spellings)})"
        i += len(run)
    return out


def _holds_ligature(run: str, ligatures: frozenset[str]) -> bool:
    """Whether some ligature of the text stands for all or part of `run`."""
    return any(LIGATURES[r] in ligatures for r in LIGATURES if r in run)


def _spellings(letters: str, ligatures: frozenset[str], gap: str) -> list[str]:
    """Every way the text may write `letters` (at most three): each letter, or a ligature
    of the text for some of them, with a line-end break allowed between two pieces."""
    found = {re.escape(letters)} if len(letters) == 1 else set()
    if len(letters) > 1 and LIGATURES.get(letters) in ligatures:
        found.add(LIGATURES[letters])
    for cut in range(1, len(letters)):
        for head in _spellings(letters[:cut], ligatures, gap):
            for tail in _spellings(letters[cut:], ligatures, gap):
                found.add(head + gap + tail)
    return sorted(found, key=lambda x: (-len(x), x))


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

    __slots__ = ("breaks", "ligatures", "lowered", "page_starts", "text")

    def __init__(self, text: str, page_starts: Sequence[int] | None = None) -> None:
        self.text = text
        self.page_starts = list(page_starts) if page_starts else [0]
        self.lowered = text.translate(_LOWER)
        #: what a query may have to step over here: the ligatures the text holds, and
        #: whether it breaks words at a line's end (any dash reads "-" in the lowered copy)
        self.ligatures = frozenset(ch for ch in LIGATURES.values() if ch in self.lowered)
        self.breaks = _BREAKS.search(self.lowered) is not None

    @property
    def size(self) -> int:
        """Code points held (the text and its lowered copy)."""
        return 2 * len(self.text)

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
        pattern = _pattern(check_query(query), self.ligatures, self.breaks)
        counted = [m.span() for m in islice(pattern.finditer(self.lowered), COUNT_LIMIT + 1)]
        complete = len(counted) <= COUNT_LIMIT
        index = sum(1 for s, _ in counted if s < after)
        from_counted = [span for span in counted if span[0] >= after]
        if complete or len(from_counted) > limit:
            spans = from_counted[: limit + 1]
        else:  # past what was counted: search on from ``after`` itself
            spans = [m.span() for m in islice(pattern.finditer(self.lowered, after), limit + 1)]
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
