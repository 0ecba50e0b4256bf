"""Parsing as a reader sees it, in Chromium: a document opened while it is being read opens
its text by itself when the parse is ready; a parse that failed says so in the highlight's
tooltip (not "pending"); an upload's note follows the table to "ready" or "failed"."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.models import ParseStatus, ParseVersion
from tests.browser import log_in
from tests.conftest import HANDBOOK, PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_document_opened_while_parsing_opens_its_text_when_the_parse_is_ready(
    page, live_server, document, reference
):
    ParseVersion.objects.filter(pk=reference.pk).update(status=ParseStatus.PARSING)
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?view=text")
    expect(page.locator("main")).to_contain_text("This parse is parsing")
    expect(page.locator("[data-parse-waiting-note]")).to_contain_text("opens it when it is ready")

    ParseVersion.objects.filter(pk=reference.pk).update(status=ParseStatus.READY)
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")


def test_a_failed_parse_shows_as_failed_with_its_reason_in_the_highlights_tooltip(
    page, live_server, document, reference, item, annotator
):
    quote = "Remote work is limited to 30 days a year."
    start = HANDBOOK.index(quote)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    resolution.resolve_parse(reference)
    # a parse that failed, as the parse task leaves one: no text, so nothing resolved in it
    # (a ready parse turned failed afterwards raced the worker resolving it)
    document.parses.create(
        parser="broken-reader",
        parser_version="1",
        status=ParseStatus.FAILED,
        error_code="timeout",
        error="Parsing took longer than 300 s and was stopped.",
    )
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?view=text")
    page.locator("mark.hl").first.hover()
    tip = page.get_by_role("tooltip")
    failed = tip.locator("li.badge", has_text="broken-reader")
    expect(failed).to_contain_text("parse failed")
    expect(failed).to_have_class("badge failed")
    expect(tip.locator("li.badge.pending")).to_have_count(0)
    expect(tip.locator(".tip-failed")).to_have_text(
        "broken-reader: Parsing took longer than 300 s and was stopped."
    )


def test_an_uploads_note_follows_the_table_once_the_parses_are_done(
    page, live_server, workspace, background, tmp_path
):
    upload = tmp_path / "notes.md"
    upload.write_text("# Notes\n\nReceipts are kept for seven years.\n")
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    page.locator("[data-file-input]").set_input_files(str(upload))
    row = page.locator('tr[data-doc="notes.md"]')
    expect(row).to_be_visible(timeout=30_000)
    expect(row.locator('[data-status="ready"]')).to_have_count(2, timeout=30_000)
    note = page.locator("li.upload", has_text="notes.md").locator(".note")
    expect(note).to_contain_text("uploaded and read")
    expect(note).not_to_contain_text("parsing")
