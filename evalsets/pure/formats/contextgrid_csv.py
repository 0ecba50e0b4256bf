"""context-grid CSV: the spreadsheet a subject-matter expert edits by hand.

Columns, in order: `id, question, source_id, quote, grade, page, occurrence, qtype, answer,
meta` -- exactly `contextgrid.evalset.io.CSV_COLUMNS`, so the file loads with
`contextgrid.evalset.io.read_csv`. `meta` is one JSON object per cell (keys sorted, unicode
kept as is).

**One row per question, first anchor only.** context-grid's `read_csv` does not group rows by
id: every row becomes its own item, and a second row with the same id makes the whole set
fail with "duplicate eval item id". Writing extra anchors as extra rows would therefore
produce a file context-grid refuses. So the first anchor is written and every item that had
more is named in the export notes, as are items whose resolved `gold` spans have no column.
Nothing is dropped without a note. Given the chosen parse's texts and anchor positions, the
notes also name anchors context-grid's resolver would place elsewhere (`landing.LandingCheck`).

The reader accepts every column alias `read_csv` accepts (`CSV_ALIASES`, plus `occurrence` /
`occurrence_index` / `nth` and `meta` / `metadata`), builds items the way `read_csv` does
(trimmed cells, missing id -> `q<row number>`), and is stricter where `read_csv` is silent: a
blank question, a quote without a source, a non-numeric grade or a meta cell that is not JSON
are reported with their line instead of being skipped or defaulted quietly.
"""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import CSV_ALIASES, EvalItem, EvalSet, GoldAnchor

from evalsets.pure.formats.landing import LandingCheck
from evalsets.pure.formats.locating import AnchorPositions, DocumentTexts
from evalsets.pure.formats.notes import ExportNotes, Tally, finish_notes
from evalsets.pure.formats.reading import (
    MISSING,
    csv_reader,
    decode_text,
    delimiter_hint,
    spreadsheet_marked,
    whole_number,
)
from evalsets.pure.formats.results import (
    WARNING,
    EvalSetHeader,
    ImportResult,
    ReadBudget,
    check_duplicates,
    set_name,
)
from evalsets.pure.formats.writing import (
    CsvSink,
    dumps,
    formula_tally,
    looks_like_formula,
    sorted_json,
    spreadsheet_safe,
)

SLUG = "contextgrid-csv"
SPREADSHEET_SLUG = "contextgrid-csv-spreadsheet"
EXPECTED = "a CSV file with a header row and one question per row"

#: The columns written, in order -- the same tuple as `contextgrid.evalset.io.CSV_COLUMNS`.
COLUMNS: tuple[str, ...] = (
    "id",
    "question",
    "source_id",
    "quote",
    "grade",
    "page",
    "occurrence",
    "qtype",
    "answer",
    "meta",
)

#: Every spelling accepted per field: context-grid's public aliases plus the two its CSV
#: reader adds locally.
ALIASES: dict[str, tuple[str, ...]] = {
    **CSV_ALIASES,
    "occurrence": ("occurrence", "occurrence_index", "nth"),
    "meta": ("meta", "metadata"),
}


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def write(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    documents: DocumentTexts | None = None,
    positions: AnchorPositions | None = None,
) -> ExportNotes:
    """Stream the set as context-grid CSV, one row per question.

    The set's header (id, version, source, meta) has no place in a CSV; `read_csv` names the
    set after the file. That is said in the notes only when the header carries meta. Every
    cell is written exactly, also one a spreadsheet would run as a formula: the notes name
    those items (see `write_for_spreadsheets`).
    """
    return _write(
        header, items, out, for_spreadsheets=False, documents=documents, positions=positions
    )


def write_for_spreadsheets(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    documents: DocumentTexts | None = None,
    positions: AnchorPositions | None = None,
) -> ExportNotes:
    """The same file for a person to open in Excel, LibreOffice or Google Sheets.

    Every text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a
    `'` in front, so a spreadsheet shows it instead of running it. That changes the text:
    a quote with a `'` in front no longer matches its document, so this file is **not for
    evaluation**, and reading it back does not remove the `'`. It starts with a UTF-8
    byte-order mark, which Excel needs to read non-ASCII text as UTF-8.
    """
    return _write(
        header, items, out, for_spreadsheets=True, documents=documents, positions=positions
    )


def _write(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    for_spreadsheets: bool,
    documents: DocumentTexts | None,
    positions: AnchorPositions | None,
) -> ExportNotes:
    head = EvalSetHeader.of(header)
    notes = ExportNotes(format=SPREADSHEET_SLUG if for_spreadsheets else SLUG)
    extra = Tally(
        "extra_anchors",
        "{n} {noun} {has} more than one anchor; CSV holds one per row and context-grid "
        "refuses repeated ids, so only the first anchor was written for: {ids}. Export "
        "context-grid JSONL to keep all of them.",
    )
    gold = Tally(
        "gold_not_written",
        "{n} {noun} {has} resolved gold spans, which CSV has no column for; the anchors were "
        "written, the spans were not: {ids}.",
    )
    gold_only = Tally(
        "gold_only",
        "{n} {noun} {has} resolved spans but no anchor, so they read back as questions "
        "without evidence: {ids}. Add anchors, or export context-grid JSONL.",
    )
    trimmed = Tally(
        "trimmed",
        "{n} {noun} {has} text starting or ending with spaces or newlines, which CSV readers "
        "trim: {ids}.",
    )
    carriage = Tally(
        "carriage_returns",
        "{n} {noun} {has} a carriage return inside a cell; context-grid's read_csv (and ours) "
        "reads CR LF and a lone CR as one line feed, so the text comes back with \\n: {ids}.",
    )
    odd_values = Tally(
        "meta_as_text",
        "{n} {noun} had meta values JSON cannot hold, written as text: {ids}.",
    )
    if for_spreadsheets:
        formulas = Tally(
            "formula_like",
            "{n} {noun} {has} text starting with =, +, -, @, a tab or a carriage return, "
            "written with a ' in front so a spreadsheet shows it instead of running it. This "
            "file is for reading in a spreadsheet, not for evaluation: {ids}.",
        )
    else:
        formulas = formula_tally("question, answer or quote")

    landing = LandingCheck(documents, positions)
    if for_spreadsheets:
        # Excel opens a CSV without a byte-order mark in the machine's legacy code page and
        # garbles every non-ASCII character; with one it reads UTF-8. Python's `utf-8-sig`
        # (our reader, context-grid's `read_csv`) and pandas drop the mark.
        out.write(codecs.BOM_UTF8)
    sink = CsvSink(out)
    sink.row(COLUMNS)
    for item in items:
        anchor = item.anchors[0] if item.anchors else None
        if len(item.anchors) > 1:
            extra.add(item.id)
        if item.gold:
            (gold if item.anchors else gold_only).add(item.id)
        texts = [item.id, item.question, item.answer or ""]
        if anchor is not None:
            texts.extend([anchor.source_id, anchor.quote])
        if any(t != t.strip() for t in texts):
            trimmed.add(item.id)
        if any("\r" in t for t in texts):
            carriage.add(item.id)
        if any(looks_like_formula(t) for t in (*texts, item.qtype or "")):
            formulas.add(item.id)
        meta = dumps(sorted_json(item.meta), on_unknown=odd_values, item_id=item.id)
        row = [
            item.id,
            item.question,
            anchor.source_id if anchor else "",
            anchor.quote if anchor else "",
            anchor.grade if anchor else "",
            anchor.page_hint if anchor and anchor.page_hint is not None else "",
            anchor.occurrence if anchor else "",
            item.qtype or "",
            item.answer or "",
            meta if item.meta else "",
        ]
        if for_spreadsheets:
            row = [spreadsheet_safe(v) if isinstance(v, str) else v for v in row]
        sink.row(row)
        landing.check(item, item.anchors[:1])
        notes.items += 1
        notes.rows += 1
    sink.flush()

    extra_notes = []
    if head.meta:
        extra_notes.append(
            "The eval set's own meta has no place in a CSV file and was not written; the "
            "set takes its name from the file when it is read back."
        )
    finish_notes(
        notes,
        [formulas, extra, gold, gold_only, trimmed, carriage, odd_values, *landing.tallies()],
        extra_notes,
    )
    return notes


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def match_columns(fieldnames: Iterable[str]) -> dict[str, str]:
    """Our field name -> the header the file used for it, first alias winning."""
    lowered = {name.strip().lower(): name for name in fieldnames if name is not None}
    matched: dict[str, str] = {}
    for field, aliases in ALIASES.items():
        for alias in aliases:
            if alias in lowered:
                matched[field] = lowered[alias]
                break
    return matched


def read(
    data: bytes,
    *,
    filename: str,
    documents: DocumentTexts | None = None,
    evalset_id: str | None = None,
    budget: ReadBudget | None = None,
) -> ImportResult:
    """Read a context-grid CSV (any accepted column spelling), every bad row located.

    Items without an `id` cell get `q<n>`, `n` counting data rows from 1 -- the same id
    `read_csv` gives them, so importing the same file twice gives the same ids. `documents`
    is not needed and is ignored.
    """
    result = ImportResult(
        format=SLUG,
        filename=filename,
        source=f"csv:{_basename(filename)}",
        budget=budget or ReadBudget(),
    )
    text = decode_text(data, result, EXPECTED)
    if text is None:
        return result
    # context-grid's read_csv opens the file in text mode (universal newlines), so CR LF and
    # a lone CR arrive as LF -- inside quoted cells too. Read it the same way.
    text = text.replace("\r\n", "\n").replace("\r", "\n")

    reader = csv_reader(text)
    try:
        fieldnames = reader.fieldnames
    except csv.Error as exc:
        result.add(f"{filename} is not readable as CSV: {exc}.", line=1)
        return result
    if not fieldnames:
        result.add(f"{filename} has no header row. Expected {EXPECTED}.", line=1)
        return result

    columns = match_columns(fieldnames)
    if "question" not in columns:
        result.add(
            f"{filename} has no question column. Expected one of: "
            f"{', '.join(ALIASES['question'])}. Found: {', '.join(fieldnames)}",
            line=1,
            field="question",
            hint="Rename the column holding the questions." + delimiter_hint(text.split("\n")[0]),
        )
        return result

    carried = ("qtype", "answer", "meta", "grade", "page", "occurrence")
    result.absent.update(name for name in carried if name not in columns)
    if "quote" not in columns or "source_id" not in columns:
        result.absent.add("anchors")
    known = set(columns.values())
    unknown = [name for name in fieldnames if name not in known and name and name.strip()]
    if unknown:
        result.add(
            f"column(s) {', '.join(repr(n) for n in unknown)} are not part of a context-grid "
            "eval set and were ignored.",
            line=1,
            severity=WARNING,
            hint=f"Known columns: {', '.join(COLUMNS)}.",
        )

    placed: list[tuple[EvalItem, int | None]] = []
    ended = reader.line_num
    number = 1
    try:
        for row in reader:
            start, ended = ended + 1, reader.line_num
            number += 1
            item = _row_item(row, columns, start, number - 1, result)
            if item is not None:
                placed.append((item, start))
    except csv.Error as exc:
        result.add(
            f"the CSV cannot be read past this line: {exc}.",
            line=reader.line_num,
            hint="Check for an unclosed double quote; rows before this one were read.",
        )

    result.items = check_duplicates(result, placed, set_name(filename, evalset_id))
    return result


def _row_item(
    row: Mapping[str | None, Any],
    columns: Mapping[str, str],
    line: int,
    index: int,
    result: ImportResult,
) -> EvalItem | None:
    marked: list[str] = []

    def cell(field: str) -> str:
        name = columns.get(field)
        value = row.get(name) if name is not None else None
        if not isinstance(value, str) or value.strip() in MISSING:
            return ""
        if spreadsheet_marked(value):
            marked.append(field)
            value = value[1:]
        return value.strip()

    # A spreadsheet saves every row as wide as the widest: empty cells past the header.
    extra = [v for v in row.get(None) or [] if isinstance(v, str) and v.strip()]
    values = [v for k, v in row.items() if k is not None]
    if all(not (v or "").strip() for v in values if isinstance(v, str)) and not extra:
        return None  # an empty spreadsheet row carries nothing

    item_id = cell("id") or f"q{index}"
    before = len(result.problems)

    def fault(message: str, field: str | None, hint: str = "", severity: Any = "error") -> None:
        result.add(message, line=line, item=item_id, field=field, hint=hint, severity=severity)

    if extra:
        fault(
            "this row has more cells than the header has columns; the extra cells were ignored.",
            None,
            hint="A comma inside a cell needs the cell in double quotes.",
            severity=WARNING,
        )

    question = cell("question")
    if not question:
        fault(
            f"eval item {item_id!r} has an empty question",
            columns["question"],
            "Write the question in this row, or delete the row.",
        )

    quote, source_id = cell("quote"), cell("source_id")
    grade = _number(cell("grade"), 2, "grade", columns, fault)
    page = _number(cell("page"), None, "page", columns, fault)
    occurrence = _number(cell("occurrence"), 0, "occurrence", columns, fault)

    anchors: tuple[GoldAnchor, ...] = ()
    if quote and not source_id:
        fault(
            "this row quotes evidence but names no document, so the quote cannot be found.",
            columns.get("source_id", "source_id"),
            "Fill in source_id with the document's file name.",
        )
    elif source_id and not quote:
        fault(
            "a gold anchor must quote some text",
            columns.get("quote", "quote"),
            "Paste the sentence that answers the question into the quote column, or clear "
            "source_id if the question has no evidence.",
        )
    elif quote and source_id and grade is not None and occurrence is not None:
        try:
            anchors = (
                GoldAnchor(
                    source_id=source_id,
                    quote=quote,
                    grade=grade,
                    page_hint=page,
                    occurrence=occurrence,
                ),
            )
        except EvalSetError as exc:
            field = "grade" if "grade" in str(exc) else "occurrence"
            fault(str(exc), columns.get(field, field), "Use 0 or more.")

    meta = _meta(cell("meta"), columns, fault)

    qtype, answer = cell("qtype") or None, cell("answer") or None
    if marked:
        fault(
            f"{', '.join(dict.fromkeys(marked))} started with ' before a formula sign, as the "
            "'context-grid CSV for spreadsheets' export marks a cell; the ' was removed.",
            columns.get(marked[0], marked[0]),
            "That export is for reading in a spreadsheet; import the context-grid CSV instead.",
            severity=WARNING,
        )
    if any(p.is_error for p in result.problems[before:]):
        return None
    try:
        return EvalItem(
            id=item_id,
            question=question,
            anchors=anchors,
            qtype=qtype,
            answer=answer,
            meta=meta,
        )
    except EvalSetError as exc:  # pragma: no cover - every rule is checked above
        fault(str(exc), None)
        return None


def _meta(raw: str, columns: Mapping[str, str], fault: Any) -> dict[str, Any]:
    """The meta cell's JSON object; a warning and `{}` when it is not one."""
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, Mapping):
        return dict(parsed)
    fault(
        f"the meta cell is not a JSON object, so it was not imported: {raw[:60]!r}.",
        columns["meta"],
        'Write meta as a JSON object such as {"reviewed": true}, or move the note '
        "to a column of its own.",
        severity=WARNING,
    )
    return {}


def _number(
    text: str, default: int | None, field: str, columns: Mapping[str, str], fault: Any
) -> int | None:
    if not text:
        return default
    value = whole_number(text)
    if value is None:
        fault(
            f"`{field}` must be a whole number, found {text!r}.",
            columns.get(field, field),
            {
                "grade": "Use 2 (fully answers), 1 (partly answers) or 0 (irrelevant).",
                "page": "Use the page number the quote is on, or leave it empty.",
                "occurrence": "Use 0 for the first copy of the quote, 1 for the second, ...",
            }[field],
        )
    return value


def _basename(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


__all__ = [
    "ALIASES",
    "COLUMNS",
    "EXPECTED",
    "SLUG",
    "SPREADSHEET_SLUG",
    "match_columns",
    "read",
    "write",
    "write_for_spreadsheets",
]
