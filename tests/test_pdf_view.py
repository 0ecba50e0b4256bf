"""The PDF view's API and what a selection in it becomes.

A real PDF is uploaded and parsed by every PDF parser (tasks run in-process): pypdf is the
reference, pdfium backs the view. Page images are cached on disk and shared; the text layer
cuts the pdfium parse exactly; a highlight made in the pdfium parse is written as the
reference would have it (quote, page, occurrence, context) when the resolver places it there.
"""

from __future__ import annotations

import io
import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from evalsets import storage as stored
from evalsets.documents import pdfview
from evalsets.documents import services as documents_services
from evalsets.models import GoldAnchor, ParseStatus
from evalsets.pure.parsers import charboxes
from tests.documents import break_page, make_pdf

pytestmark = pytest.mark.django_db

PAGE_ONE = (
    "Leave policy. Employees accrue 1.5 days of leave per month.\n"
    "Leave may be carried over. Employees accrue 1.5 days of leave per month."
)
PAGE_TWO = "Remote work is limited to 30 days a year."
PAGE_THREE = "The \ufb01rst claim is filed within thirty days."


@pytest.fixture
def upload(workspace, annotator, django_capture_on_commit_callbacks):
    """Upload a PDF and let its parses (and what they queue) run, as the workers would."""

    def run(data: bytes, name: str = "policy.pdf"):
        with django_capture_on_commit_callbacks(execute=True):
            document, _ = documents_services.document_upload(
                workspace=workspace, user=annotator, upload=SimpleUploadedFile(name, data)
            )
        return document

    return run


@pytest.fixture
def pdf_doc(upload):
    return upload(make_pdf([PAGE_ONE, PAGE_TWO, PAGE_THREE]))


def _parse(document, parser):
    return document.parses.get(parser=parser)


def _url(document, rest=""):
    return f"/api/workspaces/acme/documents/{document.source_id}/pdf/{rest}"


def test_a_pdf_is_read_by_pdfium_too_and_its_boxes_are_stored(pdf_doc):
    pdfium = _parse(pdf_doc, "pdfium")
    assert pdfium.status == ParseStatus.READY and not pdfium.is_reference
    with pdfium.char_boxes.open("rb") as handle:
        assert charboxes.page_count(handle) == 3
    assert _parse(pdf_doc, "pypdf").is_reference


def test_the_view_says_its_parse_and_every_pages_size(client_for, viewer, pdf_doc):
    body = client_for(viewer).get(_url(pdf_doc)).json()
    assert body["parse"] == str(_parse(pdf_doc, "pdfium").public_id)
    assert body["page_count"] == 3
    assert body["sizes"][0] == [595.28, 841.89]
    assert body["version"] == pdf_doc.sha256[:16]


def test_a_page_image_is_drawn_once_then_served_from_the_shared_cache(
    client_for, viewer, annotator, pdf_doc
):
    pdfview.prune(budget_bytes=0)  # the worker drew the first pages; start cold
    response = client_for(viewer).get(_url(pdf_doc, "pages/2/image?scale=1"))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    image = Image.open(io.BytesIO(b"".join(response.streaming_content)))
    assert image.size[0] in (595, 596)
    path = pdfview.image_path(pdf_doc, 2, 1.0)
    made = path.stat().st_mtime_ns
    os.utime(path, ns=(made - 10**9, made - 10**9))
    again = client_for(annotator).get(_url(pdf_doc, "pages/2/image?scale=1"))
    assert again.status_code == 200
    assert path.stat().st_mtime_ns >= made  # read from the cache (and touched), not drawn anew


def test_the_worker_draws_the_first_pages_when_the_pdfium_parse_is_ready(settings, pdf_doc):
    assert pdfview.image_path(pdf_doc, 1, 1.5).exists()
    assert pdfview.image_path(pdf_doc, settings.GROUNDWORK_PRERENDER_PAGES, 1.5).exists()


def test_the_cache_is_bounded_least_recently_read_first(client_for, viewer, pdf_doc):
    client = client_for(viewer)
    for page in (1, 2, 3):
        client.get(_url(pdf_doc, f"pages/{page}/image?scale=1"))
    paths = [pdfview.image_path(pdf_doc, page, 1.0) for page in (1, 2, 3)]
    for age, path in zip((30, 10, 20), paths, strict=True):
        os.utime(path, (path.stat().st_mtime - age, path.stat().st_mtime - age))
    sizes = [p.stat().st_size for p in paths]
    cached = [*pdfview.cache_root().glob("*/*.jpg"), *pdfview.cache_root().glob("*/*.pdf")]
    others = sum(p.stat().st_size for p in cached if p not in paths)
    pdfview.prune(budget_bytes=int((sizes[1] + others) / 0.9) + 1)
    assert [p.exists() for p in paths] == [False, True, False]


def test_the_text_layer_cuts_the_pdfium_parse_exactly(client_for, viewer, pdf_doc):
    pdfium = _parse(pdf_doc, "pdfium")
    body = client_for(viewer).get(_url(pdf_doc, "pages/3/text/")).json()
    assert body["start"] == pdfium.page_starts[2]
    assert body["text"] == pdfium.text[body["start"] : body["end"]]
    assert [body["text"][s:e] for s, e, *_ in body["runs"]] == [pdfium.text[body["start"] :]]
    assert "first claim" in body["text"]  # pdfium spells the ligature out


def test_bad_page_and_scale_are_400s_that_say_what_is_allowed(client_for, viewer, pdf_doc):
    client = client_for(viewer)
    far = client.get(_url(pdf_doc, "pages/9/text/"))
    assert far.status_code == 400
    assert far.json()["detail"] == "page 9 is not in this PDF; its pages are 1 to 3"
    scale = client.get(_url(pdf_doc, "pages/1/image?scale=7"))
    assert scale.status_code == 400
    assert "'scale' must be one of 1, 1.5, 2" in scale.json()["detail"]


def test_another_workspace_and_strangers_get_404_or_401(client_for, outsider, pdf_doc):
    for rest in ("", "pages/1/image", "pages/1/text/"):
        assert client_for(outsider).get(_url(pdf_doc, rest)).status_code == 404
        assert client_for(None).get(_url(pdf_doc, rest)).status_code in (401, 403)


def test_a_text_document_has_no_pdf_view(client_for, viewer, document):
    response = client_for(viewer).get(_url(document))
    assert response.status_code == 409
    assert "is not a PDF" in response.json()["detail"]


def test_a_page_that_cannot_be_drawn_is_a_422_with_the_reason(client_for, viewer, upload):
    broken = upload(break_page(make_pdf(["One.", "Two.", "Three."]), 2))
    client = client_for(viewer)
    response = client.get(_url(broken, "pages/2/image"))
    assert response.status_code == 422
    assert response.json()["detail"] == (
        "page 2 could not be drawn: the page is damaged and pdfium cannot load it; "
        "its text is in the text view"
    )
    assert response.json()["code"] == "not_drawn"
    # Remembered: the next reader is told the same, from the record, at every scale.
    again = client.get(_url(broken, "pages/2/image?scale=2"))
    assert (again.status_code, again.json()) == (422, response.json())
    assert client.get(_url(broken, "pages/3/image")).status_code == 200
    # The text view still reads the document.
    reference = broken.parses.get(is_reference=True)
    pages = client.get(
        f"/api/workspaces/acme/documents/{broken.source_id}/parses/{reference.public_id}/pages/"
    )
    assert pages.status_code == 200


@pytest.fixture
def highlight(client_for, annotator, item, django_capture_on_commit_callbacks):
    """Select ``parse[start:end]`` as the annotator, and let the workers resolve it."""

    def run(parse, start, end):
        with django_capture_on_commit_callbacks(execute=True):
            return client_for(annotator).post(
                f"/api/workspaces/acme/evalsets/{item.evalset.slug}/items/{item.item_id}/anchors/",
                {"parse": str(parse.public_id), "start": start, "end": end},
                format="json",
            )

    return run


def test_a_selection_in_the_pdf_view_becomes_the_reference_parses_anchor(highlight, pdf_doc):
    pdfium, pypdf = _parse(pdf_doc, "pdfium"), _parse(pdf_doc, "pypdf")
    quote = "Employees accrue 1.5 days of leave per month."
    start = pdfium.text.index(quote, pdfium.text.index("carried"))  # the second copy on page 1
    response = highlight(pdfium, start, start + len(quote))
    assert response.status_code == 201, response.json()
    anchor = GoldAnchor.objects.get(public_id=response.json()["id"])
    ref_start = pypdf.text.index(quote, pypdf.text.index("carried"))
    assert anchor.reference_parse == pypdf
    assert (anchor.ref_start, anchor.ref_end) == (ref_start, ref_start + len(quote))
    assert (anchor.quote, anchor.page_hint, anchor.occurrence) == (quote, 1, 1)
    assert anchor.prefix == pypdf.text[ref_start - 32 : ref_start]
    found = {r.parse.parser: r for r in anchor.resolutions.all()}
    assert found["pypdf"].status == "exact" and found["pypdf"].start == ref_start
    assert found["pdfium"].start == start


def test_a_ligature_read_differently_takes_the_reference_parses_characters(highlight, pdf_doc):
    pdfium, pypdf = _parse(pdf_doc, "pdfium"), _parse(pdf_doc, "pypdf")
    start = pdfium.text.index("first claim")
    response = highlight(pdfium, start, start + len("first claim"))
    anchor = GoldAnchor.objects.get(public_id=response.json()["id"])
    assert anchor.quote == "\ufb01rst claim" == pypdf.text[anchor.ref_start : anchor.ref_end]
    assert anchor.page_hint == 3 and anchor.reference_parse == pypdf


def test_a_selection_the_reference_cannot_place_keeps_the_pdfium_words(highlight, upload):
    broken = upload(break_page(make_pdf(["One.", "Two.", "Three."]), 2))
    pdfium = _parse(broken, "pdfium")
    documents_services.parse_version_add(
        document=broken,
        parser="elsewhere",
        parser_version="1",
        text="Nothing alike.",
        page_starts=[0],
        origin="uploaded",
        make_reference=True,
    )
    start = pdfium.text.index("Three.")
    response = highlight(pdfium, start, start + 6)
    anchor = GoldAnchor.objects.get(public_id=response.json()["id"])
    assert anchor.reference_parse == pdfium
    assert (anchor.quote, anchor.page_hint) == ("Three.", 3)


def test_deleting_the_document_removes_its_boxes_and_page_images(
    client_for, owner, pdf_doc, django_capture_on_commit_callbacks
):
    boxes = _parse(pdf_doc, "pdfium").char_boxes.path
    folder = pdfview.document_dir(pdf_doc)
    shared = f"{pdfview.ROOT}/{pdfview.document_key(pdf_doc)}"
    assert folder.exists() and list(stored.stored_names(shared))
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.document_delete(document=pdf_doc)
    assert not os.path.exists(boxes)
    assert not folder.exists()
    assert list(stored.stored_names(shared)) == []


def test_the_document_page_offers_the_view_switch(client, annotator, pdf_doc):
    client.force_login(annotator)
    page = client.get(f"/w/acme/documents/{pdf_doc.source_id}").content.decode()
    assert "data-view-switch" in page and "As it looks" in page
    assert "Text (pypdf)" in page and "data-pdf-pages" in page
