"""Faults: a worker killed mid-task loses nothing once a worker runs again.

Real parts throughout: a ``celery worker`` process on PostgreSQL and Redis (or the embedded
default's filesystem broker), killed with SIGKILL (the whole process group, as a crashed
host would be), then started again. The messages it held are dropped with it, as the
filesystem broker always does, so what recovers the work is the workers' own sweep.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import services
from evalsets.models import AnchorResolution, GoldAnchor, ParseVersion
from tests import services as svc
from tests.documents import make_pdf

pytestmark = pytest.mark.services


#: A parse lease of 20 s renewed every 5 s, and a sweep every 10 s: long enough that a worker
#: restarted at once finds the dead worker's lease still live when it starts (so its
#: start-up sweep leaves the parse alone), short enough to wait for.
STALE_S = "40"
PAGES = [f"Page {n}. " + "Dense words about leave and remote work policy. " * 40 for n in range(80)]


def _kill_mid_parse_and_restart_at_once(worker, client_for, owner, annotator, **env: str):
    """Upload an 80-page PDF, SIGKILL the worker part-way through parsing it, start it again
    straight away, and return the dead worker's lease token; nobody runs any command."""
    client_for(owner).patch(
        "/api/workspaces/acme/",
        {"parser_settings": {"parsers": {"pdf": ["pdfminer"]}}},
        format="json",
    )
    response = client_for(annotator).post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("big.pdf", make_pdf(PAGES))},
        format="multipart",
    )
    assert response.status_code == 201
    svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id="big.pdf", status="parsing", progress_done__gte=1
        ).exists(),
        what="the worker to be part-way through parsing big.pdf",
    )
    worker.kill()
    interrupted = ParseVersion.objects.get(document__source_id="big.pdf")
    assert interrupted.status == "parsing" and interrupted.progress_done < 80
    worker.start(GROUNDWORK_SWEEP_STALE_S=STALE_S, **env)
    return interrupted.claimed_by


def _check_big_pdf_parsed_once_by_another_worker(dead_token: str) -> None:
    parse = svc.wait_for(
        lambda: ParseVersion.objects.filter(document__source_id="big.pdf", status="ready").first(),
        timeout=180,
        what="the restarted worker to take over big.pdf once the dead worker's lease expired",
    )
    assert ParseVersion.objects.filter(document__source_id="big.pdf").count() == 1
    assert parse.claimed_by != dead_token
    assert len(parse.page_starts) == 80
    assert parse.progress_done == parse.progress_total == 80


def test_a_worker_killed_mid_parse_and_restarted_at_once_completes_the_parse_on_redis(
    worker, workspace, annotator, client_for, owner
):
    worker.stop()
    worker.start(GROUNDWORK_SWEEP_STALE_S=STALE_S)
    try:
        dead = _kill_mid_parse_and_restart_at_once(worker, client_for, owner, annotator)
        _check_big_pdf_parsed_once_by_another_worker(dead)
    finally:
        worker.stop()  # the next test gets a worker with the default settings


@pytest.fixture
def filesystem_worker(filesystem_broker):
    """A real worker on the embedded default's filesystem broker, in a folder of this test."""
    handle, env = filesystem_broker
    handle.start(GROUNDWORK_SWEEP_STALE_S=STALE_S, **env)
    return handle, env


def test_a_worker_killed_mid_parse_and_restarted_at_once_completes_the_parse_on_the_filesystem(
    filesystem_worker, workspace, annotator, client_for, owner
):
    handle, env = filesystem_worker

    dead = _kill_mid_parse_and_restart_at_once(handle, client_for, owner, annotator, **env)

    _check_big_pdf_parsed_once_by_another_worker(dead)


def test_a_worker_killed_mid_resolution_leaves_exactly_one_row_per_anchor_and_parse(
    worker, workspace, annotator, document
):
    evalset = services.evalset_create(workspace=workspace, user=annotator, slug="many")
    sentences = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]
    text = " ".join(sentences)
    for i in range(5):
        item = services.item_create(
            evalset=evalset, user=annotator, item_id=f"q{i}", question=f"Clauses {i}?"
        )
        # One damaged character per quote sends each through the slower fuzzy tier, so the
        # task is still running when the worker is killed.
        GoldAnchor.objects.bulk_create(
            GoldAnchor(
                item=item,
                source_id="handbook.txt",
                document=document,
                quote=sentences[n].replace("limit", "lirnit"),
            )
            for n in range(i * 400, (i + 1) * 400)
        )
    total = svc.start_resolving_a_new_parse(document, text)
    worker.kill()
    assert AnchorResolution.objects.filter(parse__parser="big").count() < total

    worker.start(GROUNDWORK_SWEEP_STALE_S="1")
    svc.check_every_anchor_resolved_once(total, what="the restarted worker to resolve every anchor")
