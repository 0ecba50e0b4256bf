"""Hostile uploads: the type comes from the bytes, limits hold, archive and PDF bombs are refused.

What a file is comes from its content (``evalsets.pure.parsers.sniffing``), checked through the
upload API. A .docx is a ZIP: one that declares gigabytes unpacked, an absurd compression
ratio or thousands of members is refused at upload, from its directory alone. A PDF whose
Flate stream unpacks to far more than any page needs, or that declares millions of pages,
fails its parses with a sentence saying so, and the process that ran them carries on.
"""

from __future__ import annotations

import io
import zipfile
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.models import Document, ParseStatus
from evalsets.pure.archive import LIMITS
from evalsets.pure.parsers import ParseError, get_parser, parse_isolated

pytestmark = pytest.mark.django_db

DOCS = "/api/workspaces/acme/documents/"
PAGE_TEXT = b"BT /F1 12 Tf 72 720 Td (Leave accrues monthly.) Tj ET\n"


# -- building hostile files ---------------------------------------------------------------------


def _pdf(content: bytes, *, count: int = 1, compress: bool = True) -> bytes:
    """A one-page PDF with a correct cross-reference table; ``count`` is the declared /Count."""
    stream = zlib.compress(content, 9) if compress else content
    flate = b" /Filter /FlateDecode" if compress else b""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [3 0 R] /Count {count} >>".encode(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)}".encode() + flate + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n".encode()
    out += f"startxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _docx(document_xml: bytes, *, extra_members: int = 0) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("word/document.xml", document_xml)
        for index in range(extra_members):
            archive.writestr(f"word/media/part{index}.bin", b"")
    return out.getvalue()


def _upload(client, name: str, data: bytes):
    return client.post(DOCS, {"file": SimpleUploadedFile(name, data)}, format="multipart")


@pytest.fixture
def annotator_client(client_for, annotator, workspace):
    return client_for(annotator)


# -- type from content ---------------------------------------------------------------------------


def test_an_html_page_named_pdf_is_refused_saying_what_it_is(annotator_client):
    response = _upload(annotator_client, "report.pdf", b"<!doctype html><html><body>404</body>")

    assert response.status_code == 400
    assert response.json()["errors"]["file"] == [
        "'report.pdf': This file is named .pdf but it is not a PDF (it starts like an HTML page)."
    ]
    assert not Document.objects.exists()


def test_a_program_named_txt_is_refused(annotator_client):
    response = _upload(annotator_client, "notes.txt", b"\x7fELF\x02\x01\x01" + b"\x00" * 200)

    assert response.status_code == 400
    assert "a program (Linux executable)" in response.json()["detail"]


def test_html_named_txt_is_stored_as_html_so_the_html_parser_strips_its_scripts(annotator_client):
    data = b"<html><head><script>window.__xss=1</script></head><body><p>Hi</p></body></html>"

    response = _upload(annotator_client, "notes.txt", data)

    assert response.status_code == 201
    assert Document.objects.get().kind == "html"


# -- size and page limits --------------------------------------------------------------------------


def test_a_file_over_the_upload_limit_is_refused_with_both_sizes(annotator_client, settings):
    settings.GROUNDWORK_MAX_UPLOAD_BYTES = 1024 * 1024

    response = _upload(annotator_client, "big.txt", b"leave " * 200_000)

    assert response.status_code == 413
    assert response.json()["detail"] == (
        "'big.txt' is too large: 1.1 MB, the limit is 1.0 MB (GROUNDWORK_MAX_UPLOAD_MB)"
    )
    assert response.json()["limit"] == {"setting": "GROUNDWORK_MAX_UPLOAD_MB", "value": 1}


def test_a_pdf_declaring_millions_of_pages_is_refused_with_both_numbers():
    """pdfminer trusts the page tree's /Count, so the limit applies before any page is read."""
    data = _pdf(PAGE_TEXT, count=10_000_000)

    with pytest.raises(ParseError) as error:
        parse_isolated("pdfminer", data, timeout_s=60, max_pages=2000)

    assert error.value.code == "too_many_pages"
    assert error.value.reason == "This PDF has 10,000,000 pages; the limit is 2,000."


def test_pypdf_counts_the_pages_that_exist_not_the_declared_millions():
    parsed = parse_isolated("pypdf", _pdf(PAGE_TEXT, count=10_000_000), timeout_s=60)

    assert parsed.page_starts == [0]
    assert "Leave accrues monthly." in parsed.text


def test_a_real_pdf_over_the_page_limit_is_refused_by_both_parsers():
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in range(5):
        pdf.add_page()
        pdf.cell(text=f"Page {number + 1}")
    data = bytes(pdf.output())

    for parser in ("pypdf", "pdfminer"):
        with pytest.raises(ParseError) as error:
            parse_isolated(parser, data, timeout_s=60, max_pages=3)
        assert error.value.reason == "This PDF has 5 pages; the limit is 3."


# -- archive bombs -------------------------------------------------------------------------------


def test_a_docx_whose_part_unpacks_a_thousand_times_its_size_is_refused_at_upload(
    annotator_client,
):
    bomb = _docx(b"<w:document>" + b" " * (40 * 1024 * 1024) + b"</w:document>")
    assert len(bomb) < 200_000  # 40 MB unpacked from a file this small

    response = _upload(annotator_client, "handbook.docx", bomb)

    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "compressed archive that would unpack to 40.0 MB from one part compressed" in detail
    assert "it was refused" in detail
    assert not Document.objects.exists()


def test_a_docx_with_thousands_of_members_is_refused_at_upload(annotator_client):
    bomb = _docx(b"<w:document/>", extra_members=LIMITS.max_members + 1)

    response = _upload(annotator_client, "handbook.docx", bomb)

    assert response.status_code == 400
    assert (
        f"more than the limit of {LIMITS.max_members:,} separate files" in response.json()["detail"]
    )


def test_a_zip_claiming_gigabytes_unpacked_is_refused_from_its_directory_alone(
    annotator_client,
):
    """The declared size decides (zipfile never returns more than it), so nothing is unpacked."""
    archive = bytearray(_docx(b"<w:document>small</w:document>"))
    # Rewrite the declared uncompressed size of the last member in the central directory.
    entry = archive.rfind(b"PK\x01\x02")
    archive[entry + 24 : entry + 28] = (3 * 1024**3).to_bytes(4, "little")

    response = _upload(annotator_client, "handbook.docx", bytes(archive))

    assert response.status_code == 400
    assert "would unpack to 3.0 GB" in response.json()["detail"]


def test_the_docx_parser_itself_refuses_a_bomb_in_the_worker():
    bomb = _docx(b"<w:document>" + b" " * (40 * 1024 * 1024) + b"</w:document>")

    with pytest.raises(ParseError) as error:
        get_parser("python-docx").parse(bomb)

    assert error.value.code == "too_large"


def test_an_ordinary_docx_still_passes_the_archive_checks():
    from docx import Document as Docx

    out = io.BytesIO()
    document = Docx()
    document.add_paragraph("Employees accrue 1.5 days of leave per month. " * 2000)
    document.save(out)

    parsed = get_parser("python-docx").parse(out.getvalue())

    assert parsed.text.startswith("Employees accrue 1.5 days")


# -- PDF bombs -------------------------------------------------------------------------------------


BOMB_PDF = _pdf(PAGE_TEXT + b" " * (64 * 1024 * 1024))


@pytest.mark.parametrize("parser", ["pypdf", "pdfminer", "pdfium"])
def test_a_pdf_stream_that_unpacks_to_gigabytes_is_refused_before_the_library_unpacks_it(parser):
    assert len(BOMB_PDF) < 200_000

    with pytest.raises(ParseError) as error:
        parse_isolated(parser, BOMB_PDF, timeout_s=60, memory_mb=512)

    assert error.value.code == "too_large"
    assert "compressed stream that unpacks to more than" in error.value.reason
    assert "it was refused" in error.value.reason


def test_a_run_length_bomb_stopped_by_pypdf_is_refused_as_too_large_not_called_damaged():
    # RunLengthDecode, not Flate, so the stream check passes it and pypdf's own limit (75 MB
    # unpacked) stops it; 1.2 MB of "repeat this space 128 times" unpacks to 77 MB.
    stream = PAGE_TEXT + b"\x81 " * 600_000 + b"\x80"
    data = _pdf(stream, compress=False).replace(b"/Length", b"/Filter /RunLengthDecode /Length")

    with pytest.raises(ParseError) as error:
        parse_isolated("pypdf", data, timeout_s=60, memory_mb=1024)

    assert error.value.code == "too_large"
    assert "safety limit" in error.value.reason and "it was refused" in error.value.reason
    assert "LimitReachedError" in error.value.detail


@pytest.mark.parametrize("parser", ["pypdf", "pdfminer", "pdfium"])
def test_an_ordinary_compressed_pdf_still_reads(parser):
    parsed = parse_isolated(parser, _pdf(PAGE_TEXT), timeout_s=60)

    assert "Leave accrues monthly." in parsed.text


@pytest.mark.parametrize("parser", ["pypdf", "pdfminer", "pdfium"])
def test_deeply_nested_pdf_objects_fail_readably_or_parse_and_the_caller_lives(parser):
    nested = b"[" * 50_000 + b"]" * 50_000
    data = _pdf(PAGE_TEXT, compress=False).replace(
        b"/Type /Catalog", b"/Type /Catalog /Junk " + nested
    )

    try:
        parsed = parse_isolated(parser, data, timeout_s=60, memory_mb=512)
    except ParseError as error:
        assert error.code in {"corrupt", "out_of_memory", "timeout"}
        assert "Traceback" not in error.reason and "Recursion" not in error.reason
    else:
        assert "Leave accrues monthly." in parsed.text
    # The caller (a worker) goes on parsing.
    assert "Leave accrues" in parse_isolated(parser, _pdf(PAGE_TEXT), timeout_s=60).text


def test_an_uploaded_pdf_bomb_ends_as_failed_parses_with_the_reason(
    annotator_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(annotator_client, "report.pdf", BOMB_PDF)
    assert response.status_code == 201

    parses = list(Document.objects.get().parses.all())
    assert {p.parser for p in parses} == {"pypdf", "pdfminer", "pdfium"}
    for parse in parses:
        assert parse.status == ParseStatus.FAILED
        assert parse.error_code == "too_large"
        assert "compressed stream that unpacks to more than" in parse.error
    listed = annotator_client.get(f"{DOCS}report.pdf/").json()["parses"]
    assert all("unpacks to more than" in p["error"] for p in listed)
