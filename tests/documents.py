"""Real documents built inside the tests: PDFs (fpdf2), encrypted PDFs (pypdf), DOCX, ZIPs.

Shared by the parser, ingestion and worker tests, so every test reads files a real user
could upload rather than canned bytes.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

UNICODE_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def make_pdf(pages: list[str | None]) -> bytes:
    """A PDF with one page per entry (None = a blank page), in a Unicode font if one is present."""
    from fpdf import FPDF

    pdf = FPDF()
    if UNICODE_FONT.exists():
        pdf.add_font("DejaVu", fname=str(UNICODE_FONT))
        pdf.set_font("DejaVu", size=12)
    else:  # core fonts: smart quotes via cp1252, no ligatures
        pdf.core_fonts_encoding = "cp1252"
        pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text:
            if not UNICODE_FONT.exists():
                text = text.replace("\ufb01", "fi")
            pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def make_scan_pdf() -> bytes:
    """A two-page PDF with shapes only: what a scanned document without OCR looks like."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(2):
        pdf.add_page()
        pdf.set_fill_color(200, 200, 200)
        pdf.rect(20, 20, 170, 120, style="F")
        pdf.ellipse(60, 160, 80, 60, style="D")
    return bytes(pdf.output())


def encrypt_pdf(data: bytes, user_password: str) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=io.BytesIO(data))
    writer.encrypt(user_password=user_password, owner_password="owner-secret")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Quarterly \u201cfindings\u201d", level=1)
    document.add_paragraph("Before the table, it\u2019s prose.")
    table = document.add_table(rows=3, cols=2)
    table.cell(0, 0).text = "Region"
    table.cell(0, 1).text = "Revenue"
    table.cell(1, 0).text = "North"
    table.cell(1, 1).text = "12"
    table.cell(2, 0).merge(table.cell(2, 1)).text = "Merged total row"
    document.add_paragraph("")  # an empty spacer paragraph
    document.add_paragraph("After the table comes the conclusion.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def make_zip(members: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


def break_page(data: bytes, number: int) -> bytes:
    """``data`` (a PDF from ``make_pdf``) with page ``number``'s object replaced by ``null``.

    pdfium then counts the page but cannot load or draw it; pypdf leaves it out. The object
    keeps its length, so the file's cross-reference table stays right.
    """
    import re

    kids = re.search(rb"/Kids \[([^\]]*)\]", data).group(1).split(b"R")
    ref = kids[number - 1].split()[0]
    found = re.search(rb"\n" + ref + rb" 0 obj\n(<<.*?>>)\nendobj", data, re.S)
    body = found.group(1)
    return data[: found.start(1)] + b"null".ljust(len(body)) + data[found.end(1) :]
