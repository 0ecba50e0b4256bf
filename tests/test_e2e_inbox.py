"""The inbox in Chromium: a sent-back item reaches its author's inbox with the reviewer's
words and a count in the header; marking it read clears the count."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.models import Notification
from evalsets.review import assignments
from tests.browser import log_in, shot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_inbox_shows_a_sent_back_item_and_marking_read_clears_the_count(
    page, live_server, changes_requested
):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    count = page.locator("[data-inbox-count]")
    expect(count).to_have_text("1")  # every page's header, not only the home page

    page.get_by_role("link", name="Inbox").click()
    inbox = page.get_by_role("region", name="Inbox")
    note = inbox.locator("[data-notification]")
    expect(note).to_contain_text("rita asked for changes on acme/quiz/q1")
    expect(note).to_contain_text("Quote the whole <b>sentence</b>, please.")
    expect(note.locator(".state")).to_have_text("Changes requested")
    shot(page, "inbox.png")

    inbox.get_by_role("button", name="Mark read").click()
    expect(count).to_have_count(0)
    expect(inbox.locator("[data-inbox-summary]")).to_have_text("nothing unread")
    expect(inbox.get_by_role("button", name="Mark all read")).to_be_disabled()
    assert Notification.objects.get().read_at is not None

    page.reload()
    expect(page.locator("[data-inbox-count]")).to_have_count(0)


def test_mark_all_read_clears_every_notification(page, live_server, changes_requested, evalset):
    assignments.assignments_create(
        evalset=evalset, by=evalset.created_by, usernames=["ann"], kind="annotate"
    )
    log_in(page, live_server, "ann", PASSWORD)
    expect(page.locator("[data-inbox-count]")).to_have_text("2")
    inbox = page.get_by_role("region", name="Inbox")
    expect(inbox.locator("[data-notification]").first).to_contain_text("olive assigned you")
    inbox.get_by_role("button", name="Mark all read").click()
    expect(page.locator("[data-inbox-count]")).to_have_count(0)
    expect(inbox.locator("[data-notification].unread")).to_have_count(0)
