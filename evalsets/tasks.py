"""Celery tasks: thin shells that take ids, re-fetch, and call a service.

Each task is idempotent (a parse is claimed with a conditional update; a resolution is an
upsert by anchor x parse), acknowledged late so a worker killed mid-task leaves the message
to be redelivered, and retried on transient database or broker errors.
"""

from __future__ import annotations

from celery import bootsteps, shared_task
from celery.signals import celeryd_init, worker_ready
from django.db import OperationalError

from evalsets import imports, ingest, resolution
from evalsets.models import GoldAnchor, ParseStatus, ParseVersion, Workspace

RETRY = {
    "autoretry_for": (OperationalError, ConnectionError),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 5,
    "acks_late": True,
}


@shared_task(**RETRY)
def parse_version(parse_id: int) -> str:
    parse = ingest.claim_parse(parse_id)
    if parse is None:
        return "gone or already done"
    parse = ingest.run_parse(parse)
    if parse.status == ParseStatus.READY:
        resolution.resolve_parse(parse)
        if parse.is_reference:
            imports.pending_labels_attach(document=parse.document)
    return parse.status


@shared_task(**RETRY)
def resolve_parse(parse_id: int) -> int:
    parse = ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY).first()
    if parse is None:
        return 0
    return resolution.resolve_parse(parse)


@shared_task(**RETRY)
def resolve_anchor(anchor_id: int) -> int:
    anchor = GoldAnchor.objects.filter(pk=anchor_id).first()
    if anchor is None:
        return 0
    return resolution.resolve_anchor(anchor)


@shared_task(**RETRY)
def resolve_workspace(workspace_id: int) -> int:
    """Queue a re-resolution of every ready parse in a workspace (after a resolver upgrade)."""
    ids = list(
        ParseVersion.objects.filter(
            document__workspace=workspace_id, status=ParseStatus.READY
        ).values_list("pk", flat=True)
    )
    if not Workspace.objects.filter(pk=workspace_id).exists():
        return 0
    for pk in ids:
        resolve_parse.delay(pk)
    return len(ids)


@shared_task(**RETRY)
def sweep_lost_work(older_than_s: float | None = None) -> dict:
    from datetime import timedelta

    from evalsets import sweep

    if older_than_s is None:
        return sweep.sweep()
    return sweep.sweep(timedelta(seconds=older_than_s))


@worker_ready.connect
def _sweep_when_a_worker_starts(sender=None, **kwargs) -> None:
    """A restarted worker completes what a killed one left unfinished."""
    sweep_lost_work.delay()


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
            sweep_lost_work.delay()


@celeryd_init.connect
def _sweep_when_the_broker_comes_back(sender=None, instance=None, **kwargs) -> None:
    instance.app.steps["consumer"].add(SweepOnReconnect)


# Release and import tasks live beside their services; Celery's autodiscovery imports only
# this module, so register them here for the web process and the worker alike.
from evalsets.release_tasks import attach_pending_labels, build_release  # noqa: E402, F401
