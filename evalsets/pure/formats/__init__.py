"""Eval-set file formats: one module per format, and the registry the Django side looks in.

Pure Python, no Django: every function takes and returns context-grid's own objects
(`EvalItem`, `GoldAnchor`, `GoldSpan`, `EvalSet`) and plain mappings, so the web side only
converts its models into those objects and back.

Writers stream::

    notes = FORMATS["contextgrid-jsonl"].writer(header, items, out, documents=texts)

`header` is an `EvalSetHeader` (or an `EvalSet`), `items` any iterable of `EvalItem` read
once, `out` a binary file-like object, `documents` a `source_id -> text` mapping of one
chosen parse (deepset and BEIR need it; the context-grid formats ignore it). The returned
`ExportNotes` lists, in words, everything the format could not carry.

Readers never raise on bad input::

    result = FORMATS["deepset-qa"].reader(data, filename="labels.csv", documents=texts)

`result.items` holds the good items, `result.problems` every located `Problem` (`error`: the
record was skipped; `warning`: imported with a caveat), `result.pending` labels waiting for a
document that is not in Groundwork yet. The one exception is `BudgetExceeded`: a file past
its `ReadBudget` (problems, lines, questions) is refused whole, the message naming the limit.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from contextgrid.core.evalset import EvalItem, EvalSet

from evalsets.pure.archive import GuardedZip
from evalsets.pure.formats import beir, contextgrid_csv, contextgrid_jsonl, deepset, legalbench
from evalsets.pure.formats.locating import (
    AnchorPositions,
    DocumentTexts,
    anchor_from_span,
    locate_quote,
)
from evalsets.pure.formats.notes import ExportNotes, ExportRefused
from evalsets.pure.formats.results import (
    ERROR,
    WARNING,
    BudgetExceeded,
    EvalSetHeader,
    HasProblems,
    ImportResult,
    PendingLabel,
    Problem,
    ReadBudget,
)


class Writer(Protocol):
    def __call__(
        self,
        header: EvalSetHeader | EvalSet,
        items: Iterable[EvalItem],
        out: BinaryIO,
        *,
        documents: DocumentTexts | None = None,
        positions: AnchorPositions | None = None,
    ) -> ExportNotes: ...


class Reader(Protocol):
    def __call__(
        self,
        data: bytes,
        *,
        filename: str,
        documents: DocumentTexts | None = None,
        evalset_id: str | None = None,
        budget: ReadBudget | None = None,
    ) -> ImportResult: ...


@dataclass(frozen=True, slots=True)
class Format:
    """One entry of the registry. `writer` or `reader` is `None` when that way is not offered."""

    slug: str
    label: str
    extension: str
    media_type: str
    writer: Writer | None
    reader: Reader | None
    needs_documents: bool = False
    #: False for a file meant for people only (it changes text an evaluation compares).
    for_evaluation: bool = True

    def filename(self, stem: str) -> str:
        """A download name for a set called `stem`."""
        return f"{stem}{self.extension}"


FORMATS: dict[str, Format] = {
    f.slug: f
    for f in (
        Format(
            "contextgrid-jsonl",
            "context-grid JSONL",
            ".jsonl",
            "application/x-ndjson",
            contextgrid_jsonl.write,
            contextgrid_jsonl.read,
        ),
        Format(
            "contextgrid-csv",
            "context-grid CSV",
            ".csv",
            "text/csv; charset=utf-8",
            contextgrid_csv.write,
            contextgrid_csv.read,
        ),
        Format(
            "contextgrid-csv-spreadsheet",
            "context-grid CSV for spreadsheets (formula-safe, NOT for evaluation)",
            ".csv",
            "text/csv; charset=utf-8",
            contextgrid_csv.write_for_spreadsheets,
            None,
            for_evaluation=False,
        ),
        Format(
            "deepset-qa",
            "deepset Cloud CSV (question answering)",
            ".csv",
            "text/csv; charset=utf-8",
            deepset.write_qa,
            deepset.read,
            needs_documents=True,
        ),
        Format(
            "deepset-retrieval",
            "deepset Cloud CSV (document retrieval)",
            ".csv",
            "text/csv; charset=utf-8",
            deepset.write_retrieval,
            deepset.read,
            needs_documents=True,
        ),
        Format(
            "deepset-rag",
            "deepset Cloud CSV (RAG, questions only)",
            ".csv",
            "text/csv; charset=utf-8",
            deepset.write_rag,
            deepset.read,
        ),
        Format(
            "beir",
            "BEIR (zip)",
            ".zip",
            "application/zip",
            beir.write,
            beir.read,
            needs_documents=True,
        ),
        Format(
            "legalbench-rag",
            "LegalBench-RAG (JSON, import only)",
            ".json",
            "application/json",
            None,
            legalbench.read,
            needs_documents=True,
        ),
    )
}


def get_format(slug: str) -> Format:
    """The registered format, or a `KeyError` naming the ones that exist."""
    try:
        return FORMATS[slug]
    except KeyError:
        raise KeyError(f"no eval-set format {slug!r}; known: {', '.join(FORMATS)}") from None


def guess_format(data: bytes, filename: str) -> str | None:
    """The slug a file most likely is, from its extension and first bytes; `None` if unsure.

    A convenience for an upload form's default choice, never a substitute for asking:
    deepset's three layouts share one reader, so any of them is returned as `deepset-qa`.
    """
    name = filename.lower()
    head = data[:4096].lstrip(b"\xef\xbb\xbf").lstrip()
    if data.startswith(b"PK\x03\x04"):
        try:  # past the archive limits: ArchiveTooLarge, for the caller to refuse the file
            with GuardedZip(data, name=filename) as archive:
                if any(n.endswith("queries.jsonl") for n in archive.names()):
                    return "beir"
        except zipfile.BadZipFile:
            return None
        return None
    if name.endswith((".jsonl", ".ndjson")):
        return "contextgrid-jsonl"
    if name.endswith(".json"):
        return "contextgrid-jsonl" if _json_lines(data) else "legalbench-rag"
    if name.endswith((".csv", ".txt")) or b"," in head.split(b"\n", 1)[0]:
        first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lower()
        cells = {c.strip().strip('"') for c in first.split(",")}
        if {"file_name", "answer_start"} & cells or {"text", "context"} <= cells:
            return "deepset-qa"
        return "contextgrid-csv"
    return None


def _json_lines(data: bytes) -> bool:
    """Whether a `.json` file is JSON lines: its first line is a whole JSON object on its own
    (an `_evalset` header, or an item of a file without one), not LegalBench's `tests`."""
    first = data[: 1 << 20].lstrip(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)[0]
    if first.startswith(b'{"_evalset"'):
        return True
    try:
        value = json.loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and "tests" not in value


__all__ = [
    "ERROR",
    "FORMATS",
    "WARNING",
    "AnchorPositions",
    "BudgetExceeded",
    "DocumentTexts",
    "EvalSetHeader",
    "ExportNotes",
    "ExportRefused",
    "Format",
    "HasProblems",
    "ImportResult",
    "PendingLabel",
    "Problem",
    "ReadBudget",
    "Reader",
    "Writer",
    "anchor_from_span",
    "get_format",
    "guess_format",
    "locate_quote",
]
