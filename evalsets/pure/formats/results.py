"""What a format's reader hands back: the set's header, problems, pending labels, the result.

A reader never raises on bad input: it hands back an `ImportResult` whose `problems` say
where the file is wrong and what to do about it. Nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import EvalItem, EvalSet, GoldAnchor

from evalsets.pure.formats.locating import (
    anchor_from_span,
    check_span_text,
    span_from_context,
    trimmed_span,
)

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
# import budget
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadBudget:
    """How much of one file an import reads before it stops, so its cost has a ceiling.

    A file's cost must follow its useful content, not how many ways it can be wrong: read
    with no budget, a 7.8 KB zip of 3.9 million one-character lines kept a problem a line
    and held the process at 928 MB for 14 s, before the preview was even built.
    ``max_problems`` problems are kept with their text; past it an error stops the reading
    (``BudgetExceeded``) and a warning is only counted (``ImportResult.unlisted``).
    ``max_lines`` counts physical lines of every text read (all members of a zip together),
    ``max_items`` the questions one file may hold.
    """

    max_problems: int = 100
    max_lines: int = 500_000
    max_items: int = 50_000


class BudgetExceeded(Exception):
    """A reader reached its ``ReadBudget``; ``message`` names the limit and where it was hit.

    ``limit`` is the ``ReadBudget`` field that was reached and ``line`` the line reading
    stopped on (``None`` where the format has no lines). ``result`` is the partial result,
    with the problems listed before it stopped.
    """

    def __init__(self, message: str, *, limit: str, line: int | None, result: ImportResult):
        super().__init__(message)
        self.message = message
        self.limit = limit
        self.line = line
        self.result = result


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
        start, end, note = self.span_in(text)
        return anchor_from_span(text or "", self.file_name, start, end, grade=self.grade), note

    def span_in(self, text: str | None) -> tuple[int, int, str]:
        """`(start, end, note)`: where in `text` the label lies, whitespace trimmed, as a
        highlight of it would; `note` as `placed()` says. Raises `EvalSetError` when the label
        is a complete anchor (no span), or its span or context does not fit `text`."""
        if self.span is None or text is None:
            raise EvalSetError(
                f"pending label for item {self.item!r} on {self.file_name!r} needs the file's "
                "text to become an anchor"
            )
        if self.context:
            return span_from_context(text, self.file_name, self.context, *self.span)
        check_span_text(text, self.file_name, self.span[0], self.span[1], self.expected)
        return (*trimmed_span(text, self.file_name, *self.span), "")


class HasProblems:
    """``errors`` and ``warnings`` of an object's ``problems``: a reader's result and an
    import's plan sort the same list the same way."""

    __slots__ = ()
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if not p.is_error]


@dataclass(slots=True)
class ImportResult(HasProblems):
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
    #: How much of the file may be read (see `ReadBudget`).
    budget: ReadBudget = field(default_factory=ReadBudget)
    #: Warnings past `budget.max_problems`: counted, not kept.
    unlisted: int = 0
    #: Physical lines read so far, counted against `budget.max_lines`.
    lines_read: int = 0
    #: Where the reader placed an anchor of `items` in the text `documents` gave it: the
    #: `[start, end)` its span or context found (deepset, LegalBench-RAG). An import stores
    #: such an anchor as a highlight there, with its page, occurrence and context, so it
    #: resolves to that copy in every parse.
    places: dict[GoldAnchor, tuple[int, int]] = field(default_factory=dict)

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
        """Keep a problem; past the budget, count a warning and stop at an error."""
        if len(self.problems) < self.budget.max_problems:
            self.problems.append(Problem(line, item, field, message, severity, hint))
        elif severity == ERROR:
            where = f" at line {line:,}" if line is not None else ""
            raise BudgetExceeded(
                f"{self.filename}: reading stopped{where} after {self.budget.max_problems:,} "
                "problems, the limit for one import (the next: "
                f"{message[:200].rstrip('.')}); fix the problems listed and import again",
                limit="max_problems",
                line=line,
                result=self,
            )
        else:
            self.unlisted += 1

    def count_lines(self, count: int, where: str, line: int) -> None:
        """Add ``count`` lines read from ``where``; stop once past ``budget.max_lines``
        (``line`` is where the reader is in ``where``, for the message)."""
        self.lines_read += count
        limit = self.budget.max_lines
        if self.lines_read > limit:
            raise BudgetExceeded(
                f"{where} passes the limit of {limit:,} lines for one import; reading stopped "
                f"at line {line:,}. Split the file and import each part",
                limit="max_lines",
                line=line,
                result=self,
            )

    def check_items(self, count: int, line: int | None = None) -> None:
        """Stop once ``count`` questions (so far) pass ``budget.max_items``; ``line`` is
        where the first past the limit is, when the format has lines."""
        limit = self.budget.max_items
        if count > limit:
            where = f" (question {limit + 1:,} is at line {line:,})" if line is not None else ""
            raise BudgetExceeded(
                f"{self.filename} holds more than {limit:,} questions{where}, the limit for "
                "one import. Split the file and import each part",
                limit="max_items",
                line=line,
                result=self,
            )


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
    if len(placed) > result.budget.max_items:
        result.check_items(len(placed), placed[result.budget.max_items][1])
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
