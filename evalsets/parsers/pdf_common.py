"""Wording and checks shared by the two PDF parsers, so both fail the same way.

A labeller who uploads a scan or a password-protected PDF should get the same sentence whichever
parser met the problem first.
"""

from __future__ import annotations

import re
import zlib

from .base import ParseError, error_detail
from .sniffing import not_a

ENCRYPTED_REASON = (
    "This PDF is encrypted (password-protected); remove the password and upload it again."
)
NO_TEXT_REASON = "This PDF has no text layer (it looks like a scan); run OCR first."
CORRUPT_REASON = "This PDF is damaged and could not be read; try exporting or saving it again."


def require_pdf_magic(data: bytes) -> None:
    """Raise ``empty`` or ``wrong_type`` unless the bytes carry a PDF header.

    The header may follow a little junk (the format allows up to 1 KB), as some generators emit.
    """
    if not data:
        raise ParseError("empty", "This file is empty.")
    if b"%PDF-" not in data[:1024]:
        raise not_a("a PDF", data)


# PDF bombs: a Flate stream of a few KB can unpack to gigabytes, and PDF libraries unpack a
# page's streams whole. Real content streams and images compress a few times to a few dozen
# times; zeros or repeated bytes compress about a thousand times. A stream that unpacks to
# more than STREAM_BOMB_MIN_BYTES at more than STREAM_BOMB_RATIO:1 is refused before either
# parser reads the file, as is a file whose streams unpack to more than MAX_UNPACKED_BYTES.
STREAM_BOMB_MIN_BYTES = 16 * 1024 * 1024
STREAM_BOMB_RATIO = 200
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
BOMB_REASON = (
    "This PDF holds a compressed stream that unpacks to {what}, far more than any real page "
    "needs; it was refused. Print it to a new PDF and upload that copy."
)
_STREAM_START = re.compile(rb"(?<!end)stream\r?\n")
_CHUNK = 1 << 20


def check_streams(data: bytes) -> None:
    """Raise ``too_large`` when a zlib (Flate) stream in the file is a decompression bomb.

    Each stream is unpacked a megabyte at a time and dropped, so the check itself needs
    little memory, and it stops as soon as a stream crosses its limit.
    """
    total = 0
    for match in _STREAM_START.finditer(data):
        start = match.end()
        if data[start : start + 1] != b"\x78":  # not a zlib stream (or not Flate at all)
            continue
        end = data.find(b"endstream", start)
        packed = (end if end >= 0 else len(data)) - start
        limit = max(STREAM_BOMB_MIN_BYTES, STREAM_BOMB_RATIO * packed)
        unpacked = _unpacked_size(data, start, start + packed, min(limit, MAX_UNPACKED_BYTES))
        if unpacked > limit:
            ratio = unpacked // max(packed, 1)
            raise ParseError(
                "too_large",
                BOMB_REASON.format(
                    what=f"more than {_mb(unpacked)} from {_kb(packed)} (over {ratio:,} to 1)"
                ),
            )
        total += unpacked
        if total > MAX_UNPACKED_BYTES:
            raise ParseError("too_large", BOMB_REASON.format(what=f"more than {_mb(total)}"))


def _unpacked_size(data: bytes, start: int, end: int, limit: int) -> int:
    """Bytes the zlib stream at ``data[start:end]`` unpacks to, counting at most past ``limit``."""
    decompressor = zlib.decompressobj()
    size = 0
    view = memoryview(data)[start:end]
    position = 0
    pending = b""
    try:
        while size <= limit:
            if not pending:
                if position >= len(view):
                    break
                pending = bytes(view[position : position + _CHUNK])
                position += _CHUNK
            size += len(decompressor.decompress(pending, _CHUNK))
            pending = decompressor.unconsumed_tail
            if decompressor.eof:
                break
    except zlib.error:
        pass  # a damaged stream: the parser reports it
    finally:
        view.release()
    return size


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1024**2:,.0f} MB"


def _kb(nbytes: int) -> str:
    return f"{nbytes / 1024:,.0f} KB"


def corrupt_pdf(exc: BaseException) -> ParseError:
    return ParseError("corrupt", CORRUPT_REASON, error_detail(exc))


LIMIT_REASON = (
    "This PDF holds a stream or structure far larger than any real page needs (it unpacks "
    "past the PDF library's safety limit); it was refused. Print it to a new PDF and upload "
    "that copy."
)


def over_limit_pdf(exc: BaseException) -> ParseError:
    """A bomb the library stopped itself (a filter other than Flate, a cyclic page tree)."""
    return ParseError("too_large", LIMIT_REASON, error_detail(exc))


def tidy_page(text: str) -> str:
    """Strip a page's surrounding whitespace and form feeds; keep its inner lines as extracted."""
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()
