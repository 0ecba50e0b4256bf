"""From a question's suggested evidence to a saved anchor that records it, in Chromium.

The item page lists passages for its question; the keyboard moves through them and Enter
opens one; the document page opens with that passage selected; the annotator trims it and
saves; the anchor records the suggestion, and the item's history says so.
"""

from __future__ import annotations

import time

import pytest
from django.core.files.base import ContentFile
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document, GoldAnchor, Passage
from tests.browser import log_in
from tests.conftest import PASSWORD
from tests.test_e2e_annotate import select

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

DOCUMENTS = {
    "leave.txt": (
        "Annual leave\n\nEmployees accrue 1.5 days of paid leave per month worked.\n\n"
        "Unused leave may be carried over to the next year."
    ),
    "remote.txt": "Remote work\n\nStaff may work remotely for up to 30 days a year.",
    "security.txt": "Security\n\nLaptops must be encrypted and locked when unattended.",
}


def _add(workspace, source_id: str, text: str) -> None:
    document = Document(
        workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0"), kind="text"
    )
    document.file.save(source_id, ContentFile(text.encode()), save=False)
    document.save()
    documents_services.parse_version_add(
        document=document, parser="plaintext", parser_version="1", text=text, page_starts=[0]
    )


def _wait_until_indexed(documents: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while Passage.objects.values("document").distinct().count() < documents:
        assert time.monotonic() < deadline, "the passages were not indexed"
        time.sleep(0.2)


def test_an_annotator_saves_evidence_from_a_suggestion_and_the_history_says_so(
    page, live_server, workspace, owner, annotator, background
):
    for source_id, text in DOCUMENTS.items():
        _add(workspace, source_id, text)
    _wait_until_indexed(len(DOCUMENTS))
    evalset = anchoring_services.evalset_create(workspace=workspace, user=owner, slug="quiz")
    anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="q1",
        question="How many days of leave do employees accrue each month?",
    )

    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    suggestions = page.locator("[data-sugg-results] a.passage")
    expect(suggestions.first).to_contain_text("leave.txt")
    expect(suggestions.first.locator("mark").first).to_be_visible()

    # Keyboard only: into the list, down and back up, Enter opens the first suggestion.
    suggestions.first.focus()
    page.keyboard.press("ArrowDown")
    expect(suggestions.nth(1)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(suggestions.first).to_be_focused()
    page.keyboard.press("Enter")

    expect(page.locator("[data-page-text='1']")).to_contain_text("Employees accrue")
    expect(page.get_by_text("Suggested passage selected")).to_be_visible()
    selected = page.evaluate("() => window.getSelection().toString()")
    assert "Employees accrue 1.5 days of paid leave per month" in selected

    # The annotator trims the passage to the words that answer, and saves.
    select(page, (1, "1.5 days"), (1, "per month"))
    popover = page.get_by_role("dialog", name="Attach to a question")
    expect(popover).to_be_visible()
    # The popover lists this question's suggestions in this document too.
    expect(popover.locator("[data-pop-suggested] a.passage").first).to_be_visible()
    popover.get_by_role("button", name="Save").click()
    expect(page.locator("mark.hl")).to_have_text("1.5 days of paid leave per month")

    anchor = GoldAnchor.objects.get()
    assert anchor.quote == "1.5 days of paid leave per month"
    assert (anchor.suggested["via"], anchor.suggested["rank"]) == ("suggestions", 1)

    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    expect(page.locator("li.anchor .badge.suggested")).to_have_text("from a suggestion")
    page.locator("details.history summary").click()
    expect(page.locator("[data-event-suggested]")).to_contain_text("suggestions, #1, page 1")


def test_the_workspace_search_box_opens_a_document_at_the_passage_by_keyboard(
    page, live_server, workspace, owner, background
):
    for source_id, text in DOCUMENTS.items():
        _add(workspace, source_id, text)
    _wait_until_indexed(len(DOCUMENTS))
    evalset = anchoring_services.evalset_create(workspace=workspace, user=owner, slug="quiz")
    other = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="q9", question="Must laptops be encrypted?"
    )
    parse = Document.objects.get(source_id="security.txt").parses.get()
    start = parse.text.index("Laptops must")
    anchoring_services.anchor_create_from_highlight(
        item=other, user=owner, parse=parse, start=start, end=start + len("Laptops must")
    )

    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    box = page.get_by_label("Search every document of the workspace")
    box.fill("encrypted laptops")
    box.press("Enter")
    results = page.locator("[data-ps-results] a.passage")
    expect(results.first).to_contain_text("security.txt")
    expect(results.first.locator("mark")).to_have_text(["Laptops", "encrypted"])
    box.press("ArrowDown")
    expect(results.first).to_be_focused()
    page.keyboard.press("Enter")

    expect(page.get_by_text("Suggested passage selected")).to_be_visible()
    selected = page.evaluate("() => window.getSelection().toString()")
    assert "Laptops must be encrypted" in selected
    # Enter attaches the selection: before saving, the popover names the evidence it repeats.
    expect(page.locator("mark.hl")).to_have_count(1)
    page.keyboard.press("Enter")
    notice = page.get_by_role("dialog", name="Attach to a question").locator("[data-pop-overlap]")
    expect(notice).to_contain_text("already evidence for another question")
    expect(notice.get_by_role("link", name="quiz / q9")).to_be_visible()
