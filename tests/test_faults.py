"""Faults: a worker killed mid-task loses nothing once a worker runs again.

Real parts throughout: a ``celery worker`` process on PostgreSQL and Redis (or the embedded
default's filesystem broker), killed with SIGKILL (the whole process group, as a crashed
host would be), then started again. The messages it held are dropped with it, as the
filesystem broker always does, so what recovers the work is the workers' own sweep.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.anchoring import services as anchoring_services
from evalsets.models import AnchorResolution, EvalItem, GoldAnchor, ParseVersion, Release
from evalsets.releases import services as releases_services
from tests import services as svc
from tests.documents import make_pdf

pytestmark = pytest.mark.services


#: A parse lease of 20 s renewed every 5 s, and a sweep every 10 s: long enough that a worker
#: restarted at once finds the dead worker's lease still live when it starts (so its
#: start-up sweep leaves the parse alone), short enough to wait for.
STALE_S = "40"
PAGES = [f"Page {n}. " + "Dense words about leave and remote work policy. " * 40 for n in range(80)]


def _kill_mid_parse_and_restart_at_once(
    worker, client_for, owner, annotator, stale_s: str | None = STALE_S, **env: str
):
    """Upload an 80-page PDF, SIGKILL the worker part-way through parsing it, start it again
    straight away (with the stale limit ``stale_s``, None for the default), and return the
    dead worker's lease token; nobody runs any command."""
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
    worker.start(**({} if stale_s is None else {"GROUNDWORK_SWEEP_STALE_S": stale_s}), **env)
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
    evalset = anchoring_services.evalset_create(workspace=workspace, user=annotator, slug="many")
    sentences = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]
    text = " ".join(sentences)
    for i in range(5):
        item = anchoring_services.item_create(
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


#: With the default settings a lease lasts 20 s and the workers look for expired ones every
#: 10 s, so a dead worker's parse is taken over well within this; it took 93 s when the lease
#: was half the stale limit (60 s) and only the full sweep, every 30 s, looked for it.
TAKEOVER_DEADLINE_S = 40


def test_a_parse_whose_worker_was_killed_is_taken_over_within_two_leases_by_default(
    worker, workspace, annotator, client_for, owner
):
    worker.stop()
    worker.start()  # the default lease and sweeps
    try:
        dead = _kill_mid_parse_and_restart_at_once(
            worker, client_for, owner, annotator, stale_s=None
        )
        svc.wait_for(
            lambda: (
                ParseVersion.objects.filter(document__source_id="big.pdf")
                .exclude(claimed_by=dead)
                .exists()
            ),
            timeout=TAKEOVER_DEADLINE_S,
            what="a live worker to take over the dead worker's parse",
        )
        _check_big_pdf_parsed_once_by_another_worker(dead)
    finally:
        worker.stop()


def _approved_items(evalset, document, count: int) -> None:
    """``count`` approved items with one anchor each: a build that takes some seconds."""
    EvalItem.objects.bulk_create(
        EvalItem(
            evalset=evalset,
            item_id=f"q{n}",
            question=f"How much leave, case {n}?",
            answer=f"{n} days",
            state="approved",
        )
        for n in range(count)
    )
    GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id="handbook.txt", document=document, quote="Leave")
        for item in EvalItem.objects.filter(evalset=evalset)
    )


def test_a_worker_killed_mid_release_build_leaves_a_release_that_is_resumed_and_built(
    worker, workspace, owner, evalset, reference
):
    _approved_items(evalset, reference.document, 6000)
    formats = releases_services.exportable_formats()
    release = releases_services.release_create(evalset=evalset, user=owner, formats=formats)
    svc.wait_for(
        lambda: Release.objects.filter(
            pk=release.pk, status="building", progress_done__gt=0
        ).exists(),
        what="the worker to be part-way through building the release",
    )
    worker.kill()
    assert Release.objects.get(pk=release.pk).status == "building"

    worker.start()
    built = svc.wait_for(
        lambda: Release.objects.filter(pk=release.pk).exclude(status="building").first(),
        timeout=180,
        what="the restarted worker to resume the interrupted build",
    )
    assert (built.status, built.error, built.interruptions) == ("ready", "", 1)
    assert sorted(built.files.values_list("format", flat=True)) == sorted(formats)
    assert built.items.count() == 6000
