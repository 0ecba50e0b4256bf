"""Reading a retrieval run from a team's own pipeline, and naming every problem in it.

Two shapes are read:

- JSONL, one line per question: ``{"question_id": ..., "retrieved": [{"source_id", "text",
  "parser"?, "start"?, "end"?, "score"?}, ...]}``, best first;
- a TREC run (``qid Q0 chunk_id rank score tag`` per line) plus a chunk file (JSONL, one
  chunk per line: ``{"chunk_id", "source_id", "text", "parser"?, "start"?, "end"?}``).

Reading never stops at the first problem: every problem is named with its line and field,
so a preview can show them all before anything is stored. Checking the run against the
eval set and the workspace's parses (``check``) and placing chunks that carry only their
text (``place``) are separate steps, because they need the texts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalsets.pure import resolver

#: Most chunks one question may list; deeper rankings are not read.
MAX_CHUNKS = 100
#: Longest chunk text read: placing a text in its parse costs in proportion to its length,
#: and no retriever's chunk is a whole book.
MAX_CHUNK_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the file: where (``line`` from 1, ``field``) and what."""

    line: int | None
    field: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field, "message": self.message}


@dataclass(slots=True)
class RunChunk:
    source_id: str
    text: str
    parser: str | None = None
    start: int | None = None
    end: int | None = None
    score: float | None = None
    line: int | None = None
    where: str = "retrieved"


@dataclass(slots=True)
class RunFile:
    """Each question's ranked chunks, the line each question came from, and the problems."""

    questions: dict[str, list[RunChunk]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def chunk_count(self) -> int:
        return sum(len(chunks) for chunks in self.questions.values())


def _lines(data: bytes, name: str, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(Problem(None, name, f"the {name} is not UTF-8 text ({exc.reason})"))
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def _json_object(line: str, number: int, name: str, problems: list[Problem]) -> dict | None:
    try:
        value = json.loads(line)
    except ValueError as exc:
        problems.append(Problem(number, name, f"line {number} is not JSON: {exc}"))
        return None
    if not isinstance(value, dict):
        problems.append(Problem(number, name, f"line {number} is not a JSON object"))
        return None
    return value


def _text_field(data: Mapping, key: str, where: str, number: int, problems) -> str | None:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        problems.append(Problem(number, f"{where}.{key}", f"{key} must be a non-empty string"))
        return None
    return value


def _offset(data: Mapping, key: str, where: str, number: int, problems) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems.append(Problem(number, f"{where}.{key}", f"{key} must be a whole number >= 0"))
        return None
    return value


def _score(data: Mapping, where: str, number: int, problems) -> float | None:
    value = data.get("score")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.append(Problem(number, f"{where}.score", "score must be a number"))
        return None
    if not math.isfinite(value):
        problems.append(Problem(number, f"{where}.score", f"score is {value}, not a finite number"))
        return None
    return float(value)


def _chunk(data: Any, where: str, number: int, problems: list[Problem]) -> RunChunk | None:
    if not isinstance(data, dict):
        problems.append(Problem(number, where, "each retrieved chunk must be a JSON object"))
        return None
    before = len(problems)
    source_id = _text_field(data, "source_id", where, number, problems)
    text = _text_field(data, "text", where, number, problems)
    if text is not None and len(text) > MAX_CHUNK_CHARS:
        message = f"text has {len(text):,} characters; at most {MAX_CHUNK_CHARS:,} are read"
        problems.append(Problem(number, f"{where}.text", message))
    parser = data.get("parser")
    if parser is not None and (not isinstance(parser, str) or not parser):
        problems.append(Problem(number, f"{where}.parser", "parser must be a non-empty string"))
    start = _offset(data, "start", where, number, problems)
    end = _offset(data, "end", where, number, problems)
    score = _score(data, where, number, problems)
    if (data.get("start") is None) != (data.get("end") is None):
        problems.append(Problem(number, where, "give both start and end, or neither"))
    elif start is not None and end is not None and start >= end:
        message = f"end ({end}) must be after start ({start})"
        problems.append(Problem(number, f"{where}.end", message))
    if len(problems) > before:
        return None
    return RunChunk(source_id, text, parser or None, start, end, score, number, where)


def _add_question(run: RunFile, qid: str, chunks: list[RunChunk], number: int) -> None:
    if qid in run.questions:
        first = run.lines[qid]
        run.problems.append(
            Problem(number, "question_id", f"question {qid!r} was already ranked on line {first}")
        )
        return
    if len(chunks) > MAX_CHUNKS:
        run.problems.append(
            Problem(number, "retrieved", f"{len(chunks)} chunks; at most {MAX_CHUNKS} are read")
        )
        return
    run.questions[qid] = chunks
    run.lines[qid] = number


def _too_large(data: bytes, max_bytes: int, name: str) -> Problem | None:
    if len(data) <= max_bytes:
        return None
    return Problem(None, name, f"the {name} is {len(data):,} bytes; the limit is {max_bytes:,}")


def read_jsonl(data: bytes, *, max_bytes: int) -> RunFile:
    run = RunFile()
    if (problem := _too_large(data, max_bytes, "file")) is not None:
        run.problems.append(problem)
        return run
    for number, line in _lines(data, "file", run.problems):
        row = _json_object(line, number, "file", run.problems)
        if row is None:
            continue
        qid = _text_field(row, "question_id", "line", number, run.problems)
        retrieved = row.get("retrieved")
        if not isinstance(retrieved, list):
            run.problems.append(Problem(number, "retrieved", "retrieved must be a list of chunks"))
            continue
        chunks = [
            _chunk(entry, f"retrieved[{i}]", number, run.problems)
            for i, entry in enumerate(retrieved)
        ]
        if qid is not None and all(c is not None for c in chunks):
            _add_question(run, qid, chunks, number)
    return run


def _read_chunk_file(data: bytes, problems: list[Problem]) -> dict[str, RunChunk]:
    chunks: dict[str, RunChunk] = {}
    for number, line in _lines(data, "chunks", problems):
        row = _json_object(line, number, "chunks", problems)
        if row is None:
            continue
        chunk_id = row.get("chunk_id")
        if not isinstance(chunk_id, str) or not chunk_id:
            problems.append(Problem(number, "chunks.chunk_id", "chunk_id must be a string"))
            continue
        if chunk_id in chunks:
            problems.append(Problem(number, "chunks.chunk_id", f"chunk {chunk_id!r} twice"))
            continue
        chunk = _chunk(row, "chunks", number, problems)
        if chunk is not None:
            chunks[chunk_id] = chunk
    return chunks


@dataclass(slots=True)
class _TrecRow:
    rank: int
    chunk_id: str
    score: float
    line: int


def _trec_row(line: str, number: int, problems: list[Problem]) -> tuple[str, _TrecRow] | None:
    parts = line.split()
    if len(parts) != 6:
        problems.append(
            Problem(number, "run", "a TREC run line has six fields: qid Q0 chunk_id rank score tag")
        )
        return None
    qid, _, chunk_id, rank, score, _ = parts
    try:
        rank_value = int(rank)
    except ValueError:
        problems.append(Problem(number, "run.rank", f"rank {rank!r} is not a whole number"))
        return None
    try:
        score_value = float(score)
    except ValueError:
        problems.append(Problem(number, "run.score", f"score {score!r} is not a number"))
        return None
    if not math.isfinite(score_value):
        problems.append(Problem(number, "run.score", f"score is {score}, not a finite number"))
        return None
    return qid, _TrecRow(rank_value, chunk_id, score_value, number)


def _trec_question(rows: list[_TrecRow], chunks: Mapping[str, RunChunk], problems) -> list:
    seen_ranks: dict[int, int] = {}
    seen_ids: dict[str, int] = {}
    out: list[RunChunk] = []
    for row in sorted(rows, key=lambda r: (r.rank, r.line)):
        if row.rank in seen_ranks:
            problems.append(
                Problem(
                    row.line,
                    "run.rank",
                    f"rank {row.rank} already used on line {seen_ranks[row.rank]}",
                )
            )
        if row.chunk_id in seen_ids:
            problems.append(
                Problem(
                    row.line,
                    "run.chunk_id",
                    f"chunk {row.chunk_id!r} already ranked on line {seen_ids[row.chunk_id]}",
                )
            )
        seen_ranks.setdefault(row.rank, row.line)
        seen_ids.setdefault(row.chunk_id, row.line)
        chunk = chunks.get(row.chunk_id)
        if chunk is None:
            problems.append(
                Problem(row.line, "run.chunk_id", f"chunk {row.chunk_id!r} is not in the chunks")
            )
            continue
        out.append(
            RunChunk(
                chunk.source_id,
                chunk.text,
                chunk.parser,
                chunk.start,
                chunk.end,
                row.score,
                row.line,
                "run",
            )
        )
    return out


def read_trec(run_data: bytes, chunk_data: bytes, *, max_bytes: int) -> RunFile:
    run = RunFile()
    for data, name in ((run_data, "run"), (chunk_data, "chunks")):
        if (problem := _too_large(data, max_bytes, name)) is not None:
            run.problems.append(problem)
    if run.problems:
        return run
    chunks = _read_chunk_file(chunk_data, run.problems)
    rows: dict[str, list[_TrecRow]] = {}
    first_line: dict[str, int] = {}
    for number, line in _lines(run_data, "run", run.problems):
        parsed = _trec_row(line, number, run.problems)
        if parsed is not None:
            qid, row = parsed
            rows.setdefault(qid, []).append(row)
            first_line.setdefault(qid, number)
    for qid, question_rows in rows.items():
        before = len(run.problems)
        ranked = _trec_question(question_rows, chunks, run.problems)
        if len(run.problems) == before:
            _add_question(run, qid, ranked, first_line[qid])
    return run


# -- against the eval set and the parses -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Corpus:
    """What a run is checked against: the release's question ids, each document's parse
    texts by parser, and the parser a chunk naming none is read against."""

    questions: frozenset[str]
    texts: Mapping[tuple[str, str], str]
    default_parser: Mapping[str, str]

    def parser_of(self, chunk: RunChunk) -> str | None:
        return chunk.parser or self.default_parser.get(chunk.source_id)


def _check_chunk(chunk: RunChunk, corpus: Corpus) -> Problem | None:
    where = chunk.where
    if chunk.source_id not in corpus.default_parser:
        return Problem(chunk.line, f"{where}.source_id", f"unknown document {chunk.source_id!r}")
    parser = corpus.parser_of(chunk)
    text = corpus.texts.get((chunk.source_id, parser or ""))
    if text is None:
        return Problem(
            chunk.line, f"{where}.parser", f"{chunk.source_id!r} has no ready {parser!r} parse"
        )
    if chunk.end is not None and chunk.end > len(text):
        return Problem(
            chunk.line,
            f"{where}.end",
            f"offsets {chunk.start}-{chunk.end} are outside the {parser!r} parse of "
            f"{chunk.source_id!r}, which has {len(text)} characters",
        )
    return None


def _too_many_to_place(run: RunFile, max_placed: int) -> Problem | None:
    to_place = sum(c.start is None for chunks in run.questions.values() for c in chunks)
    if to_place <= max_placed:
        return None
    return Problem(
        None,
        "retrieved",
        f"{to_place:,} chunks have no start and end; at most {max_placed:,} are placed by "
        "their text in one upload (GROUNDWORK_RUN_MAX_PLACED): give their offsets in the "
        "parse, or upload the run in parts",
    )


def check(run: RunFile, corpus: Corpus, *, max_placed: int) -> list[Problem]:
    """Problems only the eval set and the texts reveal: unknown questions, documents and
    parses, offsets outside the parse; and more chunks to place by their text than
    ``max_placed``, since each one costs a resolver search."""
    problems: list[Problem] = []
    if (crowded := _too_many_to_place(run, max_placed)) is not None:
        problems.append(crowded)
    for qid, chunks in run.questions.items():
        if qid not in corpus.questions:
            problems.append(
                Problem(run.lines[qid], "question_id", f"unknown question {qid!r} in this release")
            )
        problems.extend(p for c in chunks if (p := _check_chunk(c, corpus)) is not None)
    return problems


#: Where a chunk lies: ``(source_id, parser, start, end)``, or None when it was not placed.
Placement = tuple[str, str, int, int] | None


def place(
    run: RunFile, corpus: Corpus, prepare: Callable[[str], Any] = resolver.prepare
) -> tuple[dict[str, list[Placement]], list[Problem]]:
    """Every chunk's span: its own offsets, else its text found in the parse by the resolver
    (an exact, normalised or fuzzy match). Chunks the resolver cannot place (not found, or
    found in more than one place) are named and count as retrieving nothing relevant."""
    prepared: dict[tuple[str, str], Any] = {}
    placed: dict[str, list[Placement]] = {}
    unplaced: list[Problem] = []
    for qid, chunks in run.questions.items():
        spans: list[Placement] = []
        for chunk in chunks:
            parser = corpus.parser_of(chunk) or ""
            if chunk.start is not None and chunk.end is not None:
                spans.append((chunk.source_id, parser, chunk.start, chunk.end))
                continue
            key = (chunk.source_id, parser)
            if key not in prepared:
                prepared[key] = prepare(corpus.texts[key])
            found = prepared[key].resolve(chunk.text)
            if found.found:
                spans.append((chunk.source_id, parser, found.start, found.end))
            else:
                spans.append(None)
                unplaced.append(
                    Problem(
                        chunk.line,
                        f"{chunk.where}.text",
                        f"question {qid!r}: this chunk "
                        f"could not be placed in the {parser!r} parse of "
                        f"{chunk.source_id!r} ({found.status})",
                    )
                )
        placed[qid] = spans
    return placed, unplaced
