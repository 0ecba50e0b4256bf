"""Experiments in the browser: a reviewer starts a grid, follows its cells, reads the
leaderboard and opens a missed question at its evidence in the document."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from evalsets.models import AnchorResolution, Experiment
from evalsets.releases import services as releases_services
from tests import experiments_world
from tests import services as svc
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@contextmanager
def committed(execute=True):
    """Each write commits on its own here, so its background work is queued as it does."""
    yield


@pytest.fixture
def release(background, workspace, evalset, annotator, owner):
    def resolved() -> bool:
        return not AnchorResolution.objects.filter(status="pending").exists() and (
            AnchorResolution.objects.count() == 2 * len(experiments_world.ITEMS)
        )

    made = experiments_world.build(workspace, evalset, annotator, owner, committed)
    svc.wait_for(resolved, timeout=60, what="every anchor to be resolved in both parses")
    return made


def test_a_reviewer_starts_an_experiment_and_opens_a_missed_question_at_its_evidence(
    page, live_server, release, evalset, owner
):
    # Release 1 was frozen before the worker had resolved the anchors; release 2 is made
    # once every anchor has its place in both parses.
    releases_services.release_create(evalset=evalset, user=owner, formats=["contextgrid-jsonl"])
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/")
    page.get_by_role("link", name="Experiments").click()

    page.get_by_label("Release").first.select_option("2")
    page.get_by_label("plaintext").check()
    page.get_by_label("lossy").check()
    page.get_by_label("Chunkers").fill("recursive:64")
    page.get_by_label("tfidf").uncheck()
    page.get_by_label("hybrid").uncheck()
    page.get_by_label("k", exact=True).first.fill("3")
    page.get_by_role("button", name="Start experiment").click()

    expect(page.locator("#experiment-status")).to_have_text("complete", timeout=90_000)
    experiment = Experiment.objects.get()
    assert experiment.cells.count() == 2
    board = page.locator("table.leaderboard")
    expect(board).to_contain_text("lossy · recursive:64 · bm25")
    expect(board).to_contain_text("0.800")
    expect(page.locator("svg.chart polyline")).to_have_count(2)

    miss = page.locator("tr[data-question='s2']")
    expect(miss).to_contain_text("the parser lost the evidence")
    start, end = experiment.gold["plaintext"]["s2"][0][1:3]
    with page.expect_navigation():
        miss.locator("a[data-evidence]").first.click()
    assert page.url.endswith(f"#at={start}-{end}")
    expect(page.locator("mark").filter(has_text="Visitors must sign in")).to_be_visible()
