"""Imports: previewed without writing, committed in one transaction, idempotent, never a 500."""

from __future__ import annotations

import io
import json
import threading

import pytest
from contextgrid.core.evalset import EvalItem as CgItem
from contextgrid.core.evalset import EvalSet as CgSet
from contextgrid.core.evalset import GoldAnchor as CgAnchor
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from evalsets import imports, services
from evalsets.formats import get_format
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ImportRecord,
    ParseVersion,
    PendingImportLabel,
)

pytestmark = pytest.mark.django_db

WS = "/api/workspaces/acme"
SET = f"{WS}/evalsets/quiz"
CONTRACT = "This Agreement is governed by the laws of Delaware. Either party may terminate it."


def _jsonl(*items: CgItem, set_id: str = "handbook-quiz", version: int = 3) -> bytes:
    out = io.BytesIO()
    evalset = CgSet(id=set_id, items=items, version=version, source="groundwork", meta={"a": 1})
    get_format("contextgrid-jsonl").writer(evalset, iter(items), out)
    return out.getvalue()


Q1 = CgItem(
    id="q1",
    question="How much leave do employees accrue per month?",
    anchors=(CgAnchor("handbook.txt", "Leave may be carried over."),),
    qtype="numeric",
    answer="1.5 days",
    meta={"tags": ["hr"]},
)
Q2 = CgItem(
    id="q2",
    question="How long may staff work remotely?",
    anchors=(CgAnchor("handbook.txt", "limited to 30 days a year", page_hint=2),),
)
PENDING = CgItem(
    id="p1",
    question="Who signs the contract?",
    anchors=(CgAnchor("contract.txt", "Either party may terminate it."),),
)


def _file(data: bytes, name: str = "set.jsonl"):
    return SimpleUploadedFile(name, data)


def _post(client, url: str, data: bytes, name: str = "set.jsonl", **fields):
    return client.post(url, {"file": _file(data, name), **fields}, format="multipart")


def _counts() -> tuple[int, ...]:
    return (
        EvalSet.objects.count(),
        EvalItem.objects.count(),
        GoldAnchor.objects.count(),
        PendingImportLabel.objects.count(),
        ImportRecord.objects.count(),
    )


@pytest.fixture
def owner_client(client_for, owner, workspace):
    return client_for(owner)


@pytest.fixture
def commit(owner_client, django_capture_on_commit_callbacks):
    def run(url: str, data: bytes, name: str = "set.jsonl", status: int | None = None, **kw):
        with django_capture_on_commit_callbacks(execute=True):
            response = _post(owner_client, url, data, name, **kw)
        if status is not None:
            assert response.status_code == status, response.json()
        return response

    return run


def test_a_preview_says_what_would_be_created_and_writes_nothing(owner_client, evalset, document):
    before = _counts()

    response = _post(owner_client, f"{SET}/imports/preview/", _jsonl(Q1, Q2, PENDING))

    body = response.json()
    assert response.status_code == 200
    assert body["format"] == "contextgrid-jsonl" and body["can_commit"] is True
    assert body["counts"] == {
        "create": 3,
        "update": 0,
        "unchanged": 0,
        "refused": 0,
        "warnings": 0,
        "pending": 1,
    }
    assert body["pending"][0]["file_name"] == "contract.txt"
    assert body["pending"][0]["reason"] == "not uploaded yet"
    assert _counts() == before


def test_importing_into_a_new_set_creates_it_with_items_and_resolved_anchors(
    commit, document, reference
):
    body = commit(f"{WS}/imports/", _jsonl(Q1, Q2), evalset="imported", status=201).json()

    evalset = EvalSet.objects.get(slug="imported")
    assert body["evalset"] == "imported"
    assert (evalset.version, evalset.source, evalset.meta) == (3, "groundwork", {"a": 1})
    q1 = EvalItem.objects.get(evalset=evalset, item_id="q1")
    assert (q1.question, q1.qtype, q1.answer, q1.meta) == (
        Q1.question,
        "numeric",
        "1.5 days",
        {"tags": ["hr"]},
    )
    anchor = q1.anchors.get()
    assert anchor.document == document
    assert AnchorResolution.objects.get(anchor=anchor, parse=reference).status == "exact"
    assert ImportRecord.objects.get().counts["create"] == 2


def test_importing_into_an_existing_set_adds_items_and_an_audit_record(commit, evalset, owner):
    commit(f"{SET}/imports/", _jsonl(Q1), status=201)

    assert list(evalset.items.values_list("item_id", flat=True)) == ["q1"]
    record = ImportRecord.objects.get()
    assert (record.evalset, record.created_by, record.format) == (
        evalset,
        owner,
        "contextgrid-jsonl",
    )


def test_re_importing_the_same_file_changes_nothing(commit, owner_client, evalset, document):
    data = _jsonl(Q1, Q2, PENDING)
    commit(f"{SET}/imports/", data, status=201)
    versions = list(EvalItem.objects.values_list("item_id", "row_version", "updated_at"))
    anchors = list(GoldAnchor.objects.values_list("pk", flat=True))

    preview = _post(owner_client, f"{SET}/imports/preview/", data).json()
    again = commit(f"{SET}/imports/", data, status=200).json()

    assert preview["counts"]["unchanged"] == 3 and preview["counts"]["create"] == 0
    assert again["counts"]["update"] == 0 and again["unchanged"] == ["q1", "q2", "p1"]
    assert list(EvalItem.objects.values_list("item_id", "row_version", "updated_at")) == versions
    assert list(GoldAnchor.objects.values_list("pk", flat=True)) == anchors


def test_a_changed_file_updates_the_fields_that_differ_and_adds_anchors(
    commit, owner_client, evalset, document
):
    commit(f"{SET}/imports/", _jsonl(Q1, Q2), status=201)
    edited = CgItem(
        id="q1",
        question="How many days of leave accrue monthly?",
        anchors=(*Q1.anchors, CgAnchor("handbook.txt", "Employee Handbook", grade=1)),
        qtype="numeric",
        answer="1.5 days",
        meta={"tags": ["hr"]},
    )

    preview = _post(owner_client, f"{SET}/imports/preview/", _jsonl(edited, Q2)).json()
    commit(f"{SET}/imports/", _jsonl(edited, Q2), status=201)

    assert preview["update"] == [
        {
            "id": "q1",
            "question": edited.question,
            "changed": ["question"],
            "anchors_added": [
                {
                    "source_id": "handbook.txt",
                    "quote": "Employee Handbook",
                    "grade": 1,
                    "page_hint": None,
                    "occurrence": 0,
                }
            ],
            "pending_spans_added": 0,
        }
    ]
    q1 = EvalItem.objects.get(item_id="q1")
    assert q1.question == edited.question and q1.anchors.count() == 2


def test_changes_to_an_approved_item_are_refused_until_it_is_reopened(
    commit, owner_client, evalset, document
):
    commit(f"{SET}/imports/", _jsonl(Q1, Q2), status=201)
    EvalItem.objects.filter(item_id="q1").update(state="approved")
    edited = CgItem(id="q1", question="Changed?", anchors=Q1.anchors, qtype="numeric")

    preview = _post(owner_client, f"{SET}/imports/preview/", _jsonl(edited, Q2)).json()
    unchanged = _post(owner_client, f"{SET}/imports/preview/", _jsonl(Q1, Q2)).json()

    assert preview["can_commit"] is False
    assert preview["refused"][0]["item"] == "q1"
    assert (
        "is approved, and this file changes it (question, answer, meta)"
        in (preview["refused"][0]["message"])
    )
    assert unchanged["can_commit"] is True and unchanged["counts"]["unchanged"] == 2


def test_anchors_are_added_never_removed(commit, evalset, document):
    commit(f"{SET}/imports/", _jsonl(Q1), status=201)
    bare = CgItem(
        id="q1", question=Q1.question, qtype="numeric", answer="1.5 days", meta={"tags": ["hr"]}
    )

    commit(f"{SET}/imports/", _jsonl(bare), status=200)

    assert EvalItem.objects.get(item_id="q1").anchors.count() == 1


def test_a_file_with_errors_is_refused_whole_with_located_messages(commit, evalset):
    data = (
        b"id,question,source_id,quote,grade\n"
        b"q1,Fine question?,handbook.txt,Leave may be carried over.,2\n"
        b"q2,,handbook.txt,Employee Handbook,2\n"
    )
    before = _counts()

    response = commit(f"{SET}/imports/", data, "questions.csv", status=400)

    body = response.json()
    assert "nothing was imported" in body["detail"]
    problem = body["problems"][0]
    assert (problem["line"], problem["item"]) == (3, "q2")
    assert "has an empty question" in problem["message"]
    assert "questions.csv:3" in problem["text"]
    assert _counts() == before


def test_the_commit_is_one_transaction_and_a_failure_midway_leaves_nothing(
    owner, evalset, document, monkeypatch
):
    real = services.anchor_create_typed
    calls = []

    def fail_second(**kwargs):
        calls.append(kwargs)
        if len(calls) == 2:
            raise RuntimeError("the database went away")
        return real(**kwargs)

    monkeypatch.setattr(services, "anchor_create_typed", fail_second)
    before = _counts()

    with pytest.raises(RuntimeError):
        imports.import_commit(
            workspace=evalset.workspace,
            user=owner,
            evalset=evalset,
            evalset_id="quiz",
            data=_jsonl(Q1, Q2),
            filename="set.jsonl",
        )

    assert len(calls) == 2 and _counts() == before


def test_a_quote_on_a_missing_file_waits_and_attaches_when_it_is_uploaded(
    commit, evalset, owner, workspace, django_capture_on_commit_callbacks
):
    commit(f"{SET}/imports/", _jsonl(PENDING), status=201)
    anchor = GoldAnchor.objects.get()
    assert anchor.document is None

    with django_capture_on_commit_callbacks(execute=True):
        document, _ = services.document_upload(
            workspace=workspace, user=owner, upload=_file(CONTRACT.encode(), "contract.txt")
        )

    anchor.refresh_from_db()
    assert anchor.document == document
    assert anchor.resolutions.get().status == "exact"


def test_legalbench_spans_on_a_missing_file_become_quotes_when_it_arrives(
    commit, owner_client, evalset, owner, workspace, django_capture_on_commit_callbacks
):
    start = CONTRACT.index("Either party")
    data = json.dumps(
        {
            "tests": [
                {
                    "id": "lb-1",
                    "query": "Can the agreement be ended?",
                    "snippets": [
                        {"file_path": "contract.txt", "span": [start, len(CONTRACT)]},
                        {"file_path": "contract.txt", "span": [5, 9999]},
                    ],
                }
            ]
        }
    ).encode()
    preview = _post(owner_client, f"{SET}/imports/preview/", data, "bench.json").json()
    assert preview["format"] == "legalbench-rag"
    assert [p["file_name"] for p in preview["pending"]] == ["contract.txt", "contract.txt"]
    commit(f"{SET}/imports/", data, "bench.json", status=201)
    assert PendingImportLabel.objects.filter(status="waiting").count() == 2
    # Re-importing before the file arrives still changes nothing.
    commit(f"{SET}/imports/", data, "bench.json", status=200)

    with django_capture_on_commit_callbacks(execute=True):
        services.document_upload(
            workspace=workspace, user=owner, upload=_file(CONTRACT.encode(), "contract.txt")
        )

    anchor = GoldAnchor.objects.get()
    assert anchor.quote == "Either party may terminate it." and anchor.item.item_id == "lb-1"
    assert anchor.resolutions.get().status == "exact"
    failed = PendingImportLabel.objects.get(status="failed")
    assert "does not fit 'contract.txt'" in failed.message
    assert imports.pending_for(evalset) == [
        {
            "item": "lb-1",
            "file_name": "contract.txt",
            "span": [5, 9999],
            "status": "failed",
            "message": failed.message,
        }
    ]


def test_a_span_imported_while_its_files_parse_finishes_is_attached_after_the_parse(
    owner_client, evalset, workspace, django_capture_on_commit_callbacks
):
    # The file is here and its reference parse is running when the import commits, so the
    # span waits. The parse then finishes before the import's after-commit work runs (its own
    # hook looked for waiting spans before the import was committed and found none): the
    # work the import queued must attach the span once the text is there.
    document = Document.objects.create(
        workspace=workspace, source_id="contract.txt", sha256="1" * 64, size=len(CONTRACT)
    )
    parse = ParseVersion.objects.create(
        document=document, parser="plaintext", status="parsing", is_reference=True
    )
    start = CONTRACT.index("Either party")
    data = json.dumps(
        {
            "tests": [
                {
                    "id": "lb-1",
                    "query": "Can the agreement be ended?",
                    "snippets": [{"file_path": "contract.txt", "span": [start, len(CONTRACT)]}],
                }
            ]
        }
    ).encode()
    with django_capture_on_commit_callbacks() as after_commit:
        response = _post(owner_client, f"{SET}/imports/", data, "bench.json")
    assert response.status_code == 201, response.json()
    assert PendingImportLabel.objects.get().status == "waiting"

    parse.text, parse.page_starts, parse.status = CONTRACT, [0], "ready"
    parse.save()
    with django_capture_on_commit_callbacks(execute=True):
        for callback in after_commit:
            callback()

    assert PendingImportLabel.objects.get().status == "attached"
    anchor = GoldAnchor.objects.get()
    assert anchor.quote == "Either party may terminate it." and anchor.item.item_id == "lb-1"


def test_deepset_labels_on_files_not_in_the_workspace_are_listed_and_kept(
    commit, owner_client, evalset, document
):
    data = (
        b"question,text,context,file_name,answer_start,answer_end,filters,question_id\n"
        b"How much leave?,1.5 days,Employees accrue 1.5 days of leave per month.,handbook.txt,"
        b"17,25,,d1\n"
        b"Who may end it?,Either party,Either party may terminate it.,contract.txt,0,12,,d2\n"
    )

    preview = _post(
        owner_client, f"{SET}/imports/preview/", data, "labels.csv", format="deepset-qa"
    ).json()
    commit(f"{SET}/imports/", data, "labels.csv", format="deepset-qa", status=201)

    assert preview["counts"]["create"] == 2
    assert [(p["item"], p["file_name"], p["line"]) for p in preview["pending"]] == [
        ("d2", "contract.txt", 3)
    ]
    waiting = GoldAnchor.objects.get(item__item_id="d2")
    assert waiting.document is None and waiting.quote == "Either party"
    assert GoldAnchor.objects.get(item__item_id="d1").document == document


MALFORMED = [
    ("empty.jsonl", b"", "contextgrid-jsonl", "is empty"),
    ("report.pdf", b"%PDF-1.7 binary", "contextgrid-jsonl", "is a PDF"),
    ("broken.jsonl", b'{"id": "q1", "question": "ok?"}\n{"id": "q2", "question": \n', None, ""),
    ("latin1.csv", "id,question\nq1,Caf\xe9?\n".encode("latin-1"), None, "not UTF-8"),
    ("semi.csv", b"id;question\nq1;What?\n", "contextgrid-csv", "semicolons"),
    ("bench.json", b'{"tests": [{"query": 3}]}', "legalbench-rag", "expected a string"),
    ("beir.zip", b"PK\x03\x04 not really a zip", "beir", ""),
    ("labels.csv", b"text,context\nfoo,bar\n", "deepset-qa", "no `question` column"),
]


@pytest.mark.parametrize(("name", "data", "fmt", "words"), MALFORMED)
def test_malformed_files_get_located_messages_never_a_500(
    owner_client, evalset, name, data, fmt, words
):
    fields = {"format": fmt} if fmt else {}
    before = _counts()

    preview = _post(owner_client, f"{SET}/imports/preview/", data, name, **fields)
    committed = _post(owner_client, f"{SET}/imports/", data, name, **fields)

    assert preview.status_code in (200, 400), preview.content
    body = preview.json()
    if preview.status_code == 200:
        assert body["can_commit"] is False and body["refused"]
        messages = " ".join(p["text"] for p in body["refused"])
        assert name in messages or "line" in messages or "item" in messages
        assert words in messages
    else:
        assert body["errors"]
    assert committed.status_code == 400 and _counts() == before


def test_an_unknown_format_or_a_missing_file_is_a_400(owner_client, evalset):
    unknown = _post(owner_client, f"{SET}/imports/preview/", b"x", format="excel")
    missing = owner_client.post(f"{SET}/imports/preview/", {}, format="multipart")
    unsure = _post(owner_client, f"{SET}/imports/preview/", b"???", "notes.bin")

    assert unknown.status_code == 400 and "cannot import format 'excel'" in unknown.json()["detail"]
    assert missing.status_code == 400 and "file" in missing.json()["errors"]
    assert unsure.status_code == 400 and "cannot tell which format" in unsure.json()["detail"]


def test_a_commit_after_the_set_changed_since_the_preview_is_a_409(commit, owner_client, evalset):
    token = _post(owner_client, f"{SET}/imports/preview/", _jsonl(Q1)).json()["token"]
    other = _post(owner_client, f"{SET}/imports/preview/", _jsonl(Q2)).json()["token"]
    assert token == other
    commit(f"{SET}/imports/", _jsonl(Q1), token=token, status=201)  # the first importer wins

    second = commit(f"{SET}/imports/", _jsonl(Q2), token=other, status=409).json()

    assert "changed since the preview" in second["detail"]
    assert list(EvalItem.objects.values_list("item_id", flat=True)) == ["q1"]


def test_importing_a_new_set_under_an_existing_id_is_a_409(commit, evalset):
    body = commit(f"{WS}/imports/", _jsonl(Q1), evalset="quiz", status=409).json()

    assert "already exists" in body["detail"] and "/evalsets/quiz/imports/" in body["detail"]


@pytest.mark.parametrize("who", ["viewer", "annotator", "reviewer"])
def test_only_an_owner_imports(client_for, request, evalset, who):
    client = client_for(request.getfixturevalue(who))

    response = _post(client, f"{SET}/imports/preview/", _jsonl(Q1))

    assert response.status_code == 403 and "owner" in response.json()["detail"]


def test_another_workspace_gets_a_404(client_for, outsider, evalset):
    client = client_for(outsider)

    assert _post(client, f"{SET}/imports/preview/", _jsonl(Q1)).status_code == 404
    assert _post(client, f"{WS}/imports/", _jsonl(Q1), evalset="new").status_code == 404


@pytest.mark.services
def test_two_importers_at_once_one_wins_and_the_other_gets_a_409(worker, owner_client, evalset):
    locked, release = threading.Event(), threading.Event()

    def first_importer_writing():
        try:
            with transaction.atomic():
                EvalSet.objects.select_for_update().get(pk=evalset.pk)
                locked.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    thread = threading.Thread(target=first_importer_writing)
    thread.start()
    try:
        assert locked.wait(timeout=30)
        second = _post(owner_client, f"{SET}/imports/", _jsonl(Q1))
    finally:
        release.set()
        thread.join()

    assert second.status_code == 409
    assert "another import into 'quiz' is being written" in second.json()["detail"]
    assert not EvalItem.objects.exists()
