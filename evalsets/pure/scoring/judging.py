"""Turning rankings into judged questions: relevance by context-grid's ``SpanResolver``,
the scores of ``metrics``, and why a question was missed.

Why a question was missed uses context-grid's failure points (``contextgrid.diagnose``),
named for the person reading the table:

- ``parser_lost``: the release's evidence has no span in this parse (FP1, found by our stored
  resolutions, never by searching again);
- ``not_in_index``: the parse holds the evidence but no chunk holds enough of it to count
  under the policy (FP1, the chunker's doing);
- ``ranked_too_low``: a relevant chunk came back below k (FP2);
- ``never_retrieved``: no relevant chunk came back at any depth looked at (FP3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextgrid.core.span import Span
from contextgrid.score.resolve import ResolutionPolicy, SpanResolver

from evalsets.pure.scoring import metrics

HIT, PARTIAL = "hit", "partial"
PARSER_LOST, NOT_IN_INDEX = "parser_lost", "not_in_index"
RANKED_TOO_LOW, NEVER_RETRIEVED = "ranked_too_low", "never_retrieved"
WHY = {
    PARSER_LOST: "the parser lost the evidence: it has no span in this parse",
    NOT_IN_INDEX: "no chunk holds enough of the evidence to count under the policy",
    RANKED_TOO_LOW: "the evidence was retrieved, but below the top k",
    NEVER_RETRIEVED: "the evidence is in the index and was never retrieved",
    PARTIAL: "some of the evidence reached the top k, not all of it",
    HIT: "all the evidence reached the top k",
}

#: Gold as frozen on an experiment: ``(source_id, start, end, grade)``.
Gold = tuple[str, int, int, int]


def span_resolver(policy: Mapping) -> SpanResolver:
    """The relevance rule (context-grid's, coverage 0.5 unless the experiment says else)."""
    return SpanResolver(
        policy=ResolutionPolicy(policy.get("policy", "coverage")),
        threshold=float(policy.get("threshold", 0.5)),
    )


def describe_policy(policy: Mapping) -> str:
    resolver = span_resolver(policy)
    if resolver.policy is ResolutionPolicy.CONTAINMENT:
        return "a chunk is relevant when it holds a gold span whole"
    measure = (
        "of a gold span's characters"
        if resolver.policy is ResolutionPolicy.COVERAGE
        else ("intersection over union with a gold span")
    )
    return f"a chunk is relevant when it holds at least {resolver.threshold:g} {measure}"


def diagnose(
    judgements: Mapping[str, int], ranked: Sequence[str], k: int
) -> tuple[str, int | None]:
    """Why the question was (not) answered at ``k``, and the first relevant chunk's rank."""
    relevant = {chunk for chunk, grade in judgements.items() if grade > 0}
    if not relevant:
        return NOT_IN_INDEX, None
    rank = next((i for i, chunk in enumerate(ranked, start=1) if chunk in relevant), None)
    if rank is None:
        return NEVER_RETRIEVED, None
    if rank > k:
        return RANKED_TOO_LOW, rank
    found = sum(1 for chunk in ranked[:k] if chunk in relevant)
    return (HIT if found == len(relevant) else PARTIAL), rank


@dataclass(frozen=True, slots=True)
class Judged:
    """One question judged at k: what a cell stores for it."""

    scores: dict[str, float]
    curve: list[float]
    why: str
    rank: int | None
    retrieved: list[list]

    def as_dict(self) -> dict:
        return {
            "scores": self.scores,
            "curve": self.curve,
            "why": self.why,
            "rank": self.rank,
            "retrieved": self.retrieved,
        }


def lost(k: int) -> Judged:
    """A question whose evidence the parse lost: a miss everywhere."""
    return Judged(metrics.lost_scores(), [0.0] * k, PARSER_LOST, None, [])


def judged(
    judgements: Mapping[str, int],
    ranked: Sequence[str],
    spans: Sequence[Span],
    gold: Sequence[Span],
    k: int,
) -> Judged:
    """Scores, recall curve and diagnosis of one question; ``spans`` are the ranked chunks'
    spans (``None`` for a chunk that could not be placed), best first."""
    top = [span for span in spans[:k] if span is not None]
    scores = metrics.question_scores(judgements, ranked, k, gold=gold, retrieved=top)
    why, rank = diagnose(judgements, ranked, k)
    retrieved = [[s.doc_id, s.start, s.end] if s is not None else None for s in spans[:k]]
    return Judged(scores, metrics.recall_curve(judgements, ranked, k), why, rank, retrieved)


def gold_spans(gold: Sequence[Gold], key=lambda source_id: source_id) -> list[tuple[Span, int]]:
    return [(Span(key(source), start, end), grade) for source, start, end, grade in gold]


def judge_placed(
    placed: Sequence[tuple[str, int, int] | None],
    gold: Sequence[tuple[Span, int]],
    resolver: SpanResolver,
    k: int,
) -> Judged:
    """Judge a ranking of placed chunks (an uploaded run) without knowing the rest of its
    chunking: each retrieved chunk is relevant at the best grade of the gold spans it
    satisfies under the policy, and each gold span no retrieved chunk satisfies counts as one
    relevant chunk never retrieved, so recall is found / (found + evidence left behind)."""
    spans = [None if p is None else Span(*p) for p in placed]
    judgements: dict[str, int] = {}
    ranked = [f"r{i}" for i in range(len(spans))]
    matched: set[int] = set()
    for i, span in enumerate(spans):
        for g, (gold_span, grade) in enumerate(gold):
            if span is not None and resolver.is_relevant(span, gold_span):
                judgements[ranked[i]] = max(judgements.get(ranked[i], 0), grade)
                matched.add(g)
    for g, (_, grade) in enumerate(gold):
        if g not in matched:
            judgements[f"g{g}"] = grade
    return judged(judgements, ranked, spans, [span for span, _ in gold], k)


def _in_parse(parser: str, source_id: str) -> str:
    """A span's document key for a run that may read one document in several parses."""
    return f"{parser}\x1f{source_id}"


def judge_run(
    placed: Mapping[str, Sequence[tuple[str, str, int, int] | None]],
    gold: Mapping[str, Mapping[str, Sequence[Gold]]],
    questions: Sequence[str],
    defaults: Mapping[str, str],
    policy: Mapping,
    k: int,
) -> dict[str, dict]:
    """Judge an uploaded run: ``placed`` holds each question's chunks as ``(source_id,
    parser, start, end)`` (None: unplaced), ``gold`` is ``{parser: {item_id: [gold]}}``.
    A document's evidence is judged in the parse the question's first chunk of it was read
    in, else in its default parse. A question the run left out retrieved nothing."""
    resolver = span_resolver(policy)
    judged = {}
    for qid in questions:
        chunks = placed.get(qid, [])
        parsers = dict(defaults)
        for chunk in reversed([c for c in chunks if c is not None]):
            parsers[chunk[0]] = chunk[1]
        spans = [
            (Span(_in_parse(g[0], parser), g[1], g[2]), g[3])
            for parser, items in gold.items()
            for g in items.get(qid, [])
            if parsers.get(g[0]) == parser
        ]
        if not spans:
            judged[qid] = lost(k).as_dict()
            continue
        where = [None if c is None else (_in_parse(c[0], c[1]), c[2], c[3]) for c in chunks]
        judged[qid] = judge_placed(where, spans, resolver, k).as_dict()
    return judged
