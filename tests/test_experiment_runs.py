"""Uploaded retrieval runs: read, checked, placed and judged like the built-in grid."""

from __future__ import annotations

import json

import pytest

from evalsets.documents import services as documents_services
from evalsets.errors import InvalidInput
from evalsets.experiments import selectors, services
from evalsets.models import Document, Experiment
from evalsets.pure.scoring import judging
from tests import experiments_world
from tests.experiments_world import ITEMS, POLICY_TEXT, SAFETY_TEXT

pytestmark = pytest.mark.django_db

TEXTS = {"policy.txt": POLICY_TEXT, "safety.txt": SAFETY_TEXT}
DISTRACTOR = ("policy.txt", "Meals are reimbursed against receipts, up to 45 euros per day.")


@pytest.fixture
def release(workspace, evalset, annotator, owner, django_capture_on_commit_callbacks):
    return experiments_world.build(
        workspace, evalset, annotator, owner, django_capture_on_commit_callbacks
    )


def chunk(source_id: str, text: str, *, offsets: bool, **extra) -> dict:
    out = {"source_id": source_id, "text": text, **extra}
    if offsets:
        start = TEXTS[source_id].index(text)
        out.update(start=start, end=start + len(text))
    return out


def run_lines(*, offsets: bool) -> list[dict]:
    """Evidence at rank 2 for the t items, at rank 1 for s1, never for s2."""
    lines = []
    for item_id, _, source_id, quote in ITEMS:
        distractor = chunk(*DISTRACTOR, offsets=offsets)
        evidence = chunk(source_id, quote, offsets=offsets)
        if item_id.startswith("t"):
            ranked = [distractor, evidence]
        elif item_id == "s1":
            ranked = [evidence, distractor]
        else:
            ranked = [distractor]
        lines.append({"question_id": item_id, "retrieved": ranked})
    return lines


def jsonl(lines) -> bytes:
    return "\n".join(json.dumps(line) for line in lines).encode()


def commit(evalset, user, data: bytes, **kwargs) -> Experiment:
    return services.run_commit(
        evalset=evalset, user=user, release=1, data=data, filename="run.jsonl", k=1, **kwargs
    )


def test_a_run_with_texts_only_is_judged_the_same_as_the_same_run_with_offsets(
    release, evalset, reviewer
):
    with_offsets = commit(evalset, reviewer, jsonl(run_lines(offsets=True)))
    texts_only = commit(evalset, reviewer, jsonl(run_lines(offsets=False)))
    one, two = with_offsets.cells.get(), texts_only.cells.get()
    assert one.results == two.results
    assert one.summary == two.summary
    assert texts_only.upload["unplaced"] == []
    assert one.results["t1"]["why"] == judging.RANKED_TOO_LOW and one.results["t1"]["rank"] == 2
    assert one.results["s1"]["why"] == judging.HIT
    assert one.results["s2"]["why"] == judging.NEVER_RETRIEVED
    assert one.summary["metrics"]["hit_rate"]["mean"] == pytest.approx(0.2)


def test_a_trec_run_and_its_chunk_file_are_judged_like_the_same_jsonl(release, evalset, reviewer):
    lines = run_lines(offsets=False)
    chunks, trec = {}, []
    for line in lines:
        for rank, entry in enumerate(line["retrieved"], start=1):
            chunk_id = f"{entry['source_id']}#{entry['text'][:12]}"
            chunks[chunk_id] = {"chunk_id": chunk_id, **entry}
            trec.append(
                f"{line['question_id']} Q0 {chunk_id.replace(' ', '_')} {rank} {10 - rank} t"
            )
            chunks[chunk_id]["chunk_id"] = chunk_id.replace(" ", "_")
    chunk_file = "\n".join(json.dumps(c) for c in chunks.values()).encode()
    from_trec = commit(evalset, reviewer, "\n".join(trec).encode(), chunks=chunk_file, fmt="trec")
    from_jsonl = commit(evalset, reviewer, jsonl(lines))
    assert from_trec.cells.get().results == from_jsonl.cells.get().results


def test_a_chunk_that_cannot_be_placed_is_named_and_retrieves_nothing(release, evalset, reviewer):
    lines = run_lines(offsets=False)
    lines[3]["retrieved"].insert(
        0, chunk("safety.txt", "This sentence is in no document.", offsets=False)
    )
    plan = services.run_preview(evalset=evalset, user=reviewer, release=1, data=jsonl(lines))
    assert plan.accepted
    assert [(p.line, p.field) for p in plan.unplaced] == [(4, "retrieved[0].text")]
    assert "could not be placed" in plan.unplaced[0].message
    experiment = commit(evalset, reviewer, jsonl(lines))
    assert experiment.cells.get().results["s1"]["why"] == judging.RANKED_TOO_LOW


def _hostile_cases():
    good = run_lines(offsets=True)

    def changed(index, **fields):
        lines = json.loads(json.dumps(good))
        lines[index].update(fields)
        return jsonl(lines)

    outside = json.loads(json.dumps(good))
    outside[1]["retrieved"][0].update(start=5000, end=5010)
    nan = json.loads(json.dumps(good))
    nan[2]["retrieved"][0]["score"] = float("nan")
    unknown_doc = json.loads(json.dumps(good))
    unknown_doc[0]["retrieved"][1]["source_id"] = "missing.pdf"
    twice = jsonl([*good, good[0]])
    half = {"source_id": "policy.txt", "text": "x"}
    return [
        (changed(0, question_id="nope"), 1, "question_id", "unknown question"),
        (jsonl(outside), 2, "retrieved[0].end", "outside"),
        (jsonl(nan).replace(b"NaN", b"NaN"), 3, "retrieved[0].score", "not a finite number"),
        (jsonl(unknown_doc), 1, "retrieved[1].source_id", "unknown document"),
        (twice, 6, "question_id", "already ranked on line 1"),
        (changed(4, retrieved="lots"), 5, "retrieved", "must be a list"),
        (b'{"question_id": "t1", "retrieved": [\n', 1, "file", "not JSON"),
        (b"\xff\xfe\x00garbage", None, "file", "not UTF-8"),
        (changed(0, retrieved=[{**half, "start": 3}]), 1, "retrieved[0]", "both start and end"),
        (changed(0, retrieved=[{**half, "parser": "ocr"}]), 1, "retrieved[0].parser", "no ready"),
        (changed(1, retrieved=[{**half, "text": "x" * 20_001}]), 2, "retrieved[0].text", "at most"),
    ]


@pytest.mark.parametrize(("data", "line", "field", "words"), _hostile_cases())
def test_a_hostile_run_file_is_refused_naming_line_and_field_and_stores_nothing(
    release, evalset, reviewer, data, line, field, words
):
    plan = services.run_preview(evalset=evalset, user=reviewer, release=1, data=data)
    assert not plan.accepted
    assert any(p.line == line and p.field == field and words in p.message for p in plan.problems), (
        plan.to_dict()["problems"]
    )
    with pytest.raises(InvalidInput) as refused:
        commit(evalset, reviewer, data)
    assert refused.value.extra["problems"]
    assert not Experiment.objects.exists()


def test_a_trec_run_with_duplicate_ranks_and_unknown_chunks_is_refused(release, evalset, reviewer):
    chunk_file = json.dumps({"chunk_id": "c1", **chunk(*DISTRACTOR, offsets=True)}).encode()
    trec = b"t1 Q0 c1 1 2.0 x\nt1 Q0 c2 1 1.0 x\nt2 Q0 c1 1 inf x\nt3 Q0 c1 one 1 x\n"
    plan = services.run_preview(
        evalset=evalset, user=reviewer, release=1, data=trec, chunks=chunk_file, fmt="trec"
    )
    found = {(p.line, p.field) for p in plan.problems}
    assert found == {(2, "run.rank"), (2, "run.chunk_id"), (3, "run.score"), (4, "run.rank")}


def test_a_run_over_the_size_limit_is_refused_before_it_is_read(
    release, evalset, reviewer, settings
):
    settings.GROUNDWORK_MAX_RUN_BYTES = 100
    plan = services.run_preview(
        evalset=evalset, user=reviewer, release=1, data=jsonl(run_lines(offsets=True))
    )
    assert [(p.line, p.field) for p in plan.problems] == [(None, "file")]
    assert "the limit is 100" in plan.problems[0].message


def test_a_run_with_more_text_only_chunks_than_the_web_process_places_is_refused(
    release, evalset, reviewer, settings
):
    # Placing a chunk by its text runs the resolver in the request, so their number is capped;
    # chunks with offsets cost nothing and do not count.
    settings.GROUNDWORK_RUN_MAX_PLACED = 3
    texts_only = jsonl(run_lines(offsets=False))
    plan = services.run_preview(evalset=evalset, user=reviewer, release=1, data=texts_only)
    assert not plan.accepted
    assert [(p.line, p.field) for p in plan.problems] == [(None, "retrieved")]
    assert "at most 3" in plan.problems[0].message
    assert "GROUNDWORK_RUN_MAX_PLACED" in plan.problems[0].message
    assert not plan.placed
    with_offsets = services.run_preview(
        evalset=evalset, user=reviewer, release=1, data=jsonl(run_lines(offsets=True))
    )
    assert with_offsets.accepted


def test_an_uploaded_run_compares_with_a_grid_row_on_the_same_questions(
    release, evalset, reviewer, django_capture_on_commit_callbacks
):
    uploaded = commit(evalset, reviewer, jsonl(run_lines(offsets=True)))
    with django_capture_on_commit_callbacks(execute=True):
        grid = services.experiment_start(
            evalset=evalset,
            user=reviewer,
            release=1,
            parsers=["plaintext"],
            chunkers=["recursive:64"],
            retrievers=["bm25"],
            k=1,
        )
    ours = selectors.cell_by_ref(evalset, str(grid.public_id), "baseline")
    theirs = selectors.cell_by_ref(evalset, f"{uploaded.public_id}:0", "candidate")
    comparison = selectors.compare(theirs, ours)
    assert comparison["n"] == 5 and comparison["left_mean"] == pytest.approx(0.2)


def test_a_run_is_read_against_the_parse_the_release_files_read_not_a_newer_one(
    release, evalset, reviewer
):
    policy = Document.objects.get(source_id="policy.txt")
    documents_services.parse_version_add(
        document=policy, parser="plaintext", parser_version="2", text="Preface.\n" + POLICY_TEXT
    )
    experiment = commit(evalset, reviewer, jsonl(run_lines(offsets=True)))
    assert experiment.cells.get().results["s1"]["why"] == judging.HIT
    assert experiment.cells.get().results["t1"]["why"] == judging.RANKED_TOO_LOW
