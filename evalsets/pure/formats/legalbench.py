"""LegalBench-RAG import: offset-pinned gold made portable.

LegalBench-RAG stores its gold as character spans into its corpus files:
`{"tests": [{"query": ..., "snippets": [{"file_path": ..., "span": [start, end]}]}]}` (a bare
array of tests is accepted too, as context-grid's `read_legalbench_rag` accepts it). Spans
only mean something against the exact text they were counted in, and Groundwork compares
parsers, so every span is turned into a quote here: `documents[file_path][start:end]`,
trimmed, with `occurrence` set to the number of earlier copies of that quote in the document
(overlapping ones counted, as context-grid's resolver counts them). The anchor then resolves
in every parse, not just the one the offsets were counted in. The original offsets are kept
in `meta["legalbench_spans"]` as `[file_path, start, end]`.

Ids are the test's `id` when it has one, otherwise `lb<index>` counting tests from 0 -- the
same ids `read_legalbench_rag` gives, stable across re-imports.

A snippet's `answer`, when it has one, is the text its span must hold: a span that reads
anything else (off by a few characters, counted in another version of the file) is an error
naming the snippet and where the answer really is, never a wrong quote imported quietly.

`file_path` is relative to the benchmark's corpus folder (`cuad/contract.txt`), while a
document uploaded to Groundwork is named by its file name (`contract.txt`). A path matches
the document of that exact name first, else the one document whose name is a path suffix of
it (or it of the name), component by component (`match_path`); two or more such documents
are an error listing them. `result.matches` says how each path was matched (`exact` or
`suffix`), and a span waiting for its file attaches by the same rule. Where each span lies
in its document is kept in `result.places`, so an import stores it as a highlight there. A
test without `answer` says nothing about the item's answer.

Nothing is dropped quietly, unlike the upstream reader: a snippet without `file_path` or
`span`, a span of the wrong shape, offsets that are not whole numbers and spans outside the
document are errors; a snippet whose file is not in `documents` (or every snippet, when
`documents` is `None`) becomes a `PendingLabel` carrying the span, which
`PendingLabel.attach(text)` turns into the anchor once the file arrives. JSON has no usable
line numbers once parsed, so problems are located by item and field path
(`tests[3].snippets[1].span`) instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import EvalItem, GoldAnchor

from evalsets.pure.formats.locating import (
    DocumentTexts,
    anchor_from_span,
    check_span_text,
    trimmed_span,
)
from evalsets.pure.formats.reading import decode_text, json_kind, whole_number
from evalsets.pure.formats.results import (
    ImportResult,
    PendingLabel,
    ReadBudget,
    check_duplicates,
    set_name,
)

SLUG = "legalbench-rag"
EXPECTED = 'a LegalBench-RAG JSON file ({"tests": [{"query", "snippets"}]})'


def read(
    data: bytes,
    *,
    filename: str,
    documents: DocumentTexts | None = None,
    evalset_id: str | None = None,
    budget: ReadBudget | None = None,
) -> ImportResult:
    """Read LegalBench-RAG, turning every span into a quote from `documents`."""
    result = ImportResult(
        format=SLUG,
        filename=filename,
        source="legalbench-rag",
        meta={"converted_from": "legalbench-rag spans"},
        budget=budget or ReadBudget(),
    )
    text = decode_text(data, result, EXPECTED)
    if text is None:
        return result
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (
            "It looks like JSON lines; import it as context-grid JSONL instead."
            if exc.msg == "Extra data"
            else "Check the file with a JSON validator."
        )
        result.add(
            f"{filename} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
            line=exc.lineno,
            hint=hint,
        )
        return result

    tests = _tests(payload, result)
    if tests is None:
        return result

    result.check_items(len(tests))
    matcher = _Matcher(documents, result)
    if not any(isinstance(test, Mapping) and "answer" in test for test in tests):
        result.absent.add("answer")
    placed: list[tuple[EvalItem, int | None]] = []
    for index, test in enumerate(tests):
        item = _item(test, index, matcher, result)
        if item is not None:
            placed.append((item, None))
    result.items = check_duplicates(result, placed, set_name(filename, evalset_id))
    return result


def _tests(payload: Any, result: ImportResult) -> list[Any] | None:
    if isinstance(payload, list):
        return payload
    if not isinstance(payload, Mapping):
        result.add(
            f"{result.filename} is {json_kind(payload)}. Expected a JSON object with a `tests` "
            "array, or a bare array of tests."
        )
        return None
    if "tests" not in payload:
        found = ", ".join(sorted(str(key) for key in payload)) or "none"
        hint = (
            " It has an `_evalset` key: import it as context-grid JSONL."
            if "_evalset" in payload
            else ""
        )
        result.add(
            f"{result.filename} has no `tests` key. Expected a JSON object with a `tests` "
            f"array, or a bare array of tests. Keys found: {found}.",
            hint=hint.strip(),
        )
        return None
    tests = payload["tests"]
    if not isinstance(tests, list):
        result.add(f"`tests` is {json_kind(tests)}, expected an array of tests.", field="tests")
        return None
    return tests


def _parts(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]


def _is_tail(short: list[str], long: list[str]) -> bool:
    return 0 < len(short) <= len(long) and long[len(long) - len(short) :] == short


def path_matches(file_path: str, name: str) -> bool:
    """Whether a corpus-relative `file_path` and a document `name` can mean the same file:
    equal, or one the other's path suffix, component by component."""
    if file_path == name:
        return True
    path, other = _parts(file_path), _parts(name)
    return _is_tail(other, path) or _is_tail(path, other)


def match_path(file_path: str, names: Iterable[str]) -> tuple[str | None, list[str], str]:
    """The document `file_path` means among `names`: `(name, [name], how)` for the document
    of that exact name, else for the one document it `path_matches`; `(None, candidates,
    "")` when there is none (not uploaded) or more than one (ambiguous). The one rule for
    spans read now and for spans that wait for their file."""
    names = list(names)
    if file_path in names:
        return file_path, [file_path], "exact"
    hits = sorted(name for name in names if path_matches(file_path, name))
    if len(hits) == 1:
        return hits[0], hits, "suffix"
    return None, hits, ""


class _Matcher:
    """Finds the document a corpus-relative `file_path` means, and records how."""

    def __init__(self, documents: DocumentTexts | None, result: ImportResult) -> None:
        self.documents = documents
        self.result = result
        self._seen: dict[str, tuple[str | None, list[str]]] = {}

    def __call__(self, file_path: str) -> tuple[str | None, list[str]]:
        """`(source_id or None, candidates)`: `None` with no candidates means not uploaded;
        `None` with two or more means ambiguous."""
        if file_path in self._seen:
            return self._seen[file_path]
        found: tuple[str | None, list[str]] = (None, [])
        if self.documents is not None:
            source_id, hits, how = match_path(file_path, self.documents)
            if source_id is not None:
                self.result.matches.append({"file": file_path, "source_id": source_id, "how": how})
            found = (source_id, hits)
        self._seen[file_path] = found
        return found


def _item(test: Any, index: int, matcher: _Matcher, result: ImportResult) -> EvalItem | None:
    where = f"tests[{index}]"
    if not isinstance(test, Mapping):
        result.add(
            f"{where} is {json_kind(test)}, expected an object with a `query` and a "
            "`snippets` array.",
            field=where,
        )
        return None
    raw_id = test.get("id")
    if raw_id is None:
        item_id = f"lb{index}"
    elif isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool):
        item_id = str(raw_id)
    else:
        result.add(
            f"`id` is {json_kind(raw_id)}, expected a string or a number.", field=f"{where}.id"
        )
        return None

    def fault(message: str, field: str, hint: str = "") -> None:
        result.add(message, item=item_id, field=field, hint=hint)

    query = test.get("query")
    if not isinstance(query, str) or not query.strip():
        if query is not None and not isinstance(query, str):
            fault(f"`query` is {json_kind(query)}, expected a string.", f"{where}.query")
        else:
            fault(
                f"eval item {item_id!r} has an empty question",
                f"{where}.query",
                "Write the query, or delete the test.",
            )
        return None
    answer = test.get("answer")
    if answer is not None and not isinstance(answer, str):
        fault(f"`answer` is {json_kind(answer)}, expected a string.", f"{where}.answer")
        return None

    snippets = test.get("snippets", [])
    if snippets is None:
        snippets = []
    if not isinstance(snippets, list):
        fault(
            f"`snippets` is {json_kind(snippets)}, expected an array of snippets, each with a "
            '`file_path` and a `span` like {"file_path": "a.txt", "span": [0, 12]}.',
            f"{where}.snippets",
        )
        return None

    anchors, provenance = _anchors(snippets, where, item_id, matcher, fault)
    meta: dict[str, Any] = {"legalbench_spans": provenance} if provenance else {}
    return EvalItem(
        id=item_id,
        question=query.strip(),
        anchors=tuple(anchors),
        answer=answer or None,
        meta=meta,
    )


def _anchors(
    snippets: list[Any], where: str, item_id: str, matcher: _Matcher, fault: Any
) -> tuple[list[GoldAnchor], list[list[Any]]]:
    """A test's anchors (each placed span kept in the result's `places`) and its spans as
    given; snippets whose file is not here become pending labels."""
    result = matcher.result
    anchors: list[GoldAnchor] = []
    provenance: list[list[Any]] = []
    for position, snippet in enumerate(snippets):
        place = f"{where}.snippets[{position}]"
        parsed = _snippet(snippet, place, fault)
        if parsed is None:
            continue
        file_path, start, end, expected = parsed
        provenance.append([file_path, start, end])
        source_id, candidates = matcher(file_path)
        if source_id is None and len(candidates) > 1:
            fault(
                f"{file_path!r} matches {len(candidates)} documents by path suffix: "
                f"{', '.join(repr(c) for c in candidates[:5])}; which one is meant cannot be told.",
                f"{place}.file_path",
                "Upload the file under its full path as source_id, or remove the extra copies.",
            )
            continue
        if source_id is None:
            result.pending.append(
                PendingLabel(
                    line=None,
                    item=item_id,
                    file_name=file_path,
                    would_create=f"anchor quoting characters {start}-{end} of {file_path!r}",
                    span=(start, end),
                    expected=expected,
                )
            )
            continue
        text = matcher.documents[source_id] if matcher.documents is not None else ""
        try:
            check_span_text(text, source_id, start, end, expected)
            begin, stop = trimmed_span(text, source_id, start, end)
        except EvalSetError as exc:
            fault(
                str(exc),
                f"{place}.span",
                "Check that the file is the same version the benchmark was built on.",
            )
            continue
        anchor = anchor_from_span(text, source_id, begin, stop)
        result.places[anchor] = (begin, stop)
        if anchor not in anchors:
            anchors.append(anchor)
    return anchors, provenance


def _snippet(snippet: Any, place: str, fault: Any) -> tuple[str, int, int, str] | None:
    if not isinstance(snippet, Mapping):
        fault(f"{place} is {json_kind(snippet)}, expected an object.", place)
        return None
    file_path = snippet.get("file_path")
    if not isinstance(file_path, str) or not file_path.strip():
        fault(
            f"{place} has no `file_path` naming the document its span counts in.",
            f"{place}.file_path",
        )
        return None
    span = snippet.get("span")
    if not isinstance(span, (list, tuple)) or len(span) != 2:
        found = json_kind(span) if not isinstance(span, list) else f"{len(span)} offsets"
        fault(
            f"`span` must be an array of two character offsets, like [117, 202]; found {found}.",
            f"{place}.span",
        )
        return None
    start, end = whole_number(span[0]), whole_number(span[1])
    if start is None or end is None or isinstance(span[0], str) or isinstance(span[1], str):
        bad = span[0] if start is None or isinstance(span[0], str) else span[1]
        fault(
            f"`span` offsets must be whole numbers counted from 0, found {bad!r}.",
            f"{place}.span",
        )
        return None
    if start < 0 or end <= start:
        fault(
            f"span [{start}, {end}) is empty or reversed: a span needs 0 <= start < end.",
            f"{place}.span",
        )
        return None
    answer = snippet.get("answer")
    if answer is not None and not isinstance(answer, str):
        fault(f"`answer` is {json_kind(answer)}, expected a string.", f"{place}.answer")
        return None
    return file_path.strip(), start, end, answer or ""


__all__ = ["EXPECTED", "SLUG", "match_path", "path_matches", "read"]
