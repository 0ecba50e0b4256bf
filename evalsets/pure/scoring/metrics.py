"""Per-question retrieval metrics, their means with bootstrap intervals, and paired
comparisons of two rows.

Every number comes from context-grid's own definitions (``contextgrid.score.metrics``,
``contextgrid.score.significance``), so a row here means what the same row means in a
context-grid report. Two choices are Groundwork's:

- A question whose evidence this parse lost (its anchors have no span in it) is scored as a
  miss (zero on every metric), not left out as context-grid does: every row of a leaderboard
  is then averaged over the same questions, and a parser that loses evidence is charged for it
  instead of being scored on the easier remainder. Questions with no anchors at all carry no
  ground truth and are never scored.
- Intervals and tests are seeded, so the same scores give the same interval every time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextgrid.core.span import Span, intersection_length, total_length
from contextgrid.evalset.quality import minimum_detectable_difference
from contextgrid.score.metrics import (
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from contextgrid.score.significance import bootstrap_interval, compare

#: The leaderboard's columns, in order. ``char_recall`` is the share of the gold characters
#: inside the top k's spans, whatever the chunk-level judgements say.
METRICS = ("recall", "precision", "hit_rate", "mrr", "ndcg", "char_recall")
#: The metric a comparison or a gate uses unless told otherwise.
HEADLINE = "recall"
#: Fixed so intervals and tests reproduce exactly.
SEED = 0
RESAMPLES = 2000

_RANKED = {
    "recall": recall_at_k,
    "precision": precision_at_k,
    "hit_rate": hit_rate_at_k,
    "mrr": reciprocal_rank,
    "ndcg": ndcg_at_k,
}


def metric_label(metric: str, k: int) -> str:
    return f"{metric}@{k}"


def character_recall(gold: Sequence[Span], retrieved: Sequence[Span]) -> float:
    """Share of the gold characters (overlaps once) inside the retrieved spans' union."""
    whole = total_length(gold)
    return intersection_length(gold, retrieved) / whole if whole else 0.0


def question_scores(
    judgements: Mapping[str, int],
    ranked: Sequence[str],
    k: int,
    *,
    gold: Sequence[Span] = (),
    retrieved: Sequence[Span] = (),
) -> dict[str, float]:
    """Every metric for one question at ``k``: ``ranked`` are chunk ids best first,
    ``retrieved`` the spans of its top ``k`` (for character recall)."""
    scores = {name: fn(judgements, ranked, k) for name, fn in _RANKED.items()}
    scores["char_recall"] = character_recall(gold, retrieved[:k])
    return scores


def lost_scores() -> dict[str, float]:
    """A question whose evidence the parse lost: a miss on every metric."""
    return dict.fromkeys(METRICS, 0.0)


def recall_curve(judgements: Mapping[str, int], ranked: Sequence[str], k: int) -> list[float]:
    """Recall at 1..k for one question."""
    return [recall_at_k(judgements, ranked, cut) for cut in range(1, k + 1)]


@dataclass(frozen=True, slots=True)
class Estimate:
    mean: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "low": self.low, "high": self.high}


def estimate(values: Sequence[float], *, seed: int = SEED) -> Estimate:
    """The mean and its seeded bootstrap 95% interval."""
    if not values:
        return Estimate(0.0, 0.0, 0.0)
    interval = bootstrap_interval(values, resamples=RESAMPLES, seed=seed)
    return Estimate(interval.estimate, interval.low, interval.high)


def summarise(per_question: Mapping[str, Mapping[str, float]], *, seed: int = SEED) -> dict:
    """``{metric: {mean, low, high}}`` over the questions, in question-id order."""
    ids = sorted(per_question)
    return {
        metric: estimate([per_question[q][metric] for q in ids], seed=seed).as_dict()
        for metric in METRICS
    }


def mean_curve(curves: Mapping[str, Sequence[float]], k: int) -> list[float]:
    """Mean recall at 1..k over the questions (a lost question contributes zeros)."""
    if not curves:
        return [0.0] * k
    return [
        sum(curve[cut] if cut < len(curve) else 0.0 for curve in curves.values()) / len(curves)
        for cut in range(k)
    ]


def questions_to_detect(gap: float, *, power: float = 0.8, alpha: float = 0.05) -> int | None:
    """The smallest set size whose minimum detectable difference is at most ``gap``
    (context-grid's ``minimum_detectable_difference`` inverted); None for no gap at all."""
    if gap <= 0:
        return None
    z = (1.96 if alpha <= 0.05 else 1.645) + (0.84 if power <= 0.8 else 1.28)
    return max(2, math.ceil(z * z * 2 * 0.25 / (gap * gap)))


def paired(
    left: Mapping[str, float],
    right: Mapping[str, float],
    *,
    left_name: str,
    right_name: str,
    metric: str,
    seed: int = SEED,
) -> dict:
    """Two rows compared question by question: the difference with its paired-bootstrap
    interval, the randomisation test's p-value, the set's minimum detectable difference and
    how many more questions would settle a gap of this size."""
    result = compare(
        left,
        right,
        left=left_name,
        right=right_name,
        metric=metric,
        seed=seed,
        resamples=RESAMPLES,
    )
    out = result.as_dict()
    mdd = minimum_detectable_difference(result.n)
    needed = questions_to_detect(abs(result.difference.estimate))
    out.update(
        verdict=result.verdict(),
        minimum_detectable_difference=mdd,
        exceeds_detectable=abs(result.difference.estimate) >= mdd,
        questions_needed=needed,
        more_questions_needed=None if needed is None else max(0, needed - result.n),
    )
    return out


def gate(comparison: Mapping, *, tolerance: float = 0.0) -> dict:
    """Whether a candidate (the comparison's left row) may ship against a baseline (its
    right row): it fails when it is worse by more than the set's minimum detectable
    difference (plus ``tolerance``), the one gap this set can tell from noise."""
    drop = comparison["right_mean"] - comparison["left_mean"]
    limit = comparison["minimum_detectable_difference"] + tolerance
    passed = drop <= limit
    verb = "passes" if passed else "fails"
    reason = (
        f"the candidate {verb}: it is {abs(drop):.3f} {'below' if drop > 0 else 'at or above'} "
        f"the baseline on {comparison['metric']}, and this set (n={comparison['n']}) can only "
        f"detect differences of about {comparison['minimum_detectable_difference']:.3f}"
    )
    return {"passed": passed, "drop": drop, "limit": limit, "reason": reason}
