"""The review page's keyboard path in a real browser: a approve, c + Ctrl+Enter send back,
j/k move, ? help."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.models import Comment, EvalItem
from evalsets.review import workflow
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queue(evalset, annotator, reference, background):
    for n, question in enumerate(
        ["How much leave do employees accrue per month?", "How many remote days are allowed?"],
        start=1,
    ):
        item = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=f"q{n}", question=question
        )
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=19, end=64
        )
        workflow.item_submit(item=item, user=annotator)
    return evalset


def test_a_reviewer_decides_two_items_from_the_keyboard(page, live_server, queue):
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/review/")
    first = page.locator("#review-q1")
    expect(first).to_be_visible()
    expect(first.locator("mark")).to_have_text("Employees accrue 1.5 days of leave per month.")
    expect(first.locator(".res").first).to_contain_text("plaintext")

    page.keyboard.press("a")
    expect(page.get_by_role("status").filter(has_text="q1 approved")).to_be_visible()
    second = page.locator("#review-q2")
    expect(second).to_be_visible()
    expect(first).to_be_hidden()

    page.keyboard.press("c")
    box = second.get_by_label("What should change?")
    expect(box).to_be_focused()
    box.fill("Quote the sentence about remote work instead.")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_role("status").filter(has_text="q2 sent back for changes")).to_be_visible()

    page.keyboard.press("k")
    expect(first).to_be_visible()
    expect(first.locator("[data-state-label]")).to_have_text("approved")

    page.keyboard.press("?")
    expect(page.get_by_role("dialog", name="Reviewing with the keyboard")).to_be_visible()

    assert EvalItem.objects.get(item_id="q1").state == "approved"
    assert EvalItem.objects.get(item_id="q2").state == "changes_requested"
    assert Comment.objects.get(item__item_id="q2").body == (
        "Quote the sentence about remote work instead."
    )


def test_a_reviewer_cannot_approve_an_item_they_wrote_and_the_page_says_why(
    page, live_server, queue, reviewer
):
    mine = anchoring_services.item_create(
        evalset=queue, user=reviewer, item_id="q3", question="Mine?"
    )
    workflow.item_submit(item=mine, user=reviewer)
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/review/")
    expect(page.locator("#review-q1")).to_be_visible()
    page.keyboard.press("j")
    page.keyboard.press("j")
    card = page.locator("#review-q3")
    expect(card).to_be_visible()
    expect(card).to_contain_text("someone else must approve it (four eyes)")
    page.keyboard.press("a")
    expect(page.get_by_role("alert")).to_contain_text("You wrote or anchored q3")
    expect(card.locator("[data-state-label]")).to_have_text("Submitted")
    assert EvalItem.objects.get(item_id="q3").state == "submitted"
