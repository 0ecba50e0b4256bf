"""Background work never waits behind nothing: a failed task lets go of what it holds,
messages that would do nothing are never queued, and an interrupted release build resumes.

The quick tests inject the failure into the task in this process (a database error where
SQLite would raise "database is locked"); the ``services`` ones run real Celery workers on
PostgreSQL and Redis, dropping a worker's database connection or killing the worker.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from evalsets import queue, sweep, worker
from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.anchoring import tasks as anchoring_tasks
from evalsets.documents import ingest
from evalsets.models import AnchorResolution, Document, EvalItem, GoldAnchor, ParseVersion, Release
from evalsets.releases import services as releases_services
from evalsets.releases import tasks as releases_tasks
from tests import services as svc

pytestmark = pytest.mark.django_db

QUOTES = [
    "Employees accrue 1.5 days of leave per month.",
    "Leave may be carried over.",
    "Remote work is limited to 30 days a year.",
]


def _unresolved(reference, item) -> list[GoldAnchor]:
    """Anchors written straight to the table: nothing is queued or resolved for them."""
    return GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id="handbook.txt", document=reference.document, quote=q)
        for q in QUOTES
    )


def _lease(document_id: int) -> tuple[str, object]:
    document = Document.objects.get(pk=document_id)
    return document.resolving_by, document.resolving_heartbeat_at


class LockedOnce:
    """Raise "database is locked" from the first ``times`` calls of ``wrapped``."""

    def __init__(self, wrapped, times: int = 1) -> None:
        self.wrapped = wrapped
        self.left = times

    def __call__(self, *args, **kwargs):
        if self.left:
            self.left -= 1
            raise OperationalError("database is locked")
        return self.wrapped(*args, **kwargs)


def _let_go_fails(monkeypatch, times: int) -> None:
    """The update that lets the lease go raises "database is locked" ``times`` times."""
    held_by = resolution._held_by
    failures = [times]

    class Refusing:
        def __init__(self, queryset) -> None:
            self.queryset = queryset

        def update(self, **fields):
            if fields.get("resolving_by") == "" and failures[0]:
                failures[0] -= 1
                raise OperationalError("database is locked")
            return self.queryset.update(**fields)

    monkeypatch.setattr(resolution, "_held_by", lambda *a: Refusing(held_by(*a)))
    monkeypatch.setattr(resolution, "LET_GO_PAUSES", (0, 0, 0))


# -- a failed task releases what it holds ----------------------------------------------------


def test_a_resolution_that_fails_on_a_locked_database_lets_its_lease_go(
    monkeypatch, reference, item
):
    _unresolved(reference, item)
    monkeypatch.setattr(resolution, "resolve_in_parse", LockedOnce(resolution.resolve_in_parse))

    with pytest.raises(OperationalError):
        anchoring_tasks.resolve_document(reference.document_id)

    assert _lease(reference.document_id) == ("", None)
    assert anchoring_tasks.resolve_document(reference.document_id) == 3  # the retry does the work


def test_a_lease_the_database_refused_to_let_go_once_is_let_go_on_the_next_try(
    monkeypatch, reference, item
):
    _unresolved(reference, item)
    monkeypatch.setattr(resolution, "resolve_in_parse", LockedOnce(resolution.resolve_in_parse))
    _let_go_fails(monkeypatch, times=1)

    with pytest.raises(OperationalError):
        anchoring_tasks.resolve_document(reference.document_id)

    assert _lease(reference.document_id) == ("", None)


def test_a_retry_takes_back_the_lease_its_failed_attempt_could_never_let_go(
    monkeypatch, reference, item
):
    _unresolved(reference, item)
    monkeypatch.setattr(resolution, "resolve_in_parse", LockedOnce(resolution.resolve_in_parse))
    _let_go_fails(monkeypatch, times=len(resolution.LET_GO_PAUSES) + 1)

    # Run as a worker runs it: the failure is retried under the same task id.
    result = anchoring_tasks.resolve_document.apply(
        args=(reference.document_id,), task_id="the-task", throw=False
    )

    assert result.get() == 3
    assert AnchorResolution.objects.count() == 3
    assert _lease(reference.document_id) == ("", None)


def test_another_task_leaves_a_lease_a_failed_attempt_of_a_live_task_could_not_let_go(
    reference, item
):
    _unresolved(reference, item)
    Document.objects.update(
        resolving_by="the-task/first-attempt", resolving_heartbeat_at=timezone.now()
    )

    assert (
        anchoring_tasks.resolve_document.apply(args=(reference.document_id,), task_id="other").get()
        == 0
    )
    assert (
        anchoring_tasks.resolve_document.apply(
            args=(reference.document_id,), task_id="the-task"
        ).get()
        == 3
    )


# -- messages that would do nothing are never queued ------------------------------------------


def test_an_anchor_made_while_a_live_holder_resolves_its_document_queues_no_message(
    sent, reference, item, annotator, django_capture_on_commit_callbacks
):
    Document.objects.update(resolving_by="a live task", resolving_heartbeat_at=timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=QUOTES[0]
        )

    assert sent == []
    assert Document.objects.get().resolve_queued_at is not None  # the holder goes round for it


def test_an_anchor_made_while_the_holder_is_dead_queues_a_task_to_take_over(
    sent, reference, item, annotator, django_capture_on_commit_callbacks
):
    dead = timezone.now() - ingest.lease_length() - timedelta(seconds=1)
    Document.objects.update(resolving_by="a dead task", resolving_heartbeat_at=dead)

    with django_capture_on_commit_callbacks(execute=True):
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=QUOTES[0]
        )

    assert sent == [("resolve_document", (reference.document_id,))]


def test_the_sweep_queues_nothing_for_a_document_a_live_holder_is_resolving(sent, reference, item):
    _unresolved(reference, item)
    Document.objects.update(resolving_by="a live task", resolving_heartbeat_at=timezone.now())

    assert sweep.sweep(timedelta(0))["resolutions"] == 0

    Document.objects.update(resolving_heartbeat_at=timezone.now() - timedelta(hours=1))
    assert sweep.sweep(timedelta(0))["resolutions"] == 1


# -- a release interrupted mid-build is resumed, or fails with its reason --------------------


class Killed(BaseException):
    """What a worker killed mid-build leaves: the build stops, nothing records why."""


@pytest.fixture
def approved(evalset, reference, annotator):
    made = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="How much leave?"
    )
    anchoring_services.anchor_create_typed(
        item=made, user=annotator, source_id="handbook.txt", quote=QUOTES[0]
    )
    EvalItem.objects.filter(pk=made.pk).update(state="approved")
    return made


def _release(evalset, owner) -> Release:
    return releases_services.release_create(
        evalset=evalset, user=owner, formats=["contextgrid-jsonl"]
    )


def _killed_mid_build(monkeypatch, release: Release) -> None:
    """Claim and start building ``release``, then die after the snapshot, mid-file; the
    builder's last sign of life was long ago."""
    build_file = releases_services._build_file

    def killed(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(releases_services, "_build_file", killed)
    with pytest.raises(Killed):
        releases_services.release_build(releases_services.release_claim(release.pk))
    monkeypatch.setattr(releases_services, "_build_file", build_file)
    long_ago = timezone.now() - ingest.lease_length() - timedelta(seconds=1)
    Release.objects.filter(pk=release.pk).update(updated_at=long_ago)


def test_a_release_whose_worker_died_mid_build_is_queued_again_by_the_sweep_and_built(
    sent, monkeypatch, approved, evalset, owner
):
    release = _release(evalset, owner)
    _killed_mid_build(monkeypatch, release)
    assert Release.objects.get(pk=release.pk).status == "building"

    assert sweep.sweep()["releases"] == 1
    assert ("build_release", (release.pk,)) in sent
    assert releases_tasks.build_release(release.pk) == "ready"

    built = Release.objects.get(pk=release.pk)
    assert (built.interruptions, built.files.count(), built.error) == (1, 1, "")


def test_a_build_still_renewing_its_release_is_left_to_its_worker(sent, approved, evalset, owner):
    release = _release(evalset, owner)
    releases_services.release_claim(release.pk)  # a live worker is building it

    assert sweep.sweep()["releases"] == 0
    assert releases_tasks.build_release(release.pk) == "gone or already built"
    assert Release.objects.get(pk=release.pk).status == "building"


def test_a_build_interrupted_after_its_snapshot_writes_the_items_as_they_were_frozen(
    sent, monkeypatch, approved, evalset, owner
):
    release = _release(evalset, owner)
    _killed_mid_build(monkeypatch, release)
    EvalItem.objects.filter(pk=approved.pk).update(question="Changed after the freeze?")

    assert releases_tasks.build_release(release.pk) == "ready"

    written = Release.objects.get(pk=release.pk).files.get().file.read().decode()
    assert "How much leave?" in written and "Changed after the freeze?" not in written


def test_a_build_that_kills_its_worker_every_time_fails_saying_so(
    sent, monkeypatch, approved, evalset, owner
):
    release = _release(evalset, owner)
    for _ in range(releases_services.MAX_BUILD_INTERRUPTIONS + 1):
        _killed_mid_build(monkeypatch, release)

    assert releases_tasks.build_release(release.pk) == "gone or already built"

    failed = Release.objects.get(pk=release.pk)
    assert failed.status == "failed" and failed.finished_at is not None
    assert f"interrupted {releases_services.MAX_BUILD_INTERRUPTIONS + 1} times" in failed.error
    assert sweep.sweep()["releases"] == 0  # given up: not queued again


# -- a dead holder's lease is taken over soon -------------------------------------------------


def test_a_lease_is_the_lease_setting_but_never_more_than_half_the_stale_limit(settings):
    settings.GROUNDWORK_LEASE_S, settings.GROUNDWORK_SWEEP_STALE_S = 20, 120
    assert ingest.lease_length() == timedelta(seconds=20)
    assert sweep.lease_sweep_period() == timedelta(seconds=10)
    assert ingest.heartbeat_interval() == 5

    settings.GROUNDWORK_SWEEP_STALE_S = 10
    assert ingest.lease_length() == timedelta(seconds=5)


def test_the_lease_sweep_queues_only_the_work_whose_holder_died(
    sent, monkeypatch, document, approved, evalset, owner
):
    long_ago = timezone.now() - ingest.lease_length() - timedelta(seconds=1)
    dead, live = (
        ParseVersion.objects.create(document=document, parser="plaintext", parser_version=v)
        for v in ("dead", "live")
    )
    for parse in (dead, live):
        ingest.claim_parse(parse.pk)
    ParseVersion.objects.filter(pk=dead.pk).update(heartbeat_at=long_ago)
    Document.objects.update(resolving_by="a dead task", resolving_heartbeat_at=long_ago)
    release = _release(evalset, owner)
    _killed_mid_build(monkeypatch, release)

    assert worker.sweep_expired_leases() == {
        "parse_version": 1,
        "parse_range": 0,
        "resolve_document": 1,
        "build_release": 1,
        "run_experiment_cell": 0,
    }
    assert sorted(sent) == sorted(
        [
            ("parse_version", (dead.pk,)),
            ("resolve_document", (document.pk,)),
            ("build_release", (release.pk,)),
        ]
    )


# -- a backlog of messages that do nothing is read at the pace of its tasks ---------------------


#: Messages ahead of the one that matters, each for a document that is gone (a task that
#: does nothing): read one per polling interval (0.2 s) they held it back for a minute.
NOTHING_TO_DO = 300


@pytest.mark.services
def test_an_anchor_queued_behind_hundreds_of_idle_messages_on_the_filesystem_is_resolved_soon(
    filesystem_broker, reference, item, annotator
):
    handle, env = filesystem_broker
    for _ in range(NOTHING_TO_DO):
        assert queue.send("resolve_document", 10**9)
    handle.start(**env)

    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote=QUOTES[0]
    )

    svc.wait_for(
        lambda: AnchorResolution.objects.filter(anchor=anchor).exists(),
        timeout=30,
        what=f"the anchor's resolution, queued behind {NOTHING_TO_DO} idle messages",
    )
