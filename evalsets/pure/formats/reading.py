"""Reading a format's input: what kind of bytes arrived, decoding them with a problem
that names the encoding, JSON kinds, whole numbers and CSV dialects. Nothing here imports
Django.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from evalsets.pure.formats.results import ImportResult

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
    # Counted before any line is parsed: one pass over the text, whatever it holds.
    limit = result.budget.max_lines
    result.count_lines(physical_lines(text), result.filename, limit + 1)
    return text


def physical_lines(text: str) -> int:
    """How many lines ``text`` has, ended by LF, CR LF or a lone CR (a last line unended too)."""
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    return breaks + (0 if text.endswith(("\n", "\r")) else 1)


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


#: How pandas writes a missing value when asked to (`to_csv(na_rep="NaN")`): read as an
#: empty cell, as pandas reads it back.
MISSING = frozenset({"NaN", "nan"})

#: What `writing.spreadsheet_safe` puts before a cell a spreadsheet would run as a formula.
SPREADSHEET_MARK = "'"
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_marked(value: str) -> bool:
    """Whether `value` is a cell the spreadsheet-safe export marked: `'` before a formula."""
    return value.startswith(SPREADSHEET_MARK) and value[1:].startswith(_FORMULA_STARTS)


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
