"""Releases: numbered, frozen exports built by a task, downloadable byte for byte forever."""

# ruff: noqa: RUF001 -- an en dash in opening hours is real text the exports must keep.

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import time
import zipfile
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import contextgrid as cg
import pytest
from contextgrid.evalset.io import read_beir, read_csv, read_jsonl
from contextgrid.evalset.quality import assess
from django.core.files.base import ContentFile

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import (
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    Release,
    ReleaseFile,
    ReleaseItem,
)
from evalsets.models.review import ItemEvent
from evalsets.pure.formats import FORMATS
from evalsets.releases import bridge
from evalsets.releases import services as releases_services
from evalsets.review import workflow
from tests.resolving import resolve_anchor

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
        item = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=question
        )
        if quote:
            anchor = anchoring_services.anchor_create_typed(
                item=item, user=annotator, source_id="handbook.txt", quote=quote, page_hint=page
            )
            resolve_anchor(anchor)
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
    """The approved items as a release writes them. context-grid reads a text document
    without pages, so a release writes its anchors without page hints (the occurrences of
    these quotes, each the first copy, count the same over the whole document)."""
    approved = EvalItem.objects.filter(evalset=evalset, state="approved").order_by(
        "created_at", "id"
    )
    held = bridge.evalset_to_cg(
        evalset, approved.prefetch_related("anchors__resolutions"), version=version
    )
    return held.with_items(
        tuple(
            dataclasses.replace(
                item,
                anchors=tuple(dataclasses.replace(a, page_hint=None) for a in item.anchors),
            )
            for item in held.items
        )
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
    assert release.resolver_version == releases_services.resolver.RESOLVER_VERSION
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


def test_a_draft_nobody_annotated_is_not_counted_as_unanswerable_in_the_notes(
    items, evalset, annotator, release_via_api
):
    anchoring_services.item_create(evalset=evalset, user=annotator, item_id="d1", question="D?")
    release_via_api(include_states=["approved", "draft"])

    notes = Release.objects.get().notes
    # q5 (approved, no evidence) is unanswerable; d1 is a draft nobody has annotated yet.
    assert "1 item has no evidence and count as unanswerable." in notes
    assert any(n.startswith("1 draft has no evidence yet (not annotated") for n in notes)


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
    anchoring_services.item_delete(item=items["q2"])
    _, after = _download(client_for(owner), 1, "contextgrid-jsonl")

    assert before == after
    assert hashlib.sha256(after).hexdigest() == stored.sha256 and len(after) == stored.size
    assert b"New?" not in after


def test_every_exportable_format_builds_with_its_notes(items, release_via_api, client_for, owner):
    body = release_via_api(formats=releases_services.exportable_formats()).json()
    detail = client_for(owner).get(body["url"]).json()

    assert detail["status"] == "ready"
    assert sorted(f["format"] for f in detail["files"]) == sorted(
        releases_services.exportable_formats()
    )
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
    anchoring_services.item_delete(item=items["q2"])
    EvalItem.objects.filter(item_id="q4").update(state="approved")
    release_via_api()

    body = client_for(owner).get(f"{BASE}/releases/1/compare/2/").json()

    assert body["added"] == ["q4"] and body["removed"] == ["q2"]
    assert body["changed"] == [
        {"id": "q1", "fields": {"answer": {"before": None, "after": "1.5 days"}}}
    ]
    assert body["unchanged"] == 1


def test_the_build_reports_progress_and_the_detail_shows_it(items, evalset, owner):
    release = releases_services.release_create(
        evalset=evalset, user=owner, formats=["contextgrid-jsonl"]
    )
    # The items were frozen with the release: the build only writes one file of 3 items.
    assert (release.status, release.progress_total) == ("queued", 3)

    claimed = releases_services.release_claim(release.pk)
    built = releases_services.release_build(claimed)

    assert built.status == "ready" and built.progress_done == built.progress_total == 3
    assert releases_services.release_claim(release.pk) is None  # built once, not again


def test_a_failing_writer_leaves_a_failed_release_that_says_why(items, evalset, owner, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    fmt = dataclasses.replace(FORMATS["contextgrid-csv"], writer=broken)
    monkeypatch.setitem(FORMATS, "contextgrid-csv", fmt)
    release = releases_services.release_create(
        evalset=evalset, user=owner, formats=["contextgrid-csv"]
    )
    built = releases_services.release_build(releases_services.release_claim(release.pk))

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


# -- every download, read by its real reader, against what the app holds ----------------------

GUIDE_PAGES = (
    "Contents: the office closes at 6pm (page 2).\n\n",
    "Hours\n\nWeekdays: the office closes at 6pm. Fridays: it closes at 4pm. "
    "Holidays: it closes at 6pm too.\n\n",
    "Café 🍰 opens 8–18, every day.\n",
)
GUIDE = "".join(GUIDE_PAGES)
#: The same document as another pipeline reads it: runs of spaces, no blank lines.
THEIRS = GUIDE.replace("\n\n", "\n").replace(": ", ":  ")


@pytest.fixture
def guide(workspace):
    doc = Document(workspace=workspace, source_id="guide.txt", sha256="1" * 64, size=len(GUIDE))
    doc.file.save("guide.txt", ContentFile(GUIDE.encode()), save=False)
    doc.kind = "text"
    doc.save()
    starts = [0, len(GUIDE_PAGES[0]), len(GUIDE_PAGES[0]) + len(GUIDE_PAGES[1])]
    documents_services.parse_version_add(
        document=doc,
        parser="plaintext",
        parser_version="1",
        text=GUIDE,
        page_starts=starts,
        origin="parsed",
    )
    their_starts = [0, THEIRS.index("Hours"), THEIRS.index("Café")]
    documents_services.parse_version_add(
        document=doc,
        parser="theirs",
        parser_version="2.1",
        text=THEIRS,
        page_starts=their_starts,
    )
    return doc


@pytest.fixture
def reviewed(evalset, guide, annotator, reviewer):
    """h1 highlighted on the second copy of a repeated quote on page 2, h2 typed with a page
    hint, h3 quoting text no parse holds; all three submitted and approved by the reviewer."""
    reference = guide.parses.get(is_reference=True)
    made = {}
    for item_id, question, answer in (
        ("h1", "When does the office close on holidays?", "6pm"),
        ("h2", "When is the café open?", None),
        ("h3", "Is parking free?", None),
    ):
        made[item_id] = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=question, answer=answer
        )
    holidays = GUIDE.index("closes at 6pm too")
    anchors = [
        anchoring_services.anchor_create_from_highlight(
            item=made["h1"], user=annotator, parse=reference, start=holidays, end=holidays + 13
        ),
        anchoring_services.anchor_create_typed(
            item=made["h2"],
            user=annotator,
            source_id="guide.txt",
            quote="Café 🍰 opens 8–18",
            grade=1,
            page_hint=3,
        ),
        anchoring_services.anchor_create_typed(
            item=made["h3"], user=annotator, source_id="guide.txt", quote="parking is free"
        ),
    ]
    for anchor in anchors:
        resolve_anchor(anchor)
    for item in made.values():
        item.refresh_from_db()
        item, _ = workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
        workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)
    return made


def _held(evalset) -> list[dict]:
    """What the app holds for the approved items, read from the tables, not via bridge."""
    held = []
    for item in EvalItem.objects.filter(evalset=evalset, state="approved").order_by(
        "created_at", "id"
    ):
        event = ItemEvent.objects.filter(item=item, kind="approved").order_by("-at").first()
        held.append(
            {
                "id": item.item_id,
                "question": item.question,
                "qtype": item.qtype,
                "answer": item.answer,
                "anchors": [
                    (a.source_id, a.quote, a.grade, a.page_hint, a.occurrence)
                    for a in item.anchors.order_by("created_at", "id")
                ],
                "reviewed_by": event.actor_name,
                "reviewed_at": event.at,
            }
        )
    return held


#: The anchors as the guide's reader must see them: context-grid reads a text document
#: without pages, so there is no page hint and `occurrence` counts every copy in the document
#: (the highlighted "closes at 6pm" is the third: one on page 1, then two on page 2).
AS_READ = {
    "h1": [("guide.txt", "closes at 6pm", 2, None, 2)],
    "h2": [("guide.txt", "Café 🍰 opens 8–18", 1, None, 0)],
    "h3": [("guide.txt", "parking is free", 2, None, 0)],
}


def _anchor_tuple(anchor) -> tuple:
    return (anchor.source_id, anchor.quote, anchor.grade, anchor.page_hint, anchor.occurrence)


@pytest.mark.parametrize(
    ("slug", "reader", "anchors_kept"),
    [("contextgrid-jsonl", read_jsonl, None), ("contextgrid-csv", read_csv, 1)],
)
def test_a_contextgrid_download_read_by_its_reader_is_what_the_app_holds_field_by_field(
    reviewed, evalset, release_via_api, client_for, owner, tmp_path, slug, reader, anchors_kept
):
    release_via_api(formats=[slug])
    _, data = _download(client_for(owner), 1, slug)
    path = tmp_path / f"r{FORMATS[slug].extension}"
    path.write_bytes(data)

    loaded = reader(path)

    held = _held(evalset)
    want_h1 = held[0]["anchors"][0]
    assert [i.id for i in loaded.items] == [h["id"] for h in held] == ["h1", "h2", "h3"]
    for item, want in zip(loaded.items, held, strict=True):
        assert (item.question, item.qtype, item.answer) == (
            want["question"],
            want["qtype"],
            want["answer"],
        )
        assert [_anchor_tuple(a) for a in item.anchors] == AS_READ[item.id][:anchors_kept]
        assert [a[:3] for a in want["anchors"]] == [a[:3] for a in AS_READ[item.id]]
        assert item.meta["reviewed"] is True
        assert item.meta["reviewed_by"] == want["reviewed_by"] == "rita"
        assert datetime.fromisoformat(item.meta["reviewed_at"]) == want["reviewed_at"]
    assert want_h1 == ("guide.txt", "closes at 6pm", 2, 2, 1)  # the app: 2nd copy on page 2
    assert assess(loaded).reviewed_fraction == 1.0


def test_a_draft_item_in_a_release_is_not_marked_reviewed(
    reviewed, evalset, annotator, release_via_api, client_for, owner, tmp_path
):
    anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="d1",
        question="Draft?",
        meta={"reviewed": True, "reviewed_by": "someone else"},
    )
    release_via_api(formats=["contextgrid-jsonl"], include_states=["approved", "draft"])
    _, data = _download(client_for(owner), 1, "contextgrid-jsonl")
    (tmp_path / "r.jsonl").write_bytes(data)

    loaded = read_jsonl(tmp_path / "r.jsonl")

    draft = loaded.get("d1")
    assert "reviewed" not in draft.meta and "reviewed_by" not in draft.meta
    assert assess(loaded).reviewed == 3


def _deepset_rows(data: bytes) -> dict[str, dict[str, str]]:
    rows = csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""))
    return {row["question_id"]: row for row in rows}


def test_a_deepset_qa_release_places_evidence_where_it_was_highlighted(
    reviewed, release_via_api, client_for, owner
):
    release_via_api(formats=["deepset-qa"])
    _, data = _download(client_for(owner), 1, "deepset-qa")

    row = _deepset_rows(data)["h1"]
    start, end = int(row["answer_start"]), int(row["answer_end"])
    anchor = reviewed["h1"].anchors.get()
    # the Holidays copy that was highlighted, not the Weekdays copy before it
    assert GUIDE.index(row["context"]) + start == anchor.ref_start + len("closes at ")
    assert row["context"][start:end] == row["text"] == "6pm"


def test_a_deepset_release_with_a_gold_parser_takes_positions_from_that_parse(
    reviewed, release_via_api, client_for, owner
):
    release_via_api(formats=["deepset-qa"], gold_parser="theirs")
    _, data = _download(client_for(owner), 1, "deepset-qa")

    row = _deepset_rows(data)["h1"]
    start = int(row["answer_start"])
    assert row["context"] in THEIRS and row["context"] not in GUIDE
    assert THEIRS.index(row["context"]) + start == THEIRS.index("6pm too")
    assert row["text"] == "6pm"


def test_the_release_notes_name_each_anchor_the_chosen_parse_lacks(reviewed, release_via_api):
    release_via_api(formats=["deepset-qa"])

    release = Release.objects.get()
    note = next(n for n in release.notes if "not found in the parse" in n)
    parse = Document.objects.get(source_id="guide.txt").parses.get(is_reference=True)
    assert note.startswith("1 anchor(s) are not found")
    assert "item 'h3' anchor 1 ('parking is free')" in note
    assert f"plaintext 1 (parse {parse.public_id})" in note
    assert ReleaseItem.objects.get(item_id="h3").positions == [None]
    file_notes = ReleaseFile.objects.get(format="deepset-qa").notes
    assert any("h3" in n and "does not contain" in n for n in file_notes)


def test_a_beir_release_refuses_an_id_beir_would_read_as_another(
    reviewed, evalset, annotator, client_for, owner
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="x\ry", question="Q?"
    )
    EvalItem.objects.filter(pk=item.pk).update(state="approved")

    response = client_for(owner).post(f"{BASE}/releases/", {"formats": ["beir"]}, format="json")

    assert response.status_code == 400
    assert "'x\\ry'" in response.json()["detail"] and "carriage return" in response.json()["detail"]
    assert not Release.objects.exists()


def test_a_beir_release_writes_ids_with_quotes_and_tabs_that_beir_reads_back(
    reviewed, evalset, annotator, release_via_api, client_for, owner, tmp_path
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id='say "hi"\tthere', question="Q?"
    )
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="guide.txt", quote="Hours"
    )
    resolve_anchor(anchor)
    EvalItem.objects.filter(pk=item.pk).update(state="approved")
    release_via_api(formats=["beir"])
    _, data = _download(client_for(owner), 1, "beir")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)

    qrels = tmp_path / "qrels" / "test.tsv"
    with open(qrels, encoding="utf-8") as handle:  # as BEIR's GenericDataLoader reads it
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        judged = {(row[0], row[1], int(row[2])) for row in reader}
    assert ('say "hi"\tthere', "guide.txt", 2) in judged
    theirs = read_beir(tmp_path / "queries.jsonl", qrels)
    assert theirs.get('say "hi"\tthere').meta["gold_documents"] == [("guide.txt", 2)]


def test_positions_are_only_given_for_the_item_being_written():
    frozen = releases_services._Frozen(Release(), progress=None)

    with pytest.raises(LookupError, match="positions asked for 'x' while writing ''"):
        frozen.positions(cg.EvalItem(id="x", question="Q?"))


def test_unplaced_anchors_are_counted_all_and_shown_ten_with_long_quotes_cut():
    unplaced = releases_services._Unplaced()
    assert unplaced.note() is None
    sixty, sixty_one = "q" * 60, "r" * 61
    unplaced.add("a", 1, SimpleNamespace(quote=sixty), "is lost")
    unplaced.add("b", 2, SimpleNamespace(quote=sixty_one), "is lost")
    for n in range(10):
        unplaced.add(f"c{n}", 1, SimpleNamespace(quote="x"), "is lost")

    note = unplaced.note()
    assert note.startswith("12 anchor(s) are not found in the parse this release's files use")
    assert (
        f"item 'a' anchor 1 ({sixty!r}) is lost; item 'b' anchor 2 ('{'r' * 57}...') is lost"
        in (note)
    )
    assert note.count("is lost") == 10 and note.endswith("is lost; and 2 more.")


def test_exactly_ten_unplaced_anchors_are_all_shown_with_no_more_to_count():
    unplaced = releases_services._Unplaced()
    for n in range(10):
        unplaced.add(f"c{n}", 1, SimpleNamespace(quote="x"), "is lost")

    note = unplaced.note()

    assert note.count("is lost") == 10 and note.endswith("is lost.") and "more" not in note


def test_the_unplaced_note_says_what_formats_do_with_such_an_anchor():
    unplaced = releases_services._Unplaced()
    unplaced.add("q7", 2, SimpleNamespace(quote="gone"), "is not in 'a.pdf'")

    assert unplaced.note() == (
        "1 anchor(s) are not found in the parse this release's files use, so formats that "
        "place evidence in a document (deepset) write the quote alone as its context, and no "
        "gold span is written: item 'q7' anchor 2 ('gone') is not in 'a.pdf'."
    )


def test_review_time_is_written_in_utc_whatever_the_servers_zone(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        at = datetime(2026, 11, 30, 12, 0, tzinfo=timezone(timedelta(hours=2)))
        meta = bridge.review_meta({}, approved=True, approval=bridge.Approval("rita", at))
    finally:
        monkeypatch.undo()
        time.tzset()

    assert meta == {
        "reviewed": True,
        "reviewed_by": "rita",
        "reviewed_at": "2026-11-30T10:00:00+00:00",
    }


def test_an_approval_without_a_recorded_name_still_says_when():
    at = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    item = SimpleNamespace(state="approved", approved_by=None, approved_at=at)

    assert releases_services._approval(item) == bridge.Approval(by="", at=at)
    assert releases_services._approval(SimpleNamespace(state="draft", approved_at=at)) is None


def test_in_the_parse_it_was_highlighted_in_an_anchor_is_where_it_was_highlighted(reviewed, guide):
    anchor = reviewed["h1"].anchors.get()
    reference = guide.parses.get(is_reference=True)
    anchor.resolutions.filter(parse=reference).update(start=0, end=13)  # a stale resolution

    fresh = GoldAnchor.objects.prefetch_related("resolutions").get(pk=anchor.pk)
    assert bridge.anchor_span(fresh, reference) == (anchor.ref_start, anchor.ref_end)
    theirs = guide.parses.get(parser="theirs")
    res = fresh.resolutions.get(parse=theirs)
    assert bridge.anchor_span(fresh, theirs) == (res.start, res.end)
    assert bridge.anchor_span(fresh, None) is None


def test_a_release_queued_before_releases_were_frozen_when_made_is_frozen_by_its_build(
    items, evalset, owner
):
    # As a release queued by the previous version is found after an upgrade: numbered,
    # with no snapshot yet.
    release = Release.objects.create(
        evalset=evalset,
        version=1,
        created_by=owner,
        include_states=["approved"],
        formats=["contextgrid-jsonl"],
    )

    built = releases_services.release_build(releases_services.release_claim(release.pk))

    assert (built.status, built.item_count, built.frozen_at is not None) == ("ready", 3, True)
    assert list(built.items.values_list("item_id", flat=True)) == ["q1", "q2", "q5"]
    assert built.texts == {"handbook.txt": Document.objects.get().parses.get().pk}


def test_a_release_is_frozen_in_the_request_that_makes_it(items, evalset, owner):
    release = releases_services.release_create(
        evalset=evalset, user=owner, formats=["contextgrid-jsonl"]
    )

    # The build has not run (its message leaves once the test's transaction would commit).
    assert release.frozen_at is not None and release.status == "queued"
    assert list(release.items.values_list("item_id", flat=True)) == ["q1", "q2", "q5"]
    assert release.header["version"] == 1 and release.texts
