"""Where annotators and reviewers work, in Chromium: the document's search box and its
annotations panel side by side without covering each other, a highlight gone to from the
panel marked on the PDF page, the set's guidelines on the review and adjudication pages, and
who made each highlight in the document's tooltip."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.models import FOUND_STATUSES, AnchorResolution, Membership
from evalsets.review import assignments, workflow
from tests.browser import axe_violations, log_in
from tests.conftest import PASSWORD
from tests.documents import make_pdf
from tests.services import wait_for
from tests.test_e2e_pdf_view import open_pdf, upload
from tests.world import HANDBOOK

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DOC = "/w/acme/documents/handbook.txt"
SIZES = [(1920, 1080), (1366, 768)]
GUIDELINES = "## Evidence\n\nQuote **the whole sentence**."


def _highlight(item, user, reference, words: str, grade: int = 2):
    start = HANDBOOK.index(words)
    return anchoring_services.anchor_create_from_highlight(
        item=item, user=user, parse=reference, start=start, end=start + len(words), grade=grade
    )


def _apart(one: dict, other: dict) -> bool:
    """Whether two bounding boxes share no pixel."""
    return (
        one["x"] + one["width"] <= other["x"]
        or other["x"] + other["width"] <= one["x"]
        or one["y"] + one["height"] <= other["y"]
        or other["y"] + other["height"] <= one["y"]
    )


def test_the_search_box_and_the_annotations_panel_never_cover_each_other_wide_or_on_a_phone(
    page, live_server, item, annotator, reference
):
    _highlight(item, annotator, reference, "Remote work is limited to 30 days a year.")
    page.set_viewport_size({"width": 1920, "height": 1080})
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}{DOC}?set=quiz")
    panel = page.locator("[data-doc-panel]")
    search = page.get_by_role("search", name="Search the document")
    expect(panel.locator("[data-panel-anchor]")).to_have_count(1)
    page.locator("[data-search-open]").click()
    page.get_by_role("searchbox", name="Search the whole document").fill("leave")
    expect(search.locator(".hit").first).to_be_visible()
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        expect(panel.locator("[data-panel-anchor]")).to_be_visible()
        expect(search).to_be_visible()
        page.wait_for_function(
            "() => { const s = document.querySelector('[data-doc-search]').getBoundingClientRect();"
            " const p = document.querySelector('[data-doc-panel]').getBoundingClientRect();"
            " return s.right <= p.left; }"
        )
        assert _apart(search.bounding_box(), panel.bounding_box()), width
    assert axe_violations(page) == []

    # On a phone the panel waits above the document: the two take turns, never overlapping.
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    toggle = panel.locator("[data-panel-toggle]")
    toggle.click()
    expect(panel.locator("[data-panel-anchor]")).to_be_visible()
    page.locator("[data-search-open]").click()
    expect(search).to_be_visible()
    expect(panel.locator("[data-panel-anchor]")).to_be_hidden()
    assert _apart(search.bounding_box(), panel.bounding_box())
    toggle.click()
    expect(panel.locator("[data-panel-anchor]")).to_be_visible()
    expect(search).to_be_hidden()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert axe_violations(page) == []


def _placed_everywhere(anchor) -> None:
    """Wait until the worker placed ``anchor`` in each of the PDF's three parses."""
    found = AnchorResolution.objects.filter(anchor=anchor, status__in=FOUND_STATUSES)
    wait_for(lambda: found.count() == 3, what="the highlight placed in every parse")


def test_in_the_pdf_view_a_highlight_in_the_panel_is_scrolled_to_and_its_words_marked(
    page, live_server, workspace, annotator, item, background
):
    filler = "\n".join(f"Line {n} of the page, read and passed over." for n in range(1, 27))
    pages = [f"Page {n} of the long report.\n{filler}\nThe end of page {n}." for n in range(1, 7)]
    document = upload(workspace, annotator, make_pdf(pages), "long.pdf")
    reference = document.parses.get(is_reference=True)
    quote = "The end of page 5."
    start = reference.text.index(quote)
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    _placed_everywhere(anchor)
    page.set_viewport_size({"width": 1920, "height": 1080})
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "long.pdf")
    row = page.locator("[data-doc-panel] [data-panel-anchor]")
    expect(row).to_contain_text("p. 5")
    row.click()
    marked = page.locator(
        f'[data-pdf-page="5"] mark.pdf-hl.current[data-anchors="{anchor.public_id}"]'
    )
    expect(marked).to_have_count(1)
    expect(marked).to_be_in_viewport()
    # The mark lies over the quote's own words on the page image.
    words = page.evaluate(
        """(needle) => {
          const spans = [...document.querySelectorAll('[data-pdf-page="5"] .pdf-text span')];
          const span = spans.find((s) => s.textContent.includes(needle));
          const r = span.getBoundingClientRect();
          return {x: r.x, y: r.y, width: r.width, height: r.height};
        }""",
        "The end of page 5",
    )
    assert not _apart(marked.bounding_box(), words)
    assert axe_violations(page) == []

    # Enter on another highlight's row moves the mark there.
    first = "Page 2 of the long report."
    at = reference.text.index(first)
    second = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=at, end=at + len(first)
    )
    _placed_everywhere(second)
    page.evaluate("window.groundworkDocument.refreshAnchors()")
    expect(row).to_have_count(2)
    row.first.focus()
    page.keyboard.press("Enter")
    expect(page.locator('[data-pdf-page="2"] mark.pdf-hl.current')).to_be_in_viewport()
    expect(page.locator("mark.pdf-hl.current")).to_have_count(1)


@pytest.fixture
def settled(evalset, owner, annotator, reference, make_user, workspace):
    """``b1``, worked blind by ann and bob (overlap 2), both parts submitted; the set has
    guidelines."""
    bob = make_user("bob")
    Membership.objects.create(workspace=workspace, user=bob, role="annotator")
    evalset.guidelines = GUIDELINES
    evalset.save(update_fields=["guidelines"])
    item = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="b1", question="How much leave?"
    )
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "bob"], kind="annotate", overlap=2
    )
    _highlight(item, annotator, reference, "Employees accrue 1.5 days of leave per month.")
    _highlight(item, bob, reference, "Leave may be carried over.", grade=1)
    workflow.item_submit(item=item, user=annotator)
    workflow.item_submit(item=item, user=bob)
    return item


def _guidelines_open_with_g_i(page) -> None:
    guidelines = page.locator("details.guidelines")
    expect(guidelines.locator("summary")).to_contain_text("Guidelines for quiz")
    expect(guidelines.locator("strong")).to_be_hidden()
    page.locator("h1").click()
    page.keyboard.press("g")
    page.keyboard.press("i")
    expect(guidelines.locator("strong")).to_have_text("the whole sentence")
    assert axe_violations(page) == []


def test_the_review_and_adjudication_pages_show_the_sets_guidelines_behind_g_i(
    page, live_server, settled, reviewer
):
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/review/")
    expect(page.locator("[data-review-item]:not([hidden])")).to_contain_text("by bob")
    _guidelines_open_with_g_i(page)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/b1/adjudicate/")
    expect(page.get_by_role("heading", name="Adjudicate b1")).to_be_visible()
    _guidelines_open_with_g_i(page)


def test_the_documents_tooltip_says_who_made_each_highlight(page, live_server, settled, reviewer):
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}{DOC}?set=quiz")
    tip = page.get_by_role("tooltip")
    page.locator("mark.hl", has_text="Leave may be carried over.").hover()
    expect(tip).to_contain_text("by bob")
    expect(tip).not_to_contain_text("by ann")
    page.locator("mark.hl", has_text="Employees accrue").first.hover()
    expect(tip).to_contain_text("by ann")
    assert axe_violations(page) == []
