"""Read a PDF with pypdfium2 (Chrome's PDF engine), page by page, with a box for every character.

pdfium is fast and what many RAG pipelines use, so it is a parse version worth comparing. It
is also the parse behind the PDF view: the same library draws the pages, and each character of
this parse's text comes with its box on the page (``ParsedText.char_boxes``, see
``charboxes.py``), so a selection on the drawn page maps to offsets in this parse exactly.

The clean-up every parser does (``\\r\\n`` to ``\\n``, no NUL, lines without trailing spaces, a
page without surrounding white space) is done here character by character so the boxes stay
aligned with the text. ``read_page`` is shared with anything that needs the same reading of
one page (tests, the benchmark).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

from . import charboxes
from .base import (
    ParsedText,
    ParseError,
    ProgressFn,
    check_page_count,
    error_detail,
    join_page_ranges,
    join_pages,
    library_version,
    report,
)
from .pdf_common import (
    CORRUPT_REASON,
    ENCRYPTED_REASON,
    check_pages_read,
    check_streams,
    require_pdf_magic,
)

#: Device size the page is mapped to when measuring its transform: boxes come out as fractions
#: of the page (to 1 part in a million), with its crop box and rotation applied as drawn.
_PRECISE = 1 << 20
_NEWLINES = {"\r", "\n", "\u2028", "\u2029", "\x85"}
#: pdfium marks a hyphen that splits a word at a line end with U+FFFE (older builds: U+0002)
#: and joins the word there; the page prints "-", so the text says "-".
_HYPHEN_MARKS = {"\x02", "\ufffe"}


def read_page(page, textpage) -> tuple[str, bytes]:
    """One page's text, cleaned as every parser cleans it, and one packed box per character."""
    import pypdfium2.raw as raw

    count = textpage.count_chars()
    chars: list[tuple[str, charboxes.Box]] = []
    if count > 0:
        buffer = ctypes.create_string_buffer((count + 1) * 2)
        written = raw.FPDFText_GetText(
            textpage.raw, 0, count, ctypes.cast(buffer, ctypes.POINTER(ctypes.c_ushort))
        )
        units = buffer.raw[: max(0, written - 1) * 2]
        codes = [int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2)]
        chars = _characters(page, textpage, codes)
    return _tidy(chars)


def _page_transform(page) -> tuple[float, float, float, float, float, float]:
    """The affine map from page coordinates to fractions of the drawn page (x right, y down),
    with the crop box and rotation applied as pdfium draws them: measured once per page, so
    each character then costs arithmetic, not three calls into the library."""
    import pypdfium2.raw as raw

    dx, dy = ctypes.c_int(), ctypes.c_int()

    def device(x: float, y: float) -> tuple[float, float]:
        raw.FPDF_PageToDevice(page.raw, 0, 0, _PRECISE, _PRECISE, 0, x, y, dx, dy)
        return dx.value / _PRECISE, dy.value / _PRECISE

    ox, oy = device(0.0, 0.0)
    ax, ay = device(1000.0, 0.0)
    bx, by = device(0.0, 1000.0)
    return ox, oy, (ax - ox) / 1000, (ay - oy) / 1000, (bx - ox) / 1000, (by - oy) / 1000


def _characters(page, textpage, codes: list[int]) -> list[tuple[str, charboxes.Box]]:
    import pypdfium2.raw as raw

    ox, oy, xx, xy, yx, yy = _page_transform(page)
    rect = raw.FS_RECTF()
    rect_ref = ctypes.byref(rect)
    handle = textpage.raw
    loose_box = raw.FPDFText_GetLooseCharBox
    is_generated = raw.FPDFText_IsGenerated
    out: list[tuple[str, charboxes.Box]] = []
    append = out.append
    i = 0
    count = len(codes)
    while i < count:
        code = codes[i]
        index = i
        if 0xD800 <= code <= 0xDBFF and i + 1 < count and 0xDC00 <= codes[i + 1] <= 0xDFFF:
            ch = chr(0x10000 + ((code - 0xD800) << 10) + (codes[i + 1] - 0xDC00))
            i += 2
        else:
            ch = "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)
            i += 1
        box: charboxes.Box = None
        # Only white space can be a character pdfium made up (a space, a line break).
        if (not ch.isspace() or is_generated(handle, index) != 1) and loose_box(
            handle, index, rect_ref
        ):
            left, right, top, bottom = rect.left, rect.right, rect.top, rect.bottom
            x0, y0 = ox + left * xx + top * yx, oy + left * xy + top * yy
            x1, y1 = ox + right * xx + bottom * yx, oy + right * xy + bottom * yy
            if x0 > x1:
                x0, x1 = x1, x0
            if y0 > y1:
                y0, y1 = y1, y0
            if x1 > x0 and y1 > y0:
                box = (x0, y0, x1, y1)
        append((ch, box))
    return out


def _tidy(chars: list[tuple[str, charboxes.Box]]) -> tuple[str, bytes]:
    """``tidy_page(clean_text(text))`` applied to characters with their boxes."""
    kept: list[tuple[str, charboxes.Box]] = []
    for i, (ch, box) in enumerate(chars):
        if ch == "\x00":
            continue
        if ch == "\r" and i + 1 < len(chars) and chars[i + 1][0] == "\n":
            continue  # "\r\n" is one line break
        if ch in _NEWLINES:
            # Trailing white space of the line goes (what ``line.rstrip()`` does).
            while kept and kept[-1][0] != "\n" and kept[-1][0].isspace():
                kept.pop()
            kept.append(("\n", None))
            continue
        kept.append(("-" if ch in _HYPHEN_MARKS else ch, box))
    while kept and kept[-1][0].isspace():
        kept.pop()
    start = 0
    while start < len(kept) and kept[start][0].isspace():
        start += 1
    kept = kept[start:]
    text = "".join(ch for ch, _ in kept)
    return text, charboxes.pack_page(box for _, box in kept)


class PdfiumParser:
    """Reads the whole file (``parse``) or a range of its pages (``parse_pages``, so one
    document's parse can be shared by several workers: ``base.PageRangeParser``); the
    ranges' texts join with ``PAGE_SEPARATOR`` and their boxes with ``charboxes.concat``."""

    name = "pdfium"
    kind = "pdf"
    version = library_version("pypdfium2")
    #: A range's worth of pages (``PageRangeParser``): about 10 ms of one core a dense page
    #: (text and a box per character), and pdfium opens a page by its number, so a range
    #: costs only a child process and the file's opening besides its pages
    #: (bench/parse_scaling_bench.py).
    pages_per_range = 250
    #: What a page costs (``parse_seconds``): 11 ms measured, with room for a slower host.
    seconds_per_page = 0.012

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        with _opened(data, max_pages) as (document, total):
            report(progress, 0, total)  # open: the clock of each page's budget starts here
            part = self._read(document, 0, total, total, progress)
        return self.join_ranges([part])

    def parse_pages(
        self,
        data: bytes,
        *,
        start: int,
        stop: int | None,
        max_pages: int = 2000,
        progress: ProgressFn | None = None,
    ) -> ParsedText:
        with _opened(data, max_pages) as (document, total):
            start = min(start, total)
            stop = total if stop is None else min(stop, total)
            report(progress, start, total)
            return self._read(document, start, stop, total, progress)

    def join_ranges(self, parts: list[ParsedText]) -> ParsedText:
        text, starts, meta = join_page_ranges(parts)
        check_pages_read(text, meta)
        return ParsedText(
            text=text,
            page_starts=starts,
            parser=self.name,
            parser_version=self.version,
            meta=meta,
            char_boxes=charboxes.concat([part.char_boxes or b"" for part in parts]),
        )

    def _read(
        self, document, start: int, stop: int, total: int, progress: ProgressFn | None
    ) -> ParsedText:
        """Pages ``start`` .. ``stop`` of an open document, as one range
        (``PageRangeParser``): a blank range is no reason to refuse the document."""
        import pypdfium2 as pdfium

        pages: list[str] = []
        boxes: list[tuple[float, float, bytes]] = []
        failed: list[int] = []
        for index in range(start, stop):
            text, packed, size = self._page(document, index)
            if size is None:
                failed.append(index + 1)
                size = (0.0, 0.0)
            pages.append(text)
            boxes.append((size[0], size[1], packed))
            report(progress, index + 1, total)
        text, starts = join_pages(pages)
        return ParsedText(
            text=text,
            page_starts=starts,
            parser=self.name,
            parser_version=self.version,
            meta={
                "document_pages": total,
                "first_page": start + 1,
                "pages": len(pages),
                "empty_pages": [start + i + 1 for i, page in enumerate(pages) if not page],
                "failed_pages": failed,
                "pdfium": pdfium.PDFIUM_INFO.build if hasattr(pdfium, "PDFIUM_INFO") else "",
            },
            char_boxes=charboxes.encode(boxes),
        )

    @staticmethod
    def _page(document, index: int) -> tuple[str, bytes, tuple[float, float] | None]:
        """One page's text and boxes; a page that will not load is empty (and reported)."""
        try:
            page = document[index]
        except Exception:
            return "", b"", None
        try:
            textpage = page.get_textpage()
            try:
                text, packed = read_page(page, textpage)
            finally:
                textpage.close()
            return text, packed, page.get_size()
        except Exception:
            return "", b"", None
        finally:
            page.close()


@contextmanager
def _opened(data: bytes, max_pages: int) -> Iterator[tuple[object, int]]:
    """The open document and its page count, or the refusal a whole file earns; closed
    after use (pdfium holds native memory)."""
    require_pdf_magic(data)
    check_streams(data)  # a decompression bomb is refused before the library unpacks it
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code in (raw.FPDF_ERR_PASSWORD, raw.FPDF_ERR_SECURITY):
            raise ParseError("encrypted", ENCRYPTED_REASON, error_detail(exc)) from None
        raise ParseError("corrupt", CORRUPT_REASON, error_detail(exc)) from None
    try:
        total = len(document)
        if total == 0:
            raise ParseError("empty", "This PDF has no pages.")
        check_page_count(total, max_pages)
        yield document, total
    finally:
        document.close()


PARSER = PdfiumParser()
