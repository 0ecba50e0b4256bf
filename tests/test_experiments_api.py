"""The experiments API end to end: start, follow, download, upload a run, compare, gate; an
experiment of another workspace is a 404 even to a member of both."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.anchoring import services as anchoring_services
from evalsets.models import Experiment, Membership, Role
from tests import experiments_world

pytestmark = pytest.mark.django_db

BASE = "/api/workspaces/acme/evalsets/quiz/experiments/"
GRID = {
    "release": 1,
    "parsers": ["plaintext", "lossy"],
    "chunkers": ["recursive:64"],
    "retrievers": ["bm25"],
    "k": 3,
}


@pytest.fixture
def release(workspace, evalset, annotator, owner, django_capture_on_commit_callbacks):
    return experiments_world.build(
        workspace, evalset, annotator, owner, django_capture_on_commit_callbacks
    )


def run_upload(lines) -> SimpleUploadedFile:
    data = "\n".join(json.dumps(line) for line in lines).encode()
    return SimpleUploadedFile("run.jsonl", data, content_type="application/jsonl")


def test_a_reviewer_starts_a_grid_follows_it_and_downloads_its_results(
    release, client_for, reviewer, django_capture_on_commit_callbacks
):
    client = client_for(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(BASE, GRID, format="json")
    assert started.status_code == 202, started.json()
    detail = client.get(f"{BASE}{started.json()['id']}/").json()
    assert detail["status"] == "complete"
    assert [(c["parser"], c["status"], c["percent"]) for c in detail["cells"]] == [
        ("plaintext", "done", 100),
        ("lossy", "done", 100),
    ]
    csv = client.get(f"{BASE}{detail['id']}/results/csv")
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert (
        b"lossy \xc2\xb7 recursive:64 \xc2\xb7 bm25,lossy,recursive:64,bm25,0.800000" in csv.content
    )
    missing = client.get(f"{BASE}{detail['id']}/results/xlsx")
    assert missing.status_code == 400 and "choose from json, csv, md" in missing.json()["detail"]
    misses = client.get(f"{BASE}{detail['id']}/misses/").json()["results"]
    assert [m["question_id"] for m in misses] == ["s2"]
    compared = client.get(f"{BASE}{detail['id']}/compare/?left=0&right=1&metric=ndcg").json()
    assert compared["difference"] == pytest.approx(0.2) and compared["metric"] == "ndcg@3"
    gate = client.get(f"{BASE}{detail['id']}/gate/?cell=1&baseline=0&tolerance=-0.7").json()
    assert gate["passed"] is False


def test_a_refused_run_answers_400_with_every_problem_and_stores_nothing(
    release, client_for, reviewer
):
    lines = [
        {"question_id": "nope", "retrieved": []},
        {"question_id": "t1", "retrieved": [{"source_id": "x.txt", "text": "a", "score": "hi"}]},
    ]
    answer = client_for(reviewer).post(
        f"{BASE}runs/", {"release": 1, "file": run_upload(lines)}, format="multipart"
    )
    assert answer.status_code == 400
    problems = {(p["line"], p["field"]) for p in answer.json()["problems"]}
    assert problems == {(1, "question_id"), (2, "retrieved[0].score")}
    assert not Experiment.objects.exists()


def test_a_run_is_previewed_without_storing_anything_then_stored(release, client_for, reviewer):
    client = client_for(reviewer)
    lines = [
        {
            "question_id": "t1",
            "retrieved": [{"source_id": "policy.txt", "text": experiments_world.ITEMS[0][3]}],
        }
    ]
    preview = client.post(
        f"{BASE}runs/preview/", {"release": 1, "file": run_upload(lines)}, format="multipart"
    )
    assert preview.json() == {
        "release": 1,
        "accepted": True,
        "questions": 1,
        "chunks": 1,
        "problems": [],
        "unplaced": [],
    }
    assert not Experiment.objects.exists()
    stored = client.post(
        f"{BASE}runs/", {"release": 1, "file": run_upload(lines), "k": 1}, format="multipart"
    )
    assert stored.status_code == 201
    assert stored.json()["cells"][0]["summary"]["metrics"]["hit_rate"]["mean"] == pytest.approx(0.2)


def test_another_workspaces_experiment_is_a_404_even_to_a_member_of_both(
    release, client_for, reviewer, outsider, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        started = client_for(reviewer).post(BASE, GRID, format="json").json()
    elsewhere = Membership.objects.get(user=outsider).workspace
    anchoring_services.evalset_create(workspace=elsewhere, user=outsider, slug="quiz", name="Q")
    Membership.objects.create(workspace=release.evalset.workspace, user=outsider, role=Role.VIEWER)
    client = client_for(outsider)
    assert client.get(f"{BASE}{started['id']}/").status_code == 200
    other = f"/api/workspaces/{elsewhere.slug}/evalsets/quiz/experiments/{started['id']}/"
    for suffix in ("", "misses/", "results/json", "compare/?left=0&right=1"):
        assert client.get(other + suffix).status_code == 404, suffix


def test_run_again_starts_the_same_grid_and_reproduces_its_numbers(
    release, client_for, reviewer, django_capture_on_commit_callbacks
):
    client = client_for(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post(BASE, GRID, format="json").json()
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(f"{BASE}{first['id']}/rerun/")
    assert again.status_code == 202 and again.json()["id"] != first["id"]
    one, two = (
        client.get(f"{BASE}{e}/results/md").content for e in (first["id"], again.json()["id"])
    )
    assert one.split(b"\n", 1)[1] == two.split(b"\n", 1)[1]  # all but the title naming the id
