"""A search that stops at its work limit, in Chromium: the box says which page it reached and
"More hits" goes on from there until the hit is found."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.models import ParseVersion
from evalsets.pure import textsearch
from tests.browser import log_in
from tests.conftest import PASSWORD
from tests.test_e2e_search import _big_document

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BUDGET = 100_000  # positions a scan; the phrase is on page 900, about 360,000 characters in


def test_a_search_stopped_at_its_limit_says_where_and_more_hits_goes_on_to_the_hit(
    page, live_server, workspace, background, settings
):
    settings.GROUNDWORK_SEARCH_MAX_CHARS = BUDGET
    doc, text = _big_document(workspace)
    # Where each request stops, as the server will answer it.
    starts = ParseVersion.objects.get(document=doc).page_starts
    prepared = textsearch.prepare_search(text, starts)
    stops, after = [], 0
    while True:
        found = prepared.search("zebra audit", after=after, limit=100, budget=BUDGET)
        if found.hits:
            break
        stops.append(found.searched_to_page)
        after = found.next_after
    assert len(stops) >= 2

    log_in(page, live_server, "vic", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/report.txt")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Page 1 of the annual report")
    page.keyboard.press("/")
    box = page.get_by_role("search", name="Search the document")
    field = box.get_by_role("searchbox", name="Search the whole document")
    field.fill("zebra audit")
    field.press("Enter")
    count = box.locator("[data-search-count]")
    more = box.get_by_role("button", name="More hits")
    for stop in stops:
        expect(count).to_have_text(
            f"No hits for “zebra audit” up to page {stop} "
            "(the search stops there; More hits goes on)."
        )
        more.click()
    hits = box.locator("[data-search-hits] .hit")
    expect(hits.first).to_contain_text("p. 900")
    expect(count).to_contain_text("hits")
