"""Starting and cancelling experiments, and scoring a team's uploaded retrieval run.

An experiment is started on a frozen release: its corpus (each parser's parse of each
document) and gold (each item's evidence placed in those parses by the stored resolutions)
are read once, here, and stored on it, so its cells and any re-run score the very same
thing. Each cell is queued as its own task after the write commits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evalsets import access, queue
from evalsets.errors import Conflict, InvalidInput
from evalsets.experiments import cells, frozen
from evalsets.models import (
    CellStatus,
    EvalSet,
    Experiment,
    ExperimentCell,
    ExperimentKind,
    ExperimentStatus,
    ParseVersion,
    Release,
    ReleaseStatus,
)
from evalsets.pure.scoring import grid, judging, runfile

#: The most cells one experiment may hold, and the deepest k: a grid is CPU on shared workers.
MAX_CELLS = 36
MAX_K = 50
DEFAULT_POLICY = {"policy": "coverage", "threshold": 0.5}


def _release(evalset: EvalSet, version: int) -> Release:
    release = evalset.releases.filter(version=version).first()
    if release is None:
        raise InvalidInput(f"{evalset.slug!r} has no release {version}", field="release")
    if release.frozen_at is None or release.status == ReleaseStatus.FAILED:
        raise Conflict(f"release {version} failed, so it cannot be scored", field="release")
    return release


def _names(values, what: str) -> list[str]:
    names = [str(v).strip() for v in values or [] if str(v).strip()]
    if not names:
        raise InvalidInput(f"choose at least one {what}", field=f"{what}s")
    if len(set(names)) != len(names):
        raise InvalidInput(f"a {what} is listed twice", field=f"{what}s")
    return names


def _check_grid(parsers, chunkers, retrievers, k: int, available: list[str]) -> None:
    for parser in parsers:
        if parser not in available:
            known = ", ".join(available) or "none yet"
            raise InvalidInput(
                f"no document has a ready {parser!r} parse (ready: {known})", field="parsers"
            )
    for chunker in chunkers:
        if (why := grid.check_chunker(chunker)) is not None:
            raise InvalidInput(f"chunker {chunker!r}: {why}", field="chunkers")
    for retriever in retrievers:
        if retriever not in grid.RETRIEVERS:
            known = ", ".join(grid.RETRIEVERS)
            raise InvalidInput(
                f"unknown retriever {retriever!r}; choose from {known}", field="retrievers"
            )
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}", field="k")
    cells_wanted = len(parsers) * len(chunkers) * len(retrievers)
    if cells_wanted > MAX_CELLS:
        raise InvalidInput(
            f"that grid has {cells_wanted} cells; at most {MAX_CELLS} run in one experiment",
            field="chunkers",
        )


def _policy(policy: dict | None) -> dict:
    chosen = {**DEFAULT_POLICY, **(policy or {})}
    try:
        judging.span_resolver(chosen)
    except ValueError as exc:
        raise InvalidInput(f"relevance policy: {exc}", field="policy") from None
    return {"policy": chosen["policy"], "threshold": float(chosen["threshold"])}


def experiment_start(
    *,
    evalset: EvalSet,
    user,
    release: int,
    parsers: list[str],
    chunkers: list[str],
    retrievers: list[str],
    k: int = 5,
    policy: dict | None = None,
    name: str = "",
) -> Experiment:
    """Freeze what the grid scores, make one cell per parser x chunker x retriever, and
    queue every cell once the write commits."""
    access.check_user(
        user=user,
        workspace=evalset.workspace,
        needed=access.RUN_EXPERIMENTS,
        what="starting an experiment",
        field="release",
    )
    chosen = _release(evalset, release)
    parsers = _names(parsers, "parser")
    chunkers = _names(chunkers, "chunker")
    retrievers = _names(retrievers, "retriever")
    _check_grid(parsers, chunkers, retrievers, k, frozen.parsers_available(evalset.workspace))
    items = frozen.released_items(chosen)
    questions = frozen.questions(items)
    if not questions:
        raise Conflict(f"release {release} has no item with evidence to score", field="release")
    parses = frozen.ready_parses(evalset.workspace, parsers)
    with transaction.atomic():
        experiment = Experiment.objects.create(
            evalset=evalset,
            release=chosen,
            kind=ExperimentKind.GRID,
            name=name[:200],
            parsers=parsers,
            chunkers=chunkers,
            retrievers=retrievers,
            k=k,
            policy=_policy(policy),
            corpus={p: {s: parse.pk for s, parse in parses[p].items()} for p in parsers},
            gold={p: frozen.gold_in(chosen, items, parses[p]) for p in parsers},
            questions=questions,
            created_by=user,
        )
        grid_cells = ExperimentCell.objects.bulk_create(
            ExperimentCell(
                experiment=experiment,
                position=i,
                parser=p,
                chunker=c,
                retriever=r,
                progress_total=len(questions),
            )
            for i, (p, c, r) in enumerate(
                (p, c, r) for p in parsers for c in chunkers for r in retrievers
            )
        )
        # Queued retriever by retriever, so workers starting together take cells of different
        # parsers and chunkers and none waits to chunk what another is chunking already.
        for cell in sorted(grid_cells, key=lambda c: (retrievers.index(c.retriever), c.position)):
            queue.after_commit("run_experiment_cell", cell.pk)
    return experiment


def experiment_rerun(*, experiment: Experiment, user) -> Experiment:
    """The same grid started again on the same release: its numbers are the original's
    unless the release's evidence was placed differently since (a resolution confirmed)."""
    if experiment.kind != ExperimentKind.GRID:
        raise Conflict(
            "an uploaded run is scored once; upload it again to score it again", field="kind"
        )
    return experiment_start(
        evalset=experiment.evalset,
        user=user,
        release=experiment.release.version,
        parsers=experiment.parsers,
        chunkers=experiment.chunkers,
        retrievers=experiment.retrievers,
        k=experiment.k,
        policy=experiment.policy,
        name=experiment.name,
    )


def experiment_cancel(*, experiment: Experiment, user) -> Experiment:
    """Stop an experiment: its queued and running cells are cancelled (a running one's
    results are dropped when it ends). A finished experiment never changes."""
    access.check_user(
        user=user,
        workspace=experiment.evalset.workspace,
        needed=access.RUN_EXPERIMENTS,
        what="cancelling an experiment",
        field="status",
    )
    with transaction.atomic():
        locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
        if locked.is_finished:
            raise Conflict(
                f"this experiment is {locked.status}; it can no longer change", field="status"
            )
        locked.cells.filter(status__in=[CellStatus.QUEUED, CellStatus.RUNNING]).update(
            status=CellStatus.CANCELLED, claimed_by=""
        )
        locked.status = ExperimentStatus.CANCELLED
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "finished_at"])
    return locked


# -- uploaded runs ----------------------------------------------------------------------------


@dataclass
class RunPlan:
    """What an uploaded run would be scored as: refused while ``problems`` is not empty."""

    release: int
    questions: int = 0
    chunks: int = 0
    problems: list[runfile.Problem] = field(default_factory=list)
    unplaced: list[runfile.Problem] = field(default_factory=list)
    placed: dict = field(default_factory=dict)
    corpus: runfile.Corpus | None = None
    parses: dict = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "release": self.release,
            "accepted": self.accepted,
            "questions": self.questions,
            "chunks": self.chunks,
            "problems": [p.as_dict() for p in self.problems],
            "unplaced": [p.as_dict() for p in self.unplaced],
        }


def _read_run(data: bytes, chunks: bytes | None, fmt: str) -> runfile.RunFile:
    limit = settings.GROUNDWORK_MAX_RUN_BYTES
    if fmt == "jsonl":
        return runfile.read_jsonl(data, max_bytes=limit)
    if fmt == "trec":
        if chunks is None:
            raise InvalidInput("a TREC run needs its chunk file too", field="chunks")
        return runfile.read_trec(data, chunks, max_bytes=limit)
    raise InvalidInput(f"unknown run format {fmt!r}; use jsonl or trec", field="format")


def _run_corpus(
    release: Release, run: runfile.RunFile, questions: dict
) -> tuple[runfile.Corpus, dict]:
    """The texts a run names, each document's default parser (the one the release's files
    read) and ``{(source_id, parser): parse}``."""
    defaults = dict(
        ParseVersion.objects.filter(pk__in=list((release.texts or {}).values())).values_list(
            "document__source_id", "parser"
        )
    )
    wanted = {
        (c.source_id, c.parser or defaults.get(c.source_id))
        for q in run.questions.values()
        for c in q
    }
    by_parser = frozen.run_parses(release, {p for _, p in wanted if p})
    parses = {(s, p): by_parser[p][s] for s, p in wanted if p and s in by_parser.get(p, {})}
    texts = dict(
        ParseVersion.objects.filter(pk__in=[v.pk for v in parses.values()]).values_list(
            "pk", "text"
        )
    )
    corpus = runfile.Corpus(
        questions=frozenset(questions),
        texts={key: texts[parse.pk] for key, parse in parses.items()},
        default_parser=defaults,
    )
    return corpus, parses


def run_preview(
    *,
    evalset: EvalSet,
    user,
    release: int,
    data: bytes,
    chunks: bytes | None = None,
    fmt: str = "jsonl",
) -> RunPlan:
    """Read, check and place an uploaded run without storing anything."""
    access.check_user(
        user=user,
        workspace=evalset.workspace,
        needed=access.RUN_EXPERIMENTS,
        what="uploading a run",
        field="file",
    )
    chosen = _release(evalset, release)
    run = _read_run(data, chunks, fmt)
    plan = RunPlan(release=release, problems=list(run.problems))
    plan.questions, plan.chunks = len(run.questions), run.chunk_count()
    # The lines that were read are checked too, so one preview names every problem.
    questions = frozen.questions(frozen.released_items(chosen))
    plan.corpus, plan.parses = _run_corpus(chosen, run, questions)
    plan.problems += runfile.check(run, plan.corpus, max_placed=settings.GROUNDWORK_RUN_MAX_PLACED)
    plan.problems.sort(key=lambda p: (p.line or 0, p.field))
    if not plan.problems:
        plan.placed, plan.unplaced = runfile.place(run, plan.corpus)
    return plan


def run_commit(
    *,
    evalset: EvalSet,
    user,
    release: int,
    data: bytes,
    filename: str,
    name: str = "",
    k: int = 5,
    chunks: bytes | None = None,
    fmt: str = "jsonl",
) -> Experiment:
    """Score an uploaded run and store it as a complete experiment of one cell; a run with
    any problem is refused and nothing is stored."""
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be between 1 and {MAX_K}", field="k")
    plan = run_preview(
        evalset=evalset, user=user, release=release, data=data, chunks=chunks, fmt=fmt
    )
    if not plan.accepted:
        raise InvalidInput(
            f"the run has {len(plan.problems)} problem(s); nothing was stored",
            field="file",
            extra={"problems": [p.as_dict() for p in plan.problems[:200]]},
        )
    chosen = _release(evalset, release)
    items = frozen.released_items(chosen)
    questions = frozen.questions(items)
    policy = dict(DEFAULT_POLICY)
    parser_names = sorted({p for _, p in plan.parses} | set(plan.corpus.default_parser.values()))
    by_parser = frozen.run_parses(chosen, parser_names)
    gold = {p: frozen.gold_in(chosen, items, by_parser[p]) for p in parser_names}
    judged = judging.judge_run(
        plan.placed, gold, list(questions), plan.corpus.default_parser, policy, k
    )
    label = name.strip()[:64] or filename[:64]
    with transaction.atomic():
        experiment = Experiment.objects.create(
            evalset=evalset,
            release=chosen,
            kind=ExperimentKind.RUN,
            name=label,
            parsers=parser_names,
            chunkers=["uploaded"],
            retrievers=[label],
            k=k,
            policy=policy,
            corpus={p: {s: v.pk for s, v in by_parser[p].items()} for p in parser_names},
            gold=gold,
            questions=questions,
            upload={
                "filename": filename,
                "sha256": hashlib.sha256(data + (chunks or b"")).hexdigest(),
                "format": fmt,
                "unplaced": [p.as_dict() for p in plan.unplaced],
            },
            status=ExperimentStatus.COMPLETE,
            finished_at=timezone.now(),
            created_by=user,
        )
        ExperimentCell.objects.create(
            experiment=experiment,
            position=0,
            parser="uploaded",
            chunker="uploaded",
            retriever=label,
            status=CellStatus.DONE,
            progress_done=len(judged),
            progress_total=len(judged),
            results=judged,
            summary=cells.cell_summary(judged, k, experiment.seed),
        )
    return experiment
