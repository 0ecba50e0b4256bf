"""Experiments: the same grid through context-grid's own ``Lab`` in one process and through
Groundwork's workers (1 and 2), and scoring an uploaded run with and without offsets.

Why it exists: an experiment's cells run as separate Celery tasks so any number of workers
can share a grid. That is only worth it if a cell costs no more than the library spends on
it alone, and if a second worker nearly halves the wall time. The peer, in the same run:
``contextgrid.Lab`` over the same texts, gold spans, chunkers and retrievers, one process,
its own in-memory cache shared by all its cells (as the workers share a disk cache).

Part two scores an uploaded run of ``--run-questions`` questions x 10 chunks as
``evalsets.pure.scoring`` does on commit (read, check against the texts, place, judge),
once with offsets and once with texts only (each chunk placed by the resolver), with
ir-measures on the same judgements as a peer. CPU seconds (``time.process_time``).

Run: ``.venv/bin/python bench/experiment_bench.py [--questions 300] [--documents 10]
[--run-questions 1000] [--skip-workers]``. The worker part uses a database
``gw_bench_experiments`` of its own and Redis db 13, both emptied first; everything on
127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time

import _services as svc

sys.path.insert(0, str(svc.ROOT))

import contextgrid as cg
import ir_measures

from evalsets.pure.scoring import grid, judging, runfile
from tests import synthetic_corpus

DATABASE = "gw_bench_experiments"
REDIS_DB = 13
CHUNKERS = ["recursive:128", "recursive:256"]
RETRIEVERS = list(grid.RETRIEVERS)
K = 5


def parser_texts(args) -> dict[str, dict[str, str]]:
    """Two 'parsers' of the same documents: the second drops every 40th line."""
    texts = synthetic_corpus.corpus(args.documents, args.sentences)
    lossy = {
        name: "".join(line for i, line in enumerate(text.splitlines(True)) if i % 40 != 39)
        for name, text in texts.items()
    }
    return {"clean": texts, "lossy": lossy}


def gold_in(texts: dict[str, str], questions: list[grid.Question]) -> list[grid.Question]:
    """The questions with their evidence placed in ``texts`` (lost where the line is gone)."""
    out = []
    for q in questions:
        source, _, _, grade = q.gold[0]
        line = q.text  # the question is the sentence's first 60 characters
        where = texts[source].find(line)
        if where < 0:
            out.append(grid.Question(q.id, q.text, ()))
            continue
        stop = texts[source].index("\n", where)
        out.append(grid.Question(q.id, q.text, ((source, where, stop, grade),)))
    return out


def lab_alone(parsers, questions) -> tuple[float, int]:
    """context-grid's Lab, one process: CPU seconds for the whole grid, and its cells."""
    cells = 0
    started = time.process_time()
    for texts in parsers.values():
        placed = gold_in(texts, questions)
        items = tuple(
            cg.EvalItem(
                id=q.id,
                question=q.text,
                gold=tuple(cg.GoldSpan(cg.Span(s, a, b), g) for s, a, b, g in q.gold),
            )
            for q in placed
        )
        evalset = cg.EvalSet(id="bench", items=items)
        lab = cg.Lab(cg.Corpus.from_texts(texts, media_type=cg.MediaType.TEXT))
        for retriever in RETRIEVERS:
            embedder, index = grid.RETRIEVERS[retriever]
            lab.grid(parser="text", chunker=CHUNKERS, embedder=embedder, index=index, k=K)
            results = lab.run(evalset, mode="factorial", headline=f"recall@{K}")
            cells += len(results.runs)
    return time.process_time() - started, cells


def seed(parsers, questions) -> list[int]:
    """One experiment per worker count to come, each with the whole grid as cells."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from evalsets.documents import services as documents_services
    from evalsets.models import (
        Document,
        EvalSet,
        Experiment,
        ExperimentCell,
        Membership,
        Release,
        Workspace,
    )

    owner = get_user_model().objects.create_user("owner")
    workspace = Workspace.objects.create(slug="bench", name="Bench")
    Membership.objects.create(workspace=workspace, user=owner, role="owner")
    evalset = EvalSet.objects.create(workspace=workspace, slug="grid", created_by=owner)
    release = Release.objects.create(
        evalset=evalset,
        version=1,
        resolver_version="bench",
        frozen_at=timezone.now(),
        status="ready",
    )
    corpus: dict[str, dict[str, int]] = {}
    gold: dict[str, dict] = {}
    for n, (parser, texts) in enumerate(parsers.items()):
        corpus[parser] = {}
        for source_id, text in texts.items():
            document, _ = Document.objects.get_or_create(
                workspace=workspace,
                source_id=source_id,
                defaults={"sha256": source_id.ljust(64, "0")},
            )
            parse = documents_services.parse_version_add(
                document=document, parser=parser, parser_version=str(n), text=text
            )
            corpus[parser][source_id] = parse.pk
        gold[parser] = {q.id: [list(g) for g in q.gold] for q in gold_in(texts, questions)}
    ids = []
    for _ in (1, 2):
        experiment = Experiment.objects.create(
            evalset=evalset,
            release=release,
            kind="grid",
            parsers=list(parsers),
            chunkers=CHUNKERS,
            retrievers=RETRIEVERS,
            k=K,
            policy={"policy": "coverage", "threshold": 0.5},
            corpus=corpus,
            gold=gold,
            questions={q.id: q.text for q in questions},
            created_by=owner,
        )
        cells = [(p, c, r) for p in parsers for c in CHUNKERS for r in RETRIEVERS]
        ExperimentCell.objects.bulk_create(
            ExperimentCell(
                experiment=experiment,
                position=i,
                parser=p,
                chunker=c,
                retriever=r,
                progress_total=len(questions),
            )
            for i, (p, c, r) in enumerate(cells)
        )
        ids.append(experiment.pk)
    return ids


def through_workers(env, experiment_id: int, workers: int) -> tuple[float, float, int]:
    """Wall seconds until the experiment completes on ``workers`` worker processes (each
    with a fresh disk cache), the cells' summed CPU seconds, and the cell count."""
    from evalsets import queue
    from evalsets.models import Experiment

    cache = tempfile.mkdtemp(prefix="gw-exp-cache-")
    with svc.Stack({**env, "GROUNDWORK_EXPERIMENT_CACHE_DIR": cache}) as stack:
        stack.celery_workers(workers)
        experiment = Experiment.objects.get(pk=experiment_id)
        started = time.perf_counter()
        for cell in experiment.cells.all():
            queue.send("run_experiment_cell", cell.pk)
        while not Experiment.objects.filter(pk=experiment_id, status="complete").exists():
            time.sleep(0.2)
        wall = time.perf_counter() - started
    cells = list(Experiment.objects.get(pk=experiment_id).cells.values_list("seconds", "status"))
    assert all(status == "done" for _, status in cells), cells
    return wall, sum(s for s, _ in cells), len(cells)


# -- scoring an uploaded run ------------------------------------------------------------------


def run_file(texts, questions, rng, *, offsets: bool) -> bytes:
    lines = []
    for q in questions:
        source, start, end, _ = q.gold[0]
        spans = [(source, start, end)]
        names = sorted(texts)
        while len(spans) < 10:
            other = names[rng.randrange(len(names))]
            text = texts[other]
            a = text.index("\n", rng.randrange(0, len(text) - 200)) + 1
            spans.append((other, a, text.index("\n", a)))
        rng.shuffle(spans)
        retrieved = []
        for s, a, b in spans:
            chunk = {"source_id": s, "text": texts[s][a:b]}
            if offsets:
                chunk.update(start=a, end=b)
            retrieved.append(chunk)
        lines.append(json.dumps({"question_id": q.id, "retrieved": retrieved}))
    return "\n".join(lines).encode()


def score_run(data: bytes, texts, questions) -> tuple[float, dict]:
    started = time.process_time()
    run = runfile.read_jsonl(data, max_bytes=1 << 30)
    corpus = runfile.Corpus(
        questions=frozenset(q.id for q in questions),
        texts={(s, "p"): t for s, t in texts.items()},
        default_parser=dict.fromkeys(texts, "p"),
    )
    assert not run.problems
    assert not runfile.check(run, corpus, max_placed=run.chunk_count())
    placed, unplaced = runfile.place(run, corpus)
    gold = {"p": {q.id: [list(g) for g in q.gold] for q in questions}}
    judged = judging.judge_run(
        placed, gold, [q.id for q in questions], corpus.default_parser, {}, K
    )
    return time.process_time() - started, {"judged": judged, "unplaced": len(unplaced)}


def ir_measures_peer(texts, questions, data: bytes) -> float:
    """ir-measures computing the same five ranked metrics from the same file's judgements."""
    started = time.process_time()
    run = runfile.read_jsonl(data, max_bytes=1 << 30)
    resolver = judging.span_resolver({})
    qrels, ranking = {}, {}
    for q in questions:
        source, a, b, grade = q.gold[0]
        gold = cg.Span(source, a, b)
        chunks = run.questions[q.id]
        qrels[q.id] = {"gold": grade}
        ranking[q.id] = {}
        for rank, c in enumerate(chunks):
            relevant = resolver.is_relevant(cg.Span(c.source_id, c.start, c.end), gold)
            ranking[q.id]["gold" if relevant else f"r{rank}"] = float(len(chunks) - rank)
    measures = [
        ir_measures.R @ K,
        ir_measures.P @ K,
        ir_measures.Success @ K,
        ir_measures.RR @ K,
        ir_measures.nDCG @ K,
    ]
    ir_measures.calc_aggregate(measures, qrels, ranking)
    return time.process_time() - started


def run_scoring(args) -> None:
    texts = synthetic_corpus.corpus(args.documents, args.sentences, seed=7)
    questions = synthetic_corpus.questions(texts, args.run_questions, seed=7)
    rng = random.Random(3)
    with_offsets = run_file(texts, questions, rng, offsets=True)
    texts_only = run_file(texts, questions, random.Random(3), offsets=False)
    rows = []
    cpu, one = score_run(with_offsets, texts, questions)
    rows.append(["Groundwork, with offsets (read, check, judge)", f"{cpu:.3f}"])
    cpu2, two = score_run(texts_only, texts, questions)
    rows.append(["Groundwork, texts only (each chunk placed by the resolver)", f"{cpu2:.3f}"])
    rows.append(
        [
            "peer: ir-measures on the same judgements (with offsets)",
            f"{ir_measures_peer(texts, questions, with_offsets):.3f}",
        ]
    )
    same = one["judged"] == two["judged"]
    print()
    print(f"scoring an uploaded run: {args.run_questions:,} questions x 10 chunks, k={K}")
    print(svc.table(["path", "CPU seconds"], rows))
    print(f"  texts-only judged the same as with offsets: {same}; unplaced: {two['unplaced']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--documents", type=int, default=10)
    parser.add_argument("--sentences", type=int, default=400, help="per document")
    parser.add_argument("--run-questions", type=int, default=1000)
    parser.add_argument("--skip-workers", action="store_true", help="Lab and run scoring only")
    args = parser.parse_args()

    parsers = parser_texts(args)
    questions = synthetic_corpus.questions(parsers["clean"], args.questions)
    print(
        f"grid: 2 parsers x {len(CHUNKERS)} chunkers x {len(RETRIEVERS)} retrievers, "
        f"{args.questions} questions over {args.documents} documents",
        flush=True,
    )
    lab_cpu, lab_cells = lab_alone(parsers, questions)
    rows = [
        ["peer: contextgrid.Lab, 1 process", lab_cells, lab_cpu, lab_cpu / lab_cells, lab_cpu, 1.0]
    ]
    if not args.skip_workers:
        env = svc.prepare(DATABASE, REDIS_DB)
        experiments = seed(parsers, questions)
        one_wall = None
        for workers, experiment_id in zip((1, 2), experiments, strict=True):
            wall, cpu, cells = through_workers(env, experiment_id, workers)
            one_wall = one_wall or wall
            rows.append(
                [f"Groundwork, {workers} worker(s)", cells, cpu, cpu / cells, wall, one_wall / wall]
            )
    print()
    print(
        svc.table(
            ["path", "cells", "CPU s (cells)", "CPU s per cell", "wall s", "speed-up vs 1 worker"],
            rows,
        )
    )
    print("  Lab's wall time is its CPU time (one process, nothing else waited for).")
    run_scoring(args)


if __name__ == "__main__":
    main()
