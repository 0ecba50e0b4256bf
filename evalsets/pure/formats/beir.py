"""BEIR: the standard information-retrieval layout, as one zip.

Export writes `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and
`qrels/test.tsv` (`query-id\\tcorpus-id\\tscore`, with that header). BEIR judges whole
documents, so each item contributes one qrels row per document its evidence touches -- from
its anchors, its resolved gold spans and any `meta["gold_documents"]` a previous BEIR import
left -- graded with the highest grade any of that evidence has. The corpus is every text in
`documents` (one chosen parse), ids sorted, `title` empty (Groundwork has no document titles
separate from the file name, which is already `_id`). `queries.jsonl` and `qrels/test.tsv`
load with `contextgrid.evalset.io.read_beir(queries, qrels)`.

Only positive judgements are written (grade > 0): a score-0 row is not relevant to any
reader, and a query whose rows were all score 0 would be scored 0 by every run in
ir-measures, pytrec_eval and ranx (a perfect run then averages below 1). What BEIR cannot say
is said in the notes: a question without evidence, or with only evidence graded 0, is written
to `queries.jsonl` but has no qrels row, so it cannot be marked unanswerable and BEIR readers
(context-grid's included) skip it; and span precision is lost -- every chunk of a gold
document counts as relevant. The zip is deterministic: fixed timestamps, fixed member order
(`queries.jsonl`, `qrels/test.tsv`, `corpus.jsonl`; queries first so items stream once, the
corpus last so documents referenced but not supplied can be listed).

Qrels are written with the `csv` dialect BEIR's `GenericDataLoader` and context-grid's
`read_beir` read them with (tab-delimited, minimal quoting), so ids holding quotes, tabs or
line feeds come back identical; an id BEIR would still read as another id (a carriage
return, a NUL) is refused with `ExportRefused` naming it, and a release refuses it up front.

Import reads `queries.jsonl` and the qrels (`qrels/test.tsv`, or the only `.tsv` under
`qrels/`), also when the zip wraps everything in one top-level folder as BEIR's downloads do.
Items are built exactly as `read_beir` builds them -- `id` the query id, judgements with
score > 0 as `meta["gold_documents"]` (a list of `(corpus_id, grade)`), queries without a
positive judgement left out -- and **no anchors are invented**: an anchor quoting a whole
document would claim a precision the benchmark does not have and would break on every
re-parse. When `documents` is given, judged documents missing from it are reported as one
warning (there is nothing to attach later: the judgement is already on the item).
"""

from __future__ import annotations

import csv
import json
import posixpath
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import EvalItem, EvalSet

from evalsets.pure.archive import GuardedZip
from evalsets.pure.formats.locating import AnchorPositions, DocumentTexts
from evalsets.pure.formats.notes import ExportNotes, ExportRefused, Tally, finish_notes
from evalsets.pure.formats.reading import binary_kind, json_kind, whole_number
from evalsets.pure.formats.results import (
    WARNING,
    EvalSetHeader,
    ImportResult,
    ReadBudget,
    check_duplicates,
    set_name,
)
from evalsets.pure.formats.writing import TextSink

SLUG = "beir"
EXPECTED = "a BEIR zip holding queries.jsonl and qrels/test.tsv"
QRELS_HEADER = "query-id\tcorpus-id\tscore"

#: What context-grid's `read_beir` puts on the set it reads, kept word for word.
BEIR_META: dict[str, Any] = {
    "granularity": "document",
    "note": (
        "BEIR gold is document-level. It compares retrievers fairly and cannot "
        "compare chunkers fairly, because every chunk of a gold document counts "
        "as relevant regardless of whether it holds the evidence."
    ),
}

_EPOCH = (1980, 1, 1, 0, 0, 0)


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def unreadable_id(value: str) -> str | None:
    """Why BEIR's loaders would read `value` back as another id in qrels, or `None`.

    BEIR's `GenericDataLoader._load_qrels` and context-grid's `read_beir` both read qrels
    with `csv.reader(open(path, encoding="utf-8"), delimiter="\\t")` (minimal quoting, text
    mode). We write with the matching `csv.writer`, so quotes, tabs and line feeds inside an
    id are quoted and come back identical. Two things cannot: text mode turns a carriage
    return into a line feed, and the csv module refuses NUL characters.
    """
    if "\r" in value:
        return "contains a carriage return, which BEIR's loader reads as a line feed"
    if "\x00" in value:
        return "contains a NUL character, which BEIR's loader (Python's csv) refuses"
    return None


def check_ids(kind: str, value: str) -> None:
    """Raise `ExportRefused` naming `value` when BEIR cannot carry it exactly."""
    reason = unreadable_id(value)
    if reason is not None:
        raise ExportRefused(
            f"the {kind} {value!r} {reason}, so a BEIR export would point at another id; "
            f"rename the {kind} or choose another format"
        )


def document_grades(item: EvalItem) -> dict[str, int]:
    """The highest grade of this item's evidence in each document it touches."""
    grades: dict[str, int] = {}

    def note(doc: str, grade: int) -> None:
        grades[doc] = max(grade, grades.get(doc, grade))

    for anchor in item.anchors:
        note(anchor.source_id, anchor.grade)
    for gold in item.gold:
        note(gold.doc_id, gold.grade)
    judged = item.meta.get("gold_documents")
    if isinstance(judged, (list, tuple)):
        for entry in judged:
            if isinstance(entry, (list, tuple)) and len(entry) == 2:
                grade = whole_number(entry[1])
                if isinstance(entry[0], str) and grade is not None:
                    note(entry[0], grade)
    return grades


def write(
    header: EvalSetHeader | EvalSet,
    items: Iterable[EvalItem],
    out: BinaryIO,
    *,
    documents: DocumentTexts | None = None,
    positions: AnchorPositions | None = None,
) -> ExportNotes:
    """Stream the set as a BEIR zip into `out` (which need not be seekable).

    Qrels rows are spooled to a temporary file (in memory up to 1 MiB, then on disk) while
    the queries stream, because a zip holds one member open at a time and `items` is read
    once.
    """
    notes = ExportNotes(format=SLUG)
    unanswerable = Tally(
        "unanswerable",
        "{n} {noun} {has} no evidence; BEIR cannot mark a question unanswerable, so they are in "
        "queries.jsonl with no qrels row and BEIR readers (context-grid's included) skip "
        "them: {ids}.",
    )
    zero = Tally(
        "grade_zero",
        "{n} {noun} {has} documents judged 0 (irrelevant). They were left out of the qrels: "
        "a score-0 row adds nothing a reader counts as relevant, and a query whose rows "
        "are all score 0 is still evaluated by ir-measures, pytrec_eval and ranx with an "
        "ideal of 0, scoring 0 for any run: {ids}.",
    )
    zero_only = Tally(
        "judged_irrelevant_only",
        "{n} {noun} {has} only evidence graded 0 (irrelevant), so no qrels row: they are in "
        "queries.jsonl and BEIR readers skip them, as they skip unanswerable ones: {ids}.",
    )
    spans = Tally(
        "span_precision_lost",
        "{n} {noun} {has} quote- or span-level evidence; BEIR judges whole documents, so "
        "every chunk of those documents counts as relevant: {ids}.",
    )
    missing_docs = Tally(
        "documents_missing",
        "{n} referenced {noun} had no text in the chosen parse; corpus.jsonl holds them with "
        "empty text: {ids}.",
    )
    missing_docs.template = missing_docs.template.replace("{noun}", "document(s)")

    referenced: set[str] = set()
    with (
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+b") as spool,
    ):
        qrels = TextSink(spool)
        # The same dialect BEIR's loader reads with (see `unreadable_id`).
        qrels_rows = csv.writer(qrels, delimiter="\t", lineterminator="\n")
        with archive.open(_member("queries.jsonl"), "w") as handle:
            queries = TextSink(handle)
            for item in items:
                notes.items += 1
                check_ids("eval item id", item.id)
                record = {"_id": item.id, "text": item.question}
                queries.write(json.dumps(record, ensure_ascii=False) + "\n")
                notes.rows += 1
                grades = document_grades(item)
                if not grades:
                    unanswerable.add(item.id)
                    continue
                if any(grade == 0 for grade in grades.values()):
                    zero.add(item.id)
                # Only positive judgements are written: what BEIR's loader, ir-measures,
                # pytrec_eval and ranx count as relevant, and what a query needs to be scored.
                grades = {doc: grade for doc, grade in grades.items() if grade > 0}
                if not grades:
                    zero_only.add(item.id)
                    continue
                if item.anchors or item.gold:
                    spans.add(item.id)
                for doc in sorted(grades):
                    check_ids("document id", doc)
                    referenced.add(doc)
                    qrels_rows.writerow([item.id, doc, grades[doc]])
            queries.flush()
        qrels.flush()

        with archive.open(_member("qrels/test.tsv"), "w") as handle:
            handle.write((QRELS_HEADER + "\n").encode("utf-8"))
            spool.seek(0)
            shutil.copyfileobj(spool, handle)

        with archive.open(_member("corpus.jsonl"), "w", force_zip64=True) as handle:
            corpus = TextSink(handle)
            documents = documents if documents is not None else {}
            supplied = sorted(documents)
            for source_id in supplied:
                record = {"_id": source_id, "title": "", "text": documents[source_id]}
                corpus.write(json.dumps(record, ensure_ascii=False) + "\n")
            known = set(supplied)
            for source_id in sorted(referenced - known):
                missing_docs.add(source_id)
                record = {"_id": source_id, "title": "", "text": ""}
                corpus.write(json.dumps(record, ensure_ascii=False) + "\n")
            corpus.flush()

    finish_notes(notes, [unanswerable, zero_only, zero, spans, missing_docs])
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
    """Read a BEIR zip's queries and qrels into document-level items (see module docstring)."""
    result = ImportResult(
        format=SLUG,
        filename=filename,
        source="beir",
        meta=dict(BEIR_META),
        budget=budget or ReadBudget(),
    )
    if not data.strip():
        result.add(f"{filename} is empty. Expected {EXPECTED}.")
        return result
    try:  # past the archive limits: ArchiveTooLarge, which refuses the whole file
        archive = GuardedZip(data, name=filename)
    except zipfile.BadZipFile:
        kind = binary_kind(data)
        what = kind or ("JSON" if data.lstrip()[:1] in (b"{", b"[") else "not a zip archive")
        result.add(
            f"{filename} is {what}, not {EXPECTED}.",
            hint="Zip the dataset folder (queries.jsonl, qrels/test.tsv, corpus.jsonl) and "
            "import the zip.",
        )
        return result

    with archive:
        names = [n for n in archive.names() if not n.endswith("/")]
        queries_name = _find(names, "queries.jsonl")
        if queries_name is None:
            result.add(
                f"{filename} has no queries.jsonl. Expected {EXPECTED}. Found: "
                f"{', '.join(names[:10]) or 'nothing'}.",
            )
            return result
        root = posixpath.dirname(queries_name)
        qrels_name = _qrels(names, root, result)
        if qrels_name is None:
            return result
        unreadable: list[str] = []
        queries = _read_queries(
            _member_lines(archive, queries_name, result, unreadable), queries_name, result
        )
        judgements = _read_qrels(
            _member_lines(archive, qrels_name, result, unreadable), qrels_name, queries, result
        )
        if unreadable:
            return result

    placed: list[tuple[EvalItem, int | None]] = []
    without = 0
    for query_id, (text, line) in queries.items():
        if query_id not in judgements:
            without += 1
            continue
        try:
            item = EvalItem(
                id=query_id, question=text, meta={"gold_documents": judgements[query_id]}
            )
        except EvalSetError as exc:
            result.add(f"{queries_name}: {exc}", line=line, item=query_id, field="text")
            continue
        placed.append((item, line))
    if without:
        result.add(
            f"{without} of {len(queries)} queries have no positive judgement in {qrels_name} "
            "and were not imported (BEIR keeps every split's queries in one file).",
            severity=WARNING,
        )
    result.items = check_duplicates(result, placed, set_name(filename, evalset_id or "beir"))

    if documents is not None:
        missing = sorted(
            {doc for item in result.items for doc, _ in item.meta["gold_documents"]}
            - set(documents)
        )
        if missing:
            shown = ", ".join(repr(d) for d in missing[:3])
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            result.add(
                f"{len(missing)} judged document(s) are not in Groundwork: {shown}{more}. "
                "Their judgements are kept on the items.",
                severity=WARNING,
                hint="Upload those files so retrieval can find them.",
            )
    return result


def _find(names: list[str], base: str) -> str | None:
    hits = [n for n in names if posixpath.basename(n) == base and "__MACOSX" not in n]
    return min(hits, key=lambda n: (n.count("/"), n)) if hits else None


def _qrels(names: list[str], root: str, result: ImportResult) -> str | None:
    prefix = f"{root}/qrels/" if root else "qrels/"
    tsvs = sorted(n for n in names if n.startswith(prefix) and n.endswith(".tsv"))
    if f"{prefix}test.tsv" in tsvs:
        return f"{prefix}test.tsv"
    if len(tsvs) == 1:
        return tsvs[0]
    found = ", ".join(tsvs) if tsvs else "none"
    result.add(
        f"{result.filename} has no {prefix}test.tsv (qrels .tsv files found: {found}).",
        hint="Name the split to evaluate on qrels/test.tsv.",
    )
    return None


def _member_lines(
    archive: GuardedZip, name: str, result: ImportResult, unreadable: list[str]
) -> Iterator[str]:
    """The member's lines, streamed within the archive limits; stops at the first bad byte
    (saying so, and adding ``name`` to ``unreadable``)."""
    where = f"{name} in {result.filename}"
    try:
        for number, raw in enumerate(archive.lines(name), start=1):
            result.count_lines(1, where, number)
            yield raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        result.add(f"{name} in {result.filename} is not UTF-8 text: {exc.reason}.", line=number)
        unreadable.append(name)
    except (zipfile.BadZipFile, OSError, RuntimeError, ValueError, EOFError) as exc:
        result.add(f"{name} in {result.filename} cannot be read: {exc}.")
        unreadable.append(name)


def _read_queries(
    lines: Iterable[str], name: str, result: ImportResult
) -> dict[str, tuple[str, int]]:
    queries: dict[str, tuple[str, int]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            result.add(f"{name} line {number} is not valid JSON: {exc.msg}.", line=number)
            continue
        if not isinstance(record, Mapping) or "_id" not in record or "text" not in record:
            result.add(
                f"{name} line {number} is {json_kind(record)} without `_id` and `text`; every "
                'query looks like {"_id": "q1", "text": "..."}.',
                line=number,
            )
            continue
        query_id = str(record["_id"])
        if not isinstance(record["text"], str) or not record["text"].strip():
            result.add(
                f"eval item {query_id!r} has an empty question",
                line=number,
                item=query_id,
                field="text",
                hint=f"Fill in the query's text in {name}.",
            )
            continue
        if query_id in queries:
            result.add(
                f"duplicate eval item id {query_id!r} in {name}; the first was kept.",
                line=number,
                item=query_id,
                field="_id",
            )
            continue
        queries[query_id] = (record["text"], number)
    return queries


def _read_qrels(
    lines: Iterable[str], name: str, queries: Mapping[str, Any], result: ImportResult
) -> dict[str, list[tuple[str, int]]]:
    """Judgements by query, read as BEIR's loader reads them (see ``unreadable_id``): a
    ``csv.reader`` with tab delimiter and minimal quoting, so an id holding a quote, a tab or a
    line feed reads back as it was written, and ids are taken as they stand (not stripped)."""
    judgements: dict[str, dict[str, int]] = {}
    zero = unknown_count = 0
    # One warning for all judgements of unknown queries, with the first: a file of such
    # lines costs a counter, not a problem a line.
    unknown: list[tuple[int, str]] = []
    reader = csv.reader((line + "\n" for line in lines), delimiter="\t")
    first = True
    for cells in _rows(reader, name, result):
        number = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if first:
            first = False
            if cells[0].strip().lower() in {"query-id", "query_id", "qid"}:
                continue
        if len(cells) < 3:
            result.add(
                f"{name} line {number} has {len(cells)} tab-separated cell(s); expected "
                "query-id, corpus-id and score.",
                line=number,
            )
            continue
        query_id, corpus_id, raw = cells[0], cells[1], cells[2].strip()
        score = whole_number(raw)
        if score is None:
            result.add(
                f"{name} line {number}: score must be a whole number, found {raw!r}.",
                line=number,
                item=query_id,
                field="score",
            )
            continue
        if query_id not in queries:
            if not unknown:
                unknown.append((number, query_id))
            unknown_count += 1
            continue
        if score <= 0:
            zero += 1
            continue
        per_query = judgements.setdefault(query_id, {})
        per_query[corpus_id] = max(score, per_query.get(corpus_id, score))
    if unknown:
        number, query_id = unknown[0]
        result.add(
            f"{unknown_count:,} judgement(s) in {name} name a query that queries.jsonl does "
            f"not have (the first, line {number:,}, judges {query_id[:80]!r}); they were not "
            "imported.",
            line=number,
            item=query_id[:255],
            severity=WARNING,
        )
    if zero:
        result.add(
            f"{zero} judgement(s) in {name} have score 0 or less (not relevant) and were "
            "not imported, as BEIR readers do.",
            severity=WARNING,
        )
    return {q: list(docs.items()) for q, docs in judgements.items()}


def _rows(reader: Any, name: str, result: ImportResult) -> Iterator[list[str]]:
    """The reader's rows, ending with a located problem where the TSV cannot be read on."""
    try:
        yield from reader
    except csv.Error as exc:  # an unclosed quote running into the field size limit, say
        result.add(
            f"{name} cannot be read past line {reader.line_num:,}: {exc}.",
            line=reader.line_num,
            hint="Check for an unclosed double quote; the lines before it were read.",
        )


__all__ = [
    "BEIR_META",
    "QRELS_HEADER",
    "SLUG",
    "check_ids",
    "document_grades",
    "read",
    "unreadable_id",
    "write",
]
