"""The item page's discussion in the browser: read a request for changes, answer it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.models import Comment, EvalItem
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_annotator_reads_a_request_for_changes_jumps_to_the_evidence_and_replies(
    page, live_server, changes_requested
):
    _, anchor, start = changes_requested

    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    request = page.locator("article.comment").filter(has_text="Quote the whole")
    expect(request).to_contain_text("changes requested")

    request.get_by_role("button", name="Reply").click()
    expect(page.locator("[data-replying]")).to_contain_text("rita")
    page.get_by_label("Add a comment").fill("Done: the quote is the whole sentence now.")
    page.get_by_label("Add a comment").press("Control+Enter")
    expect(page.locator(".replies")).to_contain_text("Done: the quote is the whole sentence now.")
    reply = Comment.objects.get(body__startswith="Done")
    assert reply.parent.body == "Quote the whole <b>sentence</b>, please."
    assert reply.anchor == anchor  # a reply stays on the evidence it answers
    # Ctrl+Enter in the comment box sends the comment; it must not also submit the item.
    expect(page.locator("[data-state]")).to_have_text("Changes requested")
    assert EvalItem.objects.get(item_id="q1").state == "changes_requested"

    page.get_by_label("Add a comment").fill("")
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("[data-comment-form] [data-error-for=body]")).not_to_be_empty()

    with page.expect_navigation():
        request.get_by_role("link", name="on “Remote work”").click()
    assert page.url.endswith(f"#at={start}-{start + 11}")
    expect(page.locator("mark").first).to_be_visible()
