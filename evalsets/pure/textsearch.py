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
kept (``_Edits``) to map a hit's offsets back. Each run of whitespace in the copy is then
written as one space (the runs longer than one kept in ``_Runs``, for the same purpose), so
the query, its words joined by single spaces, is a plain string to find: ``str.find`` is
linear in the text whatever the query. (A regular expression of the words with any run of
whitespace between them tries every position anew: a text of "a a a ..." and a long query
that never matches cost the text's length times the query's.)

A search examines at most ``budget`` positions in each of its two scans (the count from the
start, and the page of hits from ``after`` when the count did not reach it), a window of
``WINDOW`` at a time: between windows another thread runs, and past the budget the page says
where it stopped (``Found.complete``, ``Found.searched_to``) and ``next_after`` goes on from
there. Pure Python, no Django.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, islice, repeat
from operator import add, sub

from evalsets.pure.textpages import page_begins, page_of

__all__ = ["MAX_QUERY", "Found", "Hit", "QueryError", "SearchableText", "prepare_search"]

#: The longest query, in code points: a sentence or two, not a page.
MAX_QUERY = 200
#: Hits counted from the start of the text before the total is given as "at least".
COUNT_LIMIT = 1000
#: Characters of text shown on each side of a hit.
SNIPPET = 60
#: Positions each scan of a search examines at most, unless the caller gives its own budget:
#: a 50 MB document whole, about 80 ms of one core.
MAX_EXAMINED = 64_000_000
#: The least budget a scan is given: a page that stops at its budget goes back to the start
#: of a ligature it stopped inside (three letters at most), and must still move on.
MIN_EXAMINED = 5 * MAX_QUERY
#: Positions searched in one call into C: another thread may run between two.
WINDOW = 1 << 20

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

    ``total`` counts at most ``COUNT_LIMIT + 1`` hits, and only as far as the count's budget
    reached (``total_is_lower_bound`` then says so); ``index`` is how many hits come before the
    first one here (exact while under the limit); ``next_after`` is the ``after`` that asks for
    the next page, None on the last. ``complete`` is False when the page's scan stopped at its
    budget before the end of the text: ``searched_to`` is where (every hit starting before it
    is here or before ``after``), on page ``searched_to_page``, and ``next_after`` is it.
    ``examined``: the positions of the text both scans looked at.
    """

    hits: list[Hit]
    total: int
    total_is_lower_bound: bool
    index: int
    next_after: int | None
    complete: bool = True
    searched_to: int | None = None
    searched_to_page: int | None = None
    examined: int = 0


def _needle(query: str, written_out: bool = True) -> str:
    """The query's words, lowered, joined by single spaces, as the copy searched has each run
    of whitespace: with `written_out`, its ligatures written out and soft hyphens dropped, as
    the copy has them."""
    query = query.translate(_LOWER)
    if written_out:
        query = query.translate(_WRITTEN_OUT)
    return " ".join(query.split())


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


#: A run of whitespace the searched copy writes as one space: two characters or more, or one
#: that is not a space (a line break, a tab). Captured, as ``_CHANGED`` is.
_RUN = re.compile(r"(\s{2,}|[^\S ])")
_NOT_SPACE = re.compile(r"\S")
#: Characters of the copy written at a time: one split's pieces stay a few megabytes, however
#: many runs a crafted text has.
CHUNK = 1 << 20


class _Runs:
    """Where the copy had a run of whitespace longer than one character, written as one space
    in the copy searched: each run's position there (``at``), and the characters taken out
    before each (``removed``, one longer: its last is all of them), to map offsets between the
    copy and the copy searched. Runs of one character (a line break) need no entry."""

    __slots__ = ("at", "removed")

    def __init__(self) -> None:
        self.at = array("i")
        self.removed = array("i", [0])

    def __len__(self) -> int:
        return len(self.at)

    def add(self, at: Iterable[int], extra: Iterable[int]) -> None:
        """Runs at positions ``at`` of the copy searched, ``extra`` characters longer there."""
        self.at.extend(at)
        self.removed.extend(islice(accumulate(extra, initial=self.removed[-1]), 1, None))

    def widened(self, at: int) -> int:
        """The copy's offset of position ``at`` of the copy searched (a run's space: where the
        run starts)."""
        return at + self.removed[bisect_left(self.at, at)]

    def _start(self, run: int) -> int:
        return self.at[run] + self.removed[run]

    def narrowed(self, offset: int) -> int:
        """The position in the copy searched of the copy's ``offset`` (inside a run: its
        space)."""
        runs = bisect_right(range(len(self.at)), offset, key=self._start)
        if runs and offset < self.at[runs - 1] + self.removed[runs] + 1:
            return self.at[runs - 1]
        return offset - self.removed[runs]


def _collapse_chunk(chunk: str, offset: int, runs: _Runs) -> str:
    """``chunk`` (beginning at ``offset`` of the copy searched) with each run written as one
    space, the longer runs added to ``runs``; summed in C, as ``_Edits`` is."""
    parts = _RUN.split(chunk)
    between, spaces = parts[::2], parts[1::2]
    extra = list(map(sub, map(len, spaces), repeat(1)))
    longer = list(map(bool, extra))
    at = accumulate(map(add, map(len, between[1:]), repeat(1)), initial=offset + len(between[0]))
    runs.add(compress(at, longer), compress(extra, longer))
    return " ".join(between)


def _collapse(copy: str) -> tuple[str, _Runs | None]:
    """``copy`` with each run of whitespace written as one space, and where the runs longer
    than one were (None if there were none), a ``CHUNK`` at a time, each cut at a character
    that is not whitespace so that no run is split."""
    if _RUN.search(copy) is None:
        return copy, None
    runs, pieces, written, begin = _Runs(), [], 0, 0
    while begin < len(copy):
        cut = _NOT_SPACE.search(copy, begin + CHUNK)
        end = cut.start() if cut else len(copy)
        pieces.append(_collapse_chunk(copy[begin:end], written, runs))
        written += len(pieces[-1])
        begin = end
    return "".join(pieces), runs if len(runs) else None


class _Scan:
    """Where ``needle`` occurs in ``haystack`` from ``begin`` on (each start, leftmost first,
    not overlapping), found by ``str.find``, linear in what it examines, a ``WINDOW`` at a time.

    Past ``budget`` positions examined it stops: ``stopped_at`` is where (every occurrence
    starting before it was found); ``finished`` says it reached the end instead.
    """

    __slots__ = ("begin", "budget", "examined", "finished", "haystack", "needle", "stopped_at")

    def __init__(self, haystack: str, needle: str, begin: int, budget: int) -> None:
        self.haystack, self.needle, self.begin, self.budget = haystack, needle, begin, budget
        self.examined = 0
        self.finished = False
        self.stopped_at: int | None = None

    def __iter__(self) -> Iterator[int]:
        haystack, needle, size = self.haystack, self.needle, len(self.needle)
        last = len(haystack) - size  # the last position an occurrence can start at
        at = self.begin
        while size and at <= last:
            room = self.budget - self.examined
            if room <= 0:
                self.stopped_at = at
                return
            window = min(at + min(WINDOW, room), last + 1)  # occurrences starting before it
            found = haystack.find(needle, at, window + size - 1)
            moved_to = window if found < 0 else found + size
            self.examined += moved_to - at
            at = moved_to
            if found >= 0:
                yield found
        self.finished = True


class SearchableText:
    """One parse's text, lowered once, ready for many searches."""

    __slots__ = ("edits", "lowered", "page_starts", "runs", "text", "written_out")

    def __init__(self, text: str, page_starts: Sequence[int] | None = None) -> None:
        self.text = text
        self.page_starts = page_begins(page_starts)
        #: the copy (``_search_copy``), and where it differs from the text
        copy, self.edits, self.written_out = _search_copy(text.translate(_LOWER))
        #: the copy searched: the copy with each run of whitespace one space (``_collapse``)
        self.lowered, self.runs = _collapse(copy)

    @property
    def size(self) -> int:
        """Code points held (the text and its lowered copy), the maps of changes and of runs
        counted as the code points their bytes would be."""
        return (
            2 * len(self.text)
            + (4 * len(self.edits) if self.edits else 0)
            + (2 * len(self.runs) if self.runs else 0)
        )

    def _text_offset(self, at: int) -> int:
        """The text's offset of position ``at`` of the copy searched (a hit's start)."""
        offset = self.runs.widened(at) if self.runs else at
        return self.edits.start_in_text(offset) if self.edits else offset

    def _in_text(self, at: int, size: int) -> tuple[int, int]:
        """The span in the text of the hit at ``at`` of the copy searched, ``size`` long."""
        end = self.runs.widened(at + size) if self.runs else at + size
        return self._text_offset(at), self.edits.end_in_text(end) if self.edits else end

    def _searched(self, offset: int) -> int:
        """The position in the copy searched of the text's ``offset`` (inside a change, where
        the change starts)."""
        offset = self.edits.in_copy(offset) if self.edits else offset
        return self.runs.narrowed(offset) if self.runs else offset

    def page_at(self, offset: int) -> int:
        return page_of(self.page_starts, offset)

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

    def _settle(self, scan: _Scan, found: list[int], limit: int) -> tuple[list[int], int | None]:
        """The hits of a page, and the text offset its scan stopped at, None if it did not
        stop short. A scan stopping inside a written-out ligature goes back to the ligature's
        start, which the next page starts from, and drops the hits from there, so that none
        is given twice."""
        if scan.stopped_at is None or len(found) > limit:
            return found, None
        stopped = self._text_offset(scan.stopped_at)
        resume = self._searched(stopped)
        return [at for at in found if at < resume], stopped

    def search(
        self, query: str, *, after: int = 0, limit: int = 50, budget: int = MAX_EXAMINED
    ) -> Found:
        """Hits of ``query`` starting at or after code point ``after``, ``limit`` at most; each
        scan examines at most ``budget`` positions (``MIN_EXAMINED`` at least)."""
        needle = _needle(check_query(query), self.written_out)
        budget = max(budget, MIN_EXAMINED)
        count = _Scan(self.lowered, needle, 0, budget)
        counted = list(islice(count, COUNT_LIMIT + 1))
        exact = count.finished and len(counted) <= COUNT_LIMIT
        starts = [self._text_offset(at) for at in counted]
        from_counted = [at for at, start in zip(counted, starts, strict=True) if start >= after]
        page, found = count, from_counted[: limit + 1]
        if not (after == 0 or exact or len(from_counted) > limit):
            # past what was counted: search on from ``after`` itself
            page = _Scan(self.lowered, needle, self._searched(after), budget)
            found = list(islice(page, limit + 1))
        found, stopped = self._settle(page, found, limit)
        spans = [self._in_text(at, len(needle)) for at in found[:limit]]
        more = len(found) > limit
        return Found(
            hits=[self._snippet(s, e) for s, e in spans],
            total=len(counted),
            total_is_lower_bound=not exact,
            index=sum(1 for start in starts if start < after),
            next_after=stopped if stopped is not None else spans[-1][0] + 1 if more else None,
            complete=stopped is None,
            searched_to=stopped,
            searched_to_page=None if stopped is None else self.page_at(stopped),
            examined=count.examined + (page.examined if page is not count else 0),
        )


def prepare_search(text: str, page_starts: Sequence[int] | None = None) -> SearchableText:
    return SearchableText(text, page_starts)
