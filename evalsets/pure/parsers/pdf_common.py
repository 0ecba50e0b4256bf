"""Wording and checks shared by the two PDF parsers, so both fail the same way.

A labeller who uploads a scan or a password-protected PDF should get the same sentence whichever
parser met the problem first.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import zlib

from pdfminer.lzw import LZWDecoder
from pdfminer.pdfexceptions import PDFException

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
# The stream's whole filter chain is followed (ASCIIHex, ASCII85, Flate, LZW, RunLength, in
# any order), so a bomb wrapped in another filter is measured too: pdfminer has no limits of
# its own, and pypdf's (75 MB a stream) stop a bomb but not one just under them.
STREAM_BOMB_MIN_BYTES = 16 * 1024 * 1024
STREAM_BOMB_RATIO = 200
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
BOMB_REASON = (
    "This PDF holds a compressed stream that unpacks to {what}, far more than any real page "
    "needs; it was refused. Print it to a new PDF and upload that copy."
)
_STREAM_START = re.compile(rb"(?<!end)stream\r?\n")
_FILTER = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[A-Za-z0-9]+)")
_NAME = re.compile(rb"/([A-Za-z0-9]+)")
_CHUNK = 1 << 20


def check_streams(data: bytes) -> None:
    """Raise ``too_large`` when a stream in the file is a decompression bomb.

    Each stream's filter chain is decoded stage by stage, intermediate stages held only up to
    the stream's limit and the last one counted a megabyte at a time and dropped, so the check
    itself needs little memory, and it stops as soon as a stream crosses its limit.
    """
    total = 0
    for match in _STREAM_START.finditer(data):
        start = match.end()
        filters = _stream_filters(data, match.start(), start)
        if not filters:
            continue
        end = data.find(b"endstream", start)
        packed = (end if end >= 0 else len(data)) - start
        limit = max(STREAM_BOMB_MIN_BYTES, STREAM_BOMB_RATIO * packed)
        unpacked = _unpacked_size(
            data[start : start + packed], filters, min(limit, MAX_UNPACKED_BYTES)
        )
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


def _stream_filters(data: bytes, keyword: int, start: int) -> list[str]:
    """The decoders this check knows, in the order the stream's dictionary applies them.

    The chain is cut at the first filter it cannot follow (images: DCT, JPX, CCITT, JBIG2),
    since what comes before it can still be a bomb. A stream whose dictionary names no filter
    but whose bytes are a zlib stream is measured as Flate.
    """
    head = data[max(0, keyword - 4096) : keyword]
    head = head[head.rfind(b"obj") + 3 :] if b"obj" in head else head
    matches = list(_FILTER.finditer(head))
    found = matches[-1] if matches else None
    if found is None:
        return ["FlateDecode"] if data[start : start + 1] == b"\x78" else []
    chain = []
    for name in _NAME.findall(found.group(1)):
        decoder = _ALIASES.get(name.decode("ascii"))
        if decoder is None:
            break
        chain.append(decoder)
    return chain


def _unpacked_size(raw: bytes, filters: list[str], limit: int) -> int:
    """Bytes ``raw`` unpacks to through ``filters``, counting at most a little past ``limit``.

    A damaged stream counts what came out before the damage: the parser reports the rest.
    """
    stage = raw
    for name in filters[:-1]:
        kept = _decoded(stage, name, limit)
        if kept is None or sum(len(chunk) for chunk in kept) > limit:
            return sum(len(chunk) for chunk in kept or ())
        stage = b"".join(kept)
    size = 0
    try:
        for chunk in _DECODERS[filters[-1]](stage):
            size += len(chunk)
            if size > limit:
                break
    except _DAMAGED:
        pass
    return size


def _decoded(data: bytes, name: str, limit: int) -> list[bytes] | None:
    """One intermediate stage, kept only up to just past ``limit``; ``None`` if unreadable."""
    kept: list[bytes] = []
    size = 0
    try:
        for chunk in _DECODERS[name](data):
            kept.append(chunk)
            size += len(chunk)
            if size > limit:
                break
    except _DAMAGED:
        return kept or None
    return kept


def _inflate(data: bytes):
    decompressor = zlib.decompressobj()
    view = memoryview(data)
    position = 0
    pending = b""
    while True:
        if not pending:
            if position >= len(view):
                return
            pending = bytes(view[position : position + _CHUNK])
            position += _CHUNK
        yield decompressor.decompress(pending, _CHUNK)
        pending = decompressor.unconsumed_tail
        if decompressor.eof:
            return


def _ascii_hex(data: bytes):
    digits = re.sub(rb"\s", b"", data.split(b">", 1)[0])
    yield binascii.unhexlify(digits + b"0" * (len(digits) % 2))


def _ascii85(data: bytes):
    body = data.split(b"~>", 1)[0].removeprefix(b"<~")
    yield base64.a85decode(body, ignorechars=b" \t\n\r\x0b\x0c")


def _run_length(data: bytes):
    at = 0
    while at < len(data):
        length = data[at]
        if length == 128:
            return
        if length < 128:
            yield data[at + 1 : at + 2 + length]
            at += length + 2
        else:
            yield data[at + 1 : at + 2] * (257 - length)
            at += 2


def _lzw(data: bytes):
    yield from LZWDecoder(io.BytesIO(data)).run()


_DAMAGED = (zlib.error, ValueError, binascii.Error, EOFError, PDFException)
_DECODERS = {
    "FlateDecode": _inflate,
    "ASCIIHexDecode": _ascii_hex,
    "ASCII85Decode": _ascii85,
    "RunLengthDecode": _run_length,
    "LZWDecode": _lzw,
}
#: Full names and the abbreviations inline images use.
_ALIASES = {
    **{name: name for name in _DECODERS},
    "Fl": "FlateDecode",
    "AHx": "ASCIIHexDecode",
    "A85": "ASCII85Decode",
    "RL": "RunLengthDecode",
    "LZW": "LZWDecode",
}


def _mb(nbytes: int) -> str:
    return f"{nbytes / 1024**2:,.0f} MB"


def _kb(nbytes: int) -> str:
    return f"{nbytes / 1024:,.0f} KB"


def corrupt_pdf(exc: BaseException) -> ParseError:
    return ParseError("corrupt", CORRUPT_REASON, error_detail(exc))


def check_pages_read(text: str, meta: dict) -> None:
    """Refuse a whole PDF's joined ranges that read nothing: damaged when no page could be
    read at all, a scan when the pages read hold no text (every PDF parser's rule)."""
    if not meta["pages"] or len(meta["failed_pages"]) >= meta["pages"]:
        raise ParseError("corrupt", CORRUPT_REASON, "no page could be read")
    if not text.strip():
        raise ParseError("no_text", NO_TEXT_REASON)


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
