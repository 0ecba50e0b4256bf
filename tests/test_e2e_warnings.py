"""Warnings before saving, in Chromium: a question that repeats another is named while it is
typed, its length is counted against the limit, and evidence for an item typed
"unanswerable" (from the item page or the document's popover) is warned about first."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from tests.browser import log_in
from tests.conftest import PASSWORD
from tests.test_e2e_annotate import select

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_repeated_question_is_named_and_the_length_counted_while_typing(page, live_server, item):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/")
    question = page.get_by_label("Question", exact=True)
    question.fill("how much LEAVE do employees accrue per month")
    warning = page.locator("[data-similar]")
    expect(warning).to_contain_text("This question is already in the set")
    expect(warning.get_by_role("link", name="q1")).to_be_visible()
    expect(page.locator('[data-char-count="new-question"]')).to_have_text("44 / 2,000 characters")

    question.fill("x" * 2001)
    counter = page.locator('[data-char-count="new-question"]')
    expect(counter).to_have_text("2,001 / 2,000 characters: too long by 1")
    page.get_by_label("Id", exact=True).fill("q9")
    page.get_by_role("button", name="Create").click()
    expect(page.locator('[data-error-for="question"]')).to_contain_text(
        "a question is at most 2,000 characters"
    )


def test_evidence_for_an_unanswerable_item_is_warned_about_on_the_item_page(
    page, live_server, item, reference
):
    anchoring_services.item_update(item=item, user=item.author, row_version=1, qtype="unanswerable")
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    page.get_by_role("button", name="Open document").click()
    warning = page.locator("[data-unanswerable-warning]")
    expect(warning).to_contain_text("typed unanswerable")
    page.get_by_role("button", name="Open the document anyway").click()
    expect(page).to_have_url(f"{live_server.url}/w/acme/documents/handbook.txt?set=quiz&item=q1")


def test_the_popover_warns_before_evidence_goes_to_an_unanswerable_item(
    page, live_server, item, reference
):
    anchoring_services.item_update(item=item, user=item.author, row_version=1, qtype="unanswerable")
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?set=quiz")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")
    select(page, (1, "Employees accrue"), (1, "per month."))
    popover = page.get_by_role("dialog", name="Attach to a question")
    popover.get_by_role("searchbox").fill("leave")
    option = popover.get_by_role("option").filter(has_text="q1")
    expect(option).to_contain_text("typed unanswerable")
    option.click()
    expect(popover.get_by_role("alert")).to_contain_text("q1 is typed unanswerable")
