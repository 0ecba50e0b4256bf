"""Running one cell of an experiment under a lease, the way a parse is run.

Any worker may take a queued cell; the holder renews its lease from a thread
(``ingest._Heartbeat``), and a cell whose holder stopped renewing (its worker was killed) is
taken over by the next task sent for it (the lease sweep sends one), so a lost worker costs
that one cell. Only the holder may write the cell's results, and only while the cell is
still running: a cancelled experiment's late results are dropped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import contextgrid as cg
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F, Q
from django.utils import timezone

from evalsets.documents import ingest
from evalsets.experiments import frozen
from evalsets.models import CellStatus, Experiment, ExperimentCell, ExperimentStatus
from evalsets.pure.scoring import grid, metrics

log = logging.getLogger(__name__)

#: Takes of one cell after which a cell whose worker keeps dying fails instead.
MAX_ATTEMPTS = 3
#: Progress is written about this many times per cell.
PROGRESS_STEPS = 20


class LeaseLost(Exception):
    """The cell was taken over or cancelled while this task ran it."""


@dataclass(frozen=True)
class CellLease:
    cell: ExperimentCell
    token: str


def abandoned() -> Q:
    """Running cells whose holder stopped renewing the lease."""
    return Q(status=CellStatus.RUNNING) & ingest.lease_expired()


def claim_cell(cell_id: int) -> CellLease | None:
    """Take a queued cell, or a running one whose holder died; None when it is done,
    cancelled or held by a live worker. A cell lost ``MAX_ATTEMPTS`` times fails."""
    token = ingest.new_token()
    now = timezone.now()
    takeable = ExperimentCell.objects.filter(pk=cell_id).filter(
        Q(status=CellStatus.QUEUED) | abandoned()
    )
    if takeable.filter(attempts__gte=MAX_ATTEMPTS).update(
        status=CellStatus.FAILED,
        error=f"its worker was lost {MAX_ATTEMPTS} times while running it",
        claimed_by="",
    ):
        _finish_experiment(ExperimentCell.objects.get(pk=cell_id).experiment_id)
        return None
    claimed = takeable.update(
        status=CellStatus.RUNNING,
        claimed_by=token,
        heartbeat_at=now,
        progress_done=0,
        attempts=F("attempts") + 1,
    )
    if not claimed:
        return None
    cell = ExperimentCell.objects.select_related("experiment").get(pk=cell_id)
    Experiment.objects.filter(pk=cell.experiment_id, status=ExperimentStatus.QUEUED).update(
        status=ExperimentStatus.RUNNING
    )
    return CellLease(cell, token)


def _held(lease: CellLease):
    return ExperimentCell.objects.filter(
        pk=lease.cell.pk, claimed_by=lease.token, status=CellStatus.RUNNING
    )


def disk_cache() -> cg.Cache:
    return cg.DiskCache(root=settings.GROUNDWORK_EXPERIMENT_CACHE_DIR)


def grid_questions(experiment: Experiment, parser: str) -> list[grid.Question]:
    gold = experiment.gold.get(parser, {})
    return [
        grid.Question(item_id, text, tuple(tuple(g) for g in gold.get(item_id, [])))
        for item_id, text in experiment.questions.items()
    ]


def _progress(lease: CellLease):
    every = max(1, lease.cell.progress_total // PROGRESS_STEPS)

    def report(done: int, total: int) -> None:
        if done % every and done != total:
            return
        if not _held(lease).update(progress_done=done, progress_total=total):
            raise LeaseLost(f"cell {lease.cell.pk} was taken over or cancelled")

    return report


def run_cell(lease: CellLease) -> None:
    """Run the leased cell and store its results, unless the lease was lost meanwhile."""
    cell, experiment = lease.cell, lease.cell.experiment
    started = time.process_time()
    try:
        with ingest._Heartbeat(lambda: _held(lease).update(heartbeat_at=timezone.now()), str(cell)):
            result = grid.run_cell(
                frozen.texts(experiment.corpus.get(cell.parser, {})),
                grid_questions(experiment, cell.parser),
                chunker=cell.chunker,
                retriever=cell.retriever,
                k=experiment.k,
                policy=experiment.policy,
                cache=disk_cache(),
                progress=_progress(lease),
            )
    except LeaseLost:
        log.info("cell %s was cancelled or taken over; its work is dropped", cell.pk)
        return
    except DatabaseError:
        raise  # the task is retried (GroundworkTask); the lease keeps the cell meanwhile
    except Exception as exc:  # the engine failing on this cell's input fails this cell alone
        log.warning("experiment cell %s failed: %r", cell.pk, exc)
        _held(lease).update(status=CellStatus.FAILED, error=_why_failed(exc), claimed_by="")
        _finish_experiment(experiment.pk)
        return
    summary = cell_summary(result.questions, experiment.k, experiment.seed)
    summary.update(chunks=result.chunks, warnings=result.warnings)
    _held(lease).update(
        status=CellStatus.DONE,
        results=result.questions,
        summary=summary,
        progress_done=len(result.questions),
        seconds=time.process_time() - started,
        claimed_by="",
    )
    _finish_experiment(experiment.pk)


def _why_failed(exc: Exception) -> str:
    """The reason a person reads: context-grid's own words for its errors (a chunker spec it
    cannot build, an empty corpus), the exception's type and words otherwise."""
    if isinstance(exc, (cg.ContextGridError, ValueError)):
        return str(exc)[:2000]
    return f"the cell crashed: {exc!r}"[:2000]


def cell_summary(per_question: dict, k: int, seed: int) -> dict:
    """The leaderboard row of one cell: every metric with its interval, and the curve."""
    return {
        "metrics": metrics.summarise(
            {q: judged["scores"] for q, judged in per_question.items()}, seed=seed
        ),
        "curve": metrics.mean_curve({q: j["curve"] for q, j in per_question.items()}, k),
        "questions": len(per_question),
    }


def _finish_experiment(experiment_id: int) -> None:
    """Close the experiment once no cell is left to run: complete when any cell scored,
    failed when none did."""
    with transaction.atomic():
        experiment = Experiment.objects.select_for_update().filter(pk=experiment_id).first()
        if experiment is None or experiment.is_finished:
            return
        statuses = set(experiment.cells.values_list("status", flat=True))
        if statuses & {CellStatus.QUEUED, CellStatus.RUNNING}:
            return
        done = CellStatus.DONE in statuses
        experiment.status = ExperimentStatus.COMPLETE if done else ExperimentStatus.FAILED
        experiment.error = "" if done else "no cell could be scored; each cell says why"
        experiment.finished_at = timezone.now()
        experiment.save(update_fields=["status", "error", "finished_at"])


def abandoned_cells() -> list[int]:
    """Cells whose worker died, for the lease sweep to queue again."""
    return list(ExperimentCell.objects.filter(abandoned()).values_list("pk", flat=True))
