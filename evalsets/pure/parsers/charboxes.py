"""Where each character of a parse sits on its PDF page, stored compactly and read a page at a time.

The PDF view draws a transparent text layer over each page image so a mouse drag selects the
parse's own characters. That needs one box per character of the parse's text, for every page:
a 1,000-page PDF holds millions of characters, so the boxes are packed in one binary file with
an index of pages up front, and a reader seeks to the one page it needs (memory per request is
one page, never the document).

Layout (little-endian)::

    b"GWBOX1\\0\\0"  uint32 page_count
    page_count x (float32 width_pt, float32 height_pt, uint32 chars, uint64 byte_offset)
    per page: chars x (uint16 x0, y0, x1, y1)

Coordinates are fractions of the page's width and height scaled to 0..65535, origin top left,
so a box is independent of the scale a page is drawn at. A character with no box of its own
(a line break, a space the library inserted) has ``x0 > x1`` (stored as ``NO_BOX``).
Page ``i``'s ``chars`` equals the length of page ``i``'s text in the parse, character for
character (code points), so box ``k`` belongs to ``text[page_starts[i] + k]``.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

MAGIC = b"GWBOX1\0\0"
_HEAD = struct.Struct("<8sI")
_ENTRY = struct.Struct("<ffIQ")
_BOX = struct.Struct("<4H")
SCALE = 65535
#: A character without a box of its own.
NO_BOX = (SCALE, 0, 0, 0)

#: One character's box as fractions of its page (x0, top, x1, bottom), or None.
Box = tuple[float, float, float, float] | None


@dataclass
class PageBoxes:
    """The boxes of one page: its size in points and one packed box per character."""

    width: float
    height: float
    packed: bytes  # chars x 8 bytes

    @property
    def chars(self) -> int:
        return len(self.packed) // _BOX.size

    def boxes(self) -> list[tuple[int, int, int, int]]:
        """Each character's ``(x0, y0, x1, y1)`` in 0..65535 of the page (``x0 > x1``: none)."""
        return list(_BOX.iter_unpack(self.packed))


def pack_page(boxes: Iterable[Box]) -> bytes:
    """Pack fractional boxes (clamped to the page) of one page's characters."""
    out = bytearray()
    for box in boxes:
        if box is None:
            out += _BOX.pack(*NO_BOX)
            continue
        x0, y0, x1, y1 = (min(SCALE, max(0, round(v * SCALE))) for v in box)
        out += _BOX.pack(x0, y0, max(x0, x1), max(y0, y1))
    return bytes(out)


def encode(pages: Sequence[tuple[float, float, bytes]]) -> bytes:
    """One file from ``(width_pt, height_pt, packed boxes)`` per page."""
    offset = _HEAD.size + _ENTRY.size * len(pages)
    head = [_HEAD.pack(MAGIC, len(pages))]
    for width, height, packed in pages:
        head.append(_ENTRY.pack(width, height, len(packed) // _BOX.size, offset))
        offset += len(packed)
    return b"".join(head) + b"".join(packed for _, _, packed in pages)


def _header(handle: BinaryIO) -> int:
    handle.seek(0)
    raw = handle.read(_HEAD.size)
    if len(raw) != _HEAD.size:
        raise ValueError("not a character box file: too short")
    magic, count = _HEAD.unpack(raw)
    if magic != MAGIC:
        raise ValueError("not a character box file: wrong header")
    return count


def page_count(handle: BinaryIO) -> int:
    return _header(handle)


def page_sizes(handle: BinaryIO) -> list[tuple[float, float]]:
    """Every page's ``(width, height)`` in points, from the index alone."""
    count = _header(handle)
    raw = handle.read(_ENTRY.size * count)
    return [(w, h) for w, h, _, _ in _ENTRY.iter_unpack(raw)]


def read_page(handle: BinaryIO, index: int) -> PageBoxes:
    """Page ``index`` (0-based) read alone: the index entry, then that page's boxes."""
    count = _header(handle)
    if not 0 <= index < count:
        raise IndexError(f"page {index + 1} is not in this file of {count} pages")
    handle.seek(_HEAD.size + _ENTRY.size * index)
    width, height, chars, offset = _ENTRY.unpack(handle.read(_ENTRY.size))
    handle.seek(offset)
    packed = handle.read(chars * _BOX.size)
    if len(packed) != chars * _BOX.size:
        raise ValueError(f"character box file ends inside page {index + 1}")
    return PageBoxes(width=width, height=height, packed=packed)


def concat(files: Sequence[bytes]) -> bytes:
    """The boxes of consecutive page ranges (parsed apart) as one file, pages in order."""
    pages: list[tuple[float, float, bytes]] = []
    for data in files:
        handle = io.BytesIO(data)
        for i in range(page_count(handle)):
            page = read_page(handle, i)
            pages.append((page.width, page.height, page.packed))
    return encode(pages)
