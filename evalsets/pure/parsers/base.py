"""The shared vocabulary of every parser: its result, its failure, and the small helpers they share.

Each parser turns the bytes of one uploaded document into one "parse version". Keeping the
result type (`ParsedText`), the failure type (`ParseError`) and the text clean-up helpers in one
place means every parser reports pages, versions and failures the same way, and the isolated
runner can ship all of them across a process boundary as plain JSON.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

#: ``progress(done_pages, total_pages)``, called as pages complete.
ProgressFn = Callable[[int, int], None]

#: What goes between two pages of a paged document. A blank line reads naturally in the UI and in
#: exports; the real boundaries are in ``page_starts``, so nothing relies on spotting this string.
PAGE_SEPARATOR = "\n\n"

#: What goes between two paragraphs (or other blocks) of an unpaged document.
BLOCK_SEPARATOR = "\n\n"

DEFAULT_MAX_PAGES = 2000

ERROR_CODES = frozenset(
    {
        "encrypted",
        "no_text",
        "wrong_type",
        "too_large",
        "too_many_pages",
        "timeout",
        "out_of_memory",
        "corrupt",
        "empty",
    }
)


class JobError(Exception):
    """A job that gave no result: ``code`` for programs, ``reason`` (a sentence) for people,
    ``detail`` (exception class and message, a child's exit status) for logs only."""

    def __init__(self, code: str, reason: str, detail: str = "") -> None:
        super().__init__(code, reason, detail)
        self.code = code
        self.reason = reason
        self.detail = detail

    def __str__(self) -> str:
        return self.reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.reason!r})"

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "reason": self.reason, "detail": self.detail}


class ParseError(JobError):
    """A document could not be read, with a reason a labeller can act on.

    ``code`` is a short stable slug for programs (see ``ERROR_CODES``), ``reason`` is one or two
    plain sentences for people (no stack trace, no library names), and ``detail`` is an optional
    developer note (exception class and message) meant for logs, never for the UI.
    """

    def __init__(self, code: str, reason: str, detail: str = "") -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown ParseError code {code!r}")
        super().__init__(code, reason, detail)


@dataclass
class ParsedText:
    """One parse version of one document.

    ``page_starts[i]`` is the code-point offset in ``text`` where page ``i + 1`` begins (its first
    character); unpaged formats have ``[0]``. Pages are joined with ``PAGE_SEPARATOR``, so page
    ``i`` is ``text[page_starts[i]:page_starts[i + 1] - len(PAGE_SEPARATOR)]``. An empty page still
    gets an entry (pointing at where its text would have been).

    ``char_boxes`` is optional: where each character sits on its page, in the packed form of
    ``charboxes.py`` (the pdfium parser gives it; the PDF view's text layer reads it).
    """

    text: str
    page_starts: list[int]
    parser: str
    parser_version: str
    meta: dict[str, Any] = field(default_factory=dict)
    char_boxes: bytes | None = None

    def __post_init__(self) -> None:
        starts = self.page_starts
        if not starts or starts[0] != 0:
            raise ValueError("page_starts must start with 0")
        if any(b < a for a, b in itertools.pairwise(starts)):
            raise ValueError("page_starts must not decrease")
        if starts[-1] > len(self.text):
            raise ValueError("page_starts point past the end of the text")

    @property
    def page_count(self) -> int:
        return len(self.page_starts)

    def page_text(self, index: int) -> str:
        """The text of page ``index`` (0-based), without the separator that follows it."""
        start, end = page_span(self.page_starts, index, len(self.text))
        return self.text[start:end]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.char_boxes is not None:  # JSON carries text: the packed boxes go as base64
            data["char_boxes"] = base64.b64encode(self.char_boxes).decode("ascii")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParsedText:
        return cls(
            text=data["text"],
            page_starts=[int(x) for x in data["page_starts"]],
            parser=data["parser"],
            parser_version=data["parser_version"],
            meta=dict(data.get("meta") or {}),
            char_boxes=base64.b64decode(data["char_boxes"]) if data.get("char_boxes") else None,
        )


@runtime_checkable
class Parser(Protocol):
    """What every parser module exposes (as its module-level ``PARSER``)."""

    name: str
    kind: str
    version: str

    def parse(
        self, data: bytes, *, max_pages: int, progress: ProgressFn | None = None
    ) -> ParsedText: ...


def parse_seconds(parser: object, pages: int) -> float:
    """About how many seconds of one core ``parser`` takes to read ``pages`` pages: its
    optional ``seconds_per_page`` (measured, as ``bench/parse_scaling_bench.py``'s PDF
    costs) times the pages; 0 for a parser that does not say (a team's own, by default)."""
    return pages * float(getattr(parser, "seconds_per_page", 0.0) or 0.0)


#: Keys of a page range's ``meta`` that describe the range itself, not the document.
RANGE_META_KEYS = ("document_pages", "first_page")


@runtime_checkable
class PageRangeParser(Protocol):
    """An optional capability: a paged parser that can read pages ``start`` .. ``stop`` alone.

    A parser that has these two methods (``supports_ranges`` checks) lets several workers
    share one document: each reads a range of pages, and ``join_ranges`` puts them together
    in page order into exactly what ``parse`` returns, byte for byte.

    ``parse_pages`` reads pages ``start`` up to ``stop`` (0-based, ``stop`` excluded; ``None``
    means to the last page), joined as ``parse`` joins pages, ``page_starts`` counted from
    the range's own start. It reports ``progress(start, total)`` before its first page, then
    ``progress(page_number, total)`` as pages complete, in the whole document's numbers, so
    the first report says how many pages the document has. Its ``meta`` holds
    ``document_pages`` (the whole document's count), ``first_page`` (1-based), ``pages``,
    and ``empty_pages``/``failed_pages`` numbered in the whole document, plus whatever the
    parser notes about the file. It must not refuse a range for having no text (a blank
    range is no reason to refuse the document): that is ``join_ranges``'s call, made on the
    whole text.

    ``pages_per_range`` is the parser's own range size: enough pages for a few seconds of
    work on one core, so what each range costs besides its pages (a child process, opening
    the file, skipping to its first page) stays a small share.
    """

    pages_per_range: int

    def parse_pages(
        self,
        data: bytes,
        *,
        start: int,
        stop: int | None,
        max_pages: int,
        progress: ProgressFn | None = None,
    ) -> ParsedText: ...

    def join_ranges(self, parts: list[ParsedText]) -> ParsedText: ...


def page_span(page_starts: Sequence[int], index: int, length: int) -> tuple[int, int]:
    """Where page ``index`` (0-based) of a text ``length`` long lies, without the
    ``PAGE_SEPARATOR`` that follows it: pages are joined as ``join_pages`` joins them."""
    start = page_starts[index]
    if index + 1 < len(page_starts):
        return start, page_starts[index + 1] - len(PAGE_SEPARATOR)
    return start, length


def supports_ranges(parser: object) -> bool:
    """Whether ``parser`` can read a range of pages alone (``PageRangeParser``)."""
    return isinstance(parser, PageRangeParser)


def join_page_ranges(parts: list[ParsedText]) -> tuple[str, list[int], dict[str, Any]]:
    """The text, page starts and meta of consecutive page ranges put back together.

    ``join_pages`` of all pages equals the ranges' own joins joined by ``PAGE_SEPARATOR``
    with each range's starts shifted, so the text is the single parse's byte for byte. The
    meta is the first range's, without the range's own keys, with ``pages``, ``empty_pages``
    and ``failed_pages`` taken over all ranges.
    """
    if not parts:
        raise ValueError("join_page_ranges needs at least one range")
    texts: list[str] = []
    starts: list[int] = []
    offset = 0
    for i, part in enumerate(parts):
        if i:
            texts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        starts.extend(offset + start for start in part.page_starts)
        texts.append(part.text)
        offset += len(part.text)
    meta = {k: v for k, v in parts[0].meta.items() if k not in RANGE_META_KEYS}
    meta["pages"] = sum(int(part.meta.get("pages", part.page_count)) for part in parts)
    for key in ("empty_pages", "failed_pages"):
        meta[key] = [n for part in parts for n in part.meta.get(key, [])]
    return "".join(texts), starts, meta


def library_version(distribution: str) -> str:
    """The installed version of a library, read without importing it (keeps imports cheap)."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


# --- text clean-up ---------------------------------------------------------------------------

_NEWLINES = re.compile(r"\r\n?|\u2028|\u2029|\x85")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_MANY_BLANK_LINES = re.compile(r"\n{3,}")


def clean_text(text: str) -> str:
    """Make text safe to store and compare: ``\\n`` newlines, no NUL, no lone surrogates.

    NUL cannot be stored in a PostgreSQL text column and lone surrogates cannot be encoded as
    UTF-8; both occur in real PDFs with broken font maps.
    """
    text = _NEWLINES.sub("\n", text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def tidy_block_text(text: str) -> str:
    """Trim line ends, squeeze runs of blank lines to one, strip the ends."""
    text = _TRAILING_SPACE.sub("\n", clean_text(text))
    text = _MANY_BLANK_LINES.sub("\n\n", text)
    return text.strip()


def join_pages(pages: list[str]) -> tuple[str, list[int]]:
    """Join page texts with ``PAGE_SEPARATOR``; return the text and each page's start offset."""
    parts: list[str] = []
    starts: list[int] = []
    offset = 0
    for i, page in enumerate(pages):
        if i:
            parts.append(PAGE_SEPARATOR)
            offset += len(PAGE_SEPARATOR)
        starts.append(offset)
        parts.append(page)
        offset += len(page)
    return "".join(parts), starts or [0]


# --- limits and user-facing wording ----------------------------------------------------------

_MB = 1024 * 1024


def _format_mb(nbytes: int, decimals: int = 1) -> str:
    value = nbytes / _MB
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.{decimals}f}"


def check_size(nbytes: int, limit_bytes: int) -> None:
    """Raise ``ParseError("too_large")`` when ``nbytes`` is over ``limit_bytes``.

    Sizes are shown in MB (1 MB = 1,048,576 bytes), e.g. "61.2 MB, the limit is 50 MB".
    """
    if nbytes <= limit_bytes:
        return
    decimals = 1
    # 50.01 MB must not read as "50.0 MB" against a 50 MB limit: add digits until it differs.
    while round(nbytes / _MB, decimals) <= limit_bytes / _MB and decimals < 6:
        decimals += 1
    size, limit = _format_mb(nbytes, decimals), _format_mb(limit_bytes)
    raise ParseError("too_large", f"This file is too large: {size} MB, the limit is {limit} MB.")


def check_page_count(pages: int, max_pages: int) -> None:
    """Raise ``ParseError("too_many_pages")`` when a PDF has more pages than allowed."""
    if pages > max_pages:
        raise ParseError(
            "too_many_pages", f"This PDF has {pages:,} pages; the limit is {max_pages:,}."
        )


def report(progress: ProgressFn | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def error_detail(exc: BaseException) -> str:
    """A one-line developer note for logs: ``ClassName: message`` (truncated)."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."


def unpaged_result(
    parser: Parser,
    data: bytes,
    read: Callable[[bytes], tuple[str, str]],
    *,
    progress: ProgressFn | None,
    nothing_readable: str,
) -> ParsedText:
    """One page of text from ``read(data) -> (text, encoding)``, for formats without pages.

    Shared by the HTML and Markdown parsers: the same empty-file and no-text refusals, one
    progress step, and the encoding recorded in ``meta``.
    """
    if not data:
        raise ParseError("empty", "This file is empty.")
    text, encoding = read(data)
    report(progress, 1, 1)
    if not text:
        raise ParseError("empty", nothing_readable)
    return ParsedText(
        text=text,
        page_starts=[0],
        parser=parser.name,
        parser_version=parser.version,
        meta={"encoding": encoding},
    )
