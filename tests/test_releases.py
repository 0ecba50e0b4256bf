"""Releases: numbered, frozen exports built by a task, downloadable byte for byte forever."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import zipfile

import pytest
from contextgrid.evalset.io import read_csv, read_jsonl

from evalsets import bridge, releases, resolution, services
from evalsets.formats import FORMATS
from evalsets.models import EvalItem, EvalSet, Release, ReleaseFile, ReleaseItem
from evalsets.review import workflow

pytestmark = pytest.mark.django_db

BASE = "/api/workspaces/acme/evalsets/quiz"


@pytest.fixture
def items(evalset, document, annotator):
    """q1, q2 approved with anchors; q3 draft; q4 submitted; q5 approved, no evidence."""
    made = {}
    for item_id, question, quote, page in (
        ("q1", "How much leave do employees accrue?", "1.5 days of leave per month", 1),
        ("q2", "How long may staff work remotely?", "limited to 30 days a year", 2),
        ("q3", "Is this a draft?", "Leave may be carried over.", None),
        ("q4", "Was this submitted?", "Employee Handbook", None),
        ("q5", "What is the CEO's favourite colour?", None, None),
    ):
        item = services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=question
        )
        if quote:
            anchor = services.anchor_create_typed(
                item=item, user=annotator, source_id="handbook.txt", quote=quote, page_hint=page
            )
            resolution.resolve_anchor(anchor)
        made[item_id] = item
    EvalItem.objects.filter(item_id__in=["q1", "q2", "q5"]).update(state="approved")
    EvalItem.objects.filter(item_id="q4").update(state="submitted")
    return made


@pytest.fixture
def release_via_api(client_for, owner, django_capture_on_commit_callbacks):
    def make(**body):
        body.setdefault("formats", ["contextgrid-jsonl", "contextgrid-csv"])
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(owner).post(f"{BASE}/releases/", body, format="json")
        assert response.status_code == 202, response.json()
        return response

    return make


def _download(client, version: int, fmt: str):
    response = client.get(f"{BASE}/releases/{version}/files/{fmt}")
    assert response.status_code == 200, response
    return response, b"".join(response.streaming_content)


def _approved_set(evalset: EvalSet, version: int):
    approved = EvalItem.objects.filter(evalset=evalset, state="approved").order_by(
        "created_at", "id"
    )
    return bridge.evalset_to_cg(
        evalset, approved.prefetch_related("anchors__resolutions"), version=version
    )


def test_a_release_holds_only_the_approved_items_by_default(items, release_via_api):
    body = release_via_api().json()

    release = Release.objects.get()
    assert body["status"] == "queued"  # the response left before the build ran
    assert list(release.items.values_list("item_id", flat=True)) == ["q1", "q2", "q5"]
    assert release.include_states == ["approved"] and not release.includes_unapproved
    assert release.status == "ready" and release.percent == 100


def test_the_release_records_who_when_and_the_resolver_version(items, release_via_api, owner):
    release_via_api()

    release = Release.objects.get()
    assert release.created_by == owner and release.created_at and release.frozen_at
    assert release.resolver_version == releases.resolver.RESOLVER_VERSION
    assert release.item_count == 3


def test_including_other_states_is_explicit_and_the_release_says_so(items, release_via_api):
    body = release_via_api(include_states=["approved", "submitted"]).json()

    release = Release.objects.get()
    assert body["includes_unapproved"] is True
    assert list(release.items.values_list("item_id", "state")) == [
        ("q1", "approved"),
        ("q2", "approved"),
        ("q4", "submitted"),
        ("q5", "approved"),
    ]
    assert any("not approved (1 submitted)" in note for note in release.notes)


def test_each_release_gets_a_new_version_and_the_set_moves_on(items, evalset, release_via_api):
    first = release_via_api().json()
    second = release_via_api().json()

    evalset.refresh_from_db()
    assert (first["version"], second["version"], evalset.version) == (1, 2, 3)


def test_the_jsonl_download_loads_with_contextgrid_and_equals_the_set(
    items, evalset, release_via_api, client_for, viewer, tmp_path
):
    release_via_api()
    response, data = _download(client_for(viewer), 1, "contextgrid-jsonl")
    path = tmp_path / "quiz.jsonl"
    path.write_bytes(data)

    loaded = read_jsonl(path)

    assert loaded == _approved_set(evalset, version=1)
    assert [i.to_dict() for i in loaded.items] == [
        i.to_dict() for i in _approved_set(evalset, 1).items
    ]
    assert response["Content-Type"] == "application/x-ndjson"
    assert 'filename="quiz-v1-contextgrid-jsonl.jsonl"' in response["Content-Disposition"]


def test_the_csv_download_loads_with_contextgrid_and_equals_the_set(
    items, evalset, release_via_api, client_for, owner, tmp_path
):
    release_via_api()
    response, data = _download(client_for(owner), 1, "contextgrid-csv")
    path = tmp_path / "quiz.csv"
    path.write_bytes(data)

    loaded = read_csv(path)

    assert loaded.items == _approved_set(evalset, 1).items
    assert response["Content-Type"].startswith("text/csv")


def test_downloads_are_the_stored_bytes_even_after_the_set_changes(
    items, evalset, release_via_api, client_for, owner, annotator
):
    release_via_api()
    stored = ReleaseFile.objects.get(format="contextgrid-jsonl")
    _, before = _download(client_for(owner), 1, "contextgrid-jsonl")

    EvalItem.objects.filter(item_id="q1").update(question="New?")
    workflow.item_reopen(item=items["q2"], user=owner)  # an approved item is reopened first
    services.item_delete(item=items["q2"])
    _, after = _download(client_for(owner), 1, "contextgrid-jsonl")

    assert before == after
    assert hashlib.sha256(after).hexdigest() == stored.sha256 and len(after) == stored.size
    assert b"New?" not in after


def test_every_exportable_format_builds_with_its_notes(items, release_via_api, client_for, owner):
    body = release_via_api(formats=releases.exportable_formats()).json()
    detail = client_for(owner).get(body["url"]).json()

    assert detail["status"] == "ready"
    assert sorted(f["format"] for f in detail["files"]) == sorted(releases.exportable_formats())
    beir = next(f for f in detail["files"] if f["format"] == "beir")
    _, data = _download(client_for(owner), 1, "beir")
    assert zipfile.ZipFile(io.BytesIO(data)).namelist() == [
        "queries.jsonl",
        "qrels/test.tsv",
        "corpus.jsonl",
    ]
    assert any("q5" in note for note in beir["notes"])  # cannot say unanswerable
    assert any("no evidence" in note for note in detail["notes"])


def test_a_deepset_qa_export_takes_contexts_from_the_reference_parse(
    items, release_via_api, client_for, owner
):
    release_via_api(formats=["deepset-qa"])
    _, data = _download(client_for(owner), 1, "deepset-qa")

    text = data.decode("utf-8")
    assert text.splitlines()[0].startswith("question,text,context,file_name,answer_start")
    assert "Employees accrue 1.5 days of leave per month." in text


def test_a_chosen_gold_parser_puts_its_resolved_spans_in_the_release(
    items, release_via_api, reference
):
    release_via_api(gold_parser="plaintext")

    release = Release.objects.get()
    q1 = release.items.get(item_id="q1").data
    start = reference.text.index("1.5 days of leave per month")
    assert q1["gold"] == [{"doc_id": "handbook.txt", "start": start, "end": start + 27, "grade": 2}]
    assert release.parses_used["handbook.txt"]["parser"] == "plaintext"
    assert release.parses_used["handbook.txt"]["gold"] is True


def test_compare_lists_items_added_removed_and_changed_field_by_field(
    items, release_via_api, client_for, owner, annotator
):
    release_via_api()
    EvalItem.objects.filter(item_id="q1").update(answer="1.5 days")
    workflow.item_reopen(item=items["q2"], user=owner)  # an approved item is reopened first
    services.item_delete(item=items["q2"])
    EvalItem.objects.filter(item_id="q4").update(state="approved")
    release_via_api()

    body = client_for(owner).get(f"{BASE}/releases/1/compare/2/").json()

    assert body["added"] == ["q4"] and body["removed"] == ["q2"]
    assert body["changed"] == [
        {"id": "q1", "fields": {"answer": {"before": None, "after": "1.5 days"}}}
    ]
    assert body["unchanged"] == 1


def test_the_build_reports_progress_and_the_detail_shows_it(items, evalset, owner):
    release = releases.release_create(evalset=evalset, user=owner, formats=["contextgrid-jsonl"])
    assert (release.status, release.progress_total) == ("queued", 2 * 3)

    claimed = releases.release_claim(release.pk)
    built = releases.release_build(claimed)

    assert built.status == "ready" and built.progress_done == built.progress_total == 6
    assert releases.release_claim(release.pk) is None  # built once, not again


def test_a_failing_writer_leaves_a_failed_release_that_says_why(items, evalset, owner, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    fmt = dataclasses.replace(FORMATS["contextgrid-csv"], writer=broken)
    monkeypatch.setitem(FORMATS, "contextgrid-csv", fmt)
    release = releases.release_create(evalset=evalset, user=owner, formats=["contextgrid-csv"])
    built = releases.release_build(releases.release_claim(release.pk))

    assert built.status == "failed" and "disk full" in built.error
    assert not built.files.exists()


def test_a_release_needs_some_approved_items(evalset, item, client_for, owner):
    response = client_for(owner).post(
        f"{BASE}/releases/", {"formats": ["contextgrid-jsonl"]}, format="json"
    )

    assert response.status_code == 400
    assert "has no approved items to release" in response.json()["detail"]
    assert not Release.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"formats": []}, "formats", "at least one"),
        ({"formats": ["excel"]}, "formats", "cannot build format 'excel'"),
        ({"formats": ["legalbench-rag"]}, "formats", "import only"),
        ({"formats": ["beir"], "include_states": ["done"]}, "include_states", "done"),
        ({"formats": ["beir"], "gold_parser": "nope"}, "gold_parser", "no document"),
    ],
)
def test_bad_release_requests_say_what_is_wrong(items, client_for, owner, body, field, words):
    response = client_for(owner).post(f"{BASE}/releases/", body, format="json")

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert field in errors and words in " ".join(errors[field])
    assert not Release.objects.exists()


@pytest.mark.parametrize("who", ["viewer", "annotator", "reviewer"])
def test_only_an_owner_can_make_a_release(items, client_for, request, who):
    user = request.getfixturevalue(who)
    response = client_for(user).post(
        f"{BASE}/releases/", {"formats": ["contextgrid-jsonl"]}, format="json"
    )

    assert response.status_code == 403
    assert "owner" in response.json()["detail"]


def test_another_workspace_cannot_see_releases(items, release_via_api, client_for, outsider):
    release_via_api()
    client = client_for(outsider)

    assert client.get(f"{BASE}/releases/").status_code == 404
    assert client.get(f"{BASE}/releases/1/files/contextgrid-jsonl").status_code == 404


def test_a_format_that_was_not_built_is_a_404_naming_what_was(
    items, release_via_api, client_for, owner
):
    release_via_api(formats=["contextgrid-jsonl"])

    response = client_for(owner).get(f"{BASE}/releases/1/files/beir")

    assert response.status_code == 404
    assert "contextgrid-jsonl" in response.json()["detail"]


def test_deleting_a_set_removes_its_release_files_from_storage(
    items, release_via_api, client_for, owner, django_capture_on_commit_callbacks
):
    release_via_api()
    files = list(ReleaseFile.objects.all())
    assert len(files) == 2 and all(f.file.storage.exists(f.file.name) for f in files)

    with django_capture_on_commit_callbacks(execute=True):
        assert client_for(owner).delete(f"{BASE}/").status_code == 204

    assert not ReleaseFile.objects.exists() and not Release.objects.exists()
    assert not any(f.file.storage.exists(f.file.name) for f in files)


def test_members_list_releases_newest_first(items, release_via_api, client_for, viewer):
    release_via_api()
    release_via_api()

    body = client_for(viewer).get(f"{BASE}/releases/").json()

    assert [r["version"] for r in body["results"]] == [2, 1]
    assert ReleaseItem.objects.count() == 6


def test_the_releases_page_shows_the_form_to_an_owner_only(
    items, release_via_api, client, owner, viewer
):
    release_via_api()
    client.force_login(owner)
    as_owner = client.get("/w/acme/sets/quiz/releases/")
    client.force_login(viewer)
    as_viewer = client.get("/w/acme/sets/quiz/releases/")

    assert as_owner.status_code == as_viewer.status_code == 200
    assert b"Create release" in as_owner.content and b"Create release" not in as_viewer.content
    assert b"quiz-v1-contextgrid-jsonl.jsonl" in as_viewer.content  # in the page's JSON data


def test_release_and_import_pages_are_a_404_outside_the_workspace(evalset, client, outsider):
    client.force_login(outsider)

    assert client.get("/w/acme/sets/quiz/releases/").status_code == 404
    assert client.get("/w/acme/sets/quiz/import/").status_code == 404
