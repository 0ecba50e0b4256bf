"""Drawing a PDF page is held to a budget: pixels, processor time, wall-clock time, memory.

A few kilobytes can ask pdfium for millions of full-page fills or a page 60,000 points tall.
Each drawing runs in a limited child process, so a costly page fails alone with its reason, is
remembered, and never holds this process's pdfium lock. Real files, real child processes.
"""

from __future__ import annotations

import io
import threading

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from evalsets.documents import pdfview
from evalsets.documents import services as documents_services
from evalsets.pure import pdfdraw
from tests.documents import make_pdf
from tests.hostile_pdfs import nested_fills_pdf, page_pdf

#: About 8,000 full-page fills: a few seconds of pdfium, a fraction of one of parsing.
COSTLY_LEVELS = 13


def _image(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


# -- the drawing itself (no database) ----------------------------------------------------------


def test_a_page_60000_points_tall_is_scaled_down_to_the_pixel_limit_keeping_its_shape():
    budget = pdfdraw.DrawBudget(max_pixels=2_000_000)
    image = _image(pdfdraw.draw_page(page_pdf(1200, 60000), 0, 1.5, budget))
    width, height = image.size
    assert width * height <= 2_000_000
    assert height / width == pytest.approx(50, rel=0.01)


def test_an_ordinary_page_is_drawn_at_the_scale_asked_for():
    image = _image(pdfdraw.draw_page(make_pdf(["Leave is accrued."]), 0, 1.0))
    assert abs(image.size[0] - 595) <= 1 and abs(image.size[1] - 842) <= 1


def test_a_page_too_big_to_draw_legibly_within_the_pixel_limit_is_refused_with_both_figures():
    with pytest.raises(pdfdraw.PageNotDrawn) as caught:
        pdfdraw.draw_page(page_pdf(1200, 60000), 0, 1.5, pdfdraw.DrawBudget(max_pixels=100_000))
    assert caught.value.code == "too_large" and caught.value.lasting
    assert "1,200 x 60,000 points" in str(caught.value)
    assert "100,000 pixels" in str(caught.value)


def test_a_page_of_thousands_of_fills_is_stopped_at_its_processor_time_budget():
    budget = pdfdraw.DrawBudget(cpu_s=1, timeout_s=120)
    with pytest.raises(pdfdraw.PageNotDrawn) as caught:
        pdfdraw.draw_page(nested_fills_pdf(COSTLY_LEVELS), 0, 1.5, budget)
    assert caught.value.code == "timeout" and caught.value.lasting
    assert str(caught.value) == "drawing it used more than 1 s of processor time and was stopped"


def test_a_drawing_past_its_wall_clock_deadline_is_stopped_and_not_taken_as_the_pages_fault():
    budget = pdfdraw.DrawBudget(cpu_s=120, timeout_s=0.5)
    with pytest.raises(pdfdraw.PageNotDrawn) as caught:
        pdfdraw.draw_page(nested_fills_pdf(COSTLY_LEVELS + 4), 0, 1.5, budget)
    assert caught.value.code == "timeout"
    assert not caught.value.lasting  # a busy machine may draw it next time


def test_a_page_whose_bitmap_needs_more_than_the_memory_budget_is_stopped():
    budget = pdfdraw.DrawBudget(max_pixels=200_000_000, memory_mb=400)
    with pytest.raises(pdfdraw.PageNotDrawn) as caught:
        pdfdraw.draw_page(page_pdf(1200, 60000), 0, 1.5, budget)
    assert caught.value.code == "out_of_memory"
    assert str(caught.value) == "drawing it needed more than 400 MB of memory and was stopped"


def test_a_damaged_page_is_refused_in_words_from_the_child():
    with pytest.raises(pdfdraw.PageNotDrawn, match="this PDF has no page 4"):
        pdfdraw.draw_page(make_pdf(["One."]), 3)


def test_drawing_does_not_wait_for_this_processes_pdfium_lock():
    """The lock serialises pdfium calls in one process; a drawing in a child needs none of it."""
    drawn: list[bytes] = []
    with pdfdraw.PDFIUM_LOCK:  # as a long drawing in another thread of this process would
        thread = threading.Thread(
            target=lambda: drawn.append(pdfdraw.draw_page(make_pdf(["Mine."]), 0)), daemon=True
        )
        thread.start()
        thread.join(timeout=60)
    assert drawn and _image(drawn[0]).format == "JPEG"


# -- the PDF view (database) -------------------------------------------------------------------


@pytest.fixture
def upload(workspace, annotator, django_capture_on_commit_callbacks):
    """Upload a PDF and let its parses and its page pre-drawing run, as the workers would."""

    def run(data: bytes, name: str):
        with django_capture_on_commit_callbacks(execute=True):
            document, _ = documents_services.document_upload(
                workspace=workspace, user=annotator, upload=SimpleUploadedFile(name, data)
            )
        return document

    return run


def _image_url(document, page: int = 1, scale: str = "1.5") -> str:
    return (
        f"/api/workspaces/acme/documents/{document.source_id}/pdf/pages/{page}/image?scale={scale}"
    )


@pytest.mark.django_db
def test_a_page_over_its_budget_is_a_422_that_says_why_and_is_not_drawn_again(
    settings, upload, client_for, viewer
):
    settings.GROUNDWORK_PAGE_DRAW_CPU_S = 1
    document = upload(nested_fills_pdf(COSTLY_LEVELS), "fills.pdf")  # the worker tries page 1
    client = client_for(viewer)
    first = client.get(_image_url(document))
    assert first.status_code == 422
    body = first.json()
    assert body["code"] == "timeout"
    assert body["detail"] == (
        "page 1 could not be drawn: drawing it used more than 1 s of processor time and was "
        "stopped; its text is in the text view"
    )
    # With a budget that would now let it through, the page is still answered from the record:
    # nobody draws it again, however many ask.
    settings.GROUNDWORK_PAGE_DRAW_CPU_S = 120
    for scale in ("1.5", "1", "2"):
        again = client.get(_image_url(document, scale=scale))
        assert (again.status_code, again.json()["detail"]) == (422, body["detail"])
    assert not pdfview.image_path(document, 1, 1.5).exists()


@pytest.mark.django_db
def test_a_wall_clock_timeout_is_a_503_and_the_page_is_drawn_when_asked_again(
    settings, upload, client_for, viewer
):
    settings.GROUNDWORK_PRERENDER_PAGES = 0
    document = upload(nested_fills_pdf(COSTLY_LEVELS - 4), "fills.pdf")
    settings.GROUNDWORK_PAGE_DRAW_TIMEOUT_S = 0  # no time at all: always past the deadline
    client = client_for(viewer)
    busy = client.get(_image_url(document))
    assert busy.status_code == 503
    assert busy.json()["code"] == "timeout"
    assert "ask again" in busy.json()["detail"]
    settings.GROUNDWORK_PAGE_DRAW_TIMEOUT_S = 60
    assert client.get(_image_url(document)).status_code == 200


@pytest.mark.django_db
def test_a_tall_page_is_served_within_the_pixel_limit(settings, upload, client_for, viewer):
    settings.GROUNDWORK_PAGE_MAX_PIXELS = 1_000_000
    document = upload(page_pdf(1200, 60000), "scroll.pdf")
    response = client_for(viewer).get(_image_url(document, scale="2"))
    assert response.status_code == 200
    width, height = _image(b"".join(response.streaming_content)).size
    assert width * height <= 1_000_000


@pytest.mark.django_db
def test_the_worker_stops_pre_drawing_a_file_at_its_first_page_over_budget(settings, upload):
    settings.GROUNDWORK_PAGE_DRAW_CPU_S = 1
    settings.GROUNDWORK_PRERENDER_PAGES = 3
    document = upload(nested_fills_pdf(COSTLY_LEVELS, pages=3), "fills.pdf")
    folder = pdfview.document_dir(document)
    assert sorted(p.name for p in folder.iterdir()) == ["1.broken"]
