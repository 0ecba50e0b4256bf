"""The one way to queue background work: by task name, after the write commits.

Services, the sweep and the tasks themselves hand a task's name and the ids it takes to
this module; none of them imports the tasks (``evalsets.tasks`` imports the services, so
the other direction would be a cycle). Names are looked up in the Celery app's own task
registry, which ``evalsets.tasks`` fills when it is imported (``EvalsetsConfig.ready``
does that in every process), so ``task_always_eager`` in the quick test suite still runs
the task in-process, which ``send_task`` would not.

If the broker cannot be reached, the work is logged and left to the sweep: the write that
needed it has committed, so refusing the request then would only report a saved change as
failed (and invite a duplicate on retry). The database still says the work is unfinished,
so ``evalsets.sweep`` queues it again once the broker is back, and ``pending_summary``
shows it meanwhile.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from kombu.exceptions import OperationalError as BrokerUnreachable

from labelling.celery import app

logger = logging.getLogger(__name__)

#: Every Groundwork task is registered as ``evalsets.tasks.<name>``.
TASK_PREFIX = "evalsets.tasks."


def send(task_name: str, *ids: int, expires: float | None = None, **options: Any) -> bool:
    """Publish ``task_name(*ids, **options)`` now; False (logged) when the broker cannot be
    reached. ``expires``: seconds after which a worker drops the message unread."""
    task = app.tasks[TASK_PREFIX + task_name]
    try:
        task.apply_async(ids, options, expires=expires)
    except BrokerUnreachable as exc:
        logger.warning(
            "could not queue %s%r (%s); the sweep will queue it again", task_name, ids, exc
        )
        return False
    return True


def after_commit(task_name: str, *ids: int) -> None:
    """Publish ``task_name(*ids)`` once the current transaction commits (now, outside one)."""
    app.tasks[TASK_PREFIX + task_name]  # an unknown name fails here, in the writer's request
    transaction.on_commit(lambda: send(task_name, *ids))
