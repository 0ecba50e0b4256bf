"""axe-core over every page a team works in, in Chromium: no serious or critical WCAG 2.1 AA
violation. axe is evaluated through the DevTools protocol, so the pages keep their strict
Content-Security-Policy (the ``page`` fixture fails on any violation of it)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document
from evalsets.review import assignments, workflow
from tests.browser import axe_violations, log_in
from tests.conftest import PASSWORD
from tests.test_e2e_search import THEIRS
from tests.world import pdf_document

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PAGES = [
    "/",
    "/w/acme/",
    "/w/acme/members/",
    "/w/acme/settings/",
    "/w/acme/sets/quiz/",
    "/w/acme/sets/quiz/items/q1/",
    "/w/acme/sets/quiz/review/",
    "/w/acme/sets/quiz/review/?state=approved",
    "/w/acme/sets/quiz/dashboard/",
    "/w/acme/sets/quiz/assignments/",
    "/w/acme/sets/quiz/releases/",
    "/w/acme/sets/quiz/import/",
    "/w/acme/sets/quiz/settings/",
    "/w/acme/documents/handbook.txt",
    "/w/acme/documents/handbook.txt?view=text",
    "/w/acme/documents/tiny.pdf",
]


@pytest.fixture
def day(workspace, document, evalset, item, owner, annotator, reviewer):
    """A set mid-week: an anchored item submitted for review, one approved, one assigned."""
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="1.5 days of leave per month"
    )
    workflow.item_submit(item=item, user=annotator)
    done = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q2", question="How long may staff work remotely?"
    )
    workflow.item_submit(item=done, user=annotator)
    done.refresh_from_db()
    workflow.item_approve(item=done, user=reviewer, row_version=done.row_version)
    anchoring_services.item_create(evalset=evalset, user=owner, item_id="q3", question="New?")
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "olive"], kind="annotate", overlap=2
    )
    pdf_document(workspace)
    return evalset


def test_the_login_page_has_no_serious_accessibility_violation(page, live_server):
    page.goto(f"{live_server.url}/login/")
    assert axe_violations(page) == []


@pytest.mark.parametrize("path", PAGES)
def test_a_page_has_no_serious_accessibility_violation(page, live_server, day, path):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}{path}")
    page.wait_for_load_state("networkidle")
    assert axe_violations(page) == []


def test_the_shortcuts_dialog_the_tooltip_and_the_compare_panel_have_no_serious_violation(
    page, live_server, day, document, reference, annotator
):
    quote = "Employees accrue 1.5 days of leave per month."
    start = reference.text.index(quote)
    q3 = day.items.get(item_id="q3")
    anchoring_services.anchor_create_from_highlight(
        item=q3, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    their_parse = documents_services.parse_version_add(
        document=document, parser="their-pipeline", parser_version="2.1", text=THEIRS
    )
    resolution.resolve_parse(reference)
    resolution.resolve_parse(their_parse)
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q3/")
    page.get_by_role("button", name="Shortcuts").click()
    expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
    assert axe_violations(page) == []
    page.keyboard.press("Escape")

    page.get_by_role("button", name="How each parser read it").first.click()
    panel = page.get_by_role("dialog", name="How each parser read this evidence")
    expect(panel.locator('.compare-col[data-parser="their-pipeline"]')).to_be_visible()
    expect(panel).not_to_have_attribute("aria-busy", "true")
    assert axe_violations(page) == []
    page.keyboard.press("Escape")

    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt")
    page.locator("mark.hl").first.hover()
    expect(page.get_by_role("tooltip")).to_be_visible()
    assert axe_violations(page) == []


def test_a_pdf_page_with_evidence_drawn_on_it_has_no_serious_violation(
    page, live_server, day, item, annotator
):
    pdf = Document.objects.get(source_id="tiny.pdf").parses.get()
    start = pdf.text.index("accrued")
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=pdf, start=start, end=start + len("accrued monthly")
    )
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/tiny.pdf")
    expect(page.locator('[data-pdf-page="1"][data-drawn="1"]')).to_be_visible()
    expect(page.locator("mark.pdf-hl")).to_have_count(1)
    assert axe_violations(page) == []
