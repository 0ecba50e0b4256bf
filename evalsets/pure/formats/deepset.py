"""deepset Cloud evaluation datasets: the three CSV layouts from their documentation.

deepset Cloud takes a comma-delimited UTF-8 CSV whose columns depend on what is evaluated:

* **question answering** (`deepset-qa`): `question, text, context, file_name, answer_start,
  answer_end, filters` -- `text` is the answer, `context` the passage around it and the two
  offsets say where `text` sits inside `context`.
* **document retrieval** (`deepset-retrieval`): `question, text, context, file_name, filters`
  -- `text` left empty, `context` the passage to be retrieved.
* **RAG** (`deepset-rag`): `question` filled in, `text, context, file_name, answer_start,
  answer_end, filters` present and empty -- filters too ("the only column that you must fill
  in"); an item's filters are named in the notes instead.

Only the QA layout gets a trailing `question_id` column: that section says "If the file
contains any other columns, deepset Cloud ignores them" and its example carries
`question_id`; the retrieval and RAG sections say no such thing, so their files hold their
own columns only (a re-import then identifies questions by their text). `filters` is written
in the documented form `{"key1":"value1", "key1":"value2", "key2":"value3"}` (a list value
repeats its key) and the column is left out of the QA and retrieval files when no item has
filters ("If you don't want to use any filters, delete this column").

**Export.** deepset matches labels to files by `file_name`, so `file_name` is the anchor's
`source_id`. Evidence is placed by `positions`: where each anchor lies in the chosen parse
whose texts `documents` holds (a release passes the stored resolutions, the highlight itself
in the parse it was made in). The quote is never searched for again: a repeated quote with
an `occurrence` counted on its hinted page would land on another copy. Without `positions`
(scripts, tests) each quote is resolved with `evalsets.pure.resolver` in the text given, which
has no pages. `context` is the evidence's paragraph, at most 200 characters each side, never
cutting a word, widened until it appears only once in the document (a reader places a label
by finding its context; a repeated paragraph would not say which copy), up to 2,000
characters; rows whose context still repeats are named in the notes. `text` lies inside the
evidence: the item's `answer` when it occurs inside the evidence span (its first copy
there), otherwise the evidence itself; the notes list the rows under each rule. When the
document text is missing or the parse lacks the anchor, `context` is the quote alone and the
notes name the items. Offsets are character offsets into `context`, `answer_end` exclusive
(`context[answer_start:answer_end] == text`). One row per anchor; deepset groups rows by
question. Grade-0 anchors (judged irrelevant) are not written as answers; deepset has no
grade column, and it has no way to say "unanswerable" -- such questions are written as
question-only rows and named in the notes. Cells that start like a spreadsheet formula are
written exactly and named in the notes.

**Import.** One reader for all three layouts. Rows are grouped into items by `question_id`
when the column exists, otherwise by question text; an item without an id gets `q-` + the
first 10 hex digits of the SHA-256 of its question, so re-importing the same file (or a
re-ordered one) yields the same ids; without the column `absent` holds `"id"`, and an import
into an existing set matches such items to its items by question text. One `question_id` on
two different questions is an error naming both lines. Cells pandas writes for a missing
value (`NaN`, `to_csv(na_rep="NaN")`) are read as empty. The anchor's quote is
`context[answer_start:answer_end]` when the offsets are whole numbers (`187`, `187.0` as
pandas writes them, `1.87e2`) inside the context and the slice is not blank (and agrees with
`text` when `text` is given); otherwise `text` when it occurs in the context; otherwise the
whole `context` (a retrieval label). The item's `answer` is the shortest `text` of its rows
(deepset's answer column; see `_Group.answer`).

`filters` is read as deepset's page writes it, `{"key1":"value1", "key1":"value2",
"key2":"value3"}`: a key given more than once holds several values, so it is read as a list,
`{"key1": ["value1", "value2"], "key2": "value3"}`, never collapsed to its last value.

Labels are placed in the document through their context: the context is found in the
document (verbatim, else with whitespace collapsed) and the quote taken from where it sits
there, so a quote that is repeated gets the `occurrence` the label meant. When `documents`
is given, labels whose `file_name` is not among them become `pending`, carrying the context
and the quote's offsets in it, and are placed the same way when the file arrives. Where each
placed anchor lies in its text is kept in `result.places`, so an import stores it as a
highlight there (page, occurrence on the page, context). A context found more than once is
a warning naming the copies and the one taken. When `documents` is `None`, file names are
trusted and every anchor is attached with occurrence 0.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO, Literal

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import EvalItem, EvalSet, GoldAnchor

from evalsets.pure.formats.locating import (
    AnchorPositions,
    DocumentTexts,
    anchor_from_span,
    unique_passage,
)
from evalsets.pure.formats.notes import ExportNotes, Tally, finish_notes
from evalsets.pure.formats.reading import (
    MISSING,
    csv_reader,
    decode_text,
    delimiter_hint,
    whole_number,
)
from evalsets.pure.formats.results import (
    ERROR,
    WARNING,
    BudgetExceeded,
    EvalSetHeader,
    ImportResult,
    PendingLabel,
    ReadBudget,
)
from evalsets.pure.formats.writing import CsvSink, formula_tally, looks_like_formula
from evalsets.pure.resolver import resolve

Layout = Literal["qa", "retrieval", "rag"]

SLUGS: dict[Layout, str] = {
    "qa": "deepset-qa",
    "retrieval": "deepset-retrieval",
    "rag": "deepset-rag",
}
EXPECTED = "a deepset Cloud evaluation CSV with a `question` column"

#: The columns each layout's page lists, in its order, plus `question_id` where the page
#: says other columns are ignored (question answering only: "If the file contains any other
#: columns, deepset Cloud ignores them", and its example carries `question_id`). The
#: retrieval and RAG sections say no such thing, so those files carry only their own columns.
#: `filters` is left out of the QA and retrieval files when no item has filters ("If you
#: don't want to use any filters, delete this column"); RAG keeps it, empty, as it must.
COLUMNS: dict[Layout, tuple[str, ...]] = {
    "qa": (
        "question",
        "text",
        "context",
        "file_name",
        "answer_start",
        "answer_end",
        "filters",
        "question_id",
    ),
    "retrieval": ("question", "text", "context", "file_name", "filters"),
    "rag": ("question", "text", "context", "file_name", "answer_start", "answer_end", "filters"),
}

#: Characters of context kept on each side of the quote, within its paragraph.
CONTEXT_RADIUS = 200
#: How long a context may grow while it is widened to appear only once in its document.
CONTEXT_LIMIT = 2000


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def write_qa(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    documents: DocumentTexts | None = None,
    positions: AnchorPositions | None = None,
) -> ExportNotes:
    """Stream the question-answering layout: one row per anchor, answer offsets in context."""
    return _write("qa", items, out, documents, positions)


def write_retrieval(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    documents: DocumentTexts | None = None,
    positions: AnchorPositions | None = None,
) -> ExportNotes:
    """Stream the document-retrieval layout: one row per anchor, `context` the passage."""
    return _write("retrieval", items, out, documents, positions)


def write_rag(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    documents: DocumentTexts | None = None,
    positions: AnchorPositions | None = None,
) -> ExportNotes:
    """Stream the RAG layout: questions only, every other column present and empty.

    No evidence is written, so `documents` and `positions` are not used.
    """
    return _write("rag", items, out, None, None)


class _Tallies:
    def __init__(self, layout: Layout) -> None:
        self.unanswerable = Tally(
            "unanswerable",
            "{n} {noun} {has} no evidence; deepset cannot mark a question unanswerable, so "
            "they were written as question-only rows: {ids}.",
        )
        self.evidence_dropped = Tally(
            "evidence_not_written",
            "The RAG layout carries questions only: evidence of {n} {noun} was not written: {ids}.",
        )
        self.filters_dropped = Tally(
            "filters_not_written",
            "The RAG layout's filters column must be empty: filters of {n} {noun} were not "
            "written: {ids}.",
        )
        self.gold_used = Tally(
            "gold_as_evidence",
            "{n} {noun} {has} resolved spans but no anchors; the spans' text in the chosen "
            "parse was used as the evidence: {ids}.",
        )
        self.grade_zero = Tally(
            "grade_zero",
            "{n} {noun} {has} anchors graded 0 (irrelevant), which were not written as "
            "answers: {ids}.",
        )
        self.grade_one = Tally(
            "grade_one",
            "{n} {noun} {has} anchors graded 1 (partly answers); deepset has no grade column, "
            "so they were written like full answers: {ids}.",
        )
        self.no_document = Tally(
            "no_document_text",
            "{n} {noun} {has} quotes in documents whose text was not supplied, so `context` is the "
            "quote alone: {ids}.",
        )
        self.not_found = Tally(
            "quote_not_in_parse",
            "{n} {noun} {has} anchors the chosen parse does not contain, so `context` is the "
            "quote alone: {ids}.",
        )
        self.context_repeats = Tally(
            "context_repeats",
            "{n} row(s) hold evidence in a passage that repeats in its document even at "
            + str(CONTEXT_LIMIT)
            + " characters of context, so `context` and the offsets do not say which copy "
            "is meant and a reader finding the context takes the first: {ids}.",
        )
        self.used_answer = Tally(
            "text_is_answer",
            "`text` is the item's answer, found inside the evidence, in {n} row(s): {ids}.",
        )
        self.used_evidence = Tally(
            "text_is_evidence",
            "`text` is the evidence itself (the item has no answer, or its answer is not inside "
            "the evidence) in {n} row(s): {ids}.",
        )
        self.bad_filters = Tally(
            "filters_not_object",
            "{n} {noun} {has} meta['filters'] that is not an object of text, numbers or lists "
            "of them, so no filters were written: {ids}.",
        )
        self.bad_filter_keys = Tally(
            "filter_keys_not_written",
            "{n} {noun} {has} filter keys whose values are not text, numbers or lists of them; "
            "those keys were left out and the item's other filters written: {ids}.",
        )
        self.one_value_lists = Tally(
            "filter_lists_of_one",
            "{n} {noun} {has} a filter whose value is a list of one; deepset's form writes it "
            "as that one value, so a reader gets the value, not a list: {ids}.",
        )
        self.formulas = formula_tally("question, answer or context")
        self.same_question = Tally(
            "questions_asked_twice",
            "{n} {noun} {has} the question of an earlier item; without a question_id column a "
            "reader groups rows by question, so each reads as part of that earlier item: {ids}.",
        )
        self.ids_dropped = Tally(
            "question_ids_not_written",
            "deepset's "
            + ("retrieval" if layout == "retrieval" else "RAG")
            + " layout does not say other columns are allowed, so question ids were not "
            "written; a re-import identifies the {n} {noun} by their question text.",
        )
        self.layout = layout

    def ordered(self) -> list[Tally]:
        if self.layout == "rag":
            return [
                self.evidence_dropped,
                self.unanswerable,
                self.filters_dropped,
                self.formulas,
                self.ids_dropped,
                self.same_question,
            ]
        common = [
            self.unanswerable,
            self.grade_zero,
            self.grade_one,
            self.gold_used,
            self.no_document,
            self.not_found,
            self.context_repeats,
        ]
        if self.layout == "qa":
            common += [self.used_answer, self.used_evidence]
        else:
            common += [self.ids_dropped, self.same_question]
        return [
            *common,
            self.bad_filters,
            self.bad_filter_keys,
            self.one_value_lists,
            self.formulas,
        ]


def _write(
    layout: Layout,
    items: Iterable[EvalItem],
    out: BinaryIO,
    documents: DocumentTexts | None,
    positions: AnchorPositions | None,
) -> ExportNotes:
    notes = ExportNotes(format=SLUGS[layout])
    tallies = _Tallies(layout)
    locate = positions or resolved_positions(documents)
    any_filters = False
    asked: set[str] = set()
    # Rows wait in a spool (memory up to 1 MiB, then disk) until the header is known: the
    # filters column is there only when some item has filters.
    with tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8") as spool:
        for item in items:
            notes.items += 1
            tallies.ids_dropped.add(item.id)  # rendered for the layouts without the column
            if "question_id" not in COLUMNS[layout] and _asked_before(item, asked):
                tallies.same_question.add(item.id)
            filters = _filters_cell(item, tallies)
            if layout == "rag":
                if item.anchors or item.gold:
                    tallies.evidence_dropped.add(item.id)
                else:
                    tallies.unanswerable.add(item.id)
                if filters:
                    tallies.filters_dropped.add(item.id)
                rows = [_Row(item.question)]
            else:
                any_filters |= bool(filters)
                rows = _rows(layout, item, documents, locate, tallies)
            if any(r.looks_like_formula() for r in rows):
                tallies.formulas.add(item.id)
            for row in rows:
                cells = row.cells(layout, "" if layout == "rag" else filters, item.id)
                spool.write(json.dumps(cells) + "\n")
                notes.rows += 1

        columns = [c for c in COLUMNS[layout] if c != "filters" or any_filters or layout == "rag"]
        sink = CsvSink(out)
        sink.row(columns)
        spool.seek(0)
        for line in spool:
            cells = json.loads(line)
            sink.row([cells[c] for c in columns])
        sink.flush()
    finish_notes(notes, tallies.ordered())
    return notes


class _Row:
    """One CSV row: the question and, for a label, where its `text` sits in its `context`."""

    __slots__ = ("context", "end", "file_name", "question", "start")

    def __init__(
        self, question: str, context: str = "", file_name: str = "", start: int = 0, end: int = 0
    ) -> None:
        self.question = question
        self.context = context
        self.file_name = file_name
        self.start = start
        self.end = end

    @property
    def text(self) -> str:
        return self.context[self.start : self.end]

    def looks_like_formula(self) -> bool:
        return any(looks_like_formula(v) for v in (self.question, self.text, self.context))

    def cells(self, layout: Layout, filters: str, item_id: str) -> dict[str, Any]:
        label = bool(self.context)
        return {
            "question": self.question,
            "text": self.text if layout == "qa" else "",
            "context": self.context,
            "file_name": self.file_name,
            "answer_start": self.start if label else "",
            "answer_end": self.end if label else "",
            "filters": filters,
            "question_id": item_id,
        }


def _rows(
    layout: Layout,
    item: EvalItem,
    documents: DocumentTexts | None,
    locate: AnchorPositions,
    tallies: _Tallies,
) -> list[_Row]:
    evidence = _evidence(item, documents, locate, tallies)
    if not evidence:
        tallies.unanswerable.add(item.id)
        return [_Row(item.question)]
    rows: list[_Row] = []
    seen: set[tuple[Any, ...]] = set()
    for number, (file_name, context, (q_start, q_end)) in enumerate(evidence, start=1):
        start, end = q_start, q_end
        if layout == "qa":
            label = item.id if len(evidence) == 1 else f"{item.id} (evidence {number})"
            start, end, is_answer = _answer_in(item.answer, context, q_start, q_end)
            (tallies.used_answer if is_answer else tallies.used_evidence).add(label)
        key = (file_name, context, start, end) if layout == "qa" else (file_name, context)
        if key in seen:
            continue
        seen.add(key)
        rows.append(_Row(item.question, context, file_name, start, end))
    return rows


def _asked_before(item: EvalItem, asked: set[str]) -> bool:
    """Whether an earlier item asked ``item``'s question (spaces around it aside), as a
    reader that groups rows by question text would merge them."""
    question = item.question.strip()
    if question in asked:
        return True
    asked.add(question)
    return False


def _filters_cell(item: EvalItem, tallies: _Tallies) -> str:
    """`meta["filters"]` in the form deepset documents: `{"k":"v1", "k":"v2", "k2":"v3"}`.

    A list value becomes the same key repeated, once per value (their example repeats
    `key1`); keys sorted, values in their order. A key whose value is anything else than
    text, numbers, true/false or a list of those cannot be written in that form: it is left
    out and named, and the item's other keys are written. A list of one value is written as
    that value, which the form cannot tell apart, and named.
    """
    filters = item.meta.get("filters")
    if filters is None or filters == {}:
        return ""
    if not isinstance(filters, Mapping):
        tallies.bad_filters.add(item.id)
        return ""
    pairs: list[str] = []
    for key in sorted(filters):  # JSON object keys: always text
        value = filters[key]
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if not values or not all(_scalar(v) for v in values):
            tallies.bad_filter_keys.add(item.id)
            continue
        if isinstance(value, (list, tuple)) and len(values) == 1:
            tallies.one_value_lists.add(item.id)
        pairs.extend(f"{_json(str(key))}:{_json(one)}" for one in values)
    return "{" + ", ".join(pairs) + "}" if pairs else ""


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and value == value  # NaN is not JSON


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def resolved_positions(documents: DocumentTexts | None) -> AnchorPositions:
    """Positions found by `evalsets.pure.resolver` in `documents`, for callers without stored ones.

    A release passes the stored resolutions instead; this is for scripts and tests that only
    have texts. Texts carry no page starts, so a page hint cannot narrow the search here.
    """

    def locate(item: EvalItem) -> list[tuple[int, int] | None]:
        found: list[tuple[int, int] | None] = []
        for anchor in item.anchors:
            text = _document(documents, anchor.source_id)
            if text is None:
                found.append(None)
                continue
            found.append(resolve(text, anchor.quote, occurrence=anchor.occurrence).span)
        return found

    return locate


def _evidence(
    item: EvalItem, documents: DocumentTexts | None, locate: AnchorPositions, tallies: _Tallies
) -> list[tuple[str, str, tuple[int, int]]]:
    """`(file_name, context, evidence offsets in context)` for every usable piece of evidence."""
    found: list[tuple[str, str, tuple[int, int]]] = []
    zero = one = False
    if item.anchors:
        places = list(locate(item))
        for index, anchor in enumerate(item.anchors):
            if anchor.grade == 0:
                zero = True
                continue
            one |= anchor.grade == 1
            text = _document(documents, anchor.source_id)
            place = places[index] if index < len(places) else None
            if place is not None and (text is None or not 0 <= place[0] < place[1] <= len(text)):
                place = None
            if text is None:
                tallies.no_document.add(item.id)
            elif place is None:
                tallies.not_found.add(item.id)
            name, context, offsets, unique = _context(anchor.source_id, text, place, anchor.quote)
            if not unique:
                tallies.context_repeats.add(f"{item.id} anchor {index + 1}")
            found.append((name, context, offsets))
    else:
        for gold in item.gold:
            text = _document(documents, gold.doc_id)
            span = gold.span
            if gold.grade == 0:
                zero = True
                continue
            if text is None or span.end > len(text) or not text[span.start : span.end].strip():
                tallies.no_document.add(item.id)
                continue
            one |= gold.grade == 1
            tallies.gold_used.add(item.id)
            name, context, offsets, unique = _context(gold.doc_id, text, (span.start, span.end), "")
            if not unique:
                tallies.context_repeats.add(f"{item.id} span {span.start}-{span.end}")
            found.append((name, context, offsets))
    if zero:
        tallies.grade_zero.add(item.id)
    if one and found:
        tallies.grade_one.add(item.id)
    return found


def _document(documents: DocumentTexts | None, source_id: str) -> str | None:
    if documents is None:
        return None
    try:
        return documents[source_id]
    except KeyError:
        return None


def _context(
    source_id: str, text: str | None, place: tuple[int, int] | None, quote: str
) -> tuple[str, str, tuple[int, int], bool]:
    """`(file_name, context, offsets in it, whether the context is unique in the document)`.

    A reader places a label by finding its context in the document, and a context that is
    there twice (a repeated paragraph) does not say which copy is meant: it is widened until
    it is there once, up to `CONTEXT_LIMIT` characters.
    """
    if text is None or place is None:
        context = quote.strip()
        return source_id, context, (0, len(context)), True
    left, right, unique = unique_passage(text, place[0], place[1], CONTEXT_RADIUS, CONTEXT_LIMIT)
    return source_id, text[left:right], (place[0] - left, place[1] - left), unique


def _answer_in(answer: str | None, context: str, q_start: int, q_end: int) -> tuple[int, int, bool]:
    """Where `text` sits: the answer's first copy inside the evidence, else the evidence."""
    wanted = (answer or "").strip()
    if wanted:
        position = context.find(wanted, q_start, q_end)
        if position != -1:
            return position, position + len(wanted), True
    return q_start, q_end, False


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def question_id(question: str) -> str:
    """The stable id of a question that arrived without one."""
    return "q-" + hashlib.sha256(question.strip().encode()).hexdigest()[:10]


class _Group:
    __slots__ = ("anchors", "answers", "filters", "line", "question")

    def __init__(self, question: str, line: int) -> None:
        self.question = question
        self.line = line
        self.answers: list[str] = []
        self.anchors: list[GoldAnchor] = []
        self.filters: dict[str, Any] | None = None

    @property
    def answer(self) -> str | None:
        """The item's answer: the shortest `text` its rows give. deepset's `text` is the
        answer, cut from the evidence; where a row's evidence does not hold the answer,
        Groundwork's own export writes that evidence instead, which is longer than the
        answer it surrounds elsewhere, so the shortest wins (the first of equal length)."""
        return min(self.answers, key=len, default=None)


def filters_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads` hook: a key given twice holds both values, as deepset's filters mean it."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key not in out:
            out[key] = value
            continue
        before = out[key] if isinstance(out[key], list) else [out[key]]
        out[key] = [*before, *(value if isinstance(value, list) else [value])]
    return out


def read(
    data: bytes,
    *,
    filename: str,
    documents: DocumentTexts | None = None,
    evalset_id: str | None = None,
    budget: ReadBudget | None = None,
) -> ImportResult:
    """Read any of the three deepset layouts; see the module docstring for every choice."""
    result = ImportResult(
        format="deepset",
        filename=filename,
        source=f"deepset:{filename.rsplit('/', 1)[-1]}",
        budget=budget or ReadBudget(),
    )
    text = decode_text(data, result, EXPECTED)
    if text is None:
        return result

    reader = csv_reader(text)
    fieldnames = reader.fieldnames or []
    columns = {name.strip().lower(): name for name in fieldnames if name}
    if "question" not in columns:
        found = ", ".join(fieldnames) or "no header row"
        result.add(
            f"{filename} has no `question` column, which every deepset evaluation dataset "
            f"needs. Found: {found}.",
            line=1,
            field="question",
            hint="Columns are question, text, context, file_name, answer_start, answer_end, "
            "filters." + delimiter_hint(text.split("\n")[0]),
        )
        return result
    if "answer_start" in columns and "context" not in columns:
        result.add(
            f"{filename} has `answer_start` but no `context` column, and the offsets count "
            "characters in the context.",
            line=1,
            field="context",
            hint="Add the context column, or drop the offset columns.",
        )
        return result

    if "filters" not in columns:
        result.absent.add("filters")
    if "question_id" not in columns:
        # Ids are made from the questions: an import matches items by question instead.
        result.absent.add("id")
    groups: dict[str, _Group] = {}
    ended = reader.line_num
    index = 0
    try:
        for row in reader:
            start, ended = ended + 1, reader.line_num
            index += 1
            _read_row(row, columns, start, index, groups, documents, result)
    except BudgetExceeded:
        raise
    except Exception as exc:  # csv.Error, or a field limit; rows before it are kept
        result.add(
            f"the CSV cannot be read past this line: {exc}.",
            line=reader.line_num,
            hint="Check for an unclosed double quote; rows before this one were read.",
        )

    if not any(group.filters for group in groups.values()):
        # An all-empty filters column (the RAG layout's, say) says nothing about filters.
        result.absent.add("filters")
    for item_id, group in groups.items():
        meta: dict[str, Any] = {}
        if group.filters:
            meta["filters"] = group.filters
        result.lines[item_id] = group.line
        try:
            result.items.append(
                EvalItem(
                    id=item_id,
                    question=group.question,
                    anchors=tuple(group.anchors),
                    answer=group.answer,
                    meta=meta,
                )
            )
        except EvalSetError as exc:  # pragma: no cover - questions are checked per row
            result.add(str(exc), line=group.line, item=item_id)
    return result


class _Cells:
    """One CSV row's cells by deepset's column names, and where its problems go."""

    def __init__(
        self,
        row: Mapping[str | None, Any],
        columns: Mapping[str, str],
        line: int,
        result: ImportResult,
    ) -> None:
        self.row, self.columns, self.line, self.result = row, columns, line, result
        self.item_id = ""

    def cell(self, name: str, strip: bool = True) -> str:
        if name not in self.columns:  # not "": pandas names its index column ""
            return ""
        value = self.row.get(self.columns[name])
        if not isinstance(value, str) or value.strip() in MISSING:
            return ""
        return value.strip() if strip else value

    def blank(self) -> bool:
        return all(
            not (v or "").strip() or v.strip() in MISSING
            for k, v in self.row.items()
            if k is not None and isinstance(v, str)
        )

    def fault(self, message: str, field: str | None, hint: str = "", severity: Any = ERROR):
        self.result.add(
            message, line=self.line, item=self.item_id, field=field, hint=hint, severity=severity
        )


def _read_row(
    row: Mapping[str | None, Any],
    columns: Mapping[str, str],
    line: int,
    index: int,
    groups: dict[str, _Group],
    documents: DocumentTexts | None,
    result: ImportResult,
) -> None:
    cells = _Cells(row, columns, line, result)
    if cells.blank():
        return
    question = cells.cell("question")
    given_id = cells.cell("question_id")
    cells.item_id = given_id or (question_id(question) if question else f"row {index}")
    if not question:
        cells.fault(
            f"eval item {cells.item_id!r} has an empty question",
            "question",
            "Write the question in this row, or delete the row.",
        )
        return
    context = cells.cell("context", strip=False)
    answer = cells.cell("text", strip=False)
    offsets = _offsets(cells, len(context))
    if offsets is False:
        return
    filters = _filters(cells)
    group = _group(cells, question, groups)
    if group is None:
        return
    if answer.strip():
        group.answers.append(answer.strip())
    if filters and group.filters is None:
        group.filters = filters
    quote, at = _quote(context, answer, offsets, cells.fault)
    if quote:
        _label(cells, group, quote, context if at is not None else quote, at or 0, documents)


def _offsets(cells: _Cells, length: int) -> tuple[int, int] | Literal[False] | None:
    """The answer's offsets in the context, `None` when the row gives none, `False` (with an
    error) when they are not whole numbers inside the context."""
    raw_start, raw_end = cells.cell("answer_start"), cells.cell("answer_end")
    if not (raw_start or raw_end):
        return None
    start, end = whole_number(raw_start), whole_number(raw_end)
    if start is None or end is None:
        bad = "answer_start" if start is None else "answer_end"
        cells.fault(
            f"`{bad}` must be a whole number of characters, found "
            f"{(raw_start if start is None else raw_end)!r}.",
            bad,
            "Offsets count characters in `context` from 0; leave both empty when the row "
            "has no answer.",
        )
        return False
    if not 0 <= start < end <= length:
        cells.fault(
            f"answer offsets [{start}, {end}) fall outside the context, which has "
            f"{length} characters.",
            "answer_start",
            "Offsets count characters in `context` from 0, answer_end exclusive.",
        )
        return False
    return start, end


def _filters(cells: _Cells) -> dict[str, Any] | None:
    raw = cells.cell("filters")
    if not raw:
        return None
    try:
        parsed = json.loads(raw, object_pairs_hook=filters_pairs)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, Mapping):
        return dict(parsed)
    cells.fault(
        f"`filters` is not a JSON object, so it was not imported: {raw[:60]!r}.",
        "filters",
        'Filters look like {"category": "legal"}.',
        severity=WARNING,
    )
    return None


def _group(cells: _Cells, question: str, groups: dict[str, _Group]) -> _Group | None:
    """The item this row belongs to; `None` (with an error) when its id names another
    question."""
    group = groups.get(cells.item_id)
    if group is None:
        cells.result.check_items(len(groups) + 1, cells.line)
        group = groups[cells.item_id] = _Group(question, cells.line)
    elif group.question != question:
        cells.fault(
            f"question_id {cells.item_id!r} names two different questions: "
            f"{group.question[:60]!r} on line {group.line} and {question[:60]!r} on line "
            f"{cells.line}.",
            "question_id",
            "Give each question its own question_id; nothing was imported.",
            severity=ERROR,
        )
        return None
    return group


def _label(
    cells: _Cells,
    group: _Group,
    quote: str,
    passage: str,
    begin: int,
    documents: DocumentTexts | None,
) -> None:
    """The row's label: an anchor placed through its passage (the context, or the quote
    alone when the row has no context or the quote is not in it), or a pending label."""
    file_name = cells.cell("file_name")
    if not file_name:
        cells.fault(
            "this label names no file_name, so its evidence cannot be tied to a document; the "
            "question was imported without it.",
            "file_name",
            "Fill in file_name with the name of the file the context comes from.",
            severity=WARNING,
        )
        return
    label = PendingLabel(
        line=cells.line,
        item=cells.item_id,
        file_name=file_name,
        would_create=f"anchor on {file_name!r} quoting {quote[:80]!r}",
        anchor=GoldAnchor(source_id=file_name, quote=quote),
        span=(begin, begin + len(quote)),
        context=passage,
    )
    text = None if documents is None else _document(documents, file_name)
    if documents is not None and text is None:
        cells.result.pending.append(label)
        return
    anchor = label.anchor
    if text is not None:
        anchor = _placed(cells, label, text)
    if anchor is not None and anchor not in group.anchors:
        group.anchors.append(anchor)


def _placed(cells: _Cells, label: PendingLabel, text: str) -> GoldAnchor | None:
    """The label's anchor where its context puts it in `text` (recorded in the result's
    `places`), or its bare quote with a warning when it is not in `text` at all."""
    try:
        start, end, note = label.span_in(text)
    except EvalSetError:
        note = (
            f"the quote {label.anchor.quote[:60]!r} was not found in {label.file_name!r}; the "
            "anchor was kept but may not resolve."
        )
        cells.fault(note, "context", "Check that file_name names the right file.", WARNING)
        return label.anchor
    if note:
        cells.fault(note, "context", "Check that file_name names the right file.", WARNING)
    anchor = anchor_from_span(text, label.file_name, start, end, grade=label.grade)
    cells.result.places[anchor] = (start, end)
    return anchor


def _quote(
    context: str, answer: str, offsets: tuple[int, int] | None, fault: Any
) -> tuple[str, int | None]:
    """The quote for one row, and where it starts inside `context` when that is known."""
    wanted = answer.strip()
    if offsets is not None:
        start, end = offsets
        piece = context[start:end]
        if piece.strip() and (not wanted or piece.strip() == wanted):
            lead = len(piece) - len(piece.lstrip())
            return piece.strip(), start + lead
        if wanted and context[start : end + 1].strip() == wanted:
            fault(
                "answer_end points at the answer's last character rather than one past it; "
                "read as inclusive.",
                "answer_end",
                severity=WARNING,
            )
            return wanted, start
        fault(
            f"context[answer_start:answer_end] is {piece!r}, not the answer {wanted!r}; the "
            "answer was searched for in the context instead.",
            "answer_start",
            severity=WARNING,
        )
    if wanted:
        if not context.strip():
            return wanted, None
        position = context.find(wanted)
        if position != -1:
            return wanted, position
        fault(
            f"the answer {wanted[:60]!r} does not appear in the context, so the whole context "
            "was used as the quote.",
            "text",
            severity=WARNING,
        )
    if context.strip():
        return context.strip(), len(context) - len(context.lstrip())
    return "", None


__all__ = [
    "COLUMNS",
    "SLUGS",
    "filters_pairs",
    "question_id",
    "read",
    "write_qa",
    "write_rag",
    "write_retrieval",
]
