"""Drawing a document as it looks is bounded, and a failure is recorded once.

The view of an HTML, Markdown or Word document is built in a limited child process
(processor time, memory, output); a Word file's images are inlined within a budget, whatever
the number of references to them; the file's own style map is ignored; a build that fails is
recorded so readers are told its reason and nobody builds it again; and a build that killed
its worker twice is parked with its reason instead of being delivered a third time.
"""

from __future__ import annotations

import io
import os
import re
import signal
import struct
import zlib

import docx
import mammoth
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from selectolax.lexbor import LexborHTMLParser

from evalsets import storage as stored
from evalsets.documents import renditions
from evalsets.documents import services as documents_services
from evalsets.documents import tasks as documents_tasks
from evalsets.models import ParseVersion
from evalsets.pure.parsers import ParseError, get_parser
from evalsets.pure.parsers.nesting import measure_nesting
from evalsets.pure.rendering import Rendition, render_html

MB = 1024 * 1024


def _png(payload_bytes: int) -> bytes:
    """A PNG of 1 x 1 pixels carrying ``payload_bytes`` of incompressible data in a chunk of
    its own (python-docx reads only its header; nobody decodes it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"teXt", os.urandom(payload_bytes))
        + chunk(b"IDAT", pixels)
        + chunk(b"IEND", b"")
    )


def _docx_with_one_image_referred_to(times: int, image: bytes) -> bytes:
    document = docx.Document()
    document.add_paragraph("The figures of the report follow.")
    for _ in range(times):  # python-docx stores one image part; each picture refers to it
        document.add_picture(io.BytesIO(image))
    document.add_paragraph("After the figures comes the conclusion.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


# -- Word ---------------------------------------------------------------------------------------


def test_a_word_file_referring_to_one_image_many_times_inlines_it_within_the_cap():
    image = _png(20_000)
    data = _docx_with_one_image_referred_to(300, image)
    assert len(data) < 200_000  # one image in the file, 300 references to it

    clean = render_html("docx", data, max_image_bytes=1 * MB)

    inlined = re.findall(r'src="data:image/png;base64,([^"]*)"', clean)
    assert 0 < len(inlined) <= MB // len(image)
    assert sum(len(x) for x in inlined) * 3 // 4 <= 1 * MB
    assert clean.count("image left out") == 300 - len(inlined)
    assert "comes the conclusion" in clean
    assert len(clean) < 2 * MB  # without the cap: about 8 MB of base64


def test_the_word_files_own_style_map_is_ignored():
    """An embedded ``p => script`` would make mammoth write every paragraph as a script,
    which the sanitiser drops with its text: the view would be blank."""
    original = io.BytesIO(_docx_with_one_image_referred_to(0, b""))
    mammoth.embed_style_map(original, "p => script:fresh")
    data = original.getvalue()
    assert "<script>" in mammoth.convert_to_html(io.BytesIO(data)).value  # it is honoured

    clean = render_html("docx", data)

    assert "The figures of the report follow." in clean
    assert "script" not in clean


def test_markdown_whose_html_nests_too_deeply_is_refused_before_the_sanitiser_reads_it():
    with pytest.raises(ParseError) as error:
        render_html("markdown", b"Intro\n\n" + b"<div></i>" * 3_000)
    assert error.value.code == "too_large" and "levels deep" in error.value.reason


# -- building in a worker -----------------------------------------------------------------------


@pytest.fixture
def upload(workspace, annotator, django_capture_on_commit_callbacks):
    def make(name: str, data: bytes):
        with django_capture_on_commit_callbacks(execute=True):
            document, _ = documents_services.document_upload(
                workspace=workspace, user=annotator, upload=SimpleUploadedFile(name, data)
            )
        return document

    return make


@pytest.fixture
def builds(monkeypatch):
    """Each build's limited child, counted (and still started)."""
    calls = []
    real = renditions.run_limited

    def counted(*args, **kwargs):
        calls.append(kwargs.get("args"))
        return real(*args, **kwargs)

    monkeypatch.setattr(renditions, "run_limited", counted)
    return calls


def _get(client, source_id: str):
    return client.get(f"/api/workspaces/acme/documents/{source_id}/rendered/")


def _reference(document) -> ParseVersion:
    return document.parses.get(is_reference=True)


PAGE = (
    "<html><body><h1>Leave policy</h1>"
    + "".join(f"<p>Paragraph {n} of the policy.</p>" for n in range(2000))
    + "</body></html>"
).encode()


@pytest.mark.django_db
def test_the_view_is_built_in_a_limited_child_with_the_configured_budget(upload, builds):
    document = upload("leave.html", PAGE)
    assert renditions.is_stored(renditions.parse_dir(document, _reference(document)))
    assert builds == [{"kind": "html", "max_image_bytes": 8 * MB}]


@pytest.mark.django_db
def test_a_view_past_its_output_limit_is_recorded_and_not_built_again(
    upload, builds, settings, client_for, viewer
):
    settings.GROUNDWORK_RENDER_OUTPUT_MB = 0  # any view is too large
    upload("leave.html", PAGE)
    assert len(builds) == 1
    client = client_for(viewer)
    for _ in range(3):
        response = _get(client, "leave.html")
        assert response.status_code == 409
        detail = response.json()["detail"]
        assert "Drawing this document as it looks made more than" in detail
        assert "read it in the Text view" in detail
    assert len(builds) == 1  # readers were told the recorded reason; nobody built it again


@pytest.mark.django_db
def test_a_word_file_the_view_cannot_read_is_recorded_with_a_readable_reason(
    upload, builds, client_for, viewer
):
    document = upload("travel.md", b"# Travel\n\nTrains.\n")
    document.kind = "docx"  # its bytes are not a Word file: mammoth cannot read them
    document.save()
    renditions.forget(renditions.document_dir(document))
    documents_tasks.render_document(_reference(document).pk)
    response = _get(client_for(viewer), "travel.md")
    assert response.status_code == 409
    assert "cannot be drawn as it looks; read it in the Text view" in response.json()["detail"]


def _die_while_drawing(monkeypatch, parse_id: int) -> None:
    """Run the task in a forked worker that the kernel kills while the view is drawn (as the
    out-of-memory killer or the task's hard time limit would); wait for it."""
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            monkeypatch.setattr(
                renditions, "run_limited", lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
            )
            documents_tasks.render_document(parse_id)
        finally:
            os._exit(3)  # never reached: the kill comes first
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@pytest.mark.django_db
def test_a_render_that_killed_its_worker_twice_is_parked_with_its_reason(
    upload, builds, monkeypatch, client_for, viewer
):
    document = upload("leave.html", PAGE)
    reference = _reference(document)
    renditions.forget(renditions.document_dir(document))  # as if its first worker was killed
    builds.clear()

    _die_while_drawing(monkeypatch, reference.pk)
    _die_while_drawing(monkeypatch, reference.pk)  # redelivered, and killed again
    assert documents_tasks.render_document(reference.pk) == 0  # the third delivery parks it

    assert builds == []  # and does not draw it a third time
    response = _get(client_for(viewer), "leave.html")
    assert response.status_code == 409
    detail = response.json()["detail"]
    assert "stopped the worker drawing it 2 times, so it is not tried again" in detail
    documents_tasks.render_document(reference.pk)
    assert builds == []


@pytest.mark.django_db
def test_a_worker_killed_once_does_not_stop_the_next_from_drawing_the_view(
    upload, builds, monkeypatch, client_for, viewer
):
    document = upload("leave.html", PAGE)
    reference = _reference(document)
    renditions.forget(renditions.document_dir(document))
    builds.clear()

    _die_while_drawing(monkeypatch, reference.pk)
    assert documents_tasks.render_document(reference.pk) > 0

    assert len(builds) == 1
    assert _get(client_for(viewer), "leave.html").status_code == 200
    parent = renditions.document_dir(document)
    assert not any(name.endswith(".attempts") for name in stored.stored_names(parent))


# -- work in proportion to the page -------------------------------------------------------------


def _page(units: int) -> bytes:
    """A page of ``units`` blocks, each with what once cost more than its size: stray end
    tags, a banner deep inside the page, bold left open across paragraphs, a formula."""
    unit = (
        "<div><div><span>Section {n}</span></i></b></span></div></div>"
        "<header>Site banner {n}</header>"
        "<p><b>Rule {n}.</p><p>Staff accrue leave <a href='/x'>as set out</a> here.</p>"
        "<p>Area <math><mi>x</mi><mo>=</mo><mn>{n}</mn></math> square metres.</p>"
        "<table><tr><td>{n}</td><td>row</td></tr></table>"
    )
    body = "".join(unit.format(n=n) for n in range(units))
    return ("<html><body>" + "<div>" * 800 + body + "</body></html>").encode()


def _work(page: bytes) -> dict[str, int]:
    markup = page.decode()
    nesting = measure_nesting(markup, stop_depth=1 << 30, stop_reopened=1 << 30)
    parsed = get_parser("selectolax").parse(page)
    clean = render_html("html", page)
    rendition = Rendition.build(clean, parsed.text)
    assert not rendition.align_stopped
    return {
        "elements built": len(LexborHTMLParser(markup).css("*")),
        "formatting re-opened": nesting.reopened + 1,
        "view size": len(clean),
        "alignment": rendition.align_work,
    }


def test_a_300_kb_page_is_read_and_drawn_with_work_in_proportion_to_its_size():
    small, large = _page(1_200), _page(2_400)
    assert 280_000 < len(small) < 400_000
    before, after = _work(small), _work(large)
    for counted in before:
        assert after[counted] <= 2.5 * before[counted], counted
    assert before["formatting re-opened"] < len(small)


def test_a_page_that_is_mostly_one_long_formula_is_aligned_in_one_run():
    """The parser reads a formula's text and the view shows it: a 300 KB formula is text
    both sides have, not a passage the alignment must search its way past."""
    formula = "<math>" + "".join(f"<mi>x{k}</mi><mo>+</mo>" for k in range(13_000)) + "</math>"
    page = (f"<p>Intro.</p><p>{formula}</p>" + "<p>After the formula.</p>" * 200).encode()
    assert len(page) > 300_000
    parsed = get_parser("selectolax").parse(page)
    rendition = Rendition.build(render_html("html", page), parsed.text)
    assert len(rendition.runs) == 1 and not rendition.align_stopped
    assert rendition.align_work <= 2 * len(parsed.text)
