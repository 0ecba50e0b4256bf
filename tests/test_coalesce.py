"""Coalesced resolution: a burst of anchors on a document costs one task, not one each.

Creating an anchor claims its document's "resolve what is pending" flag with a conditional
update and queues ``resolve_document`` only if no such task waits already; the task clears
the flag and resolves every anchor some ready parse has no row for. The quick tests record
what is queued instead of running it; the ``services`` ones run real workers on PostgreSQL
with Redis or the filesystem broker, and kill one mid-batch.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from evalsets import queue, sweep
from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.anchoring import tasks as anchoring_tasks
from evalsets.documents import ingest
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, Document, GoldAnchor, ParseVersion
from tests import services as svc

QUOTES = [
    "Employees accrue 1.5 days of leave per month.",
    "Leave may be carried over.",
    "Remote work is limited to 30 days a year.",
]


def _anchor(item, annotator, quote: str) -> GoldAnchor:
    return anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote=quote
    )


def _one_row_per_anchor_and_ready_parse(document: Document) -> bool:
    anchors = GoldAnchor.objects.filter(document=document).count()
    parses = ParseVersion.objects.filter(document=document, status="ready").count()
    rows = AnchorResolution.objects.filter(anchor__document=document)
    most = rows.values("anchor", "parse").annotate(n=Count("pk")).order_by("-n").first()
    return rows.count() == anchors * parses and (most is None or most["n"] == 1)


def test_a_burst_of_anchors_on_a_document_queues_one_resolution_task(
    sent, reference, item, annotator, django_capture_on_commit_callbacks
):
    for quote in QUOTES:
        with django_capture_on_commit_callbacks(execute=True):
            _anchor(item, annotator, quote)

    assert sent == [("resolve_document", (reference.document_id,))]
    assert Document.objects.get().resolve_queued_at is not None


def test_the_task_resolves_every_waiting_anchor_in_every_ready_parse_once(
    sent, reference, item, annotator, django_capture_on_commit_callbacks
):
    documents_services.parse_version_add(
        document=reference.document, parser="other", text=QUOTES[2]
    )
    for quote in QUOTES:
        with django_capture_on_commit_callbacks(execute=True):
            _anchor(item, annotator, quote)

    assert anchoring_tasks.resolve_document(reference.document_id) == 6
    assert anchoring_tasks.resolve_document(reference.document_id) == 0  # nothing left: a no-op

    assert _one_row_per_anchor_and_ready_parse(reference.document)
    statuses = dict(
        AnchorResolution.objects.filter(parse__parser="other").values_list(
            "anchor__quote", "status"
        )
    )
    assert statuses[QUOTES[2]] == "exact" and statuses[QUOTES[1]] == "not_found"


def test_an_anchor_made_once_the_task_has_started_queues_the_next_task(
    sent, reference, item, annotator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        _anchor(item, annotator, QUOTES[0])
    anchoring_tasks.resolve_document(reference.document_id)
    assert Document.objects.get().resolve_queued_at is None

    with django_capture_on_commit_callbacks(execute=True):
        late = _anchor(item, annotator, QUOTES[1])

    assert sent == [("resolve_document", (reference.document_id,))] * 2
    anchoring_tasks.resolve_document(reference.document_id)
    assert AnchorResolution.objects.get(anchor=late).status == "exact"


def test_a_waiting_mark_older_than_the_stale_limit_counts_as_lost(
    sent, reference, item, annotator, settings, django_capture_on_commit_callbacks
):
    lost = timezone.now() - timedelta(seconds=settings.GROUNDWORK_SWEEP_STALE_S + 1)
    Document.objects.update(resolve_queued_at=lost)

    with django_capture_on_commit_callbacks(execute=True):
        _anchor(item, annotator, QUOTES[0])

    assert sent == [("resolve_document", (reference.document_id,))]
    assert Document.objects.get().resolve_queued_at > lost


def test_a_publish_that_fails_clears_the_mark_so_the_next_anchor_queues_again(
    monkeypatch, reference, item, annotator, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(queue, "send", lambda *args, **kwargs: False)  # the broker is down
    with django_capture_on_commit_callbacks(execute=True):
        _anchor(item, annotator, QUOTES[0])

    assert Document.objects.get().resolve_queued_at is None
    assert sweep.documents_missing_resolutions() == [reference.document_id]


def test_an_anchor_whose_write_rolls_back_queues_nothing(
    sent, reference, item, annotator, django_capture_on_commit_callbacks
):
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        _anchor(item, annotator, QUOTES[0])
        raise RuntimeError("the request failed after the anchor was written")

    assert sent == [] and Document.objects.get().resolve_queued_at is None


def test_the_sweep_queues_one_task_per_document_with_anchors_unresolved(
    sent, reference, item, annotator
):
    GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id="handbook.txt", document=reference.document, quote=q)
        for q in QUOTES
    )

    queued = sweep.sweep(timedelta(0))

    assert queued["resolutions"] == 1
    assert [s for s in sent if s[0] == "resolve_document"] == [
        ("resolve_document", (reference.document_id,))
    ]


def test_a_task_for_a_deleted_document_does_nothing(reference):
    gone = reference.document_id
    reference.document.delete()

    assert anchoring_tasks.resolve_document(gone) == 0


def test_a_burst_in_eager_mode_resolves_every_anchor_at_once(
    reference, item, annotator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for quote in QUOTES:
            _anchor(item, annotator, quote)

    assert _one_row_per_anchor_and_ready_parse(reference.document)
    assert AnchorResolution.objects.exclude(status="pending").count() == 3


# -- one task at a time per document ---------------------------------------------------------


def _unresolved(reference, item) -> list[GoldAnchor]:
    """Anchors written straight to the table: nothing is queued or resolved for them."""
    return GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id="handbook.txt", document=reference.document, quote=q)
        for q in QUOTES
    )


def test_a_task_that_finds_the_document_being_resolved_leaves_the_work_and_the_flag_to_it(
    reference, item
):
    _unresolved(reference, item)
    flagged = timezone.now()
    Document.objects.update(
        resolving_by="another task",
        resolving_heartbeat_at=timezone.now(),
        resolve_queued_at=flagged,
    )

    assert anchoring_tasks.resolve_document(reference.document_id) == 0

    assert not AnchorResolution.objects.exists()
    document = Document.objects.get()
    assert document.resolve_queued_at == flagged  # the holder goes round again for it
    assert document.resolving_by == "another task"


def test_the_lease_is_held_from_the_moment_it_is_taken(monkeypatch, reference, item):
    _unresolved(reference, item)
    release, others = resolution._release, []

    def then_another_task_tries(document_id):
        others.append(resolution._take_resolving(document_id, "another task"))
        release(document_id)

    monkeypatch.setattr(resolution, "_release", then_another_task_tries)

    assert anchoring_tasks.resolve_document(reference.document_id) == 3
    assert others == [False]


@pytest.mark.parametrize("renewed", ["too long ago", "never"])
def test_a_lease_whose_holder_stopped_renewing_it_is_taken_over(reference, item, renewed):
    _unresolved(reference, item)
    dead = timezone.now() - ingest.lease_length() - timedelta(seconds=1)
    Document.objects.update(
        resolving_by="a dead worker", resolving_heartbeat_at=dead if renewed != "never" else None
    )

    assert anchoring_tasks.resolve_document(reference.document_id) == 3

    assert _one_row_per_anchor_and_ready_parse(reference.document)
    document = Document.objects.get()
    assert (document.resolving_by, document.resolving_heartbeat_at) == ("", None)


def test_the_holder_goes_round_again_for_an_anchor_made_while_it_ran_and_nothing_is_queued(
    sent, monkeypatch, reference, item, annotator, django_capture_on_commit_callbacks
):
    _unresolved(reference, item)
    resolve_in_parse = resolution.resolve_in_parse
    late: list[GoldAnchor] = []

    def meanwhile(parse, anchors, renew=None):
        if not late:
            # while the holder works, an annotator adds an anchor: its writer flags the
            # document and, the lease being live, queues nothing (a task would only leave);
            # a task the sweep queued meanwhile arrives now, finds the lease held and leaves
            with django_capture_on_commit_callbacks(execute=True):
                late.append(_anchor(item, annotator, "Remote work is limited"))
            assert sent == []
            assert Document.objects.get().resolve_queued_at is not None
            assert anchoring_tasks.resolve_document(reference.document_id) == 0
        return resolve_in_parse(parse, anchors, renew)

    monkeypatch.setattr(resolution, "resolve_in_parse", meanwhile)

    assert (
        anchoring_tasks.resolve_document(reference.document_id) == 4
    )  # the three, then the late one

    assert AnchorResolution.objects.get(anchor=late[0]).status == "exact"
    assert _one_row_per_anchor_and_ready_parse(reference.document)
    document = Document.objects.get()
    assert (document.resolve_queued_at, document.resolving_by) == (None, "")


def test_a_holder_whose_lease_was_taken_over_leaves_the_rest_to_the_new_holder(
    monkeypatch, reference, item
):
    _unresolved(reference, item)
    monkeypatch.setattr(resolution, "BATCH", 1)
    renew = resolution._renew_resolving
    calls = []

    def taken_over(document_id, token):
        calls.append(token)
        if len(calls) == 2:  # renewed before the parse, then after its first batch
            Document.objects.update(resolving_by="the new holder")
        return renew(document_id, token)

    monkeypatch.setattr(resolution, "_renew_resolving", taken_over)

    assert (
        anchoring_tasks.resolve_document(reference.document_id) == 1
    )  # one batch, then it stopped

    assert AnchorResolution.objects.count() == 1
    assert Document.objects.get().resolving_by == "the new holder"  # not let go by the old one


def test_the_holder_resolves_its_own_document_s_anchors_in_its_ready_parses_only(
    monkeypatch, reference, item, workspace, owner
):
    monkeypatch.setattr(resolution, "BATCH", 1)  # renewed after every anchor
    _unresolved(reference, item)
    documents_services.parse_version_add(
        document=reference.document, parser="other", text=QUOTES[0]
    )
    queued = ParseVersion.objects.create(document=reference.document, parser="late", text="")
    other = Document.objects.create(
        workspace=workspace, source_id="other.txt", sha256="f" * 64, uploaded_by=owner
    )
    ParseVersion.objects.create(document=other, parser="plaintext", text=QUOTES[0], status="ready")
    theirs = GoldAnchor.objects.create(
        item=item, source_id="other.txt", document=other, quote=QUOTES[0]
    )
    flagged = timezone.now()
    other.resolve_queued_at = flagged
    other.save()

    assert (
        anchoring_tasks.resolve_document(reference.document_id) == 6
    )  # 3 anchors x 2 ready parses

    assert _one_row_per_anchor_and_ready_parse(reference.document)
    assert not AnchorResolution.objects.filter(parse=queued).exists()
    assert not AnchorResolution.objects.filter(anchor=theirs).exists()
    other.refresh_from_db()
    assert (other.resolving_by, other.resolve_queued_at) == ("", flagged)


def test_a_holder_taken_over_between_two_parses_does_not_start_the_second(
    monkeypatch, reference, item
):
    _unresolved(reference, item)
    documents_services.parse_version_add(
        document=reference.document, parser="other", text=QUOTES[0]
    )
    resolve_in_parse = resolution.resolve_in_parse

    def then_taken_over(parse, anchors, renew=None):
        done = resolve_in_parse(parse, anchors, renew)
        Document.objects.update(resolving_by="the new holder")
        return done

    monkeypatch.setattr(resolution, "resolve_in_parse", then_taken_over)

    assert anchoring_tasks.resolve_document(reference.document_id) == 3  # the first parse only
    assert AnchorResolution.objects.count() == 3


# -- real workers, killed mid-batch ----------------------------------------------------------


SENTENCES = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]


def _burst_then_kill_mid_batch(handle, document, annotator, workspace, **env: str) -> int:
    """Add the long ready parse "big", then 2,000 anchors with one damaged character each (the
    slower fuzzy tier) and one more through the service, which queues one task for them all;
    SIGKILL the worker once that task has written some rows but not all."""
    text = " ".join(SENTENCES)  # written directly: no full resolution of it is queued
    ParseVersion.objects.create(
        document=document, parser="big", text=text, text_length=len(text), status="ready"
    )
    evalset = anchoring_services.evalset_create(workspace=workspace, user=annotator, slug="many")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q", question="Limits?"
    )
    GoldAnchor.objects.bulk_create(
        GoldAnchor(
            item=item,
            source_id="handbook.txt",
            document=document,
            quote=s.replace("limit", "lirnit"),
        )
        for s in SENTENCES
    )
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote=SENTENCES[0]
    )
    total = GoldAnchor.objects.count()
    rows = AnchorResolution.objects.filter(parse__parser="big")
    svc.wait_for(lambda: 0 < rows.count() < total, what="the coalesced task to be part-way through")
    handle.kill()
    assert rows.count() < total
    handle.start(GROUNDWORK_SWEEP_STALE_S="1", **env)
    return total


@pytest.mark.services
def test_a_worker_killed_mid_batch_on_redis_leaves_one_row_per_anchor_and_parse(
    worker, workspace, annotator, document
):
    total = _burst_then_kill_mid_batch(worker, document, annotator, workspace)

    svc.check_every_anchor_resolved_once(total, what="the restarted worker to finish the batch")
    svc.wait_for(
        lambda: _one_row_per_anchor_and_ready_parse(document),
        what="every anchor to be resolved once in the reference parse too",
    )
    worker.stop()  # the next test gets a worker with the default settings


@pytest.mark.services
def test_a_worker_killed_mid_batch_on_the_filesystem_leaves_one_row_per_anchor_and_parse(
    filesystem_broker, workspace, annotator, document
):
    handle, env = filesystem_broker
    handle.start(**env)

    total = _burst_then_kill_mid_batch(handle, document, annotator, workspace, **env)

    svc.check_every_anchor_resolved_once(total, what="the restarted worker to finish the batch")
    svc.wait_for(
        lambda: _one_row_per_anchor_and_ready_parse(document),
        what="every anchor to be resolved once in the reference parse too",
    )
