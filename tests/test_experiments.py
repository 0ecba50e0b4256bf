"""Experiments: grids scored with context-grid on a frozen release, cells under a lease,
reproducible numbers, comparisons and the gate."""

from __future__ import annotations

import random
from datetime import timedelta

import ir_measures
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from ir_measures import RR, P, R, Success, nDCG

from evalsets import queue
from evalsets.experiments import cells, selectors, services
from evalsets.models import CellStatus, Experiment, ExperimentCell, ExperimentStatus
from evalsets.pure.scoring import judging, metrics
from tests import experiments_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(workspace, evalset, annotator, owner, django_capture_on_commit_callbacks):
    return experiments_world.build(
        workspace, evalset, annotator, owner, django_capture_on_commit_callbacks
    )


def start(evalset, user, capture, **changes):
    options = {
        "release": 1,
        "parsers": ["plaintext", "lossy"],
        "chunkers": ["recursive:64"],
        "retrievers": ["bm25", "tfidf", "hybrid"],
        "k": 3,
    }
    options.update(changes)
    with capture(execute=True):
        experiment = services.experiment_start(evalset=evalset, user=user, **options)
    experiment.refresh_from_db()
    return experiment


def test_a_grid_has_one_scored_cell_per_parser_chunker_and_retriever(
    release, evalset, reviewer, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    assert experiment.status == ExperimentStatus.COMPLETE
    assert [(c.parser, c.retriever) for c in experiment.cells.all()] == [
        (p, r) for p in ("plaintext", "lossy") for r in ("bm25", "tfidf", "hybrid")
    ]
    assert all(c.status == CellStatus.DONE for c in experiment.cells.all())
    board = selectors.leaderboard(experiment)
    assert {row["metrics"]["recall"]["mean"] for row in board if row["parser"] == "plaintext"} == {
        1.0
    }


def test_the_parser_that_lost_the_evidence_is_charged_a_miss_and_told_why(
    release, evalset, reviewer, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    assert experiment.gold["lossy"]["s2"] == []
    assert experiment.gold["plaintext"]["s2"][0][0] == "safety.txt"
    lossy = experiment.cells.get(parser="lossy", retriever="bm25")
    assert lossy.results["s2"]["why"] == judging.PARSER_LOST
    assert lossy.summary["metrics"]["recall"]["mean"] == pytest.approx(0.8)
    missed = {row["question_id"]: row for row in selectors.misses(experiment)}
    assert {m["parser"] for m in missed["s2"]["misses"]} == {"lossy"}


def test_running_the_same_experiment_again_gives_exactly_the_same_results(
    release, evalset, reviewer, django_capture_on_commit_callbacks
):
    first = start(evalset, reviewer, django_capture_on_commit_callbacks)
    again = start(evalset, reviewer, django_capture_on_commit_callbacks)
    one, two = selectors.results(first), selectors.results(again)
    for key in ("experiment",):
        one.pop(key), two.pop(key)
    for row in one["leaderboard"] + two["leaderboard"]:
        row.pop("cpu_seconds")
    assert one == two


def test_each_cell_is_queued_on_the_experiments_queue(
    release, evalset, reviewer, sent, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    cells_in_order = experiment.cells.order_by("retriever", "position")
    ids = [c.pk for r in ("bm25", "tfidf", "hybrid") for c in cells_in_order if c.retriever == r]
    assert [(name, pks[0]) for name, pks in sent] == [("run_experiment_cell", pk) for pk in ids]
    route = queue.route("evalsets.tasks.run_experiment_cell", (), {}, {})
    assert route == {"queue": queue.queue_name(queue.EXPERIMENTS)}


def test_a_cell_held_by_a_live_worker_is_left_alone_and_a_dead_workers_is_taken_over(
    release, evalset, reviewer, sent, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    cell = experiment.cells.first()
    lease = cells.claim_cell(cell.pk)
    assert lease is not None and cells.claim_cell(cell.pk) is None
    ExperimentCell.objects.filter(pk=cell.pk).update(
        heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    assert cells.abandoned_cells() == [cell.pk]
    taken = cells.claim_cell(cell.pk)
    assert taken is not None and taken.token != lease.token
    cells.run_cell(lease)  # the dead worker's late write is dropped
    assert ExperimentCell.objects.get(pk=cell.pk).status == CellStatus.RUNNING
    cells.run_cell(taken)
    cell.refresh_from_db()
    assert (cell.status, cell.attempts) == (CellStatus.DONE, 2)


def test_a_cell_whose_workers_keep_dying_fails_saying_so(
    release, evalset, reviewer, sent, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    cell = experiment.cells.first()
    ExperimentCell.objects.filter(pk=cell.pk).update(
        status=CellStatus.RUNNING,
        attempts=cells.MAX_ATTEMPTS,
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    assert cells.claim_cell(cell.pk) is None
    cell.refresh_from_db()
    assert cell.status == CellStatus.FAILED and "lost 3 times" in cell.error


def test_a_cancelled_experiment_drops_what_a_running_cell_finds_and_never_changes_again(
    release, evalset, reviewer, sent, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    lease = cells.claim_cell(experiment.cells.first().pk)
    services.experiment_cancel(experiment=experiment, user=reviewer)
    cells.run_cell(lease)
    experiment.refresh_from_db()
    assert experiment.status == ExperimentStatus.CANCELLED
    assert set(experiment.cells.values_list("status", flat=True)) == {CellStatus.CANCELLED}
    assert not any(experiment.cells.values_list("results", flat=True))
    with pytest.raises(Exception, match="can no longer change"):
        services.experiment_cancel(experiment=experiment, user=reviewer)


def test_an_annotator_cannot_start_an_experiment(release, evalset, annotator):
    with pytest.raises(Exception, match="reviewer role"):
        services.experiment_start(
            evalset=evalset,
            user=annotator,
            release=1,
            parsers=["plaintext"],
            chunkers=["recursive:64"],
            retrievers=["bm25"],
        )


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"parsers": ["nonesuch"]}, "parsers"),
        ({"chunkers": ["nonesuch:5"]}, "chunkers"),
        ({"retrievers": ["colbert"]}, "retrievers"),
        ({"k": 0}, "k"),
        ({"release": 9}, "release"),
        ({"chunkers": [f"recursive:{n}" for n in range(64, 72)]}, "chunkers"),
    ],
)
def test_a_grid_that_cannot_run_is_refused_naming_the_field_and_stores_nothing(
    release, evalset, reviewer, changes, field, django_capture_on_commit_callbacks
):
    with pytest.raises(Exception) as refused:
        start(evalset, reviewer, django_capture_on_commit_callbacks, **changes)
    assert refused.value.field == field
    assert not Experiment.objects.exists()


def test_two_rows_compare_question_by_question_and_the_gate_fails_the_worse_one(
    release, evalset, reviewer, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    good = experiment.cells.get(parser="plaintext", retriever="bm25")
    lossy = experiment.cells.get(parser="lossy", retriever="bm25")
    comparison = selectors.compare(good, lossy)
    assert comparison["difference"] == pytest.approx(0.2)
    assert comparison["n"] == 5 and comparison["per_question"] == [
        {"question": "s2", "left": 1.0, "right": 0.0}
    ]
    assert comparison["minimum_detectable_difference"] == pytest.approx(0.885, abs=1e-3)
    assert comparison["more_questions_needed"] == metrics.questions_to_detect(0.2) - 5
    assert selectors.gate(good, lossy)["passed"] is True  # 0.2 is below what 5 can detect
    assert selectors.gate(good, lossy, tolerance=-0.7)["passed"] is False


def test_the_gate_command_exits_non_zero_when_the_candidate_fails(
    release, evalset, reviewer, django_capture_on_commit_callbacks, capsys
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    good, lossy = (
        experiment.cells.get(parser=p, retriever="bm25").position for p in ("plaintext", "lossy")
    )
    ref = str(experiment.public_id)
    args = ["--workspace", "acme", "--evalset", "quiz", "--baseline", f"{ref}:{good}"]
    call_command("experiment_gate", *args, "--candidate", f"{ref}:{lossy}")
    assert "passes" in capsys.readouterr().out
    with pytest.raises(CommandError, match="gate failed") as failed:
        call_command(
            "experiment_gate", *args, "--candidate", f"{ref}:{lossy}", "--tolerance", "-0.7"
        )
    assert failed.value.returncode == 1


def test_results_download_as_json_csv_and_markdown(
    release, evalset, reviewer, django_capture_on_commit_callbacks
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    data = selectors.results(experiment)
    assert data["policy"]["description"].startswith(
        "a chunk is relevant when it holds at least 0.5"
    )
    assert len(data["leaderboard"]) == 6
    csv_rows = selectors.results_csv(experiment).splitlines()
    assert csv_rows[0].startswith("row,parser,chunker,retriever,recall@3,recall@3 low")
    assert len(csv_rows) == 7
    assert "| lossy · recursive:64 · bm25 | 0.800 [" in selectors.results_markdown(experiment)


# -- the metrics against ir-measures ---------------------------------------------------------


def _random_case(rng: random.Random):
    qrels, run, ranked = {}, {}, {}
    for q in range(60):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(rng.randint(3, 30))]
        relevant = rng.sample(docs, rng.randint(1, min(5, len(docs))))
        qrels[qid] = {d: rng.choice([1, 2]) for d in relevant}
        order = rng.sample(docs, rng.randint(0, len(docs)))
        ranked[qid] = order
        run[qid] = {d: float(len(order) - i) for i, d in enumerate(order)}
    return qrels, run, ranked


@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_every_ranked_metric_equals_ir_measures_on_the_same_judgements(k):
    qrels, run, ranked = _random_case(random.Random(k))
    ours = {q: metrics.question_scores(qrels[q], ranked[q], k) for q in qrels}
    names = {
        "recall": R @ k,
        "precision": P @ k,
        "hit_rate": Success @ k,
        "mrr": RR @ k,
        "ndcg": nDCG @ k,
    }
    theirs = {
        (m.query_id, str(m.measure)): m.value
        for m in ir_measures.iter_calc(list(names.values()), qrels, run)
    }
    for qid in qrels:
        for name, measure in names.items():
            assert ours[qid][name] == pytest.approx(theirs.get((qid, str(measure)), 0.0), abs=1e-9)
    aggregate = ir_measures.calc_aggregate(list(names.values()), qrels, run)
    for name, measure in names.items():
        mean = metrics.summarise({q: {**ours[q], "char_recall": 0.0} for q in ours})[name]["mean"]
        assert mean == pytest.approx(aggregate[measure], abs=1e-9)


def test_bootstrap_intervals_are_seeded_and_hold_the_mean():
    scores = {f"q{i}": {m: (i % 3) / 2 for m in metrics.METRICS} for i in range(40)}
    one, two = metrics.summarise(scores), metrics.summarise(scores)
    assert one == two
    recall = one["recall"]
    assert recall["low"] < recall["mean"] < recall["high"]


def test_a_cell_the_engine_cannot_run_fails_alone_saying_why(
    release, evalset, reviewer, sent, django_capture_on_commit_callbacks, monkeypatch
):
    experiment = start(evalset, reviewer, django_capture_on_commit_callbacks)
    first, second = experiment.cells.all()[:2]

    def broken(*args, **kwargs):
        raise RuntimeError("out of disk for the cache")

    monkeypatch.setattr(cells.grid, "run_cell", broken)
    cells.run_cell(cells.claim_cell(first.pk))
    first.refresh_from_db()
    assert first.status == CellStatus.FAILED
    assert first.error == "the cell crashed: RuntimeError('out of disk for the cache')"
    assert ExperimentCell.objects.get(pk=second.pk).status == CellStatus.QUEUED
