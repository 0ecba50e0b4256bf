"""Live updates in Chromium: another person's edit appears in the item I have open, my own
other tab is named as mine, the conflict view merges field by field, evidence added on a
document I read appears there, and "go to page" lands below the sticky toolbar with the page
box following the scroll."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document, EvalItem
from tests.browser import log_in, shot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ITEM = "/w/acme/sets/quiz/items/q1/"
#: Pages poll for changes every 3 s (live.js); a change shows within one poll, and this waits
#: past two on a busy machine.
PAST_A_POLL = 10_000


@pytest.fixture
def second(browser):
    """A second person's browser (another context: its own cookies and tabs)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def open_item(page, live_server, username: str):
    log_in(page, live_server, username, PASSWORD)
    page.goto(live_server.url + ITEM)
    expect(page.locator("[data-state]")).to_be_visible()


def save(page):
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_have_text("Saved.")


def test_another_persons_edit_appears_in_the_item_i_have_open(page, second, live_server, item):
    open_item(page, live_server, "ann")
    open_item(second, live_server, "olive")
    second.get_by_label("Answer", exact=True).fill("1.5 days a month")
    save(second)

    live = page.locator("[data-live]")
    expect(live).to_contain_text("olive changed the answer", timeout=PAST_A_POLL)
    # Nothing of mine was pending, so their version simply replaces the form.
    expect(page.get_by_label("Answer", exact=True)).to_have_value("1.5 days a month")
    expect(page.locator("[data-conflict]")).to_be_hidden()


def test_my_own_other_tab_is_not_someone_else(page, live_server, item):
    open_item(page, live_server, "ann")
    other_tab = page.context.new_page()
    other_tab.goto(live_server.url + ITEM)
    other_tab.get_by_label("Answer", exact=True).fill("from my other tab")
    save(other_tab)

    expect(page.locator("[data-live]")).to_contain_text(
        "You, in another tab, changed the answer", timeout=PAST_A_POLL
    )
    expect(page.locator("[data-live]")).not_to_contain_text("someone")
    expect(page.get_by_label("Answer", exact=True)).to_have_value("from my other tab")

    # The tab that saved is not told about its own save. Its banner stays hidden until a
    # poll, so hidden proves nothing; instead the first tab saves next, and once the saving
    # tab has been told of that (a poll that also covers its own, earlier save), that is the
    # one thing it was told.
    page.get_by_label("Answer", exact=True).fill("from my first tab")
    save(page)
    told = other_tab.locator("[data-live]")
    expect(told).to_contain_text("You, in another tab, changed the answer", timeout=PAST_A_POLL)
    expect(told.locator("[data-live-change]")).to_have_count(1)
    expect(other_tab.get_by_label("Answer", exact=True)).to_have_value("from my first tab")


def test_the_conflict_view_keeps_my_field_by_field_choices(page, second, live_server, item):
    open_item(page, live_server, "ann")
    open_item(second, live_server, "olive")
    page.get_by_label("Question", exact=True).fill("How many days of leave accrue monthly?")
    page.get_by_label("Answer", exact=True).fill("ann's answer")

    second.get_by_label("Question", exact=True).fill("How much leave accrues per month?")
    second.get_by_label("Answer", exact=True).fill("1.5 days")
    second.get_by_label("Question type", exact=True).fill("factoid")
    save(second)

    conflict = page.get_by_role("alert").filter(has_text="while you were editing")
    expect(conflict).to_be_visible(timeout=PAST_A_POLL)
    expect(conflict).to_contain_text("olive")
    rows = conflict.locator("[data-merge-field]")
    expect(rows).to_have_count(3)
    # Mine where I edited, theirs where I did not: the defaults; then my own choices.
    expect(conflict.get_by_label("Keep yours for question")).to_be_checked()
    expect(conflict.get_by_label("Keep theirs for qtype")).to_be_checked()
    conflict.get_by_label("Keep theirs for answer").check()
    shot(page, "conflict.png", full_page=True)
    conflict.get_by_role("button", name="Save my choices").click()
    expect(page.locator("[data-saved]")).to_have_text("Saved.")
    expect(conflict).to_be_hidden()

    saved = EvalItem.objects.get(pk=item.pk)
    assert saved.question == "How many days of leave accrue monthly?"
    assert saved.answer == "1.5 days"
    assert saved.qtype == "factoid"


def test_a_stale_save_opens_the_conflict_view_instead_of_losing_my_edit(page, live_server, item):
    open_item(page, live_server, "ann")
    page.get_by_label("Question", exact=True).fill("My unsaved question?")
    anchoring_services.item_update(
        item=item, user=item.evalset.created_by, row_version=1, answer="theirs"
    )
    page.get_by_role("button", name="Save", exact=True).click()
    conflict = page.get_by_role("alert").filter(has_text="while you were editing")
    expect(conflict).to_contain_text("olive saved this item")
    expect(page.get_by_label("Question", exact=True)).to_have_value("My unsaved question?")
    conflict.get_by_role("button", name="Keep all mine").click()
    expect(page.locator("[data-saved]")).to_have_text("Saved.")
    saved = EvalItem.objects.get(pk=item.pk)
    assert (saved.question, saved.answer) == ("My unsaved question?", None)


def test_evidence_someone_adds_appears_on_the_document_i_read(page, live_server, item, reference):
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?set=quiz")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")
    expect(page.locator("mark.hl")).to_have_count(0)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=item.author, parse=reference, start=0, end=8
    )
    expect(page.locator("[data-live]")).to_contain_text(
        "ann added evidence on quiz/q1", timeout=PAST_A_POLL
    )
    expect(page.locator("mark.hl")).to_have_count(1)


def _paged_document(workspace, pages: int = 12) -> Document:
    text, starts = "", []
    for n in range(1, pages + 1):
        starts.append(len(text))
        text += f"Top line of page {n}.\n" + "".join(f"Filler {k}.\n" for k in range(40))
    document = Document.objects.create(
        workspace=workspace, source_id="paged.txt", sha256="p" * 64, kind="text"
    )
    documents_services.parse_version_add(
        document=document, parser="plain", text=text, page_starts=starts
    )
    return document


BELOW_TOOLBAR = """
(n) => {
  const bar = document.querySelector("[data-doc-toolbar]").getBoundingClientRect();
  const heading = document.querySelector(`#page-${n} .page-no`).getBoundingClientRect();
  return heading.top >= bar.bottom && heading.top < bar.bottom + 40;
}
"""


def test_go_to_page_shows_the_pages_heading_below_the_toolbar(page, live_server, workspace):
    _paged_document(workspace)
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/paged.txt")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Top line of page 1.")

    box = page.get_by_label("Go to page")
    box.fill("7")
    box.press("Enter")
    expect(page.locator('[data-page-text="7"]')).to_contain_text("Top line of page 7.")
    page.wait_for_function(BELOW_TOOLBAR, arg=7)

    page.keyboard.press("Escape")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("g")
    page.keyboard.press("p")
    page.keyboard.type("3")
    page.keyboard.press("Enter")
    page.wait_for_function(BELOW_TOOLBAR, arg=3)

    page.goto(f"{live_server.url}/")  # a new page load, not a same-document hash change
    page.goto(f"{live_server.url}/w/acme/documents/paged.txt#page=9")
    expect(page.locator('[data-page-text="9"]')).to_contain_text("Top line of page 9.")
    page.wait_for_function(BELOW_TOOLBAR, arg=9)


def test_the_page_box_follows_scrolling(page, live_server, workspace):
    _paged_document(workspace)
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/paged.txt")
    box = page.get_by_label("Go to page")
    expect(box).to_have_value("1")
    # Page 5's top just under the toolbar: page 4 is out of sight above it.
    page.evaluate(
        "window.scrollTo(0, document.getElementById('page-5').getBoundingClientRect().top"
        " + window.scrollY - 60)"
    )
    expect(box).to_have_value("5")
    page.evaluate("window.scrollTo(0, 0)")
    expect(box).to_have_value("1")
