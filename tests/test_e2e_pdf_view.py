"""The PDF as it looks, in Chromium: pages drawn by pdfium, a text layer a mouse drag selects,
anchors drawn over their words, and a placeholder for a page that cannot be drawn.

The drag here is a real one (mouse down, move, up) over the transparent text layer; the page
runs under the app's CSP, so the text layer's positions (set through the CSSOM) are proven
allowed by the ``page`` fixture, which fails on any violation.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from fpdf import FPDF
from playwright.sync_api import expect

from evalsets import queue
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, GoldAnchor
from tests import services as svc
from tests.browser import log_in, shot
from tests.conftest import PASSWORD
from tests.documents import UNICODE_FONT, break_page, make_pdf
from tests.resolving import resolve_anchor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


PAGE_ONE = (
    "Travel policy\n"
    "Staff book trains for any journey under four hours.\n"
    "Flights need the written approval of a director.\n"
    "Hotels are booked through the travel desk, never directly."
)
PAGE_TWO = "Expenses\nReceipts are kept for seven years and scanned within a week."


def make_handbook_pdf() -> bytes:
    """Two pages laid out as people lay them out: headings, paragraphs and a table."""
    pdf = FPDF()
    pdf.add_font("DejaVu", fname=str(UNICODE_FONT))
    pdf.add_font("DejaVu", style="B", fname=str(UNICODE_FONT.with_name("DejaVuSans-Bold.ttf")))
    for title, paragraphs, rows in (
        (
            "1. Leave",
            [PAGE_LEAVE],
            [("Years of service", "Days a year"), ("0-4", "18"), ("5+", "22")],
        ),
        ("2. Expenses", [PAGE_EXPENSES], [("Claim", "Deadline"), ("Travel", "30 days")]),
    ):
        pdf.add_page()
        pdf.set_font("DejaVu", "B", 20)
        pdf.cell(0, 14, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("DejaVu", size=12)
        for text in paragraphs:
            pdf.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        with pdf.table(col_widths=(60, 40), width=100, align="LEFT") as table:
            for cells in rows:
                row = table.row()
                for cell in cells:
                    row.cell(cell)
    return bytes(pdf.output())


PAGE_LEAVE = (
    "Employees accrue leave every month they work. Leave may be carried over into the next "
    "year, up to five days; the rest lapses on 31 March. Part-time staff accrue leave pro rata."
)
PAGE_EXPENSES = (
    "Receipts are kept for seven years and scanned within a week of the expense. Claims "
    "without a receipt need a manager's note."
)

# The box of characters [a, b) of the text-layer span holding `needle` on page `n`.
GLYPHS = """
([n, needle, from, to]) => {
  const spans = document.querySelectorAll(`[data-pdf-text="${n}"] span`);
  const span = Array.from(spans).find((s) => s.textContent.includes(needle));
  if (!span) throw new Error(`${needle} is not in the text layer of page ${n}`);
  const at = span.textContent.indexOf(needle);
  const range = document.createRange();
  range.setStart(span.firstChild, at + from);
  range.setEnd(span.firstChild, at + to);
  const r = range.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}
"""


def upload(workspace, user, data: bytes, name: str):
    """Upload a PDF and wait for its three parses (a real worker in CI, in-process here)."""
    document, _ = documents_services.document_upload(
        workspace=workspace, user=user, upload=SimpleUploadedFile(name, data)
    )
    svc.wait_for_parses(name, 3)
    return document


def glyphs(page, n: int, needle: str, start: int = 0, end: int | None = None) -> dict:
    return page.evaluate(GLYPHS, [n, needle, start, len(needle) if end is None else end])


def open_pdf(page, live_server, source_id: str) -> None:
    page.goto(f"{live_server.url}/w/acme/documents/{source_id}")
    expect(page.get_by_role("button", name="As it looks")).to_have_attribute("aria-pressed", "true")
    expect(page.locator('[data-pdf-page="1"][data-drawn="1"]')).to_be_visible()


def test_a_mouse_drag_over_the_drawn_pdf_becomes_an_anchor_in_the_reference_parse(
    page, live_server, workspace, annotator, item, background
):
    upload(workspace, annotator, make_pdf([PAGE_ONE, PAGE_TWO]), "travel.pdf")
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "travel.pdf")
    expect(page.locator('[data-pdf-page="1"] img.pdf-image')).to_be_visible()

    first = glyphs(page, 1, "Flights need", 0, 1)
    last = glyphs(page, 1, "of a director.", len("of a director") - 1, len("of a director"))
    y = (first["top"] + first["bottom"]) / 2
    page.mouse.move(first["left"] + 0.5, y)
    page.mouse.down()
    page.mouse.move((first["left"] + last["right"]) / 2, y, steps=5)
    page.mouse.move(last["right"] - 0.5, y, steps=5)
    page.mouse.up()
    selected = page.evaluate("() => window.getSelection().toString()")
    assert selected == "Flights need the written approval of a director"

    popover = page.get_by_role("dialog", name="Attach to a question")
    expect(popover).to_be_visible()
    expect(popover.locator("[data-pop-quote]")).to_have_text(selected)
    popover.locator('[data-item="q1"]').click()
    popover.get_by_role("button", name="Save").click()
    expect(popover).to_be_hidden()

    anchor = GoldAnchor.objects.get()
    assert anchor.quote == selected
    assert anchor.reference_parse.is_reference and anchor.reference_parse.parser == "pypdf"
    assert anchor.page_hint == 1
    # The worker resolves new anchors in every parse, the reference included (coalesced).
    reference = svc.wait_for(
        lambda: (
            AnchorResolution.objects.filter(anchor=anchor, parse=anchor.reference_parse)
            .exclude(status="pending")
            .first()
        ),
        what="the anchor's resolution in the reference parse",
    )
    assert reference.status == "exact"
    assert anchor.reference_parse.text[reference.start : reference.end] == selected
    # Drawn over the words just selected, once the workers have placed it in pdfium's parse.
    expect(page.locator("mark.pdf-hl").first).to_be_visible(timeout=30_000)


def test_existing_anchors_are_drawn_over_their_words_with_their_status_per_parse(
    page, live_server, workspace, annotator, item, background
):
    document = upload(workspace, annotator, make_handbook_pdf(), "handbook.pdf")
    reference = document.parses.get(is_reference=True)
    quote = "Receipts are kept for seven years"
    start = reference.text.index(quote)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "handbook.pdf")
    page.locator("[data-goto-input]").fill("2")
    page.locator("[data-goto-input]").press("Enter")
    mark = page.locator('[data-pdf-page="2"] mark.pdf-hl')
    expect(mark).to_have_count(1, timeout=30_000)

    words = glyphs(page, 2, quote)
    box = mark.bounding_box()
    assert abs(box["x"] - words["left"]) < 2 and abs(box["x"] + box["width"] - words["right"]) < 2
    assert abs(box["y"] - words["top"]) < 2 and abs(box["y"] + box["height"] - words["bottom"]) < 2

    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = page.get_by_role("tooltip")
    expect(tip).to_contain_text("How much leave do employees accrue per month?")
    # pypdf and pdfium read the words as written; pdfminer spaces justified lines out.
    expect(tip.locator(".badge.exact")).to_have_count(2, timeout=30_000)
    expect(tip.locator(".badge.normalised")).to_have_count(1)
    shot(page, "pdf-view.png")


def test_an_anchor_placed_after_the_pdf_view_opened_is_drawn_when_the_workers_place_it(
    page, live_server, workspace, annotator, item, background, monkeypatch
):
    # Made elsewhere (another person, an import) and still being placed when the page opens:
    # the page follows it, as it follows its own saves.
    document = upload(workspace, annotator, make_handbook_pdf(), "handbook.pdf")
    reference = document.parses.get(is_reference=True)
    quote = "Receipts are kept for seven years"
    start = reference.text.index(quote)
    with monkeypatch.context() as held_back:  # no worker hears of it: placed below, by hand
        held_back.setattr(queue, "send", lambda *args, **kwargs: True)
        anchor = anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
        )
    AnchorResolution.objects.filter(anchor=anchor).exclude(parse=reference).delete()
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "handbook.pdf")
    page.locator("[data-goto-input]").fill("2")
    page.locator("[data-goto-input]").press("Enter")
    expect(page.locator('[data-pdf-page="2"] .pdf-text span').first).to_be_visible()
    mark = page.locator('[data-pdf-page="2"] mark.pdf-hl')
    expect(mark).to_have_count(0)

    resolve_anchor(anchor)

    expect(mark).to_have_count(1, timeout=15_000)


def test_home_and_end_in_the_pdf_view_go_to_the_top_and_the_last_page(
    page, live_server, workspace, annotator, background
):
    pages = [f"Page {n} of the long report." for n in range(1, 7)]
    upload(workspace, annotator, make_pdf(pages), "long.pdf")
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "long.pdf")

    page.keyboard.press("End")
    expect(page.locator('[data-pdf-page="6"][data-drawn="1"] img.pdf-image')).to_be_in_viewport()
    expect(page.locator('[data-pdf-page="1"]')).not_to_be_in_viewport()
    # The PDF view's own pages moved; the hidden text view did not take the key.
    expect(page.get_by_role("button", name="As it looks")).to_have_attribute("aria-pressed", "true")

    page.keyboard.press("Home")
    expect(page.locator('[data-pdf-page="1"]')).to_be_in_viewport()
    assert page.evaluate("window.scrollY") == 0


def test_a_page_that_cannot_be_drawn_shows_a_placeholder_and_the_text_view_still_reads(
    page, live_server, workspace, annotator, background
):
    data = break_page(make_pdf(["Page one reads fine.", "Lost page.", "Page three too."]), 2)
    upload(workspace, annotator, data, "damaged.pdf")
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "damaged.pdf")
    placeholder = page.locator('[data-pdf-broken="2"]')
    expect(placeholder).to_contain_text("Page 2 cannot be drawn.")
    expect(placeholder).to_contain_text("The page is damaged and pdfium cannot load it")
    expect(page.locator("[data-goto-total]")).to_have_text("of 3")  # the PDF's pages, not pypdf's
    page.locator("[data-goto-input]").fill("3")
    page.locator("[data-goto-input]").press("Enter")
    expect(page.locator('[data-pdf-page="3"][data-drawn="1"] img.pdf-image')).to_be_visible()

    placeholder.get_by_role("button", name="Read it in the text view").click()
    expect(page.get_by_role("button", name="Text (pypdf)")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(page.locator("[data-pages]")).to_contain_text("Page three too.")


def test_the_page_box_reads_the_page_on_screen_after_go_to_and_single_keys_still_work(
    page, live_server, workspace, annotator, background
):
    pages = [f"Page {n} of the long report." for n in range(1, 13)]
    upload(workspace, annotator, make_pdf(pages), "twelve.pdf")
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "twelve.pdf")
    box = page.locator("[data-goto-input]")

    box.fill("6")
    box.press("Enter")
    expect(page.locator('[data-pdf-page="6"]')).to_be_in_viewport()
    expect(box).not_to_be_focused()
    page.mouse.wheel(0, 40)  # a little scrolling keeps page 6 at the top
    expect(box).to_have_value("6")  # not the hidden text view's "12"

    page.keyboard.press("j")  # no Esc first
    expect(page.locator('[data-pdf-page="7"]')).to_be_in_viewport()
    expect(box).to_have_value("7")
