"""The task stream in Chromium: work assigned with overlap reaches every assignee, whose home
page offers "Next in my queue"; "Submit and next" walks the queue with its progress shown,
and says so when the queue is done. A reviewer's "Next in my queue" opens their review queue."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.models import EvalItem, ItemAssignment
from evalsets.review import assignments, workflow
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def three_shared(evalset, owner, annotator):
    for n in (1, 2, 3):
        anchoring_services.item_create(
            evalset=evalset, user=owner, item_id=f"s{n}", question=f"Shared question {n}?"
        )
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "olive"], kind="annotate", overlap=2
    )
    return evalset


def submit_and_next(page) -> None:
    """Click "Submit and next" once the page's script has wired it: the button is drawn
    before the item editor's module (and the modules it imports) has run, and a click in
    between does nothing. Module scripts run before DOMContentLoaded."""
    page.wait_for_load_state("domcontentloaded")
    page.get_by_role("button", name="Submit and next").click()


def test_an_overlapped_annotator_walks_their_queue_with_submit_and_next(
    page, live_server, three_shared, annotator
):
    log_in(page, live_server, "ann", PASSWORD)
    assigned = page.locator("section", has=page.get_by_role("heading", name="Assigned to you"))
    expect(assigned.locator("ul.items li")).to_have_count(3)
    assigned.get_by_role("link", name=re.compile("Next in my queue: annotate")).click()

    stream = page.get_by_role("navigation", name="Your annotation queue")
    expect(page.get_by_role("heading", name="Item s1")).to_be_visible()
    expect(stream).to_contain_text("1 of 3 in your queue")
    expect(stream).to_contain_text("3 waiting")

    submit_and_next(page)
    expect(page.get_by_role("heading", name="Item s2")).to_be_visible()
    expect(stream).to_contain_text("2 of 3 in your queue")
    expect(stream).to_contain_text("2 waiting")
    # Ann's part is done; the item waits for Olive, the other annotator.
    assert ItemAssignment.objects.get(item__item_id="s1", user=annotator).done_at is not None

    stream.get_by_role("link", name="Next in my queue").click()
    expect(page.get_by_role("heading", name="Item s3")).to_be_visible()
    submit_and_next(page)
    expect(page.get_by_role("heading", name="Item s2")).to_be_visible()  # s2 still waits
    submit_and_next(page)
    expect(page.locator(".messages")).to_contain_text("your queue is done")
    expect(page.get_by_role("heading", name=re.compile("quiz|Quiz"))).to_be_visible()


def test_the_set_page_names_every_annotator_of_an_overlapped_item(page, live_server, three_shared):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/")
    row = page.locator("tr", has=page.get_by_role("link", name="s1"))
    expect(row.locator("[data-assignees]")).to_have_text("ann, olive")


def test_a_reviewers_next_in_my_queue_opens_their_review_queue(
    page, live_server, evalset, owner, annotator, reviewer
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="r1", question="Ready?"
    )
    workflow.item_submit(item=item, user=annotator)
    assignments.assignments_create(evalset=evalset, by=owner, usernames=["rita"], kind="review")
    log_in(page, live_server, "rita", PASSWORD)
    page.get_by_role("link", name=re.compile("Next in my queue: review")).click()
    expect(page).to_have_url(re.compile(r"/review/\?state=submitted&queue=mine$"))
    expect(page.locator("[data-review-item]:not([hidden])")).to_contain_text("Ready?")
    assert EvalItem.objects.get(item_id="r1").state == "submitted"
