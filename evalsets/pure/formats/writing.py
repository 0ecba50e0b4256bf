"""Streaming a format's output: text and CSV sinks that flush in chunks, spreadsheet-safe
cells, and JSON written in one stable order. Nothing here imports Django.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import IO, Any

from evalsets.pure.formats.notes import Tally

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
