"""context-grid JSONL: the native format, and the only one that carries everything.

Written the way `contextgrid.evalset.io.write_jsonl` writes it -- an `_evalset` header line
with `id, version, source, meta`, then one `EvalItem.to_dict()` per line -- so the file loads
with `contextgrid.evalset.io.read_jsonl` and compares equal to the set it came from. Two
deliberate differences, both invisible to `read_jsonl`: text is written as UTF-8 rather than
`\\u` escapes (`ensure_ascii=False`), and `meta` keys are sorted, so the same set always
produces the same bytes (`\\n` line endings, fields in `to_dict` order).

The reader accepts what `read_jsonl` accepts, and instead of stopping at the first bad line
it reports every bad record with its line and the item it belongs to, and keeps the good
ones. A JSON array, a pretty-printed JSON document or a PDF is named as such rather than
reported as a thousand invalid lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, BinaryIO

from contextgrid.core.errors import EvalSetError, SpanError
from contextgrid.core.evalset import CSV_ALIASES, EvalItem, EvalSet, GoldAnchor, GoldSpan
from contextgrid.core.span import Span

from evalsets.pure.formats.landing import LandingCheck
from evalsets.pure.formats.locating import AnchorPositions, DocumentTexts
from evalsets.pure.formats.notes import ExportNotes, Tally, finish_notes
from evalsets.pure.formats.reading import decode_text, json_kind, whole_number
from evalsets.pure.formats.results import (
    WARNING,
    EvalSetHeader,
    ImportResult,
    Problem,
    ReadBudget,
    check_duplicates,
    set_name,
)
from evalsets.pure.formats.writing import TextSink, dumps, sorted_json

SLUG = "contextgrid-jsonl"
EXPECTED = "a JSONL eval set (one JSON object per line, as context-grid writes it)"

#: Stop reporting line by line after this many lines that are not JSON at all: the file is
#: not JSONL, and one summary says so better than a page of identical errors.
MAX_JSON_ERRORS = 20


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
    """Stream the set as context-grid JSONL.

    Items are written as given, `gold` included: fill `gold` with spans resolved in one
    chosen parse before calling, or leave it empty for a purely portable file. Given the
    chosen parse's texts (`documents`) and where each anchor lies in them (`positions`), each
    anchor is run through context-grid's resolver and the notes name those it would place
    elsewhere (see `LandingCheck`).
    """
    head = EvalSetHeader.of(header)
    notes = ExportNotes(format=SLUG)
    odd_values = Tally(
        "meta_as_text",
        "{n} {noun} had meta values JSON cannot hold (dates, decimals, ...), written as "
        "text: {ids}",
    )
    landing = LandingCheck(documents, positions)
    sink = TextSink(out)
    identity = {
        "id": head.id,
        "version": head.version,
        "source": head.source,
        "meta": sorted_json(head.meta),
    }
    sink.write(dumps({"_evalset": identity}, on_unknown=odd_values, item_id="(header)") + "\n")
    notes.rows += 1

    for item in items:
        record = item.to_dict()
        meta = record.pop("meta")  # always the last key; sorted by the C encoder, spliced back
        head_text = dumps(record, on_unknown=odd_values, item_id=item.id)[:-1]
        meta_text = dumps(meta, on_unknown=odd_values, item_id=item.id, sort_keys=True)
        sink.write(f'{head_text}, "meta": {meta_text}}}\n')
        landing.check(item)
        notes.items += 1
        notes.rows += 1
    sink.flush()
    finish_notes(notes, [odd_values, *landing.tallies()])
    return notes


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def read(
    data: bytes,
    *,
    filename: str,
    documents: DocumentTexts | None = None,
    evalset_id: str | None = None,
    budget: ReadBudget | None = None,
) -> ImportResult:
    """Read context-grid JSONL, reporting every bad line instead of stopping at the first.

    `documents` is not needed (anchors are quotes) and is ignored. `evalset_id`, when given,
    names the set in messages; otherwise the header's id, otherwise the file's stem -- as
    `read_jsonl` names it.
    """
    result = ImportResult(format=SLUG, filename=filename, budget=budget or ReadBudget())
    text = decode_text(data, result, EXPECTED)
    if text is None:
        return result
    if _whole_document(text, result):
        return result

    placed: list[tuple[EvalItem, int | None]] = []
    json_errors = 0
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            json_errors += 1
            if json_errors > MAX_JSON_ERRORS:
                result.add(
                    f"stopped after {MAX_JSON_ERRORS} lines that are not valid JSON; this "
                    f"does not look like {EXPECTED}.",
                    line=number,
                    hint="Check that the file is JSONL and not another format.",
                )
                break
            result.add(
                f"line {number} is not valid JSON: {exc.msg} (column {exc.colno}).",
                line=number,
                hint="Each line must be one complete JSON object, such as "
                '{"id": "q1", "question": "...", "anchors": []}.',
            )
            continue

        if not isinstance(record, Mapping):
            result.add(
                f"line {number} is {json_kind(record)}, and every line of a JSONL eval set "
                "has to be an object -- one question per line.",
                line=number,
            )
            continue

        if "_evalset" in record:
            _read_header(record["_evalset"], number, result)
            continue

        item = item_from_record(record, line=number, result=result)
        if item is not None:
            placed.append((item, number))

    result.source = "import"
    name = set_name(filename, evalset_id, result.header)
    result.items = check_duplicates(result, placed, name)
    return result


def _whole_document(text: str, result: ImportResult) -> bool:
    """Report a file that is one JSON value spread over many lines rather than JSONL."""
    first = text.lstrip()[:1]
    if first not in "[{":
        return False
    first_line = text.lstrip().split("\n", 1)[0].strip()
    try:
        json.loads(first_line)
        return False  # the first line is a complete value: ordinary JSONL
    except json.JSONDecodeError:
        pass
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        if first == "[":
            payload = []
        else:
            return False
    if isinstance(payload, list):
        result.add(
            f"{result.filename} is a JSON array, and a JSONL eval set has one JSON object "
            "per line, not one array.",
            line=1,
            hint="Write one item per line (for example `jq -c '.[]'`). If it is a "
            "LegalBench-RAG file, import it as LegalBench-RAG instead.",
        )
        return True
    if isinstance(payload, Mapping):
        also = (
            " It has a `tests` key, so it looks like LegalBench-RAG: import it as that."
            if "tests" in payload
            else " Write one item per line."
        )
        result.add(
            f"{result.filename} is a single JSON object spread over several lines, and a "
            "JSONL eval set has one JSON object per line.",
            line=1,
            hint=also.strip(),
        )
        return True
    return False


def _read_header(value: Any, number: int, result: ImportResult) -> None:
    if not isinstance(value, Mapping):
        result.add(
            f"`_evalset` is {json_kind(value)}, expected an object carrying the set's id, "
            "version and source.",
            line=number,
            field="_evalset",
        )
        return
    if result.header is not None:
        result.add(
            "a second `_evalset` header line; the first one was kept.",
            line=number,
            field="_evalset",
            severity=WARNING,
        )
        return
    version = whole_number(value.get("version", 1))
    if version is None:
        result.add(
            f"`_evalset.version` must be a whole number, found {value.get('version')!r}.",
            line=number,
            field="_evalset.version",
            hint="Version 1 was assumed.",
            severity=WARNING,
        )
        version = 1
    meta = value.get("meta", {})
    if not isinstance(meta, Mapping):
        result.add(
            f"`_evalset.meta` is {json_kind(meta)}, expected an object; it was left out.",
            line=number,
            field="_evalset.meta",
            severity=WARNING,
        )
        meta = {}
    result.header = EvalSetHeader(
        id=str(value.get("id") or set_name(result.filename, None)),
        version=version,
        source=str(value.get("source", "import")),
        meta=dict(meta),
    )


def item_from_record(
    record: Mapping[str, Any], *, line: int | None, result: ImportResult
) -> EvalItem | None:
    """An `EvalItem` from one JSON object, or `None` with every fault reported.

    The checks run before context-grid's `from_dict` so a fault is located (`anchors[1].grade`)
    and a wrong type gets a sentence rather than `invalid literal for int()`. Faults
    context-grid itself defines (empty question, blank quote, negative grade) keep its exact
    wording.
    """
    raw_id = record.get("id")
    label = str(raw_id) if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
    before = len(result.problems)

    def fault(message: str, field: str | None, hint: str = "") -> None:
        result.add(message, line=line, item=label, field=field, hint=hint)

    for key in ("id", "question"):
        if key not in record:
            fault(_missing_key_message(record, key), key)
        elif not isinstance(record[key], (str, int)) or isinstance(record[key], bool):
            fault(f"`{key}` is {json_kind(record[key])}, expected a string.", key)

    anchors = record.get("anchors", [])
    if not isinstance(anchors, list):
        fault(f"`anchors` is {json_kind(anchors)}, expected an array of anchors.", "anchors")
        anchors = []
    gold = record.get("gold", [])
    if not isinstance(gold, list):
        fault(f"`gold` is {json_kind(gold)}, expected an array of spans.", "gold")
        gold = []
    for key in ("qtype", "answer"):
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            fault(f"`{key}` is {json_kind(value)}, expected a string or null.", key)
    meta = record.get("meta", {})
    if not isinstance(meta, Mapping):
        fault(f"`meta` is {json_kind(meta)}, expected an object.", "meta")

    built_anchors = [
        anchor
        for index, value in enumerate(anchors)
        if (anchor := _anchor(value, f"anchors[{index}]", fault)) is not None
    ]
    built_gold = [
        span
        for index, value in enumerate(gold)
        if (span := _gold(value, f"gold[{index}]", fault)) is not None
    ]
    if len(result.problems) > before:
        return None

    try:
        return EvalItem(
            id=str(record["id"]),
            question=str(record["question"]),
            gold=tuple(built_gold),
            anchors=tuple(built_anchors),
            qtype=record.get("qtype"),
            answer=record.get("answer"),
            meta=dict(meta),
        )
    except EvalSetError as exc:
        field = "question" if "question" in str(exc) else None
        fault(str(exc), field, "Write the question, or delete the line.")
        return None


def _missing_key_message(record: Mapping[str, Any], key: str) -> str:
    alias = next((n for n in CSV_ALIASES.get(key, ()) if n != key and n in record), None)
    if alias is not None:
        return (
            f"every eval item needs a `{key}`, and this one has `{alias}` instead. `{alias}` "
            "is a real name for that field -- but only as a CSV column. JSON records take "
            f"`{key}` and nothing else. Rename it."
        )
    present = ", ".join(f"`{name}`" for name in sorted(record)) or "no keys at all"
    return f"every eval item needs a `{key}`. This one has {present}."


def _anchor(value: Any, where: str, fault: Any) -> GoldAnchor | None:
    if not isinstance(value, Mapping):
        fault(f"`{where}` is {json_kind(value)}, expected an object.", where)
        return None
    ok = True
    for key in ("source_id", "quote"):
        if key not in value:
            fault(
                f"every gold anchor needs a `{key}`. This one has "
                f"{', '.join(f'`{k}`' for k in sorted(value)) or 'no keys at all'}.",
                f"{where}.{key}",
            )
            ok = False
        elif not isinstance(value[key], str):
            fault(f"`{key}` is {json_kind(value[key])}, expected a string.", f"{where}.{key}")
            ok = False
    grade = _int_field(value, "grade", 2, where, fault)
    occurrence = _int_field(value, "occurrence", 0, where, fault)
    page = value.get("page_hint")
    if page is not None and whole_number(page) is None:
        fault(
            f"`page_hint` must be a whole page number or null, found {page!r}.",
            f"{where}.page_hint",
        )
        ok = False
    if not ok or grade is None or occurrence is None:
        return None
    try:
        return GoldAnchor(
            source_id=value["source_id"],
            quote=value["quote"],
            grade=grade,
            page_hint=whole_number(page) if page is not None else None,
            occurrence=occurrence,
        )
    except EvalSetError as exc:
        field = f"{where}.quote" if "quote" in str(exc) else where
        fault(str(exc), field)
        return None


def _gold(value: Any, where: str, fault: Any) -> GoldSpan | None:
    if not isinstance(value, Mapping):
        fault(f"`{where}` is {json_kind(value)}, expected an object.", where)
        return None
    if not isinstance(value.get("doc_id"), str):
        fault(f"every gold span needs a `doc_id` string, found {value.get('doc_id')!r}.", where)
        return None
    start = _int_field(value, "start", None, where, fault)
    end = _int_field(value, "end", None, where, fault)
    grade = _int_field(value, "grade", 2, where, fault)
    if start is None or end is None or grade is None:
        return None
    try:
        return GoldSpan(span=Span(value["doc_id"], start, end), grade=grade)
    except (EvalSetError, SpanError) as exc:
        fault(str(exc), where)
        return None


def _int_field(
    value: Mapping[str, Any], key: str, default: int | None, where: str, fault: Any
) -> int | None:
    if key not in value or (value[key] is None and default is not None):
        if default is None:
            fault(f"every gold span needs `{key}`, a character offset.", f"{where}.{key}")
        return default
    number = whole_number(value[key])
    if number is None:
        fault(
            f"`{key}` must be a whole number, found {value[key]!r}.",
            f"{where}.{key}",
        )
    return number


__all__ = ["EXPECTED", "SLUG", "Problem", "item_from_record", "read", "write"]
