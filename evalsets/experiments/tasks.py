"""Running experiment cells, registered under ``evalsets.tasks.<name>``."""

from __future__ import annotations

from celery import shared_task

from evalsets.experiments import cells
from evalsets.worker import GroundworkTask


@shared_task(name="evalsets.tasks.run_experiment_cell", base=GroundworkTask)
def run_experiment_cell(cell_id: int) -> str:
    lease = cells.claim_cell(cell_id)
    if lease is None:
        return "gone, finished, cancelled or held by a live worker"
    cells.run_cell(lease)
    return "ran"
