"""The shared vocabulary of every eval-set format: notes, problems, pending labels, headers.

Every format module speaks in these types so the Django side can treat all of them alike:
a writer streams items into a binary file and hands back `ExportNotes` saying, in words, what
the format could not carry; a reader never raises on bad input and hands back an
`ImportResult` whose `problems` say where the file is wrong and what to do about it.

Nothing here imports Django. The objects that cross the boundary are context-grid's own
(`EvalItem`, `GoldAnchor`, `GoldSpan`, `EvalSet`), so an export is checked against the very
classes the scorer will load it with.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import IO, Any, Literal

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import EvalItem, EvalSet, GoldAnchor

from evalsets.resolver import find_all, occurrence_at

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

Severity = Literal["error", "warning"]
ERROR: Severity = "error"
WARNING: Severity = "warning"


# ---------------------------------------------------------------------------
# the header of an eval set
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalSetHeader:
    """An eval set's identity without its items, so a writer can stream the items separately.

    Mirrors the `_evalset` line context-grid's `write_jsonl` writes: id, version, source, meta.
    """

    id: str
    version: int = 1
    source: str = "manual"
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: EvalSet | EvalSetHeader) -> EvalSetHeader:
        """The header of an `EvalSet`, or the header itself."""
        if isinstance(value, EvalSetHeader):
            return value
        return cls(id=value.id, version=value.version, source=value.source, meta=value.meta)


# ---------------------------------------------------------------------------
# import results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an imported file, located as precisely as the format allows.

    `message` says what is wrong; where context-grid has a wording for the same fault (an
    empty question, a blank quote, a duplicate id, a negative grade) it is that wording
    exactly. `hint` says what to do next. `line` is the 1-based physical line the record
    starts on (for CSV, the line its first cell is on, which differs from the row number when
    cells hold newlines).

    `error` means the row or record was skipped; `warning` means it was imported, possibly
    with something left out that the message names.
    """

    line: int | None
    item: str | None
    field: str | None
    message: str
    severity: Severity = ERROR
    hint: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def describe(self, filename: str | None = None) -> str:
        """One line: `questions.csv:4 (item 'q3', grade): message. Hint`."""
        where = filename or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        located = [f"item {self.item!r}"] if self.item is not None else []
        if self.field:
            located.append(f"`{self.field}`")
        if located:
            where = f"{where} ({', '.join(located)})" if where else ", ".join(located)
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text = f"{text.rstrip('.')}. {self.hint}"
        return f"{self.severity}: {text}"


@dataclass(frozen=True, slots=True)
class PendingLabel:
    """A label whose file is not in Groundwork yet. Kept, not dropped, and attached later.

    Three shapes, by format:

    * `anchor` set, no `context` -- the anchor is complete (a quote with its occurrence); it
      only needs its file to exist. `attach()` returns it unchanged.
    * `context` set (deepset) -- `span` counts characters in `context`, the passage the label
      was cut from. Once the text arrives, `attach(text)` finds the context in it and takes
      the quote from where it sits there, so a quote repeated in the document gets the
      occurrence the label meant (`anchor` is the quote with occurrence 0, for display).
    * `span` set, no `context` (LegalBench-RAG) -- offsets into the file itself; `attach(text)`
      slices it and works out `occurrence`. `expected`, when given, is the text the span
      must hold (the snippet's `answer`); a span holding something else is refused.
    """

    line: int | None
    item: str
    file_name: str
    would_create: str
    anchor: GoldAnchor | None = None
    span: tuple[int, int] | None = None
    grade: int = 2
    context: str = ""
    expected: str = ""

    def attach(self, text: str | None = None) -> GoldAnchor:
        """The anchor this label becomes now that its file has arrived.

        Raises `EvalSetError` (context-grid's) with a readable message when the span does not
        fit the text that arrived -- the one place in this package that raises, because the
        caller asked for a single anchor and there is no result object to hang a problem on.
        `placed()` says, besides, how a context label was placed.
        """
        return self.placed(text)[0]

    def placed(self, text: str | None = None) -> tuple[GoldAnchor, str]:
        """`(anchor, note)`: the anchor, and a sentence when its place is a guess ("" if not)."""
        if self.anchor is not None and (not self.context or text is None):
            return self.anchor, ""
        if self.span is None or text is None:
            raise EvalSetError(
                f"pending label for item {self.item!r} on {self.file_name!r} needs the file's "
                "text to become an anchor"
            )
        if self.context:
            return anchor_from_context(
                text, self.file_name, self.context, self.span[0], self.span[1], grade=self.grade
            )
        check_span_text(text, self.file_name, self.span[0], self.span[1], self.expected)
        start, end = self.span
        return anchor_from_span(text, self.file_name, start, end, grade=self.grade), ""


@dataclass(slots=True)
class ImportResult:
    """What a reader made of a file: the items it could build and everything it could not.

    `items` holds only good items. `problems` says what was skipped (`error`) or imported
    with a caveat (`warning`). `pending` holds labels whose document is not in Groundwork
    yet. `header` is the set's identity when the format carries one (context-grid JSONL's
    `_evalset` line) and `None` otherwise; `source` and `meta` are what context-grid's own
    reader would have put on the set (`csv:<name>`, `beir`, `legalbench-rag`, ...).
    """

    format: str
    filename: str
    items: list[EvalItem] = field(default_factory=list)
    header: EvalSetHeader | None = None
    problems: list[Problem] = field(default_factory=list)
    pending: list[PendingLabel] = field(default_factory=list)
    source: str = "import"
    meta: dict[str, Any] = field(default_factory=dict)
    #: Fields the format can carry that this file has no column (or no value) for, so an
    #: import must leave them alone: e.g. `{"qtype"}` for a CSV without a qtype column.
    absent: set[str] = field(default_factory=set)
    #: How each file name in the file was matched to a document: `{"file", "source_id",
    #: "how"}` with `how` one of `exact`, `suffix` (LegalBench-RAG's corpus-relative paths).
    matches: list[dict[str, str]] = field(default_factory=list)
    #: The line each item in `items` starts on, by item id, where the format has lines.
    lines: dict[str, int | None] = field(default_factory=dict)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if not p.is_error]

    @property
    def ok(self) -> bool:
        """True when nothing was skipped. Warnings and pending labels do not count."""
        return not self.errors

    def describe(self) -> list[str]:
        """Every problem as one readable line, errors first, in file order."""
        ordered = sorted(self.problems, key=lambda p: (not p.is_error, p.line or 0))
        return [p.describe(self.filename) for p in ordered]

    def to_evalset(self, evalset_id: str | None = None) -> EvalSet:
        """The items as a context-grid `EvalSet`, named like context-grid's readers name it."""
        header = self.header
        return EvalSet(
            id=evalset_id or (header.id if header else _stem(self.filename)),
            items=tuple(self.items),
            version=header.version if header else 1,
            source=header.source if header else self.source,
            meta=dict(header.meta) if header else dict(self.meta),
        )

    def add(
        self,
        message: str,
        *,
        line: int | None = None,
        item: str | None = None,
        field: str | None = None,
        severity: Severity = ERROR,
        hint: str = "",
    ) -> None:
        self.problems.append(Problem(line, item, field, message, severity, hint))


def _stem(filename: str) -> str:
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def set_name(filename: str, evalset_id: str | None, header: EvalSetHeader | None = None) -> str:
    """The set's name as context-grid would give it: explicit id, header id, file stem."""
    return evalset_id or (header.id if header else "") or _stem(filename)


def check_duplicates(
    result: ImportResult,
    placed: Sequence[tuple[EvalItem, int | None]],
    name: str,
) -> list[EvalItem]:
    """Keep the first item of each id; report every later one with context-grid's wording."""
    seen: dict[str, int | None] = {}
    kept: list[EvalItem] = []
    for item, line in placed:
        if item.id in seen:
            first = seen[item.id]
            where = f"line {first}" if first is not None else "earlier in the file"
            result.add(
                f"duplicate eval item id {item.id!r} in eval set {name!r}",
                line=line,
                item=item.id,
                field="id",
                hint=f"The first one ({where}) was kept and this one skipped. Give each "
                "question its own id.",
            )
            continue
        seen[item.id] = line
        result.lines[item.id] = line
        kept.append(item)
    return kept


class ExportRefused(ValueError):
    """A writer cannot write this set faithfully; the message names the item or id and why.

    The only exception a writer raises on purpose: a file that reads back differently from
    what the app holds is worse than no file.
    """


# ---------------------------------------------------------------------------
# export notes
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class ExportNotes:
    """What an export wrote and, in words, everything the format could not carry.

    `notes` is for people; `counts` holds the same facts as numbers keyed by a stable slug
    (`extra_anchors`, `unanswerable`, ...) for code that wants to decide something.
    """

    format: str
    items: int = 0
    rows: int = 0
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.notes)


class Tally:
    """Item ids that share one caveat, kept bounded: a count plus the first few ids.

    Export memory must not grow with the set, so a caveat that hits 9,000 items is a number
    and three names, not a list of 9,000 ids.
    """

    __slots__ = ("_last", "_size", "count", "key", "sample", "template")

    def __init__(self, key: str, template: str, sample_size: int = 3) -> None:
        self.key = key
        self.template = template
        self.count = 0
        self.sample: list[str] = []
        self._size = sample_size
        self._last: str | None = None

    def add(self, item_id: str) -> None:
        """Count `item_id` once, however many of its anchors hit the caveat (items stream in
        order, so a repeat is always the item just added)."""
        if item_id == self._last:
            return
        self._last = item_id
        self.count += 1
        if len(self.sample) < self._size:
            self.sample.append(item_id)

    def render(self) -> str | None:
        if not self.count:
            return None
        names = ", ".join(self.sample)
        if self.count > len(self.sample):
            names = f"{names} and {self.count - len(self.sample)} more"
        one = self.count == 1
        return self.template.format(
            n=self.count, noun="item" if one else "items", has="has" if one else "have", ids=names
        )


def finish_notes(notes: ExportNotes, tallies: Iterable[Tally], extra: Iterable[str] = ()) -> None:
    """Render every tally that was hit into `notes`, in the order given."""
    for tally in tallies:
        text = tally.render()
        if text:
            notes.notes.append(text)
            notes.counts[tally.key] = tally.count
    notes.notes.extend(extra)


# ---------------------------------------------------------------------------
# streaming output
# ---------------------------------------------------------------------------

#: Characters buffered before a write to the underlying file. Big enough that a 10,000-item
#: export is a few hundred `write` calls, small enough that memory stays flat.
FLUSH_AT = 1 << 16


class TextSink:
    """UTF-8 text written to a binary file-like object in bounded chunks."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._buffer = io.StringIO()

    def write(self, text: str) -> None:
        self._buffer.write(text)
        if self._buffer.tell() >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        chunk = self._buffer.getvalue()
        if chunk:
            self._out.write(chunk.encode("utf-8"))
        self._buffer.seek(0)
        self._buffer.truncate()


class CsvSink(TextSink):
    """CSV rows (RFC 4180: comma, double quotes, CRLF) streamed into a binary file."""

    def __init__(self, out: IO[bytes]) -> None:
        super().__init__(out)
        self._writer = csv.writer(self._buffer)

    def row(self, values: Sequence[Any]) -> None:
        self._writer.writerow(values)
        if self._buffer.tell() >= FLUSH_AT:
            self.flush()


#: What a spreadsheet (Excel, LibreOffice, Google Sheets) may run as a formula at the start
#: of a cell: OWASP's list for CSV injection.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def looks_like_formula(value: str) -> bool:
    """True when a spreadsheet opening this cell might evaluate it instead of showing it."""
    return value.startswith(FORMULA_STARTS)


def spreadsheet_safe(value: str) -> str:
    """`value` with a leading `'` when it looks like a formula, so a spreadsheet shows it.

    Changes the text: only for files meant to be opened in a spreadsheet, never for one an
    evaluation reads (a quote with a `'` in front no longer matches the document).
    """
    return f"'{value}" if looks_like_formula(value) else value


def formula_tally(what: str) -> Tally:
    """The note every CSV writer gives for cells a spreadsheet could run as formulas."""
    return Tally(
        "formula_like",
        "{n} {noun} {has} a " + what + " starting with =, +, -, @, a tab or a carriage "
        "return, which a spreadsheet may run as a formula; they were written exactly, because "
        "evaluation needs the exact text. Do not open this file in a spreadsheet to edit it "
        "(export 'context-grid CSV for spreadsheets' for that): {ids}.",
    )


def sorted_json(value: Any) -> Any:
    """`value` with every mapping's keys sorted, recursively, so output is byte-stable."""
    if isinstance(value, Mapping):
        return {str(k): sorted_json(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [sorted_json(v) for v in value]
    return value


def dumps(
    value: Any, *, on_unknown: Tally | None = None, item_id: str = "", sort_keys: bool = False
) -> str:
    """Compact-but-readable JSON, unicode kept as is; odd values written as strings, noted."""

    def fallback(obj: Any) -> str:
        if on_unknown is not None:
            on_unknown.add(item_id)
        return str(obj)

    return json.dumps(value, ensure_ascii=False, default=fallback, sort_keys=sort_keys)


# ---------------------------------------------------------------------------
# reading input
# ---------------------------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a zip archive (an .xlsx workbook is one too)"),
    (b"\xd0\xcf\x11\xe0", "an old-style Office file (.xls or .doc)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x1f\x8b", "a gzip-compressed file"),
    (b"SQLite format 3", "an SQLite database"),
)


def binary_kind(data: bytes) -> str | None:
    """What a file is when its first bytes say so unmistakably."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    return None


def decode_text(data: bytes, result: ImportResult, expected: str) -> str | None:
    """The file as text, or `None` with a problem saying why it is not one.

    `expected` is the clause naming what the format wanted, e.g. "a CSV file with a header
    row and one question per row". A UTF-8 byte-order mark is accepted and removed: Excel's
    "CSV UTF-8" writes one.
    """
    if not data.strip():
        result.add(
            f"{result.filename} is empty. Expected {expected}.",
            line=None,
            hint="Check that the right file was chosen; nothing was imported.",
        )
        return None

    kind = binary_kind(data)
    if kind is not None:
        result.add(
            f"{result.filename} is {kind}, not {expected}.",
            hint="Export the questions from it in one of the formats this page lists.",
        )
        return None

    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        result.add(
            f"{result.filename} is UTF-16 text, and eval sets are read as UTF-8.",
            hint="Save it again as UTF-8 (in Excel: 'CSV UTF-8 (Comma delimited)').",
        )
        return None

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        result.add(
            f"{result.filename} is not UTF-8 text: {exc.reason} at byte {exc.start}.",
            line=line,
            hint="Save it again as UTF-8 (in Excel: 'CSV UTF-8 (Comma delimited)'); "
            "nothing was imported.",
        )
        return None

    if "\x00" in text:
        result.add(
            f"{result.filename} holds NUL bytes, so it is a binary file, not {expected}.",
            line=text.count("\n", 0, text.index("\x00")) + 1,
            hint="Export the questions as text and import that instead.",
        )
        return None
    return text


def json_kind(value: Any) -> str:
    """What a JSON value is, in words somebody can read back against their file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a true/false value"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


#: A number as spreadsheets and pandas spell it: `187`, `187.0`, `1.87e2`, `.5`.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
#: Whole numbers of more than this many digits are not offsets, counts or grades; refusing
#: them keeps `1e999999` cheap.
_MAX_DIGITS = 30


def whole_number(value: Any) -> int | None:
    """`value` as an int when it is one in any spelling; `None` otherwise.

    `3`, `3.0`, `"3"`, `" 3 "`, `"3.0"` (what pandas writes for an integer column that has
    blanks) and `"3e0"` are all 3; `3.5`, `"3.5"`, `"three"` and `True` are not whole numbers.
    Strings are read exactly (as decimals, not floats), so `"187.0000000000001"` is refused.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        if _DECIMAL.fullmatch(text):
            number = Decimal(text)
            if number.adjusted() < _MAX_DIGITS and number == number.to_integral_value():
                return int(number)
    return None


def csv_reader(text: str) -> csv.DictReader[str]:
    """A `DictReader` over decoded text that keeps embedded newlines inside quoted cells."""
    # Contexts and whole passages exceed the default 128 KiB cell limit easily.
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 26))
    return csv.DictReader(io.StringIO(text, newline=""))


def delimiter_hint(header_line: str) -> str:
    """A sentence naming the delimiter when a CSV header was clearly split on something else."""
    for char, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "pipes")):
        if header_line.count(char) >= 1 and "," not in header_line:
            return f" The header looks separated by {name}; columns must be separated by commas."
    if header_line.lstrip().startswith(("{", "[")):
        return " The file looks like JSON, not CSV; choose the JSON-based format instead."
    return ""


# ---------------------------------------------------------------------------
# finding text in a document
# ---------------------------------------------------------------------------


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


def _first_space(text: str, begin: int, stop: int) -> int | None:
    for index in range(begin, stop):
        if text[index].isspace():
            return index
    return None


def anchor_from_span(
    text: str, source_id: str, start: int, end: int, *, grade: int = 2
) -> GoldAnchor:
    """A portable anchor quoting `text[start:end]`, with `occurrence` set so it resolves back
    to exactly that place when the quote appears more than once.

    Surrounding whitespace is trimmed from the quote (context-grid's resolver trims it too)
    and `occurrence` counts the trimmed quote's earlier copies, overlapping ones included.
    Raises `EvalSetError` when the span does not fit the text or quotes only whitespace.
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
    return GoldAnchor(
        source_id=source_id, quote=quote, grade=grade, occurrence=occurrence_at(text, quote, begin)
    )


def anchor_from_context(
    text: str, source_id: str, context: str, start: int, end: int, *, grade: int
) -> tuple[GoldAnchor, str]:
    """The anchor for `context[start:end]`, placed in `text` through its context.

    deepset labels carry a passage (`context`) and the answer's offsets in it, not offsets
    into the file. The passage is found in the file (verbatim, else with runs of whitespace
    collapsed: Excel turns line breaks into CRLF, PDF text breaks lines mid-sentence) and
    the quote taken from where it sits there, so `occurrence` names the copy the label
    meant, not the first copy in the file. Returns `(anchor, note)`; `note` is a sentence
    when the place had to be guessed (the context is not in the file, or is there more than
    once), and "" otherwise. Raises `EvalSetError` when the quote is not in the file at all.
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
            note = f"the context appears {len(copies)} times in {source_id!r}; the first was used."
        return anchor_from_span(text, source_id, at, at + len(quote), grade=grade), note
    region = locate_quote(text, context)
    if region is not None:
        left, right = region
        place = _nearest(text[left:right], quote, start + lead)
        if place is not None:
            begin, stop = left + place[0], left + place[1]
            return anchor_from_span(text, source_id, begin, stop, grade=grade), ""
    first = locate_quote(text, quote)
    if first is None:
        raise EvalSetError(
            f"the quote {quote[:60]!r} is not in {source_id!r}, nor is the context it was cut from"
        )
    anchor = anchor_from_span(text, source_id, first[0], first[1], grade=grade)
    if locate_quote(text, quote, 1) is None:
        return anchor, ""
    return anchor, (
        f"the context was not found in {source_id!r} and the quote appears there more than "
        "once; the first copy was used."
    )


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
