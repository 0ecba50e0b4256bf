"""A real worker killed mid-cell: only that cell is lost, and it is taken over and finished
with exactly the results an uninterrupted run gives."""

from __future__ import annotations

import pytest
from django.utils import timezone

from evalsets import queue
from evalsets.documents import services as documents_services
from evalsets.models import (
    CellStatus,
    Document,
    Experiment,
    ExperimentCell,
    ExperimentKind,
    ExperimentStatus,
    Release,
    ReleaseStatus,
)
from evalsets.pure.scoring import grid
from tests import services as svc
from tests import synthetic_corpus

#: Enough questions that the slow cell is still running when the worker is killed.
QUESTIONS = 1500


def _experiment(workspace, evalset, owner, texts, questions) -> Experiment:
    corpus = {}
    for source_id, text in texts.items():
        document = Document.objects.create(
            workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0"), size=1
        )
        parse = documents_services.parse_version_add(
            document=document, parser="synthetic", parser_version="1", text=text
        )
        corpus[source_id] = parse.pk
    release = Release.objects.create(
        evalset=evalset,
        version=1,
        resolver_version="test",
        frozen_at=timezone.now(),
        status=ReleaseStatus.READY,
    )
    experiment = Experiment.objects.create(
        evalset=evalset,
        release=release,
        kind=ExperimentKind.GRID,
        parsers=["synthetic"],
        chunkers=["recursive:128"],
        retrievers=["bm25", "hybrid"],
        k=5,
        policy={"policy": "coverage", "threshold": 0.5},
        corpus={"synthetic": corpus},
        gold={"synthetic": {q.id: [list(g) for g in q.gold] for q in questions}},
        questions={q.id: q.text for q in questions},
        created_by=owner,
    )
    for position, retriever in enumerate(["bm25", "hybrid"]):
        ExperimentCell.objects.create(
            experiment=experiment,
            position=position,
            parser="synthetic",
            chunker="recursive:128",
            retriever=retriever,
            progress_total=len(questions),
        )
    return experiment


@pytest.mark.services
def test_a_worker_killed_mid_cell_loses_only_that_cell_which_is_taken_over_and_finished(
    worker, workspace, owner, evalset
):
    texts = synthetic_corpus.corpus()
    questions = synthetic_corpus.questions(texts, QUESTIONS)
    experiment = _experiment(workspace, evalset, owner, texts, questions)
    first, slow = experiment.cells.order_by("position")
    for cell in (first, slow):
        queue.send("run_experiment_cell", cell.pk)
    svc.wait_for(
        lambda: ExperimentCell.objects.filter(
            pk=slow.pk, status=CellStatus.RUNNING, progress_done__gt=0
        ).exists(),
        timeout=120,
        what="the worker to be part-way through the slow cell",
    )
    worker.kill()
    first.refresh_from_db()
    assert (first.status, first.attempts) == (CellStatus.DONE, 1)
    assert ExperimentCell.objects.get(pk=slow.pk).status == CellStatus.RUNNING
    worker.start()
    svc.wait_for(
        lambda: Experiment.objects.filter(
            pk=experiment.pk, status=ExperimentStatus.COMPLETE
        ).exists(),
        timeout=240,
        what="the restarted worker to take over the abandoned cell and finish it",
    )
    slow.refresh_from_db()
    assert (slow.status, slow.attempts) == (CellStatus.DONE, 2)
    again = ExperimentCell.objects.get(pk=first.pk)
    assert (again.attempts, again.results) == (1, first.results)
    expected = grid.run_cell(
        texts, questions, chunker="recursive:128", retriever="hybrid", k=5, policy={}
    )
    assert slow.results == expected.questions
