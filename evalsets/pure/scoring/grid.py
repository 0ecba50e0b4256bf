"""One cell of an experiment's grid (parser x chunker x retriever), run with context-grid.

The corpus is Groundwork's own parse texts of one parser, handed to context-grid verbatim
(its ``text`` parser keeps a UTF-8 text exactly as it is, so our offsets are its offsets);
the gold is the release's evidence already placed in those texts by our stored resolutions.
``contextgrid.build`` chunks, embeds and indexes; its cache (a ``DiskCache`` shared by every
worker) is keyed by the text and the chunker, so the chunks and vectors of one parser and
chunker are computed once for all the retrievers that search them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import contextgrid as cg
from contextgrid.core.evalset import EvalItem, EvalSet, GoldSpan
from contextgrid.core.span import Span
from contextgrid.pipeline import build_qrels

from evalsets.pure.scoring import judging

#: Retriever name -> context-grid's (embedder, index). All three run offline.
RETRIEVERS: dict[str, tuple[str | None, str]] = {
    "bm25": (None, "bm25"),
    "tfidf": ("tfidf", "dense"),
    "hybrid": ("tfidf", "hybrid"),
}
#: How deep each question's ranking is read, to tell "ranked too low" from "never retrieved".
DEPTH = 50


def config(chunker: str, retriever: str, k: int) -> cg.Config:
    embedder, index = RETRIEVERS[retriever]
    return cg.Config(parser="text", chunker=chunker, embedder=embedder, index=index, k=k)


def check_chunker(spec: str) -> str | None:
    """Why ``spec`` is not a chunker context-grid can build offline, or None."""
    try:
        cg.get_chunker(spec)
    except Exception as exc:  # the registry raises several kinds, all worded for people
        return str(exc)
    return None


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    text: str
    gold: tuple[judging.Gold, ...]


@dataclass(slots=True)
class CellResult:
    questions: dict[str, dict] = field(default_factory=dict)
    chunks: int = 0
    warnings: list[str] = field(default_factory=list)


def _evalset(questions: Sequence[Question]) -> EvalSet:
    items = tuple(
        EvalItem(
            id=q.id,
            question=q.text,
            gold=tuple(GoldSpan(Span(s, a, b), grade) for s, a, b, grade in q.gold),
        )
        for q in questions
    )
    return EvalSet(id="release", items=items)


def run_cell(
    texts: Mapping[str, str],
    questions: Sequence[Question],
    *,
    chunker: str,
    retriever: str,
    k: int,
    policy: Mapping,
    cache: cg.Cache | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> CellResult:
    """Build the cell's pipeline, rank every question and judge it. Questions without
    gold in this parse are judged as lost without being searched."""
    corpus = cg.Corpus.from_texts(dict(texts), media_type=cg.MediaType.TEXT)
    pipeline = cg.build(config(chunker, retriever, k), corpus, cache=cache)
    placed = [q for q in questions if q.gold]
    qrels, _ = build_qrels(_evalset(placed), pipeline.chunks, judging.span_resolver(policy))
    by_id = pipeline.chunk_by_id()
    result = CellResult(chunks=len(pipeline.chunks))
    result.warnings = [w.message for w in pipeline.warnings][:20]
    for done, question in enumerate(questions, start=1):
        result.questions[question.id] = _judge(pipeline, by_id, qrels, question, k).as_dict()
        if progress is not None:
            progress(done, len(questions))
    return result


def _judge(pipeline, by_id, qrels, question: Question, k: int) -> judging.Judged:
    if not question.gold:
        return judging.lost(k)
    ranked = pipeline.scored_ids(pipeline.search(question.text, max(k, DEPTH)))
    spans = [by_id[chunk_id].span for chunk_id in ranked]
    gold = [span for span, _ in judging.gold_spans(question.gold)]
    return judging.judged(qrels.get(question.id, {}), ranked, spans, gold, k)
