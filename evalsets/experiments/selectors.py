"""Reading experiments: the leaderboard, comparisons of two rows, the misses table, the
gate and the downloads (JSON, CSV, Markdown)."""

from __future__ import annotations

import csv
import io
import json

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404

from evalsets.errors import Conflict, InvalidInput
from evalsets.models import CellStatus, EvalSet, Experiment, ExperimentCell
from evalsets.pure.scoring import judging, metrics


def experiments(evalset: EvalSet):
    return evalset.experiments.select_related("release", "created_by").prefetch_related("cells")


def experiment_in(evalset: EvalSet, public_id) -> Experiment:
    """The set's experiment ``public_id``, or 404 (another set's or workspace's too)."""
    return get_object_or_404(experiments(evalset), public_id=public_id)


def row_name(cell: ExperimentCell) -> str:
    return cell.retriever if cell.chunker == "uploaded" else cell.label


def leaderboard(experiment: Experiment) -> list[dict]:
    """The scored cells, best first on the headline metric, each with its intervals."""
    rows = [
        {
            "cell": cell.position,
            "name": row_name(cell),
            "parser": cell.parser,
            "chunker": cell.chunker,
            "retriever": cell.retriever,
            "metrics": cell.summary.get("metrics", {}),
            "curve": cell.summary.get("curve", []),
            "chunks": cell.summary.get("chunks"),
            "cpu_seconds": round(cell.seconds, 3),
        }
        for cell in experiment.cells.all()
        if cell.status == CellStatus.DONE
    ]
    return sorted(
        rows, key=lambda r: (-r["metrics"].get(metrics.HEADLINE, {}).get("mean", 0), r["cell"])
    )


def cell_of(experiment: Experiment, position) -> ExperimentCell:
    try:
        cell = experiment.cells.get(position=int(position))
    except (ValueError, TypeError, ExperimentCell.DoesNotExist):
        raise InvalidInput(f"this experiment has no cell {position!r}", field="cell") from None
    if cell.status != CellStatus.DONE:
        raise Conflict(f"cell {position} is {cell.status}; only scored cells compare", field="cell")
    return cell


def cell_by_ref(evalset: EvalSet, ref: str | None, field: str) -> ExperimentCell:
    """``<experiment id>[:<cell>]`` (cell 0 by default) to that scored cell of the set."""
    if not ref:
        raise InvalidInput(f"name the {field} row as <experiment id>:<cell>", field=field)
    experiment_id, _, position = ref.partition(":")
    try:
        experiment = experiment_in(evalset, experiment_id)
    except (Http404, ValidationError):  # a malformed id is as unknown as a missing one
        raise InvalidInput(f"no experiment {experiment_id!r} in this set", field=field) from None
    return cell_of(experiment, position or 0)


def _metric(metric: str | None) -> str:
    metric = metric or metrics.HEADLINE
    if metric not in metrics.METRICS:
        raise InvalidInput(
            f"unknown metric {metric!r}; choose from {', '.join(metrics.METRICS)}", field="metric"
        )
    return metric


def compare(left: ExperimentCell, right: ExperimentCell, metric: str | None = None) -> dict:
    """Two rows question by question (both on the same release, so on the same questions)."""
    metric = _metric(metric)
    if left.experiment.release_id != right.experiment.release_id:
        raise Conflict(
            "the two rows were scored on different releases, so their questions differ",
            field="right",
        )
    if left.experiment.k != right.experiment.k:
        raise Conflict(
            f"the two rows use different k ({left.experiment.k} and {right.experiment.k})",
            field="right",
        )
    scores = [{q: r["scores"][metric] for q, r in cell.results.items()} for cell in (left, right)]
    out = metrics.paired(
        scores[0],
        scores[1],
        left_name=row_name(left),
        right_name=row_name(right),
        metric=metrics.metric_label(metric, left.experiment.k),
        seed=left.experiment.seed,
    )
    out["per_question"] = [
        {"question": q, "left": scores[0][q], "right": scores[1][q]}
        for q in sorted(set(scores[0]) & set(scores[1]))
        if scores[0][q] != scores[1][q]
    ]
    return out


def gate(
    baseline: ExperimentCell,
    candidate: ExperimentCell,
    metric: str | None = None,
    tolerance: float = 0.0,
) -> dict:
    """Whether ``candidate`` may ship: it fails when it is worse than ``baseline`` by more
    than the set can detect (``metrics.gate``)."""
    comparison = compare(candidate, baseline, metric)
    return {**metrics.gate(comparison, tolerance=tolerance), "comparison": comparison}


def misses(experiment: Experiment) -> list[dict]:
    """Per question, which rows missed it (anything short of a hit at k) and why, with
    what each retrieved instead; questions every row answered are left out."""
    rows = [c for c in experiment.cells.all() if c.status == CellStatus.DONE]
    out = []
    for qid, question in experiment.questions.items():
        missed = [
            {
                "cell": c.position,
                "name": row_name(c),
                "parser": c.parser,
                **_why(c.results.get(qid, {})),
            }
            for c in rows
            if c.results.get(qid, {}).get("why") != judging.HIT
        ]
        if missed:
            out.append(
                {
                    "question_id": qid,
                    "question": question,
                    "misses": missed,
                    "gold": _gold_of(experiment, qid),
                }
            )
    return out


def _why(judged: dict) -> dict:
    why = judged.get("why", judging.NEVER_RETRIEVED)
    return {
        "why": why,
        "explanation": judging.WHY[why],
        "rank": judged.get("rank"),
        "retrieved": judged.get("retrieved", []),
    }


def _gold_of(experiment: Experiment, qid: str) -> dict:
    return {parser: items.get(qid, []) for parser, items in experiment.gold.items()}


def results(experiment: Experiment) -> dict:
    """Everything a download holds: the configuration, the policy, the leaderboard and
    every question's judgement per row."""
    return {
        "experiment": str(experiment.public_id),
        "evalset": experiment.evalset.slug,
        "release": experiment.release.version,
        "kind": experiment.kind,
        "status": experiment.status,
        "k": experiment.k,
        "policy": {**experiment.policy, "description": judging.describe_policy(experiment.policy)},
        "seed": experiment.seed,
        "questions": len(experiment.questions),
        "leaderboard": leaderboard(experiment),
        "per_question": {
            row_name(c): c.results for c in experiment.cells.all() if c.status == CellStatus.DONE
        },
    }


def _cell_text(estimate: dict) -> str:
    return f"{estimate['mean']:.3f} [{estimate['low']:.3f}, {estimate['high']:.3f}]"


def results_csv(experiment: Experiment) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    header = ["row", "parser", "chunker", "retriever"]
    for metric in metrics.METRICS:
        label = metrics.metric_label(metric, experiment.k)
        header += [label, f"{label} low", f"{label} high"]
    writer.writerow(header)
    for row in leaderboard(experiment):
        values = [row["name"], row["parser"], row["chunker"], row["retriever"]]
        for metric in metrics.METRICS:
            estimate = row["metrics"][metric]
            values += [
                f"{estimate['mean']:.6f}",
                f"{estimate['low']:.6f}",
                f"{estimate['high']:.6f}",
            ]
        writer.writerow(values)
    return out.getvalue()


def results_markdown(experiment: Experiment) -> str:
    labels = [metrics.metric_label(m, experiment.k) for m in metrics.METRICS]
    lines = [
        f"# {experiment.evalset.slug} release {experiment.release.version}: "
        f"experiment {experiment.public_id}",
        "",
        f"{len(experiment.questions)} questions; {judging.describe_policy(experiment.policy)}. "
        "Each cell: mean [95% bootstrap interval].",
        "",
        "| row | " + " | ".join(labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for row in leaderboard(experiment):
        cells = " | ".join(_cell_text(row["metrics"][m]) for m in metrics.METRICS)
        lines.append(f"| {row['name'].replace('|', '/')} | {cells} |")
    return "\n".join(lines) + "\n"


def results_json(experiment: Experiment) -> str:
    return json.dumps(results(experiment), indent=2, sort_keys=True)


DOWNLOADS = {
    "json": (results_json, "application/json"),
    "csv": (results_csv, "text/csv"),
    "md": (results_markdown, "text/markdown"),
}
