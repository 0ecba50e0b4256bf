"""The backlog in plain sight: the API and the workspace page say how much background work
waits, per kind, and how fast it drains; the page refreshes itself while anything waits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from evalsets.anchoring import resolution
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, GoldAnchor, ParseStatus
from tests.browser import log_in
from tests.conftest import PASSWORD

PENDING = "/api/workspaces/acme/pending/"
QUOTES = ["Leave may be carried over.", "Remote work is limited to 30 days a year."]


def _anchors_not_yet_resolved(item, document) -> None:
    """Anchors written as a lost message would leave them: saved, with no rows yet."""
    GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id="handbook.txt", document=document, quote=q) for q in QUOTES
    )


def test_the_api_counts_what_waits_per_kind_and_how_fast_resolutions_drain(
    client_for, viewer, reference, item
):
    _anchors_not_yet_resolved(item, reference.document)
    documents_services.parse_version_add(document=reference.document, parser="other", text="x")
    resolution.resolve_parse(reference)  # 2 rows now; "other" still lacks both
    reference.document.parses.filter(parser="other").update(status=ParseStatus.QUEUED)
    documents_services.parse_version_add(document=reference.document, parser="third", text="y")

    body = client_for(viewer).get(PENDING).json()

    assert body["parses_queued"] == 1
    assert body["resolutions_missing"] == 2  # both anchors in "third"
    assert body["resolutions_done_last_minute"] == 2
    assert body["resolutions_per_second"] == pytest.approx(2 / 60, abs=0.05)
    assert body["resolutions_eta_seconds"] == 60  # 2 missing at 2 a minute
    assert body["waiting"] == 3


def test_no_estimate_is_given_while_nothing_was_resolved_in_the_last_minute(
    client_for, viewer, reference, item
):
    _anchors_not_yet_resolved(item, reference.document)
    resolution.resolve_parse(reference)
    AnchorResolution.objects.update(updated_at=timezone.now() - timedelta(minutes=5))
    documents_services.parse_version_add(document=reference.document, parser="other", text="x")

    body = client_for(viewer).get(PENDING).json()

    assert body["resolutions_missing"] == 2
    assert body["resolutions_done_last_minute"] == 0
    assert body["resolutions_eta_seconds"] is None


def test_the_drain_rate_counts_only_the_callers_workspace(client_for, outsider, reference, item):
    _anchors_not_yet_resolved(item, reference.document)
    resolution.resolve_parse(reference)

    theirs = client_for(outsider).get("/api/workspaces/elsewhere/pending/").json()

    assert theirs["resolutions_done_last_minute"] == 0 and theirs["waiting"] == 0


def test_the_workspace_page_shows_the_backlog_per_kind(client, annotator, reference, item):
    _anchors_not_yet_resolved(item, reference.document)
    client.force_login(annotator)

    page = client.get("/w/acme/").content.decode()

    assert 'data-state="busy"' in page
    assert "2 waiting" in page  # the two anchors in the reference parse
    assert 'id="gw-backlog"' in page


def test_the_workspace_page_says_when_nothing_waits(client, annotator, reference):
    client.force_login(annotator)

    page = client.get("/w/acme/").content.decode()

    assert 'data-state="idle"' in page
    assert "Nothing waiting" in page


@pytest.mark.e2e
def test_the_panel_refreshes_itself_until_the_backlog_has_drained(
    page, live_server, reference, item
):
    _anchors_not_yet_resolved(item, reference.document)
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    panel = page.locator("[data-backlog]")
    assert panel.get_attribute("data-state") == "busy"
    assert "2 waiting" in panel.locator("[data-backlog-resolutions]").inner_text()

    resolution.resolve_pending(reference.document_id)  # a worker catches up

    page.wait_for_selector("[data-backlog][data-state='idle']")
    assert panel.locator("[data-backlog-idle]").is_visible()
    assert not panel.locator("[data-backlog-kinds]").is_visible()
