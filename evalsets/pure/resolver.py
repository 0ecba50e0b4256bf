"""Re-locating quoted gold evidence inside any parse of its document.

Gold evidence is stored as a quote (plus optional page hint, occurrence and `CONTEXT_CHARS`
characters of context either side), because character offsets only mean something inside one
parse. Every time a document is parsed again -- by another parser, or a new version of the
same one -- each quote has to be found again in text that differs in whitespace, ligatures,
hyphenation, running headers and damaged characters. This module does that, in three tiers
of decreasing confidence (exact, normalised, fuzzy), and prefers saying "not found" or
"ambiguous" to returning a wrong span: a missing anchor is visible, a wrong one silently
scores the wrong text.

It is pure Python on purpose (no Django), so workers, scripts and the benchmark in
``bench/resolver_bench.py`` can import it alone. Offsets are code points, half-open.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise
from operator import itemgetter
from typing import Any

import edlib
import numpy as np
from rapidfuzz.distance import LCSseq

from evalsets.pure.textpages import page_of

__all__ = [
    "AMBIGUOUS",
    "CONTEXT_CHARS",
    "EXACT",
    "FUZZY",
    "NORMALISED",
    "NOT_FOUND",
    "RESOLVER_VERSION",
    "FoldedText",
    "PreparedText",
    "Resolution",
    "Rules",
    "find_all",
    "fold",
    "fold_text",
    "min_fuzzy_score",
    "occurrence_at",
    "passage_copies",
    "prepare",
    "resolve",
    "resolve_many",
]

#: Bump whenever any input can produce a different `Resolution`, so stored results can be
#: invalidated. Recorded on every `Resolution.to_dict()`.
RESOLVER_VERSION = "2.3"

EXACT = "exact"
NORMALISED = "normalised"
FUZZY = "fuzzy"
AMBIGUOUS = "ambiguous"
NOT_FOUND = "not_found"

#: Characters of the text a highlight records on each side of its quote (``prefix`` and
#: ``suffix``): every place that records or reads an anchor's context takes this length.
CONTEXT_CHARS = 32
#: Each side of the context is weighed folded, cut to this: folding can lengthen a side (a
#: ligature written out), so the cut leaves half as much again as a highlight records.
FOLDED_CONTEXT_CHARS = CONTEXT_CHARS + CONTEXT_CHARS // 2


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Every threshold of the resolver, in one place (`THRESHOLDS`). Those before 2.1 were
    chosen on the in-house benchmark; one changed here is weighed on the held-out corpus
    (`bench/resolver_heldout.py`) before it is kept. `bench/resolver_heldout.py --calibrate`
    prints, for each, the tuning half at values around the chosen one (recall, wrong spans,
    false alarms, offers) and both halves at the chosen values."""

    #: Folded quotes shorter than this are never matched approximately: too many places in any
    #: real document are a couple of edits away from a short string.
    fuzzy_min_length: int = 16
    #: Required fuzzy score for long quotes, and for the shortest quote allowed to go fuzzy.
    fuzzy_score_long: float = 0.85
    fuzzy_score_short: float = 0.95
    fuzzy_long_from: int = 150
    #: How far ahead of the runner-up the best fuzzy candidate must be to be picked on score.
    fuzzy_margin: float = 0.05
    #: A run of at least this many characters inserted into a passage (a running header and page
    #: number, a link target) costs one character of score, however long it is -- for up to
    #: `1 + len // LONG_RUN_EVERY` such runs; shorter runs and further runs cost their length ...
    long_run: int = 3
    long_run_every: int = 60
    #: ... but the found span may be at most this much longer than the quote (folded).
    max_span_stretch: float = 1.6
    max_span_extra: int = 64
    #: Room for inserted text when aligning the ends of a quote next to its chain.
    end_slack: int = 24
    #: Pieces of the quote looked up to find where approximate copies may be, and how densely
    #: the text is indexed for them.
    seed: int = 6
    seed_step: int = 3
    #: Seeds indexed more often than this are too common to say where a passage is.
    max_seed_hits: int = 24
    #: Exact runs considered when chaining a quote through a window, longest first.
    max_chain_segments: int = 120
    #: Fuzzy windows aligned per quote, best-voted first.
    max_fuzzy_windows: int = 12
    #: A piece of the passage the parse reads in another order (inside the found span) counts
    #: as matched when it is an exact run of at least this many characters, at this cost.
    move_min: int = 8
    move_cost: int = 2
    #: A window holding less of the quote in order than the fuzzy bar needs is still aligned when
    #: it holds at least this share of that in order and exact runs cover enough in any order.
    reorder_gate: float = 0.75
    #: A fuzzy match is refused (``not_found``, the span offered for a person to confirm) when
    #: fewer than this share of the quote's words appear in it: a passage mostly absent from the
    #: parse whose remains happen to align. On the held-out corpus's tuning half every value
    #: from 0.4 to 0.6 answers alike (`bench/resolver_heldout.py --calibrate`).
    fuzzy_min_words_kept: float = 0.5
    #: How far past a span's end (or before its start) the Markdown marks a quote ends (begins)
    #: with are looked for.
    edge_reach: int = 16
    #: A quote found line by line (`PreparedText._by_pieces`) is looked for around at most this
    #: many copies of its longest line.
    pieces_max_hits: int = 64
    #: ... and the recorded prefix and suffix must fit its two ends within one edit per this
    #: many of their characters, in all.
    pieces_context_slack: int = 8
    #: A recorded side of context can tell where a line of a quote found line by line ends when
    #: it holds at least this many characters folded, letters among them (`_telling`).
    refit_context_min: int = 12
    #: A quote found with some of its lines in another order (`PreparedText._moved_lines`) needs
    #: its first and last lines at least this long, folded, to fix its two ends.
    moved_lines_edge: int = 3
    #: A fuzzy span holds the quote's first (last) line when it is within this many folded
    #: characters of its start (end); otherwise a copy just outside widens it
    #: (`PreparedText._with_edge_lines`).
    edge_line_slack: int = 8
    #: Words shorter than this (folded) are not counted: "a", "of" are inside any passage.
    kept_word_min: int = 3
    #: A candidate below the fuzzy bar is still offered for confirmation when it is at least
    #: this similar: below it, it is noise, not a candidate anyone would want to look at.
    offer_min_score: float = 0.6
    #: ... and offered only when it holds at least this share of the quote's words: the
    #: closest passage to a quote whose tail is not in the parse is its head, and that is
    #: noise, not the passage.
    offer_min_words_kept: float = 0.8
    #: A word of the quote counts as held by an offered passage with up to one edit per this
    #: many of its characters (`_words_near`): a quote typed by hand misspells some.
    offer_word_edits_every: int = 4
    #: A passage placed only by where the quote's recorded context reads (`_context_gap`) is
    #: offered when it is at least this similar to the quote, end to end: on the tuning half
    #: the absent passages so placed were at most 71% similar, the misses 82% and 89%.
    offer_context_min_score: float = 0.8


THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class Rules:
    """Switches for rules on trial. A rule comes with a switch here, and stays only while
    `bench/resolver_heldout.py --ablate` finds it gains on the held-out half of the corpus and
    turns nothing there worse (`bench/resolver_ledger.json` records what each earned). The
    five rules of 1.7 to 1.10 weighed so (symbol lines, word cuts given up, context rows,
    rewrapped copies, refitted ends) gained nothing held out and were deleted in 2.0; the
    offer of a passage turned away before aligning cost offers net on both halves of 99
    documents (more absent passages offered than misses) and was deleted in 2.3."""

    #: The closest passage is offered only when it holds most of the quote's words
    #: (`offer_min_words_kept`).
    offer_most_words: bool = True
    #: A quote not found and offered nothing is offered the passage its recorded prefix and
    #: suffix enclose, or that one of them places, when it reads as the quote
    #: (`offer_context_min_score`): a quote too short to match approximately, or a formula
    #: whose signs this parse reads otherwise, still sits where its context does.
    offer_by_context: bool = True


RULES = Rules()


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where one quote landed in one parse, how sure we are, and why.

    `start`/`end` are a half-open range of code points in the parse's text, set only for the
    three found statuses. `candidates` is how many copies the deciding tier saw (also for
    `ambiguous` and for `not_found` with an out-of-range occurrence). `reason` is a short
    machine-readable code; `detail` is the same thing as a sentence for a person.
    """

    status: str
    start: int | None = None
    end: int | None = None
    score: float = 0.0
    candidates: int = 0
    reason: str = ""
    detail: str = ""
    page: int | None = None
    version: str = RESOLVER_VERSION
    #: For a fuzzy-tier answer: the share of the quote's words found in the span (or in the
    #: offered candidate). 1.0 for the literal tiers; 0.0 when nothing was aligned.
    kept: float = 0.0
    #: ``not_found`` with the closest passage offered for a person to confirm or correct:
    #: its half-open span (never set together with `start`/`end`).
    offered_start: int | None = None
    offered_end: int | None = None

    @property
    def found(self) -> bool:
        return self.start is not None

    @property
    def span(self) -> tuple[int, int] | None:
        if self.start is None or self.end is None:
            return None
        return (self.start, self.end)

    @property
    def offered(self) -> tuple[int, int] | None:
        """The best candidate offered for confirmation when nothing was found, if any."""
        if self.offered_start is None or self.offered_end is None:
            return None
        return (self.offered_start, self.offered_end)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "start": self.start,
            "end": self.end,
            "score": round(self.score, 4),
            "candidates": self.candidates,
            "reason": self.reason,
            "detail": self.detail,
            "page": self.page,
            "version": self.version,
            "kept": round(self.kept, 4),
            "offered_start": self.offered_start,
            "offered_end": self.offered_end,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Resolution:
        return cls(
            status=str(data["status"]),
            start=data.get("start"),
            end=data.get("end"),
            score=float(data.get("score", 0.0)),
            candidates=int(data.get("candidates", 0)),
            reason=str(data.get("reason", "")),
            detail=str(data.get("detail", "")),
            page=data.get("page"),
            version=str(data.get("version", RESOLVER_VERSION)),
            kept=float(data.get("kept", 0.0)),
            offered_start=data.get("offered_start"),
            offered_end=data.get("offered_end"),
        )


# ---------------------------------------------------------------------------
# Folding
# ---------------------------------------------------------------------------

_PUNCT = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u2039": "'",
        "\u203a": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u2043": "-",
        "\ufe58": "-",
        "\ufe63": "-",
        "\uff0d": "-",
    }
)

#: Markdown's emphasis and code marks and its escape character: presentation, not text. A
#: parse that turned HTML into Markdown is full of them and a plain-text parse has none.
_MARKUP = frozenset("*_`\\[]|#")
#: Markdown that is not text at all, dropped whole: an image (its alt text is a description,
#: not prose; brackets nested once in it and line breaks included), a link's destination
#: and title after the link text (`](url "title")`; URLs wrapped at a hyphen and parentheses
#: escaped or nested once included), a table's header rule (`---|---`, `| --- |` for one
#: column) or a rule line (`---`), and the marker of a nested or definition list item at
#: the start of a line (`+ `, `: `). A plain-text parse of the same page has none of these.
_MARKDOWN_NOISE = re.compile(
    r"""!\[(?:[^\[\]]|\\.|\[[^\[\]]{0,200}\]){0,200}\]"""  # image alt text ...
    r"""\((?:[^()\s\\]|\\.|-\n|\([^()\s]{0,200}\)){0,800}(?:\s+"[^"]{0,300}")?\s*\)"""
    r"""|\]\((?:[^()\s\\]|\\.|-\n|\([^()\s]{0,200}\)){0,800}(?:\s+"[^"]{0,300}")?\s*\)"""
    r"""|^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$"""
    # a glyph the PDF gives no character for: pdfminer writes "(cid:16)", pypdf the raw
    # control character chr(16) (dropped as a control character below)
    r"""|\(cid:\d{1,5}\)""",
    re.MULTILINE,
)
#: The marker of a nested or definition list item at the start of a line (see above).
_LIST_MARKER = re.compile(r"\n[ \t]*[+:][ \t]")
#: Markdown's blockquote marks at the start of a line ("> ", "> > "): markitdown writes them
#: where a plain-text parse of the same page has only the quoted lines.
#: (``^`` of a multiline pattern is "at the start or right after a line feed"; a pattern
#: beginning with a lookbehind would be tried at every position.)
_BLOCKQUOTE = re.compile(r"^[ \t]*>[ \t>]*", re.MULTILINE)
#: A hyphen between two letters, possibly across a line break: "infor-\nmation",
#: "well-known". Dropped on both sides, so all spellings of a hyphenated word compare equal.
#: The hyphen comes first and the letter before it is checked behind it: a pattern beginning
#: with its set of hyphens is searched for in C, one beginning with a lookbehind is tried
#: at every position.
_JOINING_HYPHEN = re.compile(
    r"[-\u00ad\u2010\u2011](?<=[^\W\d_][-\u00ad\u2010\u2011])(?=\s*[^\W\d_])"
)


def _cuts(text: str) -> list[tuple[int, int]]:
    """Spans folding drops whole: Markdown noise and joining hyphens (unsorted)."""
    # each pattern needs one of these substrings to match at all; checking for them first
    # (in C) spares running the patterns over the many texts and quotes that have none
    noise = "](" in text or "![" in text or "---" in text or "(cid:" in text
    cuts = _matches_from(_MARKDOWN_NOISE, text, _noise_starts(text)) if noise else []
    if "\n" in text and ("+" in text or ":" in text):
        cuts += [m.span() for m in _LIST_MARKER.finditer(text)]
    if ">" in text:
        cuts += _matches_from(_BLOCKQUOTE, text, _line_starts_holding(text, ">"))
    if "-" in text or "\u00ad" in text or "\u2010" in text or "\u2011" in text:
        cuts += [(m.start(), m.start() + 1) for m in _JOINING_HYPHEN.finditer(text)]
    return cuts


def _matches_from(pattern: re.Pattern, text: str, starts: list[int]) -> list[tuple[int, int]]:
    """The spans `pattern.finditer(text)` finds, given every place a match can start
    (sorted): each is tried in turn, as the scan would reach it, skipping those inside the
    match before. The regular expression runs only where a match can begin: scanning a
    whole parse for an alternation that starts at a line's start was most of the cost of
    folding one."""
    spans: list[tuple[int, int]] = []
    done = 0
    match = pattern.match
    for at in starts:
        if at < done:
            continue
        m = match(text, at)
        if m is not None and m.end() > at:
            spans.append((at, m.end()))
            done = m.end()
    return spans


def _noise_starts(text: str) -> list[int]:
    """Every place a match of `_MARKDOWN_NOISE` can start, sorted: an image's "![", a link
    destination's "](", a glyph placeholder's "(cid:", and the start of each line holding
    "---" (a table's or a page's rule)."""
    starts = find_all(text, "](")
    for opener in ("![", "(cid:"):
        if opener in text:
            starts += find_all(text, opener)
    if "---" in text:
        starts += _line_starts_holding(text, "---")
    return sorted(set(starts))


def _line_starts_holding(text: str, piece: str) -> list[int]:
    """The start of each line holding `piece`, in order, each once (a rule line holds
    "---" dozens of times: the search goes on from the next line)."""
    starts: list[int] = []
    at = text.find(piece)
    while at >= 0:
        starts.append(text.rfind("\n", 0, at) + 1)
        after = text.find("\n", at + len(piece))
        at = text.find(piece, after + 1) if after >= 0 else -1
    return starts


_ATTACH = 1  # dropped, but belongs to the character before it (combining marks, ZWJ)
_SEPARATE = 0  # dropped, belongs to nothing (whitespace, soft hyphen, zero-width space)

_fold_cache: dict[str, tuple[str, int]] = {}


def _is_attached_mark(ch: str) -> bool:
    o = ord(ch)
    return (
        0x300 <= o <= 0x36F
        or 0x1AB0 <= o <= 0x1AFF
        or 0x1DC0 <= o <= 0x1DFF
        or 0x20D0 <= o <= 0x20FF
        or 0xFE00 <= o <= 0xFE0F
        or 0xFE20 <= o <= 0xFE2F
        or 0xE0100 <= o <= 0xE01EF
        or o == 0x200D
    )


def _fold_char(ch: str) -> tuple[str, int]:
    """Fold one code point: (replacement, how to attach it if the replacement is empty)."""
    hit = _fold_cache.get(ch)
    if hit is not None:
        return hit
    if _is_attached_mark(ch):
        result = ("", _ATTACH)
    elif ch in _MARKUP or ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc"):
        result = ("", _SEPARATE)
    else:
        s = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())
        s = s.translate(_PUNCT)
        s = "".join(
            c
            for c in s
            if not (_is_attached_mark(c) or c.isspace() or unicodedata.category(c) == "Cf")
        )
        result = (s, _SEPARATE)
    _fold_cache[ch] = result
    return result


@dataclass(frozen=True, slots=True)
class FoldedText:
    """A folded copy of a text and an exact map back to the original.

    `text[i]` came from original code point `starts[i]`; a match `text[a:b]` covers the
    original `[starts[a], ends[b - 1])`. Both arrays are non-decreasing. `ends` reaches past
    combining marks and joiners that belong to the character, never past whitespace.
    """

    text: str
    starts: array
    ends: array

    def original_span(self, a: int, b: int) -> tuple[int, int]:
        """The original half-open span of folded `[a, b)` (b > a)."""
        return self.starts[a], self.ends[b - 1]

    def folded_index(self, original: int) -> int:
        """The first folded position whose character comes from at or after `original`."""
        return bisect_left(self.starts, original)


def fold_text(text: str) -> FoldedText:
    """Fold `text` for comparison, keeping a code-point-exact map back to it.

    Applied: Unicode NFKD compatibility decomposition (ligatures, full-width forms, "…"),
    removal of Latin/Greek/Cyrillic combining accents, case folding, smart quotes and dashes
    to ASCII, removal of all whitespace, soft hyphens, zero-width characters and Markdown's
    emphasis/code/escape/link/table/heading marks (``* _ ` \\ [ ] | #``), removal of whole
    Markdown images, link destinations and table rules, and removal
    of hyphens joining two letters (so "infor-\\nmation" and "information" compare equal).
    Whitespace is removed rather than collapsed because some PDF parsers emit none at all
    between words.
    """
    n = len(text)
    cuts = _cuts(text)
    # one code point per code point: the folded character, or a marker (dropped, attached
    # to the character before, or folding to several characters)
    codes = _marks(text)
    for a, b in cuts:
        codes[a:b] = 0  # `_DROP`
    marked = codes.tobytes().decode("utf-32-le", "surrogatepass")
    assert n == len(marked)
    # the map is worked out for all code points at once (numpy): each gives as many folded
    # characters as it folds to; only the few folding to several or attaching to the one
    # before are looked at one by one
    special = np.flatnonzero((codes == 1) | (codes == 2)).tolist()
    if not special:
        starts = np.flatnonzero(codes)
        return FoldedText(marked.replace(_DROP, ""), _offsets(starts), _offsets(starts + 1))
    counts = (codes > 2).astype(np.int64)
    folded: list[str] = []
    attached: list[int] = []
    at = 0
    for i in special:
        folded.append(marked[at:i].replace(_DROP, ""))
        if marked[i] == _SEVERAL:
            folded.append(_fold_char(text[i])[0])
            counts[i] = len(folded[-1])
        else:
            attached.append(i)
        at = i + 1
    folded.append(marked[at:].replace(_DROP, ""))
    starts = np.repeat(np.arange(n), counts)
    ends = starts + 1
    _attach(ends, counts, attached)
    return FoldedText("".join(folded), _offsets(starts), _offsets(ends))


def _attach(ends: np.ndarray, counts: np.ndarray, attached: list[int]) -> None:
    """Stretch `ends` over the marks that belong to the character before them: a mark right
    after a kept character, or after a mark that belonged to one, carries the end of that
    character's folded characters past it; a mark after a dropped one belongs to nothing."""
    firsts = np.cumsum(counts) - counts  # where each code point's folded characters begin
    carrier, reach = -1, -1
    for i in attached:
        if i and counts[i - 1]:
            carrier = i - 1
        elif reach != i:
            carrier = -1
        if carrier >= 0:
            ends[firsts[carrier] : firsts[carrier] + counts[carrier]] = i + 1
            reach = i + 1


def _offsets(values: np.ndarray) -> array:
    """Offsets as a compact `array` (4 bytes each while a text is under 2**31 code points)."""
    code = "i" if not len(values) or values[-1] < 2**31 else "q"
    return array(code, values.astype(np.int32 if code == "i" else np.int64).tobytes())


_DROP, _SEVERAL, _ATTACHED = "\x00", "\x01", "\x02"


class _MarkTable(dict):
    """`str.translate` table keeping length: code point -> its one folded character or a
    marker (`_DROP`, `_ATTACHED` for a dropped mark that belongs to the character before,
    `_SEVERAL` when it folds to more than one character)."""

    def __missing__(self, code: int) -> str:
        out, attach = _fold_char(chr(code))
        if len(out) == 1 and out not in (_DROP, _SEVERAL, _ATTACHED):
            value = out
        elif out:
            value = _SEVERAL
        else:
            value = _ATTACHED if attach == _ATTACH else _DROP
        self[code] = value
        return value


_MARK_TABLE = _MarkTable()
#: `_MARK_TABLE` for the code points below U+10000, as code points, filled as they are met
#: (`_UNSEEN` until then): a whole text is marked by one look-up in numpy, where
#: `str.translate` looks each character up in the dictionary one at a time.
_UNSEEN = np.uint32(0xFFFFFFFF)
_MARK_CODES = np.full(0x10000, _UNSEEN, dtype=np.uint32)


def _marks(text: str) -> np.ndarray:
    """`text.translate(_MARK_TABLE)` as a writable array of code points."""
    codes = _code_points(text)
    if not len(codes) or codes.max() >= len(_MARK_CODES):
        return _code_points(text.translate(_MARK_TABLE)).copy()
    marks = _MARK_CODES[codes]
    unseen = marks == _UNSEEN
    if unseen.any():
        for code in np.unique(codes[unseen]).tolist():
            _MARK_CODES[code] = ord(_MARK_TABLE[code])
        marks = _MARK_CODES[codes]
    return marks


class _FoldTable(dict):
    """`str.translate` table: code point -> folded string (None when dropped), filled lazily."""

    def __missing__(self, code: int) -> str | None:
        value = _fold_char(chr(code))[0] or None
        self[code] = value
        return value


_FOLD_TABLE = _FoldTable()


def _ascii_fold_bytes() -> tuple[bytes, bytes]:
    """`_FOLD_TABLE` for ASCII text, as `bytes.translate` takes it: the table, and the
    characters folding drops. Every ASCII character folds to one ASCII character or to
    nothing; a table that broke that could not be written so."""
    table, dropped = bytearray(range(256)), bytearray()
    for code in range(128):
        folded = _fold_char(chr(code))[0]
        if not folded:
            dropped.append(code)
        elif len(folded) == 1 and folded.isascii():
            table[code] = ord(folded)
        else:
            raise ValueError(f"{chr(code)!r} folds to {folded!r}, not one ASCII character")
    return bytes(table), bytes(dropped)


_ASCII_FOLD, _ASCII_DROPPED = _ascii_fold_bytes()


def _fold_chars(text: str) -> str:
    """Each character of `text` folded alone (`_FOLD_TABLE`). An ASCII text, most quotes
    and contexts, is folded as bytes: one C call, where `str.translate` looks each
    character up in the table's dictionary (five times the time for a quote)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_FOLD, _ASCII_DROPPED).decode("ascii")
    return text.translate(_FOLD_TABLE)


def fold(text: str) -> str:
    """The folded form of `text` alone (what quotes and context are compared as).

    Always equal to `fold_text(text).text`, without building the offset map.
    """
    cuts = _cuts(text)
    if cuts:
        cuts.sort()
        pieces, at = [], 0
        for a, b in cuts:
            if a > at:
                pieces.append(text[at:a])
            at = max(at, b)
        pieces.append(text[at:])
        text = "".join(pieces)
    return _fold_chars(text)


#: `fold` of a whole quote, remembered for the few calls of one resolution: each tier, and
#: the checks after it, would fold the same quote again.
_fold_quote = lru_cache(maxsize=16)(fold)


# ---------------------------------------------------------------------------
# Candidates and choosing between them
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Candidate:
    start: int
    end: int
    score: float
    fa: int  # folded span, for context comparison
    fb: int
    note: str = ""
    verbatim: bool = False


def _chosen(cands: list[_Candidate], res: Resolution) -> _Candidate:
    """The candidate a found resolution was made from."""
    return next(c for c in cands if (c.start, c.end) == (res.start, res.end))


def find_all(
    haystack: str, needle: str, begin: int = 0, limit: int | None = None, end: int | None = None
) -> list[int]:
    """Every start of `needle` in `haystack` from `begin` on, overlapping copies included.

    The one way copies of a quote are counted, here and wherever an `occurrence` is written
    or read (anchors from a highlight, imports, exports): context-grid's resolver counts the
    same way (`contextgrid.score.anchor._all_occurrences`), so an occurrence we write picks
    the copy context-grid picks. Stops after `limit + 1` copies when `limit` is given, and
    looks only at copies ending by `end` when that is given.
    """
    found: list[int] = []
    if not needle:
        return found
    end = len(haystack) if end is None else end
    pos = haystack.find(needle, begin, end)
    while pos != -1:
        found.append(pos)
        if limit is not None and len(found) > limit:
            break
        pos = haystack.find(needle, pos + 1, end)
    return found


#: What separates the words of a passage: ASCII whitespace only (a no-break space is a
#: character of the passage, as in `_layout`).
_WHITESPACE_RUN = re.compile(r"[ \t\n\r\f\v]+")


def _one_space(text: str) -> str:
    """`text` with each run of whitespace one space, as `_Flat` writes it: in C, with
    `str.replace` and `str.split` (a regular expression's split cost more than the search
    for the copies, and `str.translate` more still on a text beyond ASCII)."""
    for ch in "\t\n\r\f\v":
        text = text.replace(ch, " ")
    return " ".join(filter(None, text.split(" "))) if "  " in text else text


class _Flat:
    """A text with each run of whitespace one space (`text`), and where its runs of more than
    one character were, to map offsets between the two: each such run's place in the flat
    text (`at`) and in the text (`began`), and the characters taken out before each run
    (`removed`, one longer: its last is all of them). A run of one character needs no entry,
    so most texts hold a few of these per paragraph, not an offset per character."""

    __slots__ = ("at", "began", "removed", "text")

    def __init__(self, text: str) -> None:
        codes = _code_points(text)
        space = (codes == 32) | ((codes >= 9) & (codes <= 13))  # `_WHITESPACE_RUN`'s set
        edges = np.diff(space.view(np.int8), prepend=np.int8(0), append=np.int8(0))
        firsts, lasts = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        keep = ~space
        keep[firsts] = True
        flat = codes[keep]
        flat[space[keep]] = 32
        self.text = flat.tobytes().decode("utf-32-le", "surrogatepass")
        lengths = lasts - firsts
        longer = lengths > 1
        began = firsts[longer]
        removed = np.concatenate(([0], np.cumsum(lengths[longer] - 1)))
        self.began = _offsets(began)
        self.at = _offsets(began - removed[:-1])
        self.removed = _offsets(removed)

    def original(self, at: int) -> int:
        """The text's offset of flat position `at` (a run's space: where the run starts)."""
        return at + self.removed[bisect_left(self.at, at)] if self.at else at

    def flat_index(self, offset: int) -> int:
        """The first flat position that comes from at or after the text's `offset`."""
        runs = bisect_left(self.began, offset)
        if not runs:
            return min(max(offset, 0), len(self.text))
        before, removed = self.began[runs - 1], self.removed[runs - 1]
        length = self.removed[runs] - removed + 1
        return min(offset - removed - min(length, offset - before) + 1, len(self.text))


def passage_copies(
    text: str, quote: str, begin: int = 0, stop: int | None = None
) -> list[tuple[int, int]]:
    """Every copy of `quote` a reader would call the same passage, starting from `begin` up
    to (not including) `stop`: the same characters, whitespace aside (a copy broken over
    other lines, indented or with a blank line inside counts; one differing in case or in
    any mark does not). Overlapping copies and copies inside longer words count, as
    `find_all` counts them.

    The one way an `occurrence` is counted: where a highlight records it
    (`occurrence_at`) and where the resolver reads it back.
    """
    return _flat_copies(_Flat(text), quote, begin, stop)


def _flat_copies(
    flat: _Flat, quote: str, begin: int = 0, stop: int | None = None
) -> list[tuple[int, int]]:
    needle = _one_space(quote.strip(_ASCII_SPACE))
    k = len(needle)
    original = flat.original
    # a copy starting before `stop` starts before its flat position (a character to spare)
    end = None if stop is None else flat.flat_index(stop) + k + 1
    spans = [
        (original(at), original(at + k - 1) + 1)
        for at in find_all(flat.text, needle, flat.flat_index(begin), end=end)
    ]
    return spans if stop is None else [span for span in spans if span[0] < stop]


def occurrence_at(text: str, quote: str, start: int, begin: int = 0) -> int:
    """The `occurrence` of the copy of `quote` that starts at `start`, counted from `begin`.

    `begin` is where counting starts: the start of the page the anchor's `page_hint` names
    (a page hint means the copies that start on that page), or 0 for an anchor without a
    page hint. Copies are counted as `passage_copies` counts them: those that start before
    `start`, overlapping ones included.
    """
    return len(passage_copies(text, quote, begin, stop=start))


def min_fuzzy_score(folded_length: int) -> float | None:
    """The fuzzy score a quote of this folded length needs, or None if it may not go fuzzy."""
    if folded_length < THRESHOLDS.fuzzy_min_length:
        return None
    if folded_length >= THRESHOLDS.fuzzy_long_from:
        return THRESHOLDS.fuzzy_score_long
    frac = (THRESHOLDS.fuzzy_long_from - folded_length) / (
        THRESHOLDS.fuzzy_long_from - THRESHOLDS.fuzzy_min_length
    )
    return (
        THRESHOLDS.fuzzy_score_long
        + (THRESHOLDS.fuzzy_score_short - THRESHOLDS.fuzzy_score_long) * frac
    )


_CIGAR = re.compile(r"(\d+)([=XID])")


@dataclass(frozen=True, slots=True)
class _Count:
    """What counting copies for an occurrence needs to know, passed along the choice."""

    tier: str
    n: int  # every candidate, on any page
    occurrence: int
    qlen: int
    quote: str
    context: _Context
    alike: bool
    page_unused: bool
    where: str

    @property
    def letterless(self) -> bool:
        return bool(self.quote) and _letterless(self.quote)


def _array_bytes(values: Sequence[int]) -> int:
    return values.itemsize * len(values) if isinstance(values, array) else sys.getsizeof(values)


#: A character beyond one byte (`_SeedIndex._keys`).
_BEYOND_LATIN1 = re.compile(r"[^\x00-\xff]")
#: Multiplier of the seed pieces' polynomial hash (odd; arithmetic wraps at 64 bits).
_HASH_BASE = np.uint64(0x100000001B3)


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _piece_hashes(codes: np.ndarray, length: int, step: int = 1) -> np.ndarray:
    """A 64-bit hash of each `length`-character piece of `codes` starting every `step`
    characters from the first (`range(0, len(codes) - length + 1, step)`): the polynomial
    in `_HASH_BASE` of its characters, built by doubling (pieces of 2, 4, ... characters
    joined as `head * base ** len(tail) + tail`), a few whole-array operations rather than
    two a character."""
    if len(codes) < length:
        return np.zeros(0, dtype=np.uint64)
    if step == 1 and len(codes) <= _SHORT_CODES:
        # the same polynomial summed at once, each piece's characters (a view of them as
        # rows) times the powers of the base: two calls where the doubling makes a dozen,
        # cheaper for a quote or a window (timed, half the cost for a quote's pieces)
        return _windows(codes.astype(np.uint64), length) @ _base_powers(length)
    done: np.ndarray | None = None
    done_len, part, part_len, left = 0, codes.astype(np.uint64), 1, length
    while left:
        if left & 1:
            done = part if done is None else _joined(done, done_len, part, part_len)
            done_len += part_len
        left >>= 1
        if left:
            part, part_len = _joined(part, part_len, part, part_len), 2 * part_len
    assert done is not None
    return done[::step] if step > 1 else done


def _joined(head: np.ndarray, head_len: int, tail: np.ndarray, tail_len: int) -> np.ndarray:
    """The hashes of the pieces of `head_len + tail_len` characters, from those of their
    first `head_len` (`head`) and last `tail_len` (`tail`) characters."""
    n = len(head) - tail_len
    return head[:n] * _base_power(tail_len) + tail[head_len:][:n]


#: The most characters `_piece_hashes` sums as rows: beyond about a couple of thousand the
#: doubling's few whole-array operations cost less than the rows' products (timed).
_SHORT_CODES = 1024


@lru_cache(maxsize=16)
def _base_powers(length: int) -> np.ndarray:
    """The powers of `_HASH_BASE` each character of a `length`-character piece is weighed
    by in its hash, from the first character's `_HASH_BASE ** (length - 1)` to 1."""
    return np.array([int(_base_power(length - 1 - i)) for i in range(length)], dtype=np.uint64)


@lru_cache(maxsize=64)
def _base_power(exponent: int) -> np.uint64:
    """`_HASH_BASE ** exponent`, wrapping at 64 bits: the few powers the seed and k-mer
    lengths need, worked out once rather than at every join."""
    return np.uint64(pow(int(_HASH_BASE), exponent, 2**64))


class _SeedIndex:
    """Where each `seed`-character piece of a folded text starts, sampled every `seed_step`:
    the pieces' hashes, sorted, beside their offsets (in no order among equal hashes: a
    quote's votes are sorted, and which of them count does not depend on it), 12 bytes a
    sampled piece. A dict of lists of offsets held the same in 20 to 50 bytes a character
    of text, which made the worker's cache of prepared parses several times its budget."""

    __slots__ = ("by_bytes", "hashes", "offsets", "one_piece_a_hash", "text")

    def __init__(self, ftext: str) -> None:
        seed = THRESHOLDS.seed
        starts = np.arange(0, max(0, len(ftext) - seed + 1), THRESHOLDS.seed_step)
        # a text of one-byte characters has its pieces keyed by their bytes, which no two
        # different pieces share (`_byte_keys`): the same pieces pass `max_seed_hits` and
        # the same pieces are found as with hashes that no two pieces share
        keys = _byte_keys(ftext, seed)
        self.by_bytes = keys is not None
        codes: np.ndarray | None = None
        if keys is not None:
            hashes = keys[:: THRESHOLDS.seed_step]
        else:
            codes = _code_points(ftext)
            hashes = _piece_hashes(codes, seed, THRESHOLDS.seed_step)
        # (numpy's default sort, not its stable one: four times faster here)
        order = np.argsort(hashes)
        hashes, starts = hashes[order], starts[order]
        # Pieces seen more than `max_seed_hits` times say nothing about where a passage is.
        # (the hashes are sorted: their runs are counted where they change, not sorted again)
        changes = np.flatnonzero(hashes[1:] != hashes[:-1]) + 1
        counts = np.diff(np.concatenate(([0], changes, [len(hashes)])))
        keep = np.repeat(counts <= THRESHOLDS.max_seed_hits, counts)
        self.hashes = hashes[keep]
        self.offsets = starts[keep].astype(np.int32 if len(ftext) < 2**31 else np.int64)
        self.text = ftext
        if codes is None:
            self.one_piece_a_hash = True  # a key is its piece's characters
            return
        # Whether the indexed pieces sharing a hash all hold the same characters (two
        # different pieces may share a 64-bit hash, but none has been seen to): then a
        # quote's piece is compared with one indexed piece of its hash, not with each.
        alike = np.flatnonzero(self.hashes[1:] == self.hashes[:-1])
        rows = _windows(codes, seed) if len(alike) else codes[:0]
        at = self.offsets[alike]
        self.one_piece_a_hash = bool((rows[at] == rows[self.offsets[alike + 1]]).all())

    @property
    def nbytes(self) -> int:
        return self.hashes.nbytes + self.offsets.nbytes

    def votes(self, qf: str) -> np.ndarray:
        """Where the folded quote would start in the text, one vote for each of its
        `seed`-character pieces found there (the piece's place in the text less its place in
        the quote), sorted. The pieces are looked up together; only a piece whose hash is
        indexed is compared with the text, since two pieces may share a hash and only the
        piece's own copies count."""
        seed = THRESHOLDS.seed
        if len(qf) < seed or not len(self.hashes):
            return np.zeros(0, dtype=np.int64)
        keys = self._keys(qf)
        # the quote's pieces looked up in order of key: numpy's search starts each key where
        # the one before it ended when they come sorted (timed, the look-up is about a
        # twentieth cheaper); `where` keeps each piece's place in the quote, and the votes,
        # sorted below, are the same whatever order they were found in
        where = keys.argsort()
        hashes = keys[where]
        # (the arrays' own methods, not numpy's functions of the same name: the functions
        # only hand over to them, at a microsecond a call, and a quote makes a dozen calls)
        firsts = self.hashes.searchsorted(hashes, "left")
        # the pieces whose hash is indexed at all: only those are looked up again
        hit = (self.hashes[np.minimum(firsts, len(self.hashes) - 1)] == hashes).nonzero()[0]
        firsts, place = firsts[hit], where[hit]
        if self.one_piece_a_hash and not self.by_bytes:
            # each indexed piece of a hash holds the characters of the first: a piece that
            # is not the first's is none of them
            own = self._same(qf, self.offsets[firsts], place)
            hit, firsts, place = hit[own], firsts[own], place[own]
        counts = self.hashes.searchsorted(hashes[hit], "right") - firsts
        ends = counts.cumsum()
        total = int(ends[-1]) if len(ends) else 0
        if total > len(counts):
            # every index of the hit pieces' runs of equal hashes, with the piece it is for
            # (most quotes' pieces are each indexed once: then each run is its first index)
            firsts = (firsts + counts - ends).repeat(counts) + np.arange(total)
            place = place.repeat(counts)
        # (the offsets, 32-bit, less the places, 64-bit, make 64-bit votes)
        at = self.offsets[firsts]
        votes = at - place
        if not self.one_piece_a_hash:
            votes = votes[self._same(qf, at, place)]
        votes.sort()
        return votes

    def _keys(self, qf: str) -> np.ndarray:
        """The key of each `seed`-character piece of the folded quote, as the text's pieces
        are keyed. A piece holding a character beyond one byte cannot be in a text keyed by
        its bytes: such characters are read as NUL, which no folded text holds (folding drops
        control characters), so the piece's key is no indexed piece's."""
        seed = THRESHOLDS.seed
        if not self.by_bytes:
            return _piece_hashes(_code_points(qf), seed)
        keys = _byte_keys(qf, seed)
        return keys if keys is not None else _byte_keys(_BEYOND_LATIN1.sub("\0", qf), seed)

    def _same(self, qf: str, at: np.ndarray, off: np.ndarray) -> np.ndarray:
        """Whether the text's piece at each of `at` is the quote's at `off`, piece by
        piece."""
        seed, text = THRESHOLDS.seed, self.text
        return np.array(
            [
                text[p : p + seed] == qf[o : o + seed]
                for p, o in zip(at.tolist(), off.tolist(), strict=True)
            ],
            dtype=bool,
        )


def _clusters(votes: np.ndarray, gap: int) -> list[tuple[int, int, int]]:
    """The sorted votes in runs whose neighbours are at most `gap` apart, as `(votes, first,
    last)`, most votes first (in order of place among equal counts). A loop over a list:
    a quote has tens of votes, too few for numpy's calls to pay."""
    ordered = votes.tolist()
    clusters: list[tuple[int, int, int]] = []
    lo = hi = ordered[0]
    count = 1
    for v in ordered[1:]:
        if v - hi <= gap:
            hi = v
            count += 1
        else:
            clusters.append((count, lo, hi))
            lo = hi = v
            count = 1
    clusters.append((count, lo, hi))
    # (Python's sort keeps equal counts in their order when reversed too, as sorting on
    # the negated count did, without a Python call per cluster)
    clusters.sort(key=itemgetter(0), reverse=True)
    return clusters


class PreparedText:
    """One parse, folded once, ready to resolve many quotes against.

    Build with `prepare(text, page_starts=...)`. Page `i + 1` starts at `page_starts[i]`, as
    in context-grid; page hints name pages that way.
    """

    __slots__ = ("_flat", "_seeds", "folded", "page_starts", "text")

    def __init__(self, text: str, page_starts: Sequence[int] | None = None) -> None:
        self.text = text
        self.page_starts = list(page_starts) if page_starts else None
        self.folded = fold_text(text)
        self._seeds: _SeedIndex | None = None
        self._flat: _Flat | None = None

    def nbytes(self) -> int:
        """About how much memory this holds, with the indexes built so far (they are built as
        quotes need them, so it grows): what a cache of prepared parses is bounded by."""
        folded = self.folded
        held = sys.getsizeof(self.text) + sys.getsizeof(folded.text)
        held += _array_bytes(folded.starts) + _array_bytes(folded.ends)
        if self._flat is not None:
            flat = self._flat
            held += sys.getsizeof(flat.text) + sum(
                _array_bytes(a) for a in (flat.at, flat.began, flat.removed)
            )
        return held + (self._seeds.nbytes if self._seeds is not None else 0)

    def _seed_index(self) -> _SeedIndex:
        """Where each `seed`-character piece of the folded text starts, every `seed_step`.

        Built on the first quote that needs approximate matching, then shared by all: looking
        a quote's pieces up here replaces a scan of the whole text per piece. Sampling every
        `seed_step` positions keeps it small; any exact run of `seed + seed_step - 1`
        characters still hits it. Pieces seen more than `max_seed_hits` times say nothing
        about where a passage is and are left out.
        """
        if self._seeds is None:
            self._seeds = _SeedIndex(self.folded.text)
        return self._seeds

    # -- pages ---------------------------------------------------------------

    def page_at(self, offset: int) -> int:
        """The page (from 1) holding `offset`, as `textpages.page_of` counts pages."""
        return page_of(self.page_starts, offset)

    def _pages_of(self, start: int, end: int) -> range:
        return range(self.page_at(start), self.page_at(max(start, end - 1)) + 1)

    # -- the public entry point -------------------------------------------

    def resolve(
        self,
        quote: str,
        *,
        occurrence: int = 0,
        page_hint: int | None = None,
        prefix: str = "",
        suffix: str = "",
    ) -> Resolution:
        """Find `quote` in this parse. See `resolve` for the meaning of the arguments."""
        occurrence = int(occurrence or 0)
        res = self._resolve(quote, occurrence, page_hint, prefix, suffix)
        if res.start is None or res.end is None:
            return res
        q = quote.strip()
        start, end = self._with_edge_marks(q, res.start, res.end)
        res = res if (start, end) == (res.start, res.end) else replace(res, start=start, end=end)
        return self._too_long(q, res) if res.status == FUZZY else res

    def _too_long(self, q: str, res: Resolution) -> Resolution:
        """A fuzzy span far longer than the quote is refused, and offered: whatever path made
        it, the passage was not found, only a stretch holding some of its words."""
        assert res.start is not None and res.end is not None
        qlen = len(_fold_quote(q))
        span = len(fold(self.text[res.start : res.end]))
        if span <= THRESHOLDS.max_span_stretch * qlen + THRESHOLDS.max_span_extra:
            return res
        return Resolution(
            NOT_FOUND,
            score=res.score,
            reason="span_too_long",
            detail=(
                f"the closest passage runs {span} characters (folded) for a {qlen}-character "
                "quote, so it is not the quote; it is offered for a person to confirm or correct"
            ),
            page=res.page,
            kept=res.kept,
            offered_start=res.start,
            offered_end=res.end,
        )

    def _with_edge_marks(self, q: str, start: int, end: int) -> tuple[int, int]:
        """The span widened over the Markdown marks (`_`, `|`, `#`, ...) the quote begins or
        ends with, when the text right outside it holds them.

        Folding drops such marks, so a match ends on the quote's last letter; but a quote
        ending "Purge (_" highlighted the underscore, which this parse may write
        "(****\\_" (bold and escaped). Other marks and whitespace on the way are stepped
        over; nothing else is, and the span grows only if every mark is found.
        """
        text = self.text
        body = len(q.rstrip(_EDGE_CHARS))
        tail = [ch for ch in q[body:] if ch in _MARKUP]
        if tail:
            pos, want = end, 0
            while pos < len(text) and want < len(tail) and pos - end <= THRESHOLDS.edge_reach:
                ch = text[pos]
                if ch == tail[want]:
                    want += 1
                elif ch not in _MARKUP and not ch.isspace():
                    break
                pos += 1
            if want == len(tail):
                end = pos
        lead = [ch for ch in q[: len(q) - len(q.lstrip(_EDGE_CHARS))] if ch in _MARKUP]
        if lead:
            pos, want = start, len(lead)
            while pos > 0 and want and start - pos <= THRESHOLDS.edge_reach:
                ch = text[pos - 1]
                if ch == lead[want - 1]:
                    want -= 1
                elif ch not in _MARKUP and not ch.isspace():
                    break
                pos -= 1
            if not want:
                start = pos
        return start, end

    def _resolve(
        self, quote: str, occurrence: int, page_hint: int | None, prefix: str, suffix: str
    ) -> Resolution:
        if occurrence < 0:
            raise ValueError(f"occurrence must be >= 0, got {occurrence}")
        q = quote.strip() if quote else ""
        qf = _fold_quote(q) if q else ""
        if not qf:
            return Resolution(
                NOT_FOUND,
                reason="empty_quote",
                detail="the quote is empty (or only whitespace), so there is nothing to find",
            )
        if not self.folded.text:
            return Resolution(
                NOT_FOUND,
                reason="empty_text",
                detail="the parse has no text, so no quote can be found in it",
            )
        context = _Context(prefix, suffix, q)
        # tiers 1 and 2: copies of the passage, then folded copies
        res, out_of_range = self._by_copies(q, qf, occurrence, page_hint, context)
        if res is not None:
            return res
        # tier 3: approximate
        need = min_fuzzy_score(len(qf))
        if need is None:
            return self._too_short(q, qf, occurrence, page_hint, context, out_of_range)
        res, scored, bound, out_of_range = self._by_fuzzy(
            q, qf, need, occurrence, page_hint, context, out_of_range
        )
        if res is not None:
            return res
        return self._not_present(
            q, qf, need, (occurrence, page_hint), context, out_of_range, scored, bound
        )

    def _too_short(
        self,
        q: str,
        qf: str,
        occurrence: int,
        page_hint: int | None,
        context: _Context,
        out_of_range: int,
    ) -> Resolution:
        """A quote too short to match approximately: line by line with its context, or not
        found (with the passage its context places offered, `_offer_by_context`)."""
        if out_of_range:
            res = self._out_of_range(out_of_range, occurrence)
            return self._offer_by_context(res, q, qf, page_hint, context)
        res = self._by_pieces(q, qf, context)
        if res is not None:
            return res
        res = Resolution(
            NOT_FOUND,
            reason="not_present_short",
            detail=(
                f"no exact or normalised copy of the quote; at {len(qf)} characters "
                f"(folded) it is too short to match approximately without risking a "
                f"wrong span (fuzzy matching needs {THRESHOLDS.fuzzy_min_length})"
            ),
        )
        return self._offer_by_context(res, q, qf, page_hint, context)

    def _by_fuzzy(
        self,
        q: str,
        qf: str,
        need: float,
        occurrence: int,
        page_hint: int | None,
        context: _Context,
        out_of_range: int,
    ) -> tuple[Resolution | None, list[_Candidate], float, int]:
        """Tier 3: near-copies scoring at least `need`, one chosen as copies are, its span
        adjusted (edge lines) and vetoed (ends the alignment guessed). Returns the
        resolution or None, the near-copies scored, the bound `_fuzzy_candidates` turned
        passages away at, and how many copies an out-of-range occurrence had."""
        scored, bound = self._fuzzy_candidates(qf, need - THRESHOLDS.fuzzy_margin)
        accepted = [c for c in scored if c.score >= need and not self._splits_number(c, q, context)]
        if not accepted:
            return None, scored, bound, out_of_range
        rejected = [c for c in scored if c.score < need]
        res = self._choose(FUZZY, accepted, rejected, occurrence, page_hint, context, len(qf), q)
        if res is None:
            return None, scored, bound, max(out_of_range, len(accepted))
        if not res.found:
            return res, scored, bound, out_of_range
        picked = _chosen(accepted, res)
        whole = self._with_edge_lines(picked, q)
        if whole is not picked:
            why = "widened to the quote's edge line read just outside"
            picked, res = whole, self._moved_to(res, whole, why)
        if self._ends_fixed(picked, qf, q, context):
            return self._calibrated(q, res), scored, bound, out_of_range
        # the alignment guessed an end; line by line, its edge lines may still fix them if
        # one holds letters and the other letters, a number of several characters ("2.1")
        # or a context with letters on its side: a slice of a matrix never does
        edges = _split_lines(q)
        by_lines = (
            self._by_pieces(q, qf, context) if _fixes_ends(edges[0], edges[-1], context) else None
        )
        return by_lines or self._ends_not_fixed(q, picked), scored, bound, out_of_range

    def _not_present(
        self,
        q: str,
        qf: str,
        need: float,
        asked: tuple[int, int | None],
        context: _Context,
        out_of_range: int,
        scored: list[_Candidate],
        bound: float,
    ) -> Resolution:
        """No copy and no near-copy: line by line with its context, or not found with the
        closest passage offered, or else the passage its context places (`asked` is the
        occurrence and the page hint)."""
        occurrence, page_hint = asked
        if out_of_range:
            res = self._out_of_range(out_of_range, occurrence)
            return self._offer_by_context(res, q, qf, page_hint, context)
        res = self._by_pieces(q, qf, context)
        if res is not None:
            return res
        best = max((c.score for c in scored), default=0.0)
        offer, kept, why_not = self._offer(q, scored)
        if scored:
            closest = f"the closest passage is {best:.0%} similar"
        elif bound:
            # every passage was turned away before aligning (see `_fuzzy_candidates`)
            closest = f"no passage holds more than {bound:.0%} of it in order"
        else:
            closest = ""
        res = Resolution(
            NOT_FOUND,
            score=best,
            reason="not_present",
            detail=(
                "no copy of the quote in this parse: "
                + (
                    f"{closest}, below the {need:.0%} a {len(qf)}-character quote needs"
                    if closest
                    else "no part of it appears anywhere"
                )
                + ("; it is offered for a person to confirm or correct" if offer else why_not)
            ),
            page=self.page_at(offer.start) if offer else None,
            kept=kept,
            offered_start=offer.start if offer else None,
            offered_end=offer.end if offer else None,
        )
        return self._offer_by_context(res, q, qf, page_hint, context)

    def _offer_by_context(
        self, res: Resolution, q: str, qf: str, page_hint: int | None, context: _Context
    ) -> Resolution:
        """`res` (not found, nothing offered) with the passage the quote's recorded context
        places offered (`_context_gap`), when that passage is at least
        `offer_context_min_score` similar to the quote and holds `offer_min_words_kept` of
        its words, if it has any. Only a highlight records both sides: a quote missing
        either offers nothing so."""
        if not RULES.offer_by_context or res.offered is not None or res.status != NOT_FOUND:
            return res
        gap = self._context_gap(qf, page_hint, context)
        if gap is None:
            return res
        span = self.folded.text[gap[0] : gap[1]]
        score = _similarity(qf, span)
        words = _long_words(q)
        if score < THRESHOLDS.offer_context_min_score or (
            words and not _holds_words(words, span, THRESHOLDS.offer_min_words_kept)
        ):
            return res
        start, end = self.folded.original_span(*gap)
        return replace(
            res,
            detail=(
                f"{res.detail}; the passage its recorded context places ({score:.0%} similar) "
                "is offered for a person to confirm or correct"
            ),
            page=self.page_at(start),
            offered_start=start,
            offered_end=end,
        )

    def _context_window(self, page_hint: int | None, reach: int) -> tuple[int, int]:
        """The folded stretch the hinted page covers, `reach` characters wider either side
        (the whole text without a page)."""
        begin, end = self._page_begin(page_hint), self._page_end(page_hint)
        n = len(self.folded.text)
        w0 = self.folded.folded_index(begin) if begin is not None else 0
        w1 = self.folded.folded_index(end) if end is not None else n
        return max(0, w0 - reach), min(n, w1 + reach)

    def _context_gap(
        self, qf: str, page_hint: int | None, context: _Context
    ) -> tuple[int, int] | None:
        """The folded span between the one copy of the recorded prefix and the one copy of
        the suffix after it on the hinted page (`_context_copy`); with one side alone, the
        quote aligned from (up to) that side. None when neither side can tell
        (`_telling`) or neither is found once, and without both sides recorded."""
        prefix, suffix = context.raw
        if not (prefix.strip() and suffix.strip()):
            return None
        fp, fs = context.prefix, context.suffix
        reach = int(len(qf) * THRESHOLDS.max_span_stretch) + THRESHOLDS.max_span_extra
        w0, w1 = self._context_window(page_hint, FOLDED_CONTEXT_CHARS + THRESHOLDS.max_span_extra)
        ftext = self.folded.text
        a = _context_copy(fp, ftext, (w0, w1), before=True) if _telling(fp, prefix) else None
        b = None
        if _telling(fs, suffix):
            # after the prefix's copy if there is one, else anywhere on the page
            within = (w0, w1) if a is None else (a, min(w1, a + reach + len(fs)))
            b = _context_copy(fs, ftext, within, before=False)
        if a is not None and b is None:
            b = a + _aligned_length(qf, ftext[a : min(w1, a + reach)])
        elif a is None and b is not None:
            a = b - _aligned_length(qf[::-1], ftext[max(w0, b - reach) : b][::-1])
        if a is None or b is None or b <= a:
            return None
        return a, b

    def _offer(self, q: str, scored: list[_Candidate]) -> tuple[_Candidate | None, float, str]:
        """The closest near-copy, offered for a person to confirm when it is at least
        `offer_min_score` similar and holds at least `offer_min_words_kept` of the quote's
        words; with the share of words it holds, and why it is not offered if it is not.

        A passage whose head is here and whose tail is not (a highlight that ran on into
        text this parse lost, or a quote filed under the wrong document) is closest to its
        head, holding half of the quote's words: offering it would be noise."""
        if not scored:
            return None, 0.0, ""
        closest = max(scored, key=lambda c: c.score)
        if closest.score < THRESHOLDS.offer_min_score:
            return None, 0.0, ""
        span = self.folded.text[closest.fa : closest.fb]
        kept = _words_kept(q, span)
        bar = THRESHOLDS.offer_min_words_kept
        if RULES.offer_most_words and not _holds_words(_long_words(q), span, bar):
            why_not = (
                f"; it holds fewer than {bar:.0%} of the quote's words (a misspelt one "
                "counted), so it is not offered"
            )
            return None, kept, why_not
        return closest, kept, ""

    def _by_pieces(self, q: str, qf: str, context: _Context) -> Resolution | None:
        """The quote found line by line, with text inserted between its lines, when the
        recorded prefix and suffix fit both ends.

        Another parse may put text between two lines of a passage: a table's other column, a
        page number at a page break, a list item's number, a contents entry's page. Each line
        is then here, in order, but no alignment of the whole passes the bar (a short quote
        may not even try). With the recorded context on both sides fitting right at the ends,
        and at most as much inserted as a fuzzy span may stretch, the span is taken; if more
        than one placement fits, none is (the quote stays not found).

        A two-column table read column by column where it was highlighted and row by row here
        interleaves the context as much as the quote, so the context cannot fit as a whole.
        Quotes without letters never are: a slice of a matrix has a copy in every row. When
        no single placement in order fits, the lines may be out of order (`_moved_lines`).
        """
        lines = _split_lines(q)
        if len(lines) < 2:
            return None
        ftext = self.folded.text
        # every line must be here: a quote from elsewhere is turned away on its longest line,
        # before its context is folded (most of what reaches here is such a quote)
        if fold(max(lines, key=len)) not in ftext or not context:
            return None
        # each line folded alone, unlike the context's (`_Context.lines`): a "+" a line
        # begins with may be a sign this parse reads inside a line ("Z16 + ⟩")
        pieces = [p for p in map(fold, lines) if p]
        if len(pieces) < 2:
            return None
        k = max(range(len(pieces)), key=lambda i: len(pieces[i]))
        if pieces[k] not in ftext or not context.prefix or not context.suffix:
            return None
        budget = THRESHOLDS.max_span_extra + int(len(qf) * (THRESHOLDS.max_span_stretch - 1))
        hits = find_all(ftext, pieces[k], limit=THRESHOLDS.pieces_max_hits)
        if len(hits) > THRESHOLDS.pieces_max_hits:
            return None
        prefix, suffix = context.prefix, context.suffix
        fits: set[tuple[int, int]] = set()
        for hit in hits:
            placed = _place_pieces(ftext, pieces, k, hit, budget)
            if placed is None:
                continue
            # the first and last lines may sit at more than one place in reach: each end is
            # where the recorded context fits it best
            firsts, lasts, inserted = placed
            fa = min(firsts, key=lambda a: _anchored_distance(prefix, ftext, a, before=True))
            fb = min(lasts, key=lambda b: _anchored_distance(suffix, ftext, b, before=False))
            dp = _anchored_distance(prefix, ftext, fa, before=True)
            ds = _anchored_distance(suffix, ftext, fb, before=False)
            if dp + ds <= (len(prefix) + len(suffix)) // THRESHOLDS.pieces_context_slack:
                fits.add((fa, fb))
        if len(fits) != 1:
            # none, or more than one where a line of digits could sit: the first and last
            # lines, with the context, may still fix both ends
            moved = None if _letterless(q) else self._moved_lines(pieces, qf, budget, context)
            if moved is None:
                return None
            (fa, fb), in_order = moved, False
            how = (
                "its first and last lines at its two ends and the lines between them all "
                "inside it, some in another order, and the prefix/suffix recorded with the "
                "quote fit both ends"
            )
        else:
            (fa, fb), in_order = next(iter(fits)), True
            how = (
                "its lines are all here in order, and the prefix/suffix recorded with the "
                "quote fit both ends"
            )
        span = fb - fa - len(qf)
        if span < 0 or (span == 0 and in_order):
            return None
        s, e = self.folded.original_span(fa, fb)
        inserted = f" with {span} characters inserted" if span else ""
        return Resolution(
            FUZZY,
            start=s,
            end=e,
            score=len(qf) / (fb - fa),
            candidates=1,
            reason="pieces_in_context",
            detail=(
                f"found approximately, line by line{inserted}: of its {len(pieces)} lines, {how}"
            ),
            page=self.page_at(s),
            kept=_words_kept(q, ftext[fa:fb]),
        )

    def _moved_lines(
        self, pieces: list[str], qf: str, budget: int, context: _Context
    ) -> tuple[int, int] | None:
        """The folded span from a copy of the first line to a copy of the last, with every
        line between them inside it in any order, when exactly one such span fits the
        recorded context at both ends.

        Another parse may put a line of the passage one line further (a contents entry's
        page number, a formula's "where", a command read before the sentence introducing
        it): no alignment passes the bar, and the lines are not in order. The first and last
        lines (at least `moved_lines_edge` characters folded) fix the ends, the prefix and
        suffix must fit them as for lines in order, and the span may stretch no more than
        a fuzzy span.
        """
        if len(pieces) < 3:
            return None
        first, last = pieces[0], pieces[-1]
        prefix, suffix = context.prefix, context.suffix
        # a short edge line ("3", the start of "3.15 zbasis") is everywhere: it fixes its end
        # only with the recorded context on its side here exactly, long enough to tell, and
        # holding letters (beside more digits, a matrix's "0" fits every row)
        short_first, short_last = (len(p) < THRESHOLDS.moved_lines_edge for p in (first, last))
        raw_prefix, raw_suffix = context.raw
        if (short_first and not _telling(prefix, raw_prefix)) or (
            short_last and not _telling(suffix, raw_suffix)
        ):
            return None
        ftext = self.folded.text
        hits = find_all(ftext, first, limit=THRESHOLDS.pieces_max_hits)
        if len(hits) > THRESHOLDS.pieces_max_hits:
            return None
        slack = (len(prefix) + len(suffix)) // THRESHOLDS.pieces_context_slack
        inner = sorted(pieces[1:-1], key=len, reverse=True)
        fits = set()
        for fa in hits:
            dp = _anchored_distance(prefix, ftext, fa, before=True)
            if short_first and dp:
                continue
            limit = fa + len(qf) + budget
            at = ftext.find(last, fa + len(first), limit)
            while at >= 0:
                fb = at + len(last)
                if _holds_all(ftext[fa:fb], inner):
                    ds = _anchored_distance(suffix, ftext, fb, before=False)
                    if fb - fa - len(qf) <= budget and dp + ds <= slack and not (short_last and ds):
                        fits.add((fa, fb))
                    if not short_last:
                        break
                at = ftext.find(last, at + 1, limit)
        return fits.pop() if len(fits) == 1 else None

    def _line_start(self, fa: int) -> bool:
        """Whether folded offset `fa` begins a line of the text (only whitespace or marks
        folding drops before it: `[string]` begins its line)."""
        text = self.text
        start = self.folded.original_span(fa, fa + 1)[0]
        return not fold(text[text.rfind("\n", 0, start) + 1 : start])

    def _ends_fixed(self, c: _Candidate, qf: str, q: str, context: _Context) -> bool:
        """Whether a fuzzy span begins with the quote's first character and ends with its
        last, and neither end falls inside a word or on the end of a longer word that only
        ends (begins) like the quote's edge word: otherwise the alignment guessed where the
        passage starts or stops (a table or a matrix this parse reads in another order, a
        line it put elsewhere: the quote's last word "In" aligned to the start of "increase",
        its "int" to the end of "nativeint"). A word the highlight itself cut (its recorded
        prefix ends, or suffix begins, with a letter or digit) may be cut here too."""
        ftext = self.folded.text
        if ftext[c.fa] != qf[0] or ftext[c.fb - 1] != qf[-1]:
            return False
        words = _WORD.findall(q)
        if len(words) < 2:
            return True
        prefix, suffix = context.raw
        text = self.text
        if q[0].isalnum() and not (prefix and prefix[-1].isalnum()):
            a = c.start
            while a < c.end and not text[a].isalnum():
                a += 1
            if a > 0 and text[a - 1].isalnum():
                return False
            word, first = fold(_word_at(text, a)), fold(words[0])
            if len(word) > len(first) and word.startswith(first):
                return False
        if q[-1].isalnum() and not (suffix and suffix[0].isalnum()):
            b = c.end
            while b > c.start and not text[b - 1].isalnum():
                b -= 1
            if b < len(text) and text[b].isalnum():
                return False
            word, last = fold(_word_at(text, b - 1)), fold(words[-1])
            if len(word) > len(last) and word.endswith(last):
                return False
        return True

    def _moved_to(self, res: Resolution, c: _Candidate, why: str) -> Resolution:
        """`res` with its span moved to candidate `c`'s, and why."""
        return replace(
            res, start=c.start, end=c.end, page=self.page_at(c.start), detail=f"{res.detail}; {why}"
        )

    def _with_edge_lines(self, c: _Candidate, q: str) -> _Candidate:
        """The fuzzy span widened to hold the quote's first and last lines, when one is not at
        its edge but right outside it.

        A table read by columns where it was highlighted ("Attribute", "abstract",
        "bigarray", "camlint", "compare") and by rows here interleaves the other column's
        cells: the cheapest alignment stops a row or two short and leaves the quote's last
        cells out ("compare" begins the row after the span). An edge line of at least
        `moved_lines_edge` characters folded that the span does not hold within
        `edge_line_slack` characters of its edge, with a copy within `max_span_extra`
        characters outside it, moves that end to the nearest copy.
        """
        lines = [line for line in _folded_lines(q) if line]
        first, last = lines[0], lines[-1]
        ftext = self.folded.text
        fa, fb = c.fa, c.fb
        edge = THRESHOLDS.edge_line_slack
        if (
            len(last) >= THRESHOLDS.moved_lines_edge
            and last not in ftext[max(fa, fb - len(last) - edge) : fb]
        ):
            at = ftext.find(last, fb, fb + THRESHOLDS.max_span_extra + len(last))
            if at >= 0:
                fb = at + len(last)
        if (
            len(first) >= THRESHOLDS.moved_lines_edge
            and first not in ftext[fa : min(fb, fa + len(first) + edge)]
        ):
            at = ftext.rfind(first, max(0, fa - THRESHOLDS.max_span_extra - len(first)), fa)
            if at >= 0:
                fa = at
        if (fa, fb) == (c.fa, c.fb):
            return c
        start, end = self.folded.original_span(fa, fb)
        return replace(c, start=start, end=end, fa=fa, fb=fb)

    def _ends_not_fixed(self, q: str, c: _Candidate) -> Resolution:
        """`not_found` for a fuzzy span whose ends are a guess, the span offered instead."""
        return Resolution(
            NOT_FOUND,
            score=c.score,
            candidates=1,
            reason="ends_not_fixed",
            detail=(
                f"the closest passage is {c.score:.0%} similar, but it does not begin and end "
                "as the quote does (with its first and last characters, at a word's edge where "
                "the highlight met one): this parse reads it in another order (a table, a "
                "matrix), so where it starts or stops is a guess; it is offered for a person "
                "to confirm or correct"
            ),
            page=self.page_at(c.start),
            kept=_words_kept(q, self.folded.text[c.fa : c.fb]),
            offered_start=c.start,
            offered_end=c.end,
        )

    def _calibrated(self, q: str, res: Resolution) -> Resolution:
        """A fuzzy match, or -- when most of the quote's words are not in it -- `not_found`
        with the span offered for a person to confirm (see `fuzzy_min_words_kept`)."""
        assert res.start is not None and res.end is not None
        folded = self.folded
        fa, fb = folded.folded_index(res.start), folded.folded_index(res.end)
        kept = _words_kept(q, folded.text[fa:fb])
        if kept >= THRESHOLDS.fuzzy_min_words_kept:
            return replace(res, kept=kept)
        return Resolution(
            NOT_FOUND,
            score=res.score,
            candidates=res.candidates,
            reason="mostly_absent",
            detail=(
                f"the closest passage is {res.score:.0%} similar, but only {kept:.0%} of the "
                "quote's words are in it (a fuzzy match needs "
                f"{THRESHOLDS.fuzzy_min_words_kept:.0%}): most of the quote is not in this "
                "parse; the passage is offered for a person to confirm or correct"
            ),
            page=res.page,
            kept=kept,
            offered_start=res.start,
            offered_end=res.end,
        )

    def _splits_number(self, c: _Candidate, q: str, context: _Context) -> bool:
        """Whether the candidate starts or ends inside a number the quote does not cut.

        "7" of "57" is never the "7" highlighted after a line break; the recorded context
        says whether the highlight itself cut a number (its prefix ends, or its suffix
        starts, with a digit), and then a cut here is allowed.
        """
        prefix, suffix = context.raw
        cut_before, cut_after = self._cut_edges(c, q, str.isdigit)
        return (cut_before and not (prefix and prefix[-1].isdigit())) or (
            cut_after and not (suffix and suffix[0].isdigit())
        )

    def _cut_edges(self, c: _Candidate, q: str, part: Callable[[str], bool]) -> tuple[bool, bool]:
        """Whether the candidate's start, and its end, fall inside a run of characters that
        are all `part` (digits, letters and digits), the quote's own edge character included."""
        text = self.text
        before = part(q[0]) and c.start > 0 and part(text[c.start - 1])
        after = part(q[-1]) and c.end < len(text) and part(text[c.end])
        return before, after

    def _by_copies(
        self, q: str, qf: str, occurrence: int, page_hint: int | None, context: _Context
    ) -> tuple[Resolution | None, int]:
        """Tiers 1 and 2: copies of the passage, then folded copies; the resolution, or None
        and how many copies there are (0, or too few for `occurrence`).

        Copies of the passage (`passage_copies`: the quote's characters, whitespace aside)
        are counted as the highlight counted them, so when those on the hinted page are
        enough for the occurrence, the occurrence names one. Otherwise this parse reads the
        passage differently (hyphenation, case, marks), and every folded copy is weighed.
        """
        res = self._by_passage_copies(q, occurrence, page_hint, context)
        if res is not None:
            return res, 0
        cands = [
            c for c in self._literal_candidates(q, qf) if not self._splits_number(c, q, context)
        ]
        if not cands:
            return None, 0
        tier = EXACT if all(c.verbatim for c in cands) else NORMALISED
        res = self._choose(tier, cands, [], occurrence, page_hint, context, len(qf), q)
        return res, 0 if res is not None else len(cands)

    def _passage_candidates(
        self, q: str, begin: int = 0, stop: int | None = None
    ) -> list[_Candidate]:
        folded = self.folded
        out = []
        if self._flat is None:
            self._flat = _Flat(self.text)
        for s, e in _flat_copies(self._flat, q, begin, stop):
            fa = folded.folded_index(s)
            fb = max(fa + 1, folded.folded_index(e))
            out.append(_Candidate(s, e, 1.0, fa, fb, verbatim=self.text[s:e] == q))
        return out

    def _by_passage_copies(
        self, q: str, occurrence: int, page_hint: int | None, context: _Context
    ) -> Resolution | None:
        """The copy the page hint and occurrence name among the copies of the passage, or
        None when they name none (too few start on the hinted page, or the one named cuts a
        word or number the highlight did not). Occurrence 0 is also what a caller who gives
        none sends: then the recorded context may choose among the (hinted page's) copies.
        More than one copy and nothing recorded to count them by is `ambiguous`."""
        paged = page_hint is not None and self.page_starts is not None
        begin = self._page_begin(page_hint) if paged else 0
        if begin is None or not (occurrence or paged or context):
            return None  # nothing recorded to count copies by: every copy is weighed
        # copies starting past the hinted page are not counted: not looked for either
        pool = self._passage_candidates(q, begin, self._page_end(page_hint) if paged else None)
        if paged:
            pool = [c for c in pool if self.page_at(c.start) == page_hint]
        if occurrence >= len(pool):
            return None
        n, qlen = len(pool), len(_fold_quote(q))
        where = f" on page {page_hint}" if paged else ""
        how = "found as highlighted, whitespace aside"
        picked = self._by_context(pool, context) if n > 1 and not occurrence and context else None
        if picked is not None:
            reason = "context"
            detail = f"{how}; {n} copies{where}, the prefix/suffix recorded with it picked this one"
        elif n == 1 and not occurrence and self._context_names_another(q, pool[0], context):
            return None  # a folded copy is the one highlighted: every copy is weighed
        elif n == 1:
            picked, reason = pool[0], "page_hint" if paged else "unique"
            detail = f"{how}; the only copy{where}"
        elif _letterless(q) and not any(c.verbatim for c in pool):
            # numbers only, which another parse reads in another order, and no copy here
            # as it was highlighted: the count may not line up
            return self._ambiguous(NORMALISED, pool, qlen)
        else:
            picked, reason = pool[occurrence], "occurrence"
            detail = f"{how}; copy {occurrence} (from 0) of {n}{where}, as the occurrence asks"
        if self._splits_number(picked, q, context):
            return None
        if picked.verbatim:
            detail = detail.replace(how, _TIER_WORDS[EXACT], 1)
        return self._found(NORMALISED, picked, n, reason, detail, qlen)

    def _context_names_another(self, q: str, only: _Candidate, context: _Context) -> bool:
        """Whether the recorded prefix/suffix clearly pick a folded copy (words glued, say) on
        the same page over the only copy of the passage there, the occurrence asking for the
        first: the highlight's passage was read differently here, and the one copy is another
        passage that says the same (a repeated sentence)."""
        if not context or self._reads_as_recorded(only, context):
            # surroundings as recorded: `_by_context` could pick no other copy over it, so
            # the usual case skips the search for folded copies
            return False
        page = self.page_at(only.start) if self.page_starts else None
        others = [
            c
            for c in self._literal_candidates(q, _fold_quote(q))
            if c.start != only.start and (page is None or self.page_at(c.start) == page)
        ]
        if not others:
            return False
        picked = self._by_context([only, *others], context)
        return picked is not None and picked is not only

    def _page_end(self, page_hint: int | None) -> int | None:
        """Where the page after the hinted one begins, or None for the last page."""
        starts = self.page_starts
        if page_hint is None or not starts or not 1 <= page_hint < len(starts):
            return None
        return starts[page_hint]

    def _page_begin(self, page_hint: int | None) -> int | None:
        """Where the hinted page begins, or None for a page this parse does not have."""
        starts = self.page_starts
        if page_hint is None or not starts or not 1 <= page_hint <= len(starts):
            return None
        return starts[page_hint - 1]

    def _literal_candidates(self, q: str, qf: str) -> list[_Candidate]:
        """Verbatim copies of the quote, plus folded copies that overlap none of them."""
        folded = self.folded
        cands: list[_Candidate] = []
        for s in find_all(self.text, q):
            fa = folded.folded_index(s)
            fb = max(fa + 1, folded.folded_index(s + len(q)))
            cands.append(_Candidate(s, s + len(q), 1.0, fa, fb, verbatim=True))
        taken = [(c.fa, c.fb) for c in cands]
        for fa in find_all(folded.text, qf):
            fb = fa + len(qf)
            if any(a < fb and fa < b for a, b in taken):
                continue
            s, e = folded.original_span(fa, fb)
            cands.append(_Candidate(s, e, 1.0, fa, fb))
        return cands

    def _out_of_range(self, copies: int, occurrence: int) -> Resolution:
        how_often = "once" if copies == 1 else f"{copies} times"
        return Resolution(
            NOT_FOUND,
            candidates=copies,
            reason="occurrence_out_of_range",
            detail=(
                f"the quote appears {how_often}, but occurrence {occurrence} was asked for "
                f"(numbered from 0, so the last is {copies - 1})"
            ),
        )

    # -- choosing ------------------------------------------------------------

    def _choose(
        self,
        tier: str,
        cands: list[_Candidate],
        rejected: list[_Candidate],
        occurrence: int,
        page_hint: int | None,
        context: _Context,
        qlen: int,
        quote: str = "",
    ) -> Resolution | None:
        """Pick one candidate, declare ambiguity, or return None (occurrence out of range).

        Order of evidence: the page hint (the copies that start on that page); among them,
        the recorded prefix/suffix context when it clearly prefers one copy; then the
        occurrence; then, for fuzzy matches only, a clear lead in score. Copies nothing can
        tell apart are `ambiguous`, never the first.
        """
        cands.sort(key=lambda c: c.start)
        n = len(cands)
        how = _TIER_WORDS[tier]
        pool, paged = self._on_hinted_page(cands, page_hint)
        if paged and len(pool) == 1 and n > 1:
            detail = f"{how}; {n} copies, only one on page {page_hint}"
            return self._found(tier, pool[0], n, "page_hint", detail, qlen)
        # the context chooses only among the hinted page's copies
        picked = self._by_context(pool, context) if len(pool) > 1 and context else None
        if picked is not None:
            detail = (
                f"{how}; {len(pool)} copies, the prefix/suffix recorded with it picked this one"
            )
            return self._found(tier, picked, n, "context", detail, qlen)
        if len(pool) == 1 and occurrence == 0:
            if tier == FUZZY and not self._clear_lead(pool[0], rejected):
                return self._ambiguous(tier, [pool[0], *rejected], qlen)
            reason = "unique" if n == 1 else "page_hint"
            return self._found(tier, pool[0], n, reason, f"{how}; the only copy", qlen)
        count = _Count(
            tier,
            n,
            occurrence,
            qlen,
            quote,
            context,
            alike=self._laid_out_alike(tier, pool, quote, context),
            page_unused=page_hint is not None and self.page_starts is not None and not paged,
            where=f" on page {page_hint}" if paged else "",
        )
        kept = self._by_kept_characters(count, pool)
        if kept is not None:
            return kept
        # a highlight records its page and which copy on it: there, 0 is the first copy; a
        # highlight (it records its context) counted its occurrence among verbatim copies,
        # 0 included, and when every copy here is laid out as it is, the two counts line up
        if occurrence > 0 or (len(pool) > 1 and (paged or (context and count.alike))):
            return self._by_occurrence(count, pool, cands)
        if tier == FUZZY:
            ranked = sorted(pool, key=lambda c: -c.score)
            if self._clear_lead(ranked[0], ranked[1:] + rejected):
                detail = f"{how}; {len(pool)} near-copies, this one clearly the closest"
                return self._found(tier, ranked[0], n, "score_margin", detail, qlen)
        return self._ambiguous(tier, pool, qlen)

    def _on_hinted_page(
        self, cands: list[_Candidate], page_hint: int | None
    ) -> tuple[list[_Candidate], bool]:
        """The copies that start on the hinted page, and True; or all of them, and False,
        when there is no hint or no copy starts there."""
        if page_hint is None or not self.page_starts:
            return cands, False
        on_page = [c for c in cands if self.page_at(c.start) == page_hint]
        return (on_page, True) if on_page else (cands, False)

    def _laid_out_alike(
        self, tier: str, pool: list[_Candidate], quote: str, context: _Context
    ) -> bool:
        """Whether every copy is laid out like the quote (the same words and line breaks,
        only indentation, spacing and Markdown marks differ): the parse set each of them
        the same way, so every one was a verbatim copy where it was highlighted."""
        if len(pool) < 2 or not context or not quote or tier == FUZZY:
            return False
        layout = _layout(quote)
        return all(c.verbatim or _layout(self.text[c.start : c.end]) == layout for c in pool)

    def _by_occurrence(
        self, count: _Count, pool: list[_Candidate], cands: list[_Candidate]
    ) -> Resolution | None:
        """The copy the occurrence names in `pool`, `ambiguous` when the counts cannot be
        trusted, or None when the occurrence is out of range."""
        tier, occurrence, qlen = count.tier, count.occurrence, count.qlen
        if count.letterless and len(pool) > 1 and not any(c.verbatim for c in pool):
            # numbers and signs only (a slice of a matrix or a table of figures): another
            # parse reads such tables in another order, so copies counted where it was
            # highlighted do not line up with copies found here after folding
            return self._ambiguous(tier, pool, qlen)
        if count.page_unused:
            # the occurrence counts copies on a page that holds none here: it means nothing
            return self._ambiguous(tier, pool, qlen) if len(pool) > 1 else None
        if occurrence >= len(pool):
            return None
        picked = pool[occurrence]
        verbatim = [c for c in pool if c.verbatim]
        # the occurrence counted verbatim copies where it was highlighted; when here some
        # copies are verbatim and some only folded, count both ways and insist they agree
        mixed = bool(verbatim) and len(verbatim) < len(pool) and not count.alike
        if mixed and (occurrence >= len(verbatim) or verbatim[occurrence] is not picked):
            return self._settle_counts(count, pool, cands, verbatim, picked)
        detail = (
            f"{_TIER_WORDS[tier]}; copy {occurrence} (from 0) of {len(pool)}{count.where}, "
            "as the occurrence asks"
        )
        return self._found(tier, picked, count.n, "occurrence", detail, qlen)

    def _settle_counts(
        self,
        count: _Count,
        pool: list[_Candidate],
        cands: list[_Candidate],
        verbatim: list[_Candidate],
        picked: _Candidate,
    ) -> Resolution:
        """Counting verbatim copies and folded ones name different copies: the recorded
        context may clearly prefer one of the two readings (a table row repeated on the
        page), only when no copy fits it better and at most one other fits it as well (with
        more, a count off by one lands on another copy nothing tells from this one:
        measured, that is a coin toss); else nothing says which is meant."""
        occurrence, context = count.occurrence, count.context
        chosen = None
        if occurrence < len(verbatim) and context:
            chosen = self._by_context([verbatim[occurrence], picked], context)
        if chosen is not None:
            fit = [self._context_distance(c, context) for c in cands]
            best_fit = min(fit)
            if self._context_distance(chosen, context) > best_fit or fit.count(best_fit) > 2:
                chosen = None
        if chosen is None:
            return self._ambiguous(count.tier, pool, count.qlen)
        detail = (
            f"{_TIER_WORDS[count.tier]}; counting copies{count.where} verbatim and after "
            f"folding name different copies for occurrence {occurrence} (from 0), and the "
            "prefix/suffix recorded with the quote picked this one of the two"
        )
        return self._found(count.tier, chosen, count.n, "occurrence", detail, count.qlen)

    def _by_kept_characters(self, count: _Count, pool: list[_Candidate]) -> Resolution | None:
        """The copy the occurrence names among those keeping the quote's own characters.

        When the quote holds characters beyond ASCII (a no-break space, a typographic quote)
        that the verbatim copies here keep and every other copy lacks, this parse keeps them,
        so the copies without them never had them, and the highlight, counting verbatim
        copies, did not count those (a contents entry typed with a plain space, repeating a
        heading). None unless that is so and no copy fits the recorded context better.
        """
        quote, occurrence, context = count.quote, count.occurrence, count.context
        if not context or count.alike or count.letterless or count.page_unused:
            return None
        special = {ch for ch in quote if not ch.isascii()}
        verbatim = [c for c in pool if c.verbatim]
        if not special or not 0 < len(verbatim) < len(pool) or occurrence >= len(verbatim):
            return None
        text = self.text
        if any(special <= set(text[c.start : c.end]) for c in pool if not c.verbatim):
            return None
        picked = verbatim[occurrence]
        if not self._fits_best(picked, pool, context):
            return None
        detail = (
            f"{_TIER_WORDS[count.tier]}; copy {occurrence} (from 0) of the {len(verbatim)} "
            f"copies{count.where} that keep the quote's own characters, as the occurrence asks"
        )
        return self._found(count.tier, picked, count.n, "occurrence", detail, count.qlen)

    def _fits_best(self, c: _Candidate, others: list[_Candidate], context: _Context) -> bool:
        """Whether no copy in `others` fits the recorded prefix/suffix better than `c`."""
        d = self._context_distance(c, context)
        return all(d <= self._context_distance(o, context) for o in others)

    @staticmethod
    def _clear_lead(best: _Candidate, others: Iterable[_Candidate]) -> bool:
        for other in others:
            apart = other.end <= best.start or other.start >= best.end
            if apart and best.score - other.score < THRESHOLDS.fuzzy_margin:
                return False
        return True

    def _context_distance(self, c: _Candidate, context: _Context) -> int:
        """How far the text around `c` is from the recorded prefix/suffix (edit distance)."""
        p, s = context.prefix, context.suffix
        d = 0
        if p:
            d += _distance(p, self._before(c, p))
        if s:
            d += _distance(s, self._after(c, s))
        return d

    def _reads_as_recorded(self, c: _Candidate, context: _Context) -> bool:
        """Whether the text around `c` is the recorded prefix/suffix, no edit away
        (`_context_distance` 0), answered without aligning: a folded side is at most
        `FOLDED_CONTEXT_CHARS` long, so `_distance` is 0 exactly where it is in its window."""
        p, s = context.prefix, context.suffix
        return (not p or p in self._before(c, p)) and (not s or s in self._after(c, s))

    def _before(self, c: _Candidate, prefix: str) -> str:
        """The folded text a recorded prefix is looked for in, before `c`."""
        return self.folded.text[max(0, c.fa - len(prefix) - len(prefix) // 2 - 4) : c.fa]

    def _after(self, c: _Candidate, suffix: str) -> str:
        """The folded text a recorded suffix is looked for in, after `c`."""
        return self.folded.text[c.fb : c.fb + len(suffix) + len(suffix) // 2 + 4]

    def _by_context(self, cands: list[_Candidate], context: _Context) -> _Candidate | None:
        """The candidate whose surroundings clearly match the recorded prefix/suffix."""
        total = len(context.prefix) + len(context.suffix)
        scored = sorted((self._context_distance(c, context), i) for i, c in enumerate(cands))
        (d1, i1), (d2, _) = scored[0], scored[1]
        if d1 > total // 2:
            return None
        if (d1 == 0 and d2 >= 1) or d2 - d1 >= max(2, total * 15 // 100):
            return cands[i1]
        return None

    def _found(
        self, tier: str, c: _Candidate, n: int, reason: str, detail: str, qlen: int
    ) -> Resolution:
        if c.verbatim and tier == NORMALISED:
            detail = detail.replace(
                _TIER_WORDS[NORMALISED], "found verbatim (other copies only after folding)", 1
            )
        if tier == FUZZY:
            detail += f" ({c.score:.0%} similar, {min_fuzzy_score(qlen):.0%} needed{c.note})"
        return Resolution(
            EXACT if c.verbatim else tier,
            start=c.start,
            end=c.end,
            score=c.score,
            candidates=n,
            reason=reason,
            detail=detail,
            page=self.page_at(c.start),
            kept=1.0 if tier != FUZZY else 0.0,
        )

    def _ambiguous(self, tier: str, pool: list[_Candidate], qlen: int) -> Resolution:
        n = len(pool)
        what = "near-copies" if tier == FUZZY else "copies"
        return Resolution(
            AMBIGUOUS,
            score=max(c.score for c in pool),
            candidates=n,
            reason="ambiguous",
            detail=(
                f"{n} {what} of the quote ({_TIER_WORDS[tier].split(' ', 1)[1]}) and nothing "
                "tells them apart: add a prefix/suffix, a page hint or an occurrence"
            ),
        )

    # -- fuzzy ---------------------------------------------------------------

    def _fuzzy_candidates(self, qf: str, floor: float) -> tuple[list[_Candidate], float]:
        """Approximate copies of the folded quote, each aligned with edlib and scored.

        A window is a candidate only if the quote shares, in order, at least `floor` of its
        characters with it: the window's longest common subsequence with the quote, computed
        in C, is checked before anything is aligned in Python. For an alignment without moved
        pieces (see `_moved_pieces`) that is exactly a bound on its score -- its matched
        characters are such a subsequence -- so a window left out could neither have been
        accepted nor have stopped another from being picked (it would trail any accepted one
        by more than `fuzzy_margin`). Moved pieces can only lift the score of a window that
        already holds `floor` of the quote in order: a passage read mostly out of order is
        never a candidate, which is the safe side, and most quotes that are not in the parse
        at all (evidence filed under the wrong document) are turned away here cheaply.
        Since 1.3 a window that fails that bound but still holds `reorder_gate` of it in
        order is looked at again: if pieces of `seed` characters of the quote cover enough
        of it in any order (table cells or rows the parse reads in another order), it is
        aligned, and its moved pieces are scored as such.
        Also returns the highest such bound among the windows left out (0 if none).
        """
        ftext = self.folded.text
        m = len(qf)
        votes = self._seed_index().votes(qf)
        if not len(votes):
            return [], 0.0
        clusters = _clusters(votes, max(32, m // 4))
        # a passage that can pass the similarity bar shares many pieces with the quote: drop
        # clusters with a small fraction of the best one's votes before aligning anything
        fewest = max(2, clusters[0][0] // 4)
        clusters = [c for c in clusters if c[0] >= fewest] or clusters[:1]

        pad = int(m * (THRESHOLDS.max_span_stretch - 1)) + THRESHOLDS.max_span_extra
        need = math.ceil(floor * m - 1e-9)
        found: list[_Candidate] = []
        aligned: list[tuple[int, int]] = []
        bound = 0
        for _count, lo, hi in clusters[: THRESHOLDS.max_fuzzy_windows]:
            if any(a <= lo and hi + m <= b for a, b in aligned):
                continue  # the same passage, already inside a window aligned before
            w0 = max(0, lo - pad)
            w1 = min(len(ftext), hi + m + pad)
            aligned.append((w0, w1))
            common = LCSseq.similarity(qf, ftext[w0:w1])
            if common >= need:
                common = _span_bound(qf, ftext, w0, w1, need)
            if common < need and (
                common < need * THRESHOLDS.reorder_gate
                or not _covers(qf, ftext[w0:w1], THRESHOLDS.seed, need)
            ):
                bound = max(bound, common)
                continue
            cand = self._align(qf, w0, w1)
            if cand is None:
                continue
            overlapping = [c for c in found if c.fa < cand.fb and cand.fa < c.fb]
            if overlapping:
                # the same passage reached from two clusters: keep the better alignment
                best = max([cand, *overlapping], key=lambda c: c.score)
                found = [c for c in found if c not in overlapping] + [best]
            else:
                found.append(cand)
        return found, bound / m

    def _align(self, qf: str, w0: int, w1: int) -> _Candidate | None:
        """Align the folded quote inside folded window `[w0, w1)` and score the alignment.

        Plain unit-cost alignment would rather drop the end of a quote than step over a long
        run of inserted text (a link target, a running header and page number), so the
        alignment is built from a colinear chain of exact k-mer matches first; only the
        gaps between them, and the two ends, are aligned with edlib. Exact runs the parse
        reads in another order inside the chain's span count as matched at `move_cost` each
        (`_moved_pieces`); they change the score, never where the span starts or ends.
        """
        ftext = self.folded.text
        window = ftext[w0:w1]
        m = len(qf)
        k = 6 if m < 64 else 8
        segments, spare = _chain(qf, window, k)
        if not segments:
            return None
        matches = 0
        runs: list[int] = []
        # head: the quote before the first segment, ending right where that segment starts
        p0, t0, _ = segments[0]
        start = t0
        if p0:
            lo = max(0, t0 - p0 - p0 // 2 - THRESHOLDS.end_slack)
            got, used, head_runs = _align_end(qf[:p0], window[lo:t0], at_end=True)
            matches += got
            runs += head_runs
            start = t0 - used
        moves = _moved_pieces(segments, spare, max(k, THRESHOLDS.move_min))
        cut_q: dict[int, list[tuple[int, int]]] = {}
        cut_t: dict[int, list[tuple[int, int]]] = {}
        for gq, qa, gt, ta, length in moves:
            cut_q.setdefault(gq, []).append((qa, qa + length))
            cut_t.setdefault(gt, []).append((ta, ta + length))
            matches += length
        for index, (p, t, length) in enumerate(segments):
            matches += length
            if index + 1 < len(segments):
                np_, nt, _ = segments[index + 1]
                qgap = _cut(qf, p + length, np_, cut_q.get(index))
                tgap = _cut(window, t + length, nt, cut_t.get(index))
                got, gap_runs = _align_gap(qgap, tgap)
                matches += got
                runs += gap_runs
        # tail: the quote after the last segment, starting right where that segment ends
        p1, t1, l1 = segments[-1]
        end = t1 + l1
        rest = m - (p1 + l1)
        if rest:
            seg = window[end : end + rest + rest // 2 + THRESHOLDS.end_slack]
            got, used, tail_runs = _align_end(qf[p1 + l1 :], seg, at_end=False)
            matches += got
            runs += tail_runs
            end += used
        fa, fb = w0 + start, w0 + end
        if fb <= fa or fb - fa > m * THRESHOLDS.max_span_stretch + THRESHOLDS.max_span_extra:
            return None
        score = matches / (m + _insert_cost(runs, m) + THRESHOLDS.move_cost * len(moves))
        inserted = sum(runs)
        note = f", {inserted} inserted characters stepped over" if inserted >= 8 else ""
        if moves:
            note += f", {len(moves)} passage{'s' if len(moves) > 1 else ''} read out of order"
        s, e = self.folded.original_span(fa, fb)
        return _Candidate(s, e, score, fa, fb, note)


def _insert_cost(runs: list[int], m: int) -> int:
    """What text inserted into a passage costs a quote of folded length `m`."""
    long_runs = sorted((r for r in runs if r >= THRESHOLDS.long_run), reverse=True)
    allowed = 1 + m // THRESHOLDS.long_run_every
    cost = sum(r for r in runs if r < THRESHOLDS.long_run)
    return cost + len(long_runs[:allowed]) + sum(long_runs[allowed:])


def _cut(s: str, a: int, b: int, holes: list[tuple[int, int]] | None) -> str:
    """`s[a:b]` without the ranges in `holes` (each inside it, none overlapping)."""
    if not holes:
        return s[a:b]
    pieces = []
    for lo, hi in sorted(holes):
        pieces.append(s[a:lo])
        a = hi
    pieces.append(s[a:b])
    return "".join(pieces)


def _moved_pieces(
    chain: list[tuple[int, int, int]], spare: list[tuple[int, int, int]], min_len: int
) -> list[tuple[int, int, int, int, int]]:
    """Exact runs the chain had to leave out because the parse reads them in another order.

    Between two consecutive chain segments lie a gap of the quote and a gap of the text. A
    run of at least `min_len` characters that sits in one quote gap and in a *different*
    text gap is a piece of the passage moved inside it (a table column or a caption read in
    another order, a line pulled ahead). Returned as `(quote_gap, quote_pos, text_gap,
    text_pos, length)`, longest first, no two sharing a character.
    """
    if len(chain) < 3 or not spare:
        # a piece moves from one gap to another: a chain of two runs has a single gap
        return []
    qgaps = [(p + n, np_) for (p, _, n), (np_, _, _) in pairwise(chain)]
    tgaps = [(t + n, nt) for (_, t, n), (_, nt, _) in pairwise(chain)]
    found: list[tuple[int, int, int, int, int]] = []
    for p, t, n in spare:
        for gq, (qa, qb) in enumerate(qgaps):
            lo, hi = max(p, qa), min(p + n, qb)
            if hi - lo < min_len:
                continue
            for gt, (ta, tb) in enumerate(tgaps):
                if gt == gq:
                    continue
                tlo, thi = max(t + lo - p, ta), min(t + hi - p, tb)
                if thi - tlo >= min_len:
                    found.append((thi - tlo, gq, tlo - t + p, gt, tlo))
    found.sort(reverse=True)
    taken: list[tuple[int, int, int, int, int]] = []
    for length, gq, qa, gt, ta in found:
        if any(
            (qa < q2 + n2 and q2 < qa + length) or (ta < t2 + n2 and t2 < ta + length)
            for _, q2, _, t2, n2 in taken
        ):
            continue
        taken.append((gq, qa, gt, ta, length))
    return taken


def _span_bound(qf: str, ftext: str, w0: int, w1: int, need: int) -> int:
    """How much of `qf` a span of `ftext[w0:w1]` as long as a match may be holds in order,
    at most (stopping once it reaches `need`).

    A match spans at most `len(qf) * max_span_stretch + max_span_extra` characters, so its
    matched characters are a common subsequence of `qf` and one of the overlapping pieces of
    that length plus `stride` taken every `stride`: the largest such LCS bounds its score as
    the whole window's does, only tighter (a long window holds much of any quote in order).
    """
    span = int(len(qf) * THRESHOLDS.max_span_stretch) + THRESHOLDS.max_span_extra
    stride = max(1, span // 2)
    best = 0
    for x in range(w0, w1, stride):
        best = max(best, LCSseq.similarity(qf, ftext[x : min(w1, x + span + stride)]))
        if best >= need or x + span + stride >= w1:
            break
    return best


def _covers(qf: str, window: str, k: int, need: int) -> bool:
    """Whether about `need` characters of `qf` lie in `k`-character pieces that `window`
    holds anywhere, in any order: pieces start every `k // 2` characters, each found counts
    for the `k // 2` it starts with, each looked up in C. Stops as soon as the answer is
    known (most windows of a passage that is not there miss piece after piece). The pieces
    are looked up from the quote's end: a quote whose head is here and whose tail is not
    misses its last pieces, so the answer is known sooner (the count, and so the answer, is
    the same in any order)."""
    step = max(1, k // 2)
    starts = range(0, len(qf) - k + 1, step)
    have, left = 0, len(starts) * step
    for p in reversed(starts):
        left -= step
        if qf[p : p + k] in window:
            have += step
            if have >= need:
                return True
        elif have + left < need:
            return False
    return have >= need


def _ops(cigar: str | None) -> list[tuple[int, str]]:
    return [(int(k), op) for k, op in _CIGAR.findall(cigar or "")]


#: What `_edlib_align` answers when it cannot align two texts: no path, no place, no distance.
_UNALIGNED = {"editDistance": -1, "locations": [], "cigar": None}


def _edlib_align(query: str, target: str, **options: Any) -> dict:
    """`edlib.align`, which refuses more than 256 distinct characters in the two texts
    together (a window of Chinese text holds more). Only equality matters to an alignment, so
    the characters only one side has are each side's one stand-in, which changes no distance
    and no path; two texts sharing more than 254 characters are not aligned (`_UNALIGNED`)."""
    # two texts of at most 256 characters together, or of ASCII alone, hold no more
    # distinct ones than edlib takes: they are not gathered to see it
    if len(query) + len(target) <= _EDLIB_ALPHABET or (query.isascii() and target.isascii()):
        return edlib.align(query, target, **options)
    alphabet = set(query) | set(target)
    if len(alphabet) <= _EDLIB_ALPHABET:
        return edlib.align(query, target, **options)
    shared = set(query) & set(target)
    if len(shared) > _EDLIB_ALPHABET - 2:
        return _UNALIGNED
    spare = (chr(c) for c in range(0x110000) if chr(c) not in alphabet)
    only_query, only_target = next(spare), next(spare)
    query = "".join(ch if ch in shared else only_query for ch in query)
    target = "".join(ch if ch in shared else only_target for ch in target)
    return edlib.align(query, target, **options)


def _align_gap(qgap: str, tgap: str) -> tuple[int, list[int]]:
    """Matched characters and inserted-text runs when aligning two gaps end to end."""
    if not qgap:
        return 0, [len(tgap)] if tgap else []
    if not tgap:
        return 0, []
    ops = _ops(_edlib_align(qgap, tgap, mode="NW", task="path")["cigar"])
    return sum(k for k, op in ops if op == "="), [k for k, op in ops if op == "D"]


def _align_end(piece: str, seg: str, *, at_end: bool) -> tuple[int, int, list[int]]:
    """Align an end of the quote next to the chain: matches, text characters used, runs.

    `at_end` means `piece` (the quote's head) must finish where `seg` finishes; otherwise
    (the tail) it must start where `seg` starts. A short run of inserted text between the
    piece and the chain is allowed when the piece itself is found cleanly; otherwise the
    piece is aligned flush against the chain.
    """
    if not seg:
        return 0, 0, []
    found = _edlib_align(piece, seg, mode="HW", task="locations")
    if 0 <= found["editDistance"] <= len(piece) // 5 and found["locations"]:
        if at_end:
            a, b = max(found["locations"], key=lambda loc: loc[1])
            gap = len(seg) - (b + 1)
        else:
            a, b = min(found["locations"], key=lambda loc: loc[0])
            gap = a
        ops = _ops(_edlib_align(piece, seg[a : b + 1], mode="NW", task="path")["cigar"])
        runs = [k for k, op in ops if op == "D"] + ([gap] if gap else [])
        used = len(seg) - a if at_end else b + 1
        return sum(k for k, op in ops if op == "="), used, runs
    if at_end:
        piece, seg = piece[::-1], seg[::-1]
    ops = _ops(_edlib_align(piece, seg, mode="SHW", task="path")["cigar"])
    # characters of the quote left unmatched at the far end do not pull the span along
    while ops and ops[-1][1] != "=":
        ops.pop()
    used = sum(k for k, op in ops if op in "=XD")
    return sum(k for k, op in ops if op == "="), used, [k for k, op in ops if op == "D"]


def _windows(codes: np.ndarray, k: int) -> np.ndarray:
    """Each `k`-character piece of `codes` as a row (a view: nothing is copied)."""
    size = codes.itemsize
    return np.ndarray((len(codes) - k + 1, k), codes.dtype, codes, strides=(size, size))


def _piece_keys(text: str, k: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A key for each `k`-character piece of `text`, and the pieces as rows to compare
    where two different pieces may share a key (None where they cannot): the pieces' own
    bytes (`_byte_keys`) where they fit, else their hashes (`_piece_hashes`), a shared
    hash to be checked."""
    keys = _byte_keys(text, k)
    if keys is not None:
        return keys, None
    codes = _code_points(text)
    return _piece_hashes(codes, k).view(np.int64), _windows(codes, k)


def _byte_keys(text: str, k: int) -> np.ndarray | None:
    """Each `k`-character piece (k <= 8) of a text of one-byte characters (Latin-1: most
    folded Latin text) read straight from its bytes as one number, which no other piece
    shares, so equal keys are equal pieces; None for any other text or longer pieces."""
    if k > 8:
        return None
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:
        return None
    # the 8 bytes from each piece's start (7 padding the last), read little-endian: the
    # piece's bytes are the low `k`, the rest masked off
    n = max(0, len(raw) - k + 1)
    keys = np.ndarray((n,), dtype="<u8", buffer=raw + bytes(7), strides=(1,))
    return keys & np.uint64((1 << (8 * k)) - 1) if k < 8 else keys


def _kmer_runs(qf: str, window: str, k: int) -> list[list[int]]:
    """The exact matches `[quote_pos, window_pos, length]` of the quote in the window, in
    order of quote then window position: the `k`-character pieces both hold (a piece the
    quote holds more than 4 times says nothing and is skipped), merged along diagonals into
    maximal runs. Found for all pieces at once with numpy: the pieces are paired by key
    (`_piece_keys`), then, unless equal keys are equal pieces, kept only when their
    characters are equal, so only real copies count."""
    nq, nw = len(qf) - k + 1, len(window) - k + 1
    if nq <= 0 or nw <= 0:
        return []
    # the quote and the window keyed in one pass (a piece's key is that of its characters
    # alone; the pieces running from one into the other are not looked at)
    hashes, rows = _piece_keys(qf + window, k)
    # the quote's pieces are looked up among the window's, sorted: numpy searches a few
    # keys in a long sorted array faster than many keys in a short one. Which pairs share
    # a key, not their order, decides the runs (they are sorted along diagonals below), and
    # only pieces with equal characters are kept, so any key would answer the same.
    qhashes, whashes = hashes[:nq], hashes[len(qf) :]
    # (the arrays' own methods where numpy's functions would only hand over to them: a
    # window makes some twenty such calls, each costing about a microsecond more so)
    order = whashes.argsort()
    whashes = whashes[order]
    firsts = whashes.searchsorted(qhashes, "left")
    # the quote's pieces whose hash the window has at all: only those are looked up again
    hit = (whashes[np.minimum(firsts, nw - 1)] == qhashes).nonzero()[0]
    firsts = firsts[hit]
    counts = whashes.searchsorted(qhashes[hit], "right") - firsts
    ends = counts.cumsum()
    total = int(ends[-1]) if len(ends) else 0
    # every (window, quote) pair of positions whose pieces hash alike
    p = hit.repeat(counts)
    t = order[firsts.repeat(counts) + np.arange(total) - (ends - counts).repeat(counts)]
    if rows is not None:
        same = (rows[p] == rows[t + len(qf)]).all(axis=1)
        t, p = t[same], p[same]
    keep = np.bincount(t, minlength=nw)[t] <= 4
    t, p = t[keep], p[keep]
    if not len(t):
        return []
    # each pair as one number, in order of diagonal then quote position (numbers sort
    # several times faster than places by two keys): a run goes on while the next number is
    # one more, the next piece on its diagonal starting one character further
    width = nq + 1
    pairs = (t - p + nq) * width + p
    pairs.sort()
    cuts = (pairs[1:] != pairs[:-1] + 1).nonzero()[0]
    heads = pairs[np.concatenate(([0], cuts + 1))]
    lengths = pairs[np.concatenate((cuts, [len(pairs) - 1]))] - heads + k
    hp = heads % width
    ht = heads // width - nq + hp
    # a window holds a few runs, too few for numpy's calls to pay
    runs = zip(hp.tolist(), ht.tolist(), lengths.tolist(), strict=True)
    return [list(run) for run in sorted(runs)]


def _chain(
    qf: str, window: str, k: int
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """The best colinear chain of exact matches `(quote_pos, window_pos, length)`, and the
    exact matches left out of it.

    Matches are k-mers of the quote found in the window, merged along diagonals into maximal
    runs; the chain maximises matched quote characters minus a small cost per jump.
    """
    segs = _kmer_runs(qf, window, min(k, len(qf)))
    if not segs:
        return [], []
    if len(segs) > THRESHOLDS.max_chain_segments:
        segs = sorted(segs, key=lambda s: -s[2])[: THRESHOLDS.max_chain_segments]
        segs.sort(key=lambda s: (s[0], s[1]))
    best, back, trim = _chain_links(segs)
    j = max(range(len(segs)), key=best.__getitem__)
    chain: list[tuple[int, int, int]] = []
    used: set[int] = set()
    while j != -1:
        p, t, length = segs[j]
        cut = trim[j] if back[j] != -1 else 0
        chain.append((p + cut, t + cut, length - cut))
        used.add(j)
        j = back[j]
    chain.reverse()
    return chain, [seg for index, seg in enumerate(segs) if index not in used]


def _chain_links(segs: list[list[int]]) -> tuple[list[float], list[int], list[int]]:
    """For each run `(quote_pos, window_pos, length)` (in order of quote, then window
    position): the best value of a chain ending with it (matched quote characters less a
    small cost per jump), the run before it in that chain (-1 for none) and how much of its
    start that run already holds.

    A run may overlap the one before it in the chain (both hold the same few characters,
    "...global|in the..." read twice): it then joins with its start trimmed. Written out
    with plain comparisons in place of `max`, `min` and `abs` (the same values, computed in
    the same order): this loop runs over every pair of runs.

    The runs before each are tried nearest first, where its best link usually is: a run
    whose chain value plus this run's length is below the best link found so far cannot
    beat it (a link only takes away from that sum) and is passed over after two
    comparisons. Among links of equal value the earliest run is kept (a tie replaces the
    link found, unless that is none), as trying them in order kept the first."""
    ps = [s[0] for s in segs]
    ts = [s[1] for s in segs]
    diagonals = [t - p for p, t in zip(ps, ts, strict=True)]
    quote_ends = [p + s[2] for p, s in zip(ps, segs, strict=True)]
    window_ends = [t + s[2] for t, s in zip(ts, segs, strict=True)]
    best: list[float] = []
    back: list[int] = []
    trim: list[int] = []
    for j, (pj, tj, lj) in enumerate(segs):
        value_j, back_j, trim_j, dj = lj, -1, 0, diagonals[j]
        for i in range(j - 1, -1, -1):
            pi, ti = ps[i], ts[i]
            if pi >= pj or ti >= tj:
                continue
            best_i = best[i]
            if best_i + lj < value_j:
                continue
            overlap, other = quote_ends[i] - pj, window_ends[i] - tj
            if other > overlap:
                overlap = other
            if overlap < 0:
                overlap = 0
            if overlap >= lj:
                continue
            jump = dj - diagonals[i]
            if jump < 0:
                jump = -jump
            value = best_i + lj - overlap - (jump if jump < 8 else 8) * 0.5 - jump * 0.05
            if value > value_j or (value == value_j and back_j != -1):
                value_j, back_j, trim_j = value, i, overlap
        best.append(value_j)
        back.append(back_j)
        trim.append(trim_j)
    return best, back, trim


_TIER_WORDS = {
    EXACT: "found verbatim",
    NORMALISED: "found after folding whitespace, case, hyphenation and Unicode variants",
    FUZZY: "found approximately",
}


class _Context:
    """The recorded prefix/suffix, folded only if some choice needs them (most quotes have
    one copy and never look)."""

    __slots__ = ("_edges", "_folded", "_lines", "_raw")

    def __init__(self, prefix: str, suffix: str, quote: str = "") -> None:
        prefix, suffix = prefix or "", suffix or ""
        # the context was cut at a fixed length, perhaps inside a glyph placeholder
        # ("(cid:1"): folding drops whole placeholders only, so the cut piece goes too
        if "cid:" in prefix:
            prefix = _CID_CUT_HEAD.sub("", prefix, count=1)
        if "(c" in suffix:
            suffix = _CID_CUT_TAIL.sub("", suffix, count=1)
        self._raw = (prefix, suffix)
        self._edges = (quote[:1], quote[-1:])
        self._folded: tuple[str, str] | None = None
        self._lines: tuple[list[str], list[str]] | None = None

    def _fold(self) -> tuple[str, str]:
        """Each side folded as it reads next to the quote: a prefix ending "type-" before a
        quote beginning "expr" folds to "type", as the text's "type-expr" does."""
        if self._folded is None:
            p, s = self._raw
            head, tail = self._edges
            fhead, ftail = _fold_word(head), _fold_word(tail)
            fp = fold(p + head) if p else ""
            if fp and fhead:
                fp = fp[: -len(fhead)]
            fs = fold(tail + s) if s else ""
            if fs and ftail:
                fs = fs[len(ftail) :]
            self._folded = (fp[-FOLDED_CONTEXT_CHARS:], fs[:FOLDED_CONTEXT_CHARS])
        return self._folded

    @property
    def lines(self) -> tuple[list[str], list[str]]:
        """Each side's lines folded as they read next to the quote (`_folded_lines`): the
        suffix's "-name )" after a quote ending "fun" folds to "name)". Joined, each side is
        what `_fold` gives before its cut to `FOLDED_CONTEXT_CHARS` (which folds without the map to
        lines, for speed: most choices need the sides whole). Made once: the rows next to the
        quote (`rows`) and the placement as rows (`_by_pieces`) read them from here."""
        if self._lines is None:
            p, s = self._raw
            head, tail = self._edges
            before = _folded_lines(p + head) if p else []
            if before and head:
                before[-1] = before[-1][: len(before[-1]) - len(_fold_word(head))]
            after = _folded_lines(tail + s) if s else []
            if after and tail:
                after[0] = after[0][len(_fold_word(tail)) :]
            self._lines = (before, after)
        return self._lines

    @property
    def prefix(self) -> str:
        return self._fold()[0]

    @property
    def suffix(self) -> str:
        return self._fold()[1]

    def __bool__(self) -> bool:
        return any(self._raw) and any(self._fold())

    @property
    def raw(self) -> tuple[str, str]:
        return self._raw


_WORD = re.compile(r"\w+")
_CID = re.compile(r"\(cid:\d{1,5}\)")
#: What is left of a glyph placeholder cut at the start of a prefix or the end of a suffix.
_CID_CUT_HEAD = re.compile(r"\A(?:id|d)?:\d{1,5}\)|\A\d{1,5}\)(?=.*\(cid:\d)", re.S)
_CID_CUT_TAIL = re.compile(r"\(c(?:i(?:d(?::\d{0,5})?)?)?\Z")


_ASCII_SPACE = " \t\n\r\f\v"
#: What a quote may begin or end with that folding drops: marks and whitespace.
_EDGE_CHARS = "".join(_MARKUP) + " \t\n\r\f\v\u00a0"
_MARKS = str.maketrans("", "", "".join(_MARKUP))
_SPACE_RUN = re.compile(f"[{_ASCII_SPACE}]+")


def _layout(text: str) -> str:
    """The text as words and line breaks: Markdown marks and noise dropped, every run of ASCII
    whitespace one space, or one line break if it holds one. Two copies with the same layout
    differ only in indentation, spacing and emphasis; a no-break space is a character here."""
    if "](" in text or "![" in text or "---" in text:
        text = _MARKDOWN_NOISE.sub("", text)
    text = text.translate(_MARKS).strip(_ASCII_SPACE)
    return _SPACE_RUN.sub(lambda m: "\n" if "\n" in m.group() else " ", text)


def _word_at(text: str, i: int) -> str:
    """The run of letters and digits around `text[i]` (empty if that is neither)."""
    a = b = i
    while a > 0 and text[a - 1].isalnum():
        a -= 1
    while b < len(text) and text[b].isalnum():
        b += 1
    return text[a:b]


#: A letter or digit: what `str.isalnum` says, searched for at C speed.
_ALNUM = re.compile(r"[^\W_]")


def _fixes_ends(first: str, last: str, context: _Context) -> bool:
    """Whether a quote's first and last lines may fix the ends of a span found line by line:
    one holds letters, and the other letters, at least `moved_lines_edge` characters folded
    (a section number "2.1", not a matrix's "0", which every row has), or a recorded context
    on its side that can tell (`_telling`: a file's first row "2" after its name)."""
    lettered = [not _letterless(line) for line in (first, last)]
    sides = zip((context.prefix, context.suffix), context.raw, strict=True)
    return any(lettered) and all(
        has or len(fold(line)) >= THRESHOLDS.moved_lines_edge or _telling(*side)
        for has, line, side in zip(lettered, (first, last), sides, strict=True)
    )


def _telling(folded: str, raw: str) -> bool:
    """Whether a side of the recorded context can fix a short edge line by itself: at least
    `refit_context_min` characters folded (`folded`), with letters (`raw`)."""
    return len(folded) >= THRESHOLDS.refit_context_min and not _letterless(raw)


#: Characters a word may be broken at across a line's end: a context beginning (ending) with
#: one does not show that the highlight met a word's edge.
_WORD_BREAKS = "-\u00ad\u2010\u2011"


def _word_edge(side: str) -> bool:
    """Whether one recorded character next to the quote shows a word's edge there."""
    return bool(side) and not side.isalnum() and side not in _WORD_BREAKS


def _letterless(quote: str) -> bool:
    """Whether the quote holds no letter at all (numbers, signs, punctuation)."""
    return not any(ch.isalpha() for ch in quote)


_LINE_BREAK = re.compile(r"\s*[\n\r\f\v]\s*")
_BREAK_CHAR = re.compile(r"[\n\r\f\v]")


def _split_lines(text: str) -> list[str]:
    """`_LINE_BREAK.split(text)`: the lines of `text`, the whitespace around each run of
    line breaks dropped. Split at the breaks alone, each line's inner edges stripped and
    lines of whitespace alone merged into the break around them: the pattern's leading
    `\\s*` has the regex engine try every character (timed, three times the cost on a
    quote of a few lines, most quotes that are not in the parse)."""
    parts = _BREAK_CHAR.split(text)
    if len(parts) == 1:
        return parts
    lines = [parts[0].rstrip()]
    lines += [line for line in map(str.strip, parts[1:-1]) if line]
    lines.append(parts[-1].lstrip())
    return lines


def _folded_lines(text: str) -> list[str]:
    """Each line of `text` as it reads folded in the whole: a word hyphenated across two
    lines ("dif-" / "ferent") loses its hyphen, a list marker at a line's start ("+ monoid")
    goes, as they do when the whole text is folded. Their concatenation is `fold(text)`.

    Folding is the whole text's cuts (which need their surroundings: "dif-" before
    "ferent") and then one character at a time, so a line's folded characters are its own
    characters, those in a cut blanked, each folded alone: the same as cutting
    `fold_text(text).text` where the lines start, without its offset map (numpy calls that
    cost several times this for a quote)."""
    blanked: list[str] = []
    at = 0
    for a, b in sorted(_cuts(text)):
        a = max(a, at)
        if b > a:
            # whitespace folds to nothing, and keeps every later offset where it was
            blanked += (text[at:a], " " * (b - a))
            at = b
    blanked.append(text[at:])
    kept = "".join(blanked)
    breaks = [m.start() for m in _LINE_BREAK.finditer(text)]
    return [_fold_chars(kept[a:b]) for a, b in pairwise([0, *breaks, len(text)])]


def _place_pieces(
    ftext: str, pieces: list[str], k: int, hit: int, budget: int
) -> tuple[list[int], list[int], int] | None:
    """Lay the pieces out in order around piece `k` found at `hit`, each the nearest copy,
    with at most `budget` characters between them in all: the first piece's possible starts,
    the last piece's possible ends (in reach of the rest of the budget) and what was spent."""
    spent = 0
    pos = hit + len(pieces[k])
    lasts = [pos]
    for piece in pieces[k + 1 :]:
        at = ftext.find(piece, pos, pos + budget - spent + len(piece))
        if at < 0:
            return None
        spent += at - pos
        pos = at + len(piece)
        lasts = [pos]
    pos = hit
    firsts = [pos]
    for piece in reversed(pieces[:k]):
        at = ftext.rfind(piece, max(0, pos - (budget - spent) - len(piece)), pos)
        if at < 0:
            return None
        spent += pos - (at + len(piece))
        pos = at
        firsts = [pos]
    left = budget - spent
    if k + 1 < len(pieces):
        last = pieces[-1]
        end = lasts[0]
        lasts += [e for e in (at + len(last) for at in find_all(ftext[: end + left], last, end))]
    if k > 0:
        first = pieces[0]
        start = firsts[0]
        firsts += [a for a in find_all(ftext[:start], first, max(0, start - left - len(first)))]
    return firsts, lasts, spent


def _anchored_distance(context: str, ftext: str, at: int, *, before: bool) -> int:
    """Edit distance of the recorded prefix (`before`) ending right at `at`, or of the
    suffix starting right there, to the text."""
    reach = len(context) + len(context) // 2 + 4
    if before:
        seg = ftext[max(0, at - reach) : at][::-1]
        context = context[::-1]
    else:
        seg = ftext[at : at + reach]
    if not seg:
        return len(context)
    distance = int(_edlib_align(context, seg, mode="SHW", task="distance")["editDistance"])
    return len(context) if distance < 0 else distance


def _context_copy(context: str, text: str, within: tuple[int, int], *, before: bool) -> int | None:
    """Where the one copy of a recorded side of context in `text[within[0]:within[1]]`
    meets the quote: the end of the prefix's copy (`before`) or the start of the suffix's,
    within one edit per `pieces_context_slack` of its characters. None when there is none,
    or several places."""
    if not context or within[1] <= within[0]:
        return None
    n = len(context)
    # a copy as recorded is no edit away, so it is the best place there can be: the side read
    # as recorded, most of them, needs no alignment (two such copies, and no place is sure)
    copies = find_all(text, context, within[0], limit=1, end=within[1])
    if copies:
        return copies[0] + (n if before else 0) if len(copies) == 1 else None
    k = n // THRESHOLDS.pieces_context_slack
    best, places = k + 1, set()
    # only around an exact piece: a copy within k edits leaves one of k + 1 pieces whole, so
    # the best copies are those of the whole page, without copying, aligning (or gathering
    # the characters of) the whole page
    for a, b in _merged(_piece_hits(context, text, within, k + 1), n, k, within):
        found = _edlib_align(context, text[a:b], mode="HW", task="locations", k=k)
        distance = found["editDistance"]
        if distance < 0 or distance > best:
            continue
        if distance < best:
            best, places = distance, set()
        places.update(a + (end + 1 if before else start) for start, end in found["locations"])
    return places.pop() if len(places) == 1 else None


def _piece_hits(context: str, text: str, within: tuple[int, int], parts: int) -> list[int]:
    """Where in `text[within[0]:within[1]]` a copy of `context` would begin, by each exact
    copy of one of its `parts` pieces there."""
    n, hits = len(context), []
    for i in range(parts):
        lo, hi = i * n // parts, (i + 1) * n // parts
        at = text.find(context[lo:hi], *within)
        while at >= 0 and hi > lo:
            hits.append(at - lo)
            at = text.find(context[lo:hi], at + 1, within[1])
    return sorted(hits)


def _merged(
    starts: list[int], length: int, edits: int, within: tuple[int, int]
) -> list[tuple[int, int]]:
    """The stretches inside `within` a copy `length` characters long with up to `edits`
    edits may cover from each of `starts` (sorted), overlapping ones merged."""
    spans: list[tuple[int, int]] = []
    for at in starts:
        a, b = max(within[0], at - edits), min(within[1], at + length + edits)
        if spans and a <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], b))
        else:
            spans.append((a, b))
    return spans


def _aligned_length(qf: str, segment: str) -> int:
    """How much of `segment`, from its start, the folded quote aligns to best (0 if none)."""
    if not segment:
        return 0
    found = _edlib_align(qf, segment, mode="SHW", task="locations")
    if found["editDistance"] < 0 or not found["locations"]:
        return 0
    return found["locations"][0][1] + 1


def _similarity(qf: str, span: str) -> float:
    """1 less the edit distance of the folded quote to the whole span, per character of the
    longer."""
    found = int(_edlib_align(qf, span, mode="NW", task="distance")["editDistance"])
    return 0.0 if found < 0 else 1 - found / max(len(qf), len(span))


def _holds_all(window: str, pieces: list[str]) -> bool:
    """Whether `window` holds every piece, each at its own place (longest first), in any
    order."""
    for piece in pieces:
        at = window.find(piece)
        if at < 0:
            return False
        window = window[:at] + "\0" * len(piece) + window[at + len(piece) :]
    return True


def _words_kept(quote: str, folded_span: str) -> float:
    """The share of the quote's words (`_long_words`, an unspaced script's split into pairs)
    that occur in the folded span."""
    long_words = _long_words(quote, split_unspaced=True)
    if not long_words:
        return 0.0
    return sum(w in folded_span for w in long_words) / len(long_words)


#: The most distinct characters edlib can align at once.
_EDLIB_ALPHABET = 256


#: Scripts written without spaces between words (Chinese, Japanese kana and kanji): their
#: words are each run's pairs of neighbouring characters, or a whole sentence would be one
#: word, missing from any span in which a single character was read otherwise.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")
_KEPT_WORD = re.compile(f"[{_UNSPACED}]+|(?:(?![{_UNSPACED}])\\w)+")


#: `fold` of one word, remembered: the same words recur from quote to quote, and the words
#: of each quote that reaches the approximate tier are folded one by one, several times.
_fold_word_remembered = lru_cache(maxsize=4096)(fold)


def _fold_word(word: str) -> str:
    """`fold` of one word (or character). An ASCII word of letters and digits folds to its
    lower case (no cut applies: they need a mark, a hyphen or a line break; each letter
    only loses its case), the most common word, answered without the cache."""
    if word.isascii() and word.isalnum():
        return word.lower()
    return _fold_word_remembered(word)


def _long_words(quote: str, *, split_unspaced: bool = False) -> tuple[str, ...]:
    """`_quote_words` of the quote, remembered for the few calls of one resolution: an
    absent passage's offers ask for the same quote's words two or three times. (The
    shortest word kept is part of the key: the benchmark's calibration changes it.)"""
    return _long_words_remembered(quote, split_unspaced, THRESHOLDS.kept_word_min)


def _quote_words(quote: str, split_unspaced: bool, shortest: int) -> tuple[str, ...]:
    """The quote's words: folded, at least `kept_word_min` long when it has such words,
    glyph placeholders ("(cid:19)", pdfminer's name for a glyph without a character; folding
    drops it from the span) left out. With `split_unspaced`, a run of an unspaced script is
    its pairs of characters (each counted long): what a fuzzy span must hold to be accepted.
    Offers count such a run as one word, as their thresholds were chosen (split, two more
    absent passages were offered held out, and no miss more). `shortest` is
    `kept_word_min`."""
    if "(cid:" in quote:
        quote = _CID.sub(" ", quote)
    if quote.isascii() and "_" not in quote:
        # each word is letters and digits, folding to its lower case (`_fold_word`), and
        # none is of an unspaced script: both kinds of words are these
        words = _WORD.findall(quote.lower())
        return tuple([w for w in words if len(w) >= shortest] or words)
    # a quote without an unspaced script has the same words either way, found sooner so
    unspaced = split_unspaced and _UNSPACED_RUN.search(quote)
    found = (_KEPT_WORD if unspaced else _WORD).findall(quote)
    words = [
        w
        for w in (
            word.lower() if word.isascii() and word.isalnum() else _fold_word_remembered(word)
            for word in found
        )
        if w
    ]
    if not split_unspaced or not _UNSPACED_RUN.search("".join(words)):
        # (no word of an unspaced script: each is one word, kept when long enough)
        return tuple([w for w in words if len(w) >= shortest] or words)
    long_enough = [
        piece
        for w in words
        for piece in _pairs_if_unspaced(w)
        if len(piece) >= shortest or _UNSPACED_RUN.fullmatch(piece)
    ]
    return tuple(long_enough or words)


_long_words_remembered = lru_cache(maxsize=16)(_quote_words)


def _pairs_if_unspaced(word: str) -> list[str]:
    if len(word) < 3 or not _UNSPACED_RUN.fullmatch(word):
        return [word]
    return [word[i : i + 2] for i in range(len(word) - 1)]


def _holds_words(long_words: Sequence[str], folded_span: str, share: float) -> bool:
    """Whether the folded span holds at least `share` of the quote's words (`_long_words`),
    a word counting when it occurs within one edit per `offer_word_edits_every` of its
    characters: a misspelt word ("acrue") is still the quote's, a word from another passage
    is not. The answer is how many words fail, against how many may: the words missing
    verbatim that cannot be near (too short) are counted first, and each other missing word
    is looked at only while the answer is open: absent passages, most of what reaches
    here, miss many words."""
    if not long_words or not folded_span:
        return False
    every = THRESHOLDS.offer_word_edits_every
    allowed = len(long_words) - math.ceil(share * len(long_words) - 1e-9)
    # the last words first: a passage whose head is here and whose tail is not misses its
    # last words, and a missing word too short to be near decides the answer at once
    near: list[str] = []
    for w in reversed(long_words):
        if w in folded_span:
            continue
        if len(w) >= every:
            near.append(w)
        elif allowed:
            allowed -= 1
        else:
            return False
    if len(near) <= allowed:
        return True
    alphabet = _Alphabet(folded_span)
    for w in near:
        if not _is_near(w, folded_span, every, alphabet):
            allowed -= 1
            if allowed < 0:
                return False
    return True


class _Alphabet:
    """The distinct characters of a span, gathered only if a word needs them."""

    __slots__ = ("_chars", "span")

    def __init__(self, span: str) -> None:
        self.span = span
        self._chars: set[str] | None = None

    def fits(self, word: str) -> bool:
        """Whether the span and `word` hold at most `_EDLIB_ALPHABET` characters together."""
        if self._chars is None:
            # an ASCII span holds at most 128 distinct characters, a short one at most its
            # length: no need to gather them
            span = self.span
            limit = 128 if span.isascii() else len(span)
            if limit + len(word) <= _EDLIB_ALPHABET:
                return True
            self._chars = set(span)
        chars = self._chars
        return (
            len(chars) + len(word) <= _EDLIB_ALPHABET or len(chars.union(word)) <= _EDLIB_ALPHABET
        )


def _is_near(word: str, span: str, every: int, alphabet: _Alphabet) -> bool:
    """Whether `word` (missing from `span` verbatim) occurs in it within one edit per
    `every` of its characters. A long span of Chinese text holds hundreds of distinct
    characters: a misspelt word counts only where it and the span hold at most 256
    (`_EDLIB_ALPHABET`), where the offers' thresholds were chosen (counting it in wider
    spans offered two more absent passages held out).

    Exact filter first: a copy within `edits` edits leaves at least one of `edits + 1`
    pieces of the word untouched (each edit touches at most one piece), so a word none of
    whose pieces is in the span is more than `edits` edits from any part of it, which is
    what edlib would answer, without asking it. Such a copy is also at most `edits`
    characters longer than the word, so it lies within the word's length and `edits` of a
    piece's copy: edlib is asked about the part of the span from the first piece's copy to
    the last one's, which answers as the whole span does (edlib's cost grows with the span;
    timed, a fifth of these checks' cost)."""
    n = len(word)
    edits = n // every
    parts = edits + 1
    lo, hi = len(span), -1
    for i in range(parts):
        piece = word[i * n // parts : (i + 1) * n // parts]
        first = span.find(piece)
        if first >= 0:
            lo = min(lo, first)
            hi = max(hi, span.rfind(piece) + len(piece))
    if hi < 0 or not alphabet.fits(word):
        return False
    # the word shares at most `_EDLIB_ALPHABET` characters with the span, so edlib takes
    # them as they are (`_distance` would gather the span's characters again)
    part = span[max(0, lo - n - edits) : hi + n + edits]
    found = edlib.align(word, part, mode="HW", task="distance")["editDistance"]
    return (found if found >= 0 else n) <= edits


def _distance(pattern: str, window: str) -> int:
    """Edit distance of `pattern` to its best-matching part of `window`."""
    if not window:
        return len(pattern)
    # a copy inside the window is no edit away: most recorded contexts read as recorded, and
    # `in` answers that in C without aligning (edlib would answer 0 too, `_edlib_align`'s
    # refusal of more than 254 shared characters aside)
    if pattern in window and (
        len(pattern) <= _EDLIB_ALPHABET - 2 or len(set(pattern)) <= _EDLIB_ALPHABET - 2
    ):
        return 0
    distance = int(_edlib_align(pattern, window, mode="HW", task="distance")["editDistance"])
    return len(pattern) if distance < 0 else distance


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------


def prepare(text: str, page_starts: Sequence[int] | None = None) -> PreparedText:
    """Fold a parse once so many quotes can be resolved against it cheaply."""
    return PreparedText(text, page_starts)


def resolve(
    text: str,
    quote: str,
    *,
    occurrence: int = 0,
    page_hint: int | None = None,
    page_starts: Sequence[int] | None = None,
    prefix: str = "",
    suffix: str = "",
) -> Resolution:
    """Locate `quote` in `text`.

    `occurrence` picks a repetition (from 0, in reading order; counted among the copies on
    the hinted page when the page has any, as context-grid does). `page_hint` names a page
    from 1, with `page_starts[i]` the offset where page `i + 1` begins. `prefix`/`suffix` are
    the characters recorded either side of the quote where it was highlighted. For many
    quotes against one text use `prepare` and `PreparedText.resolve` or `resolve_many`.
    """
    return PreparedText(text, page_starts).resolve(
        quote, occurrence=occurrence, page_hint=page_hint, prefix=prefix, suffix=suffix
    )


def _field(anchor: Any, name: str, default: Any) -> Any:
    if isinstance(anchor, Mapping):
        value = anchor.get(name, default)
    else:
        value = getattr(anchor, name, default)
    return default if value is None and default is not None else value


def resolve_many(prepared: PreparedText, anchors: Iterable[Any]) -> list[Resolution]:
    """Resolve many anchors against one prepared parse.

    Each anchor is a mapping or an object (such as context-grid's `GoldAnchor`) with a
    `quote` and optionally `occurrence`, `page_hint`, `prefix` and `suffix`.
    """
    return [
        prepared.resolve(
            str(_field(a, "quote", "")),
            occurrence=int(_field(a, "occurrence", 0)),
            page_hint=_field(a, "page_hint", None),
            prefix=str(_field(a, "prefix", "")),
            suffix=str(_field(a, "suffix", "")),
        )
        for a in anchors
    ]
