"""PDFs that cost their reader far more than their size, written as raw PDF bytes.

``nested_fills_pdf(levels)`` is a page whose drawing paints the whole page ``2 ** levels``
times: each of its form XObjects draws the one below it twice, so a 3 KB file asks pdfium for
millions of full-page fills. ``page_pdf(width, height)`` is one blank page of any size in points
(a 1200 x 60000 pt scroll drawn at 1.5 would be 162 million pixels).
"""

from __future__ import annotations

_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _pdf(objects: list[bytes]) -> bytes:
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def _stream(entries: bytes, body: bytes) -> bytes:
    return b"<< %s /Length %d >>\nstream\n" % (entries, len(body)) + body + b"\nendstream"


def _document(
    width: float, height: float, resources: bytes, content: bytes, extra: list[bytes], pages: int
) -> bytes:
    """Catalog (1), page tree (2), the shared content stream (3) and font (4), then ``extra``
    (objects 5 on), then ``pages`` pages that all show the same content."""
    first_page = 5 + len(extra)
    kids = b" ".join(b"%d 0 R" % (first_page + n) for n in range(pages))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Contents 3 0 R /Resources %s >>"
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
            _stream(b"", content),
            _FONT,
            *extra,
            *[page % (width, height, resources)] * pages,
        ]
    )


def nested_fills_pdf(levels: int, text: str = "Hostile page.", pages: int = 1) -> bytes:
    """``pages`` A4 pages with ``text`` on each, each painted over ``2 ** levels`` times."""
    width, height = 595, 842
    box = b"/Type /XObject /Subtype /Form /BBox [0 0 %d %d]" % (width, height)
    forms = [_stream(box, b"0.2 0.4 0.6 rg 0 0 %d %d re f" % (width, height))]  # object 5
    for level in range(1, levels + 1):  # object 5 + level draws object 4 + level twice
        resources = b" /Resources << /XObject << /F %d 0 R >> >>" % (4 + level)
        forms.append(_stream(box + resources, b"/F Do /F Do"))
    resources = b"<< /XObject << /F %d 0 R >> /Font << /H 4 0 R >> >>" % (5 + levels)
    content = b"/F Do BT /H 12 Tf 72 760 Td (%s) Tj ET" % text.encode("latin-1")
    return _document(width, height, resources, content, forms, pages)


def page_pdf(width: float, height: float, text: str = "A very tall page.") -> bytes:
    """One page ``width`` x ``height`` points with a line of ``text`` at its top."""
    content = b"BT /H 12 Tf 72 %g Td (%s) Tj ET" % (height - 40, text.encode("latin-1"))
    return _document(width, height, b"<< /Font << /H 4 0 R >> >>", content, [], 1)
