"""Celery tasks: thin shells that take ids, re-fetch, return early if gone, call a service.

Each task is idempotent (a parse is claimed with a lease; a resolution is an upsert by
anchor x parse; a release build is claimed), acknowledged late so a worker killed mid-task
leaves the message to be redelivered, and retried on transient database or broker errors:
the settings for all of that live once, in ``GroundworkTask``.

No module of the app imports this one but its start-up (``EvalsetsConfig.ready``); Celery
runs the tasks, and tests and benchmarks call them directly. Services queue work by task name
through ``evalsets.queue``. Importing it registers the
tasks under ``evalsets.tasks.<name>``, the names ``evalsets.queue`` looks up.

Workers also look after lost work here: they sweep (``evalsets.sweep``) when they start,
when they reconnect to a broker that went away, and every quarter of the stale limit while
they run, so work a dead worker held resumes without anyone running a command.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import Task, bootsteps, shared_task
from celery.signals import celeryd_init, worker_ready
from django.db import OperationalError

from evalsets import imports, ingest, pdfview, queue, releases, renditions, resolution, sweep
from evalsets.models import Document, GoldAnchor, ParseStatus, ParseVersion, Workspace

logger = logging.getLogger(__name__)

#: How long ``attach_pending_labels`` keeps waiting for a reference parse to finish.
ATTACH_RETRY_SECONDS = 10
ATTACH_MAX_RETRIES = 90


class GroundworkTask(Task):
    """Every task's delivery and retry policy, in one place."""

    autoretry_for = (OperationalError, ConnectionError)
    retry_backoff = True
    retry_backoff_max = 60
    max_retries = 5
    acks_late = True


@shared_task(base=GroundworkTask)
def parse_version(parse_id: int) -> str:
    """Read a parse whole, or its first page range after queueing the others."""
    lease = ingest.claim_parse(parse_id)
    if lease is None:
        return "gone, done or held by another worker"
    return _parsed(ingest.run_parse(lease))


@shared_task(base=GroundworkTask)
def parse_range(range_id: int) -> str:
    """Read one page range of a split parse; the last range to finish joins them."""
    lease = ingest.claim_range(range_id)
    if lease is None:
        return "gone, done or held by another worker"
    parse = ingest.run_range(lease)
    return "range read" if parse is None else _parsed(parse)


def _parsed(parse: ParseVersion) -> str:
    """A parse that became ready gets its anchors placed and waiting labels attached."""
    if parse.status == ParseStatus.READY:
        if parse.char_boxes:  # the PDF view's parse: another worker draws its first pages
            queue.send("prerender_pdf_pages", parse.pk)
        resolution.resolve_parse(parse)
        if parse.is_reference:
            renditions.rendition_request(parse=parse)  # the view as it looks, built apart
            imports.pending_labels_attach(document=parse.document)
    return parse.status


@shared_task(base=GroundworkTask)
def prerender_pdf_pages(parse_id: int) -> int:
    parse = (
        ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY)
        .select_related("document")
        .defer("text")
        .first()
    )
    if parse is None or not parse.document.file:
        return 0
    return pdfview.prerender(parse)


@shared_task(base=GroundworkTask)
def render_document(parse_id: int) -> int:
    """Build and store the rendered view of a document aligned to its reference parse.

    The build runs in a limited child and records its failure; a build that took its worker
    down twice (redelivered each time, as a lost worker's message is) is recorded as such by
    the next delivery, which then acknowledges the message (``renditions.MAX_WORKER_DEATHS``).
    """
    parse = (
        ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY, is_reference=True)
        .select_related("document")
        .defer("text")
        .first()
    )
    if parse is None or not renditions.has_rendered_view(parse.document):
        return 0
    return renditions.rendition_build(parse=parse)


@shared_task(base=GroundworkTask)
def resolve_parse(parse_id: int) -> int:
    parse = ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY).first()
    if parse is None:
        return 0
    return resolution.resolve_parse(parse)


@shared_task(base=GroundworkTask, bind=True)
def resolve_document(self, document_id: int) -> int:
    """Resolve the document's anchors that some ready parse has no row for: a burst of new
    anchors in one task (queued once per burst by ``resolution.resolution_request``). The
    task's id names the lease holder, so a retry takes back what its failed attempt held."""
    if not Document.objects.filter(pk=document_id).exists():
        return 0
    return resolution.resolve_pending(document_id, holder=self.request.id or "")


@shared_task(base=GroundworkTask)
def resolve_anchor(anchor_id: int) -> int:
    """One anchor in every ready parse: the path before coalescing, kept for messages
    already queued and for the benchmark's peer (``GROUNDWORK_RESOLVE_PER_ANCHOR``)."""
    anchor = GoldAnchor.objects.filter(pk=anchor_id).first()
    if anchor is None:
        return 0
    return resolution.resolve_anchor(anchor)


@shared_task(base=GroundworkTask)
def resolve_workspace(workspace_id: int) -> int:
    """Queue a re-resolution of every ready parse in a workspace (after a resolver upgrade)."""
    if not Workspace.objects.filter(pk=workspace_id).exists():
        return 0
    ids = list(
        ParseVersion.objects.filter(
            document__workspace=workspace_id, status=ParseStatus.READY
        ).values_list("pk", flat=True)
    )
    for pk in ids:
        queue.send("resolve_parse", pk)
    return len(ids)


@shared_task(base=GroundworkTask)
def build_release(release_id: int) -> str:
    release = releases.release_claim(release_id)
    if release is None:
        return "gone or already built"
    return releases.release_build(release).status


@shared_task(base=GroundworkTask, bind=True, max_retries=ATTACH_MAX_RETRIES)
def attach_pending_labels(self, document_id: int) -> int:
    """Turn the document's waiting imported spans into anchors once its text is ready.

    Queued when a document is uploaded or imported spans name it; the reference parse
    usually is not ready then, so this waits for it (retrying) while a parse is still
    running. The parse task also calls ``imports.pending_labels_attach`` when the reference
    parse becomes ready; both are idempotent.
    """
    document = Document.objects.filter(pk=document_id).first()
    if document is None:
        return 0
    attached = imports.pending_labels_attach(document=document)
    if attached is None and imports.reference_parse_running(document) and not self.request.is_eager:
        raise self.retry(countdown=ATTACH_RETRY_SECONDS)
    return attached or 0


@shared_task(base=GroundworkTask)
def sweep_lost_work(older_than_s: float | None = None, periodic: bool = False) -> dict:
    older_than = None if older_than_s is None else timedelta(seconds=older_than_s)
    return sweep.sweep(older_than, periodic=periodic)


@shared_task(base=GroundworkTask)
def sweep_expired_leases() -> dict:
    """Queue again only the work whose holder died (``sweep.sweep_leases``): a few indexed
    reads, so every worker runs it every half lease."""
    return sweep.sweep_leases()


# -- workers look after lost work themselves -------------------------------------------------


def _queue_a_sweep() -> None:
    # A sweep that has waited longer than a period behind other work is dropped unread:
    # the next one is on its way, so a busy worker's queue does not fill with sweeps.
    queue.send("sweep_lost_work", periodic=True, expires=sweep.sweep_period().total_seconds())


def _queue_a_lease_sweep() -> None:
    queue.send("sweep_expired_leases", expires=sweep.lease_sweep_period().total_seconds())


@worker_ready.connect
def _sweep_when_a_worker_starts(sender=None, **kwargs) -> None:
    """A restarted worker completes what a killed one left unfinished."""
    queue.send("sweep_lost_work")


class SweepOnReconnect(bootsteps.StartStopStep):
    """Sweep again each time the worker reconnects to the broker after losing it.

    A broker restarted without persistence forgets the messages it held; the worker itself
    lives on and reconnects, so ``worker_ready`` does not fire again. The consumer's steps
    are started again on every reconnection, which is where this one notices.
    """

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def __init__(self, parent, **kwargs) -> None:
        super().__init__(parent, **kwargs)
        self.connections = 0

    def start(self, parent) -> None:
        self.connections += 1
        if self.connections > 1:
            queue.send("sweep_lost_work")


class SweepPeriodically(bootsteps.StartStopStep):
    """Sweep every ``sweep.sweep_period()`` while the worker runs, and look for expired
    leases every ``sweep.lease_sweep_period()``.

    A worker killed mid-parse and restarted within seconds finds the parse's lease still
    live when it starts, and its own start-up sweep leaves it alone; the message the dead
    worker held may not come back for an hour (Redis's visibility timeout) or at all (the
    filesystem broker). Sweeping on the worker's own timer (no ``celery beat`` to run) picks
    the parse up once its lease has expired, on any broker.
    """

    requires = {"celery.worker.components:Timer"}

    def __init__(self, parent, **kwargs) -> None:
        super().__init__(parent, **kwargs)
        self.entries: list = []

    def start(self, parent) -> None:
        self.entries = [
            parent.timer.call_repeatedly(sweep.sweep_period().total_seconds(), _queue_a_sweep),
            parent.timer.call_repeatedly(
                sweep.lease_sweep_period().total_seconds(), _queue_a_lease_sweep
            ),
        ]

    def stop(self, parent) -> None:
        for entry in self.entries:
            entry.cancel()
        self.entries = []


@celeryd_init.connect
def _add_the_sweeping_steps(sender=None, instance=None, **kwargs) -> None:
    instance.app.steps["consumer"].add(SweepOnReconnect)
    instance.app.steps["worker"].add(SweepPeriodically)
