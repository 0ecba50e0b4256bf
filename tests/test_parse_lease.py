"""A parse is held by one worker at a time, through a lease it renews while it runs."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from evalsets import queue, sweep
from evalsets.documents import ingest
from evalsets.documents import tasks as documents_tasks
from evalsets.models import ParseVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(document):
    return ParseVersion.objects.create(
        document=document, parser="plaintext", parser_version="lease", status="queued"
    )


def _expire(parse: ParseVersion) -> None:
    """The holder's last renewal was long ago: its worker died."""
    long_ago = timezone.now() - timedelta(hours=1)
    ParseVersion.objects.filter(pk=parse.pk).update(heartbeat_at=long_ago, updated_at=long_ago)


def test_a_second_claim_while_the_lease_is_live_fails(queued):
    first = ingest.claim_parse(queued.pk)

    assert first is not None
    assert ingest.claim_parse(queued.pk) is None
    assert documents_tasks.parse_version(queued.pk) == "gone, done or held by another worker"
    queued.refresh_from_db()
    assert (queued.status, queued.claimed_by) == ("parsing", first.token)


def test_a_parse_whose_holder_stopped_renewing_is_taken_over_and_the_old_holder_writes_nothing(
    queued,
):
    dead = ingest.claim_parse(queued.pk)
    _expire(queued)

    taken = ingest.claim_parse(queued.pk)
    assert taken is not None and taken.token != dead.token
    ingest.run_parse(dead)  # the old holder wakes up and finishes: its result is not its to write

    queued.refresh_from_db()
    assert (queued.status, queued.text, queued.claimed_by) == ("parsing", "", taken.token)
    assert ingest.run_parse(taken).status == "ready"


@pytest.mark.django_db(transaction=True)
def test_a_running_parse_renews_its_lease_for_as_long_as_it_runs(document, settings):
    settings.GROUNDWORK_SWEEP_STALE_S = 2  # a lease of 1 s, renewed every 0.25 s
    settings.GROUNDWORK_PARSE_TIMEOUT_S = 3
    parse = ParseVersion.objects.create(
        document=document, parser="evalsets.pure.parsers.diagnostic:HangingParser", status="queued"
    )
    lease = ingest.claim_parse(parse.pk)
    claimed_at = ParseVersion.objects.get(pk=parse.pk).heartbeat_at

    assert ingest.run_parse(lease).status == "failed"  # cut off after 3 s, three leases

    parse.refresh_from_db()
    assert parse.heartbeat_at - claimed_at > ingest.lease_length()


def test_the_sweep_queues_a_parse_whose_lease_expired_and_leaves_a_live_one(document, queued):
    live = ParseVersion.objects.create(
        document=document, parser="plaintext", parser_version="live", status="queued"
    )
    ingest.claim_parse(queued.pk)
    ingest.claim_parse(live.pk)
    _expire(queued)

    assert sweep.stale_parses() == [queued.pk]


@pytest.mark.django_db(transaction=True)
def test_the_lease_sweep_never_takes_a_live_slow_parse_for_a_dead_one(
    document, settings, monkeypatch
):
    settings.GROUNDWORK_SWEEP_STALE_S = 2  # a lease of 1 s, renewed every 0.25 s
    settings.GROUNDWORK_PARSE_TIMEOUT_S = 3  # the parser hangs three leases long
    queued: list[tuple[str, tuple]] = []
    monkeypatch.setattr(queue, "send", lambda name, *ids, **kw: queued.append((name, ids)))
    parse = ParseVersion.objects.create(
        document=document, parser="evalsets.pure.parsers.diagnostic:HangingParser", status="queued"
    )
    lease = ingest.claim_parse(parse.pk)
    stop, sweeps = threading.Event(), []

    def sweeping() -> None:  # another worker's lease sweeps, far more often than every 0.5 s
        try:
            while not stop.wait(0.1):
                sweeps.append(sweep.sweep_leases())
        finally:
            connection.close()

    sweeper = threading.Thread(target=sweeping)
    sweeper.start()
    try:
        assert ingest.run_parse(lease).status == "failed"  # cut off after 3 s
    finally:
        stop.set()
        sweeper.join()

    assert len(sweeps) > 10
    assert ("parse_version", (parse.pk,)) not in queued
