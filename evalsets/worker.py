"""The base of every Groundwork task and the sweeps a worker runs: lost background work is
queued again when a worker starts, when it reconnects to the broker, and periodically.
"""

from __future__ import annotations

from datetime import timedelta

from celery import Task, bootsteps, shared_task
from celery.signals import celeryd_init, worker_ready
from django.db import OperationalError

from evalsets import queue, sweep


class GroundworkTask(Task):
    """Every task's delivery and retry policy, in one place."""

    autoretry_for = (OperationalError, ConnectionError)
    retry_backoff = True
    retry_backoff_max = 60
    max_retries = 5
    acks_late = True


@shared_task(name="evalsets.tasks.sweep_lost_work", base=GroundworkTask)
def sweep_lost_work(older_than_s: float | None = None, periodic: bool = False) -> dict:
    older_than = None if older_than_s is None else timedelta(seconds=older_than_s)
    return sweep.sweep(older_than, periodic=periodic)


@shared_task(name="evalsets.tasks.sweep_expired_leases", base=GroundworkTask)
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
