"""Every Groundwork task, registered with Celery by importing this module.

Celery's autodiscovery and ``EvalsetsConfig.ready`` import ``evalsets.tasks``; the tasks
themselves live with their domain and keep the names ``evalsets.tasks.<name>`` that
``evalsets.queue`` and queued messages use.
"""

from evalsets import worker
from evalsets.anchoring import tasks as anchoring_tasks
from evalsets.documents import tasks as documents_tasks
from evalsets.experiments import tasks as experiments_tasks
from evalsets.passages import tasks as passages_tasks
from evalsets.releases import tasks as releases_tasks

__all__ = [
    "anchoring_tasks",
    "documents_tasks",
    "experiments_tasks",
    "passages_tasks",
    "releases_tasks",
    "worker",
]
