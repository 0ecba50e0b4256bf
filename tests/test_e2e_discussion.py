"""The item page's discussion in the browser: read a request for changes, answer it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets import review, services
from evalsets.models import Comment
from tests.browser import log_in
from tests.conftest import HANDBOOK, PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_annotator_reads_a_request_for_changes_jumps_to_the_evidence_and_replies(
    page, live_server, annotator, reviewer, item, reference
):
    start = HANDBOOK.index("Remote work")
    anchor = services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + 11
    )
    item.refresh_from_db()
    item, _ = review.item_submit(item=item, user=annotator, row_version=item.row_version)
    review.item_request_changes(
        item=item,
        user=reviewer,
        row_version=item.row_version,
        comment="Quote the whole sentence, please.",
        anchor=anchor,
    )

    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    request = page.locator("article.comment").filter(has_text="Quote the whole sentence")
    expect(request).to_contain_text("changes requested")

    request.get_by_role("button", name="Reply").click()
    expect(page.locator("[data-replying]")).to_contain_text("rita")
    page.get_by_label("Add a comment").fill("Done: the quote is the whole sentence now.")
    page.get_by_label("Add a comment").press("Control+Enter")
    expect(page.locator(".replies")).to_contain_text("Done: the quote is the whole sentence now.")
    reply = Comment.objects.get(body__startswith="Done")
    assert reply.parent.body == "Quote the whole sentence, please."
    assert reply.anchor == anchor  # a reply stays on the evidence it answers

    page.get_by_label("Add a comment").fill("")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("[data-comment-form] [data-error-for=body]")).not_to_be_empty()

    with page.expect_navigation():
        request.get_by_role("link", name="on “Remote work”").click()
    assert page.url.endswith(f"#at={start}-{start + 11}")
    expect(page.locator("mark").first).to_be_visible()
