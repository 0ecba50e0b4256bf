"""Search inside the document in the views "as it looks", in Chromium: in the PDF view
the search runs over the pdfium parse and marks a hit over its glyphs on a late page; in the
rendered HTML view it runs over the reference parse and marks a hit in a section that was not
loaded yet. Esc clears the marks in both.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests import services as svc
from tests.browser import log_in
from tests.conftest import PASSWORD
from tests.documents import make_pdf
from tests.test_e2e_pdf_view import glyphs, open_pdf, upload
from tests.test_e2e_rendered_view import FRAME_READY, docs  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHRASE = "the quarterly zebra audit"

# The boxes of the marks of the hit gone to, on PDF page n, in the page's coordinates.
PDF_MARKS = """(n) => Array.from(document.querySelectorAll(
  `[data-pdf-page="${n}"] mark.pdf-search-hit.current`)).map((m) => {
    const r = m.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  })"""

# What the frame's search highlights hold (the hit gone to, or every other hit).
FRAME_HIGHLIGHT = """(name) => {
  const w = document.querySelector("[data-rendered-frame]").contentWindow;
  const h = w.CSS.highlights.get(name);
  return h ? Array.from(h).map((r) => r.toString()).join("") : "";
}"""


def _search(page, query: str):
    page.keyboard.press("/")
    box = page.get_by_role("search", name="Search the document")
    expect(box).to_be_visible()
    field = box.get_by_role("searchbox", name="Search the whole document")
    expect(field).to_be_focused()
    field.fill(query)
    field.press("Enter")
    return box, field


def test_search_in_the_pdf_view_marks_a_phrase_on_a_late_page_over_its_words(
    page, live_server, workspace, annotator, background
):
    pages = [f"Page {n} of the handbook. Nothing to see on this page." for n in range(1, 13)]
    pages[10] = "Page 11 of the handbook. Here the quarterly zebra audit is described."
    pages[11] = "Page 12 of the handbook. Later THE QUARTERLY ZEBRA AUDIT is summed up."
    upload(workspace, annotator, make_pdf(pages), "handbook.pdf")
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "handbook.pdf")
    expect(page.get_by_role("button", name="Search")).to_be_visible()

    box, field = _search(page, "The Quarterly  zebra AUDIT")
    hits = box.locator("[data-search-hits] .hit")
    expect(hits).to_have_count(2)
    expect(hits.nth(0)).to_contain_text("p. 11")
    expect(box.locator("[data-search-count]")).to_have_text("1 of 2 hits · page 11")

    # Page 11 is drawn and in view, the hit is marked over exactly the phrase's glyphs.
    current = page.locator('[data-pdf-page="11"] mark.pdf-search-hit.current')
    expect(current.first).to_be_in_viewport()
    marks = page.evaluate(PDF_MARKS, 11)
    words = glyphs(page, 11, PHRASE)
    assert marks, "no mark on page 11"
    left = min(m["left"] for m in marks)
    right = max(m["right"] for m in marks)
    top = min(m["top"] for m in marks)
    bottom = max(m["bottom"] for m in marks)
    assert left < words["right"] and right > words["left"]
    assert top < words["bottom"] and bottom > words["top"]
    assert abs(left - words["left"]) < 2 and abs(right - words["right"]) < 2
    # Nothing else on page 11 is marked as the current hit.
    assert page.locator('[data-pdf-page="11"] mark.pdf-search-hit').count() == len(marks)

    field.press("Enter")  # the next hit, on the last page
    expect(box.locator("[data-search-count]")).to_have_text("2 of 2 hits · page 12")
    now = page.locator('[data-pdf-page="12"] mark.pdf-search-hit.current')
    expect(now.first).to_be_in_viewport()
    # The hit left behind is still marked, lightly.
    before = page.locator('[data-pdf-page="11"] mark.pdf-search-hit:not(.current)')
    expect(before.first).to_be_attached()

    # Esc on the page (not in the box) closes the search and clears the marks.
    page.locator('[data-pdf-page="12"]').click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    expect(page.locator("mark.pdf-search-hit")).to_have_count(0)


def _long_html() -> bytes:
    """A page of some 700 KB: many sections in the view; the phrase near its end only."""
    filler = "Revenue grew in every region and the staff kept their receipts. " * 20
    parts = [f"<h2>Chapter {n}</h2><p>{filler}</p>" for n in range(1, 501)]
    parts[480] = "<h2>Chapter 481</h2><p>Here <b>the quarterly</b> zebra audit is described.</p>"
    return ("<html><body><h1>Annual report</h1>" + "".join(parts) + "</body></html>").encode()


def test_search_in_the_rendered_view_marks_a_phrase_in_a_section_not_loaded_yet(
    page,
    live_server,
    docs,  # noqa: F811
):
    document = docs("report.html", _long_html())
    # After a test that started the real worker, the parses run there: wait for all of them.
    svc.wait_for_parses("report.html", document.parses.count())
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/report.html")
    page.wait_for_function(FRAME_READY)
    expect(page.get_by_role("link", name="As it looks")).to_have_attribute("aria-current", "page")
    sections = page.evaluate(
        """() => { const d = document.querySelector("[data-rendered-frame]").contentDocument;
                   return [d.querySelectorAll("section[data-section]").length,
                           d.querySelector("section[data-section]:last-child").classList
                             .contains("loaded")]; }"""
    )
    assert sections[0] > 6 and sections[1] is False  # the last section is not drawn yet

    box, field = _search(page, "the quarterly zebra audit")
    expect(box.locator("[data-search-hits] .hit")).to_have_count(1)
    expect(box.locator("[data-search-count]")).to_have_text("1 of 1 hit · page 1")
    page.wait_for_function(
        f"() => ({FRAME_HIGHLIGHT})('gw-search-current').replace(/\\s+/g, ' ') === '{PHRASE}'"
    )
    # The hit is in the frame's viewport.
    in_view = page.evaluate(
        """() => { const w = document.querySelector("[data-rendered-frame]").contentWindow;
                   const r = Array.from(w.CSS.highlights.get("gw-search-current"))[0]
                     .getBoundingClientRect();
                   return r.height > 0 && r.top >= 0 && r.bottom <= w.innerHeight; }"""
    )
    assert in_view

    # Esc in the box closes it and the marks go.
    field.press("Escape")
    expect(box).to_be_hidden()
    assert page.evaluate(FRAME_HIGHLIGHT, "gw-search-current") == ""

    # "/" pressed inside the frame opens the search again.
    page.frame_locator("[data-rendered-frame]").locator("h1").click()
    page.keyboard.press("/")
    expect(box).to_be_visible()
