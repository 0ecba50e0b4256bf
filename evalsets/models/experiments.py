"""Experiments: retrieval configurations (and teams' own runs) scored on a frozen release.

An ``Experiment`` fixes everything its numbers depend on when it is started: the release,
the parsers, chunkers, retrievers, k and the relevance policy, and (``corpus``, ``gold``)
which parse of each document each parser means and where each item's evidence lies in it,
from the stored resolutions. Re-running it therefore gives the same numbers, and once
complete nothing about it changes.

Each ``ExperimentCell`` is one parser x chunker x retriever, run as its own task by any
worker under a lease (``claimed_by``/``heartbeat_at``, like a parse's), so a worker lost
mid-cell costs that cell alone, which is taken over once its lease expires. An uploaded run
is an experiment of one cell, scored when it is committed.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

__all__ = ["CellStatus", "Experiment", "ExperimentCell", "ExperimentKind", "ExperimentStatus"]


class ExperimentKind(models.TextChoices):
    GRID = "grid", "Built-in configurations"
    RUN = "run", "Uploaded run"


class ExperimentStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETE = "complete", "Complete"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


#: Statuses after which an experiment never changes again.
FINISHED_EXPERIMENT = (
    ExperimentStatus.COMPLETE,
    ExperimentStatus.CANCELLED,
    ExperimentStatus.FAILED,
)


class CellStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Experiment(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    evalset = models.ForeignKey(
        "evalsets.EvalSet", on_delete=models.CASCADE, related_name="experiments"
    )
    release = models.ForeignKey(
        "evalsets.Release", on_delete=models.CASCADE, related_name="experiments"
    )
    kind = models.CharField(max_length=8, choices=ExperimentKind.choices)
    name = models.CharField(max_length=200, blank=True)
    parsers = models.JSONField(default=list)
    chunkers = models.JSONField(default=list)
    retrievers = models.JSONField(default=list)
    k = models.PositiveSmallIntegerField(default=5)
    #: ``{"policy": "coverage", "threshold": 0.5}``: context-grid's ``SpanResolver``.
    policy = models.JSONField(default=dict)
    seed = models.PositiveIntegerField(default=0)
    #: ``{parser: {source_id: parse pk}}``: the texts each parser's cells search.
    corpus = models.JSONField(default=dict, blank=True)
    #: ``{parser: {item_id: [[source_id, start, end, grade], ...]}}`` from stored resolutions.
    gold = models.JSONField(default=dict, blank=True)
    #: ``{item_id: question}`` of the release's items that carry evidence, in release order.
    questions = models.JSONField(default=dict, blank=True)
    #: For an uploaded run: the file's name, its SHA-256 and what placing its chunks found.
    upload = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=ExperimentStatus.choices, default=ExperimentStatus.QUEUED
    )
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["evalset_id", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ExperimentStatus]),
                name="experiment_status_known",
            ),
            models.CheckConstraint(condition=Q(k__gte=1), name="experiment_k_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.evalset} experiment {self.public_id}"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_EXPERIMENT


class ExperimentCell(models.Model):
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="cells")
    position = models.PositiveIntegerField()
    parser = models.CharField(max_length=64)
    chunker = models.CharField(max_length=128)
    retriever = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=CellStatus.choices, default=CellStatus.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    #: ``{metric: {mean, low, high}}``, the recall@1..k curve and the chunk count.
    summary = models.JSONField(default=dict, blank=True)
    #: ``{item_id: {scores, curve, why, rank, retrieved}}`` (``pure.scoring.judging.Judged``).
    results = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    #: How many times a task took this cell: 1 unless its worker was lost.
    attempts = models.PositiveIntegerField(default=0)
    claimed_by = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["experiment_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "position"], name="experiment_cell_position"
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in CellStatus]),
                name="experiment_cell_status_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.experiment_id}: {self.label}"

    @property
    def label(self) -> str:
        return f"{self.parser} · {self.chunker} · {self.retriever}"

    @property
    def percent(self) -> int:
        if self.status == CellStatus.DONE:
            return 100
        if not self.progress_total:
            return 0
        return min(100, int(100 * self.progress_done / self.progress_total))
