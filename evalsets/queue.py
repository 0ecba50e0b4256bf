"""The one way to queue background work: by task name, after the write commits.

Services, the sweep and the tasks themselves hand a task's name and the ids it takes to
this module; none of them imports the tasks (``evalsets.tasks`` imports the services, so
the other direction would be a cycle). Names are looked up in the Celery app's own task
registry, which ``evalsets.tasks`` fills when it is imported (``EvalsetsConfig.ready``
does that in every process), so ``task_always_eager`` in the quick test suite still runs
the task in-process, which ``send_task`` would not.

Each task goes to the queue of its kind (``QUEUE_OF``, the one mapping to extend): parsing,
resolution and releases each have their own, named ``<prefix>.<kind>`` after the default
queue (``GROUNDWORK_TASK_QUEUE``, which each test session sets to a name of its own), so a
new upload's parse never waits behind thousands of resolutions; ``manage.py rundev`` and the
production command lines run a worker for parse work apart from resolution work.

Parse work a person waits for (the reference parse, and every parse of an ordinary document)
goes to the ``parse`` queue; a parse that would take a worker long (a slow parser on a long
document: ``evalsets.documents.ingest.parse_kind``) goes to ``parse-slow`` instead, which
a worker of its own consumes, so it never holds every slot of the parse worker. The caller
names that queue (``kind=``) since only the parse row says which one it is.

If the broker cannot be reached, the work is logged and left to the sweep: the write that
needed it has committed, so refusing the request then would only report a saved change as
failed (and invite a duplicate on retry). The database still says the work is unfinished,
so ``evalsets.sweep`` queues it again once the broker is back, and ``pending_summary``
shows it meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import current_app as app
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerUnreachable

logger = logging.getLogger(__name__)

#: Every Groundwork task is registered as ``evalsets.tasks.<name>``.
TASK_PREFIX = "evalsets.tasks."

PARSE, RESOLVE, RELEASE, EXPERIMENTS = "parse", "resolve", "release", "experiments"
#: Parses and page ranges known to take long (``ingest.parse_kind``), sent here by name.
PARSE_SLOW = "parse-slow"
#: The queues a worker consumes (after the default one, for anything not routed here).
KINDS = (PARSE, PARSE_SLOW, RESOLVE, RELEASE, EXPERIMENTS)
#: Which queue each task goes to. Sweeps and attaching imported labels are short and belong
#: with ingest: behind a resolution backlog they would be late for no reason.
QUEUE_OF: dict[str, str] = {
    "parse_version": PARSE,
    "parse_range": PARSE,
    "prerender_pdf_pages": PARSE,
    "render_document": PARSE,
    "attach_pending_labels": PARSE,
    "index_parse": PARSE,
    "embed_passages": PARSE,
    "sweep_lost_work": PARSE,
    "sweep_expired_leases": PARSE,
    "resolve_document": RESOLVE,
    "resolve_parse": RESOLVE,
    "resolve_workspace": RESOLVE,
    "build_release": RELEASE,
    # Scoring a grid cell can take minutes of CPU: on its own queue, so it never delays
    # a parse or a resolution, and any number of workers on any host can share the cells.
    "run_experiment_cell": EXPERIMENTS,
}


def queue_name(kind: str, prefix: str | None = None) -> str:
    """The broker's name for the ``kind`` queue: ``<prefix>.<kind>`` (the prefix is the
    default queue, ``GROUNDWORK_TASK_QUEUE``)."""
    return f"{prefix or app.conf.task_default_queue}.{kind}"


def all_queue_names(prefix: str | None = None) -> list[str]:
    """Every queue a worker that does everything consumes: the default one first."""
    prefix = prefix or app.conf.task_default_queue
    return [prefix, *(queue_name(kind, prefix) for kind in KINDS)]


def route(name: str, args, kwargs, options, task=None, **kw) -> dict | None:
    """Celery router (``CELERY_TASK_ROUTES``): a Groundwork task to its kind's queue."""
    kind = QUEUE_OF.get(name.removeprefix(TASK_PREFIX)) if name.startswith(TASK_PREFIX) else None
    return None if kind is None else {"queue": queue_name(kind)}


def send(
    task_name: str,
    *ids: int,
    expires: float | None = None,
    kind: str | None = None,
    **options: Any,
) -> bool:
    """Publish ``task_name(*ids, **options)`` now; False (logged) when the broker cannot be
    reached. ``expires``: seconds after which a worker drops the message unread; ``kind``:
    the queue of that kind rather than the task's own (``QUEUE_OF``)."""
    task = app.tasks[TASK_PREFIX + task_name]
    where = {} if kind is None else {"queue": queue_name(kind)}
    try:
        task.apply_async(ids, options, expires=expires, **where)
    except BrokerUnreachable as exc:
        logger.warning(
            "could not queue %s%r (%s); the sweep will queue it again", task_name, ids, exc
        )
        return False
    return True


def after_commit(task_name: str, *ids: int, kind: str | None = None) -> None:
    """Publish ``task_name(*ids)`` once the current transaction commits (now, outside one),
    to the queue of ``kind`` when given (``send``)."""
    app.tasks[TASK_PREFIX + task_name]  # an unknown name fails here, in the writer's request
    transaction.on_commit(lambda: send(task_name, *ids, kind=kind))


def after_commit_once(
    task_name: str, *ids: int, claim: Callable[[], bool], release: Callable[[], object]
) -> None:
    """Publish ``task_name(*ids)`` after commit only if ``claim()`` then says no message for
    the same work is waiting yet (a conditional update that changed one row).

    A burst of writes needing the same work thus queues one message, not one each. The claim
    runs after the commit, in a short write of its own, so the writer's transaction holds no
    lock for it. A publish that fails calls ``release()`` so the next writer tries again (and
    the sweep finds the work meanwhile).
    """
    app.tasks[TASK_PREFIX + task_name]

    def publish() -> None:
        if claim() and not send(task_name, *ids):
            release()

    transaction.on_commit(publish)
