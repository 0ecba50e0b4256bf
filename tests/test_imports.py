"""Imports: previewed without writing, committed in one transaction, idempotent, never a 500."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
from contextgrid.core.evalset import EvalItem as CgItem
from contextgrid.core.evalset import EvalSet as CgSet
from contextgrid.core.evalset import GoldAnchor as CgAnchor
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ImportRecord,
    ParseVersion,
    PendingImportLabel,
    PendingLabelStatus,
)
from evalsets.pure.formats import get_format
from evalsets.releases import imports

pytestmark = pytest.mark.django_db

WS = "/api/workspaces/acme"
SET = f"{WS}/evalsets/quiz"
CONTRACT = "This Agreement is governed by the laws of Delaware. Either party may terminate it."


def _pending_for(evalset: EvalSet) -> list[dict[str, Any]]:
    """The set's imported labels still waiting (or failed), as a page would list them."""
    rows = PendingImportLabel.objects.filter(item__evalset=evalset).exclude(
        status=PendingLabelStatus.ATTACHED
    )
    return [
        {
            "item": label.item.item_id,
            "file_name": label.source_id,
            "span": [label.start, label.end],
            "quote": label.quote,
            "status": label.status,
            "message": label.message,
        }
        for label in rows.select_related("item")
    ]


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
        "lines_read": 4,
        "not_listed": 0,
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
            "changes": [
                {
                    "field": "question",
                    "old": "How much leave do employees accrue per month?",
                    "new": edited.question,
                }
            ],
            "anchors_added": [
                {
                    "source_id": "handbook.txt",
                    "quote": "Employee Handbook",
                    "grade": 1,
                    "page_hint": None,
                    "occurrence": 0,
                }
            ],
            "anchors_changed": [],
            "pending_spans_added": 0,
            "state": None,
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
    real = anchoring_services.anchor_create_typed
    calls = []

    def fail_second(**kwargs):
        calls.append(kwargs)
        if len(calls) == 2:
            raise RuntimeError("the database went away")
        return real(**kwargs)

    monkeypatch.setattr(anchoring_services, "anchor_create_typed", fail_second)
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
        document, _ = documents_services.document_upload(
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
        documents_services.document_upload(
            workspace=workspace, user=owner, upload=_file(CONTRACT.encode(), "contract.txt")
        )

    anchor = GoldAnchor.objects.get()
    assert anchor.quote == "Either party may terminate it." and anchor.item.item_id == "lb-1"
    assert anchor.resolutions.get().status == "exact"
    failed = PendingImportLabel.objects.get(status="failed")
    assert "does not fit 'contract.txt'" in failed.message
    assert _pending_for(evalset) == [
        {
            "item": "lb-1",
            "file_name": "contract.txt",
            "span": [5, 9999],
            "quote": "",
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
    waiting = PendingImportLabel.objects.get(item__item_id="d2")
    assert (waiting.source_id, waiting.quote, waiting.status) == (
        "contract.txt",
        "Either party",
        "waiting",
    )
    assert waiting.context[waiting.start : waiting.end] == "Either party"
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


# -- round trips into an existing set, one per format -----------------------------------------
#
# The set below holds what an import must not damage: qtype, meta, grades, page hints,
# answers, several anchors with occurrence > 0 on a two-page document, unicode. Every file is
# written by hand from its format's specification (or by context-grid's own writers), never
# by Groundwork's writers, in the shapes real tools produce: pandas (an unnamed index
# column, integer columns with blanks written as `26.0`, LF), Excel (UTF-8 BOM, CRLF).

MANUAL_PAGES = (
    "Manuel d\u2019entretien \u2014 Übersicht\n\n"
    "Le délai est de 30 jours. Voir la section 2.\n"
    "Le délai est de 30 jours.\n",
    "Page deux : le délai est de 30 jours pour les pièces.\n"
    "Le délai est de 30 jours. Le délai est de 30 jours.\n"
    "Garantie : 2 ans ✓\n",
)
MANUAL = "".join(MANUAL_PAGES)
DELAY = "Le délai est de 30 jours."
PAGE_TWO_LINE = f"{DELAY} {DELAY}"
WARRANTY = "Garantie : 2 ans ✓"
Q_M1, Q_M2, Q_M3 = "Quel est le délai ? ✓", "Combien de jours ?", "Sans preuve ?"
#: deepset's question-answering columns, plus the `question_id` deepset ignores.
QA_HEADER = [
    "question",
    "text",
    "context",
    "file_name",
    "answer_start",
    "answer_end",
    "question_id",
]


def _copies(text: str, quote: str) -> list[int]:
    found, at = [], text.find(quote)
    while at != -1:
        found.append(at)
        at = text.find(quote, at + 1)
    return found


# The four copies of DELAY: two on page 1, two on page 2.
C0, C1, C2, C3 = _copies(MANUAL, DELAY)


def _add_document(workspace, source_id: str, text: str, page_starts: list[int]):
    from django.core.files.base import ContentFile

    from evalsets.models import Document

    doc = Document(workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0")[:64])
    doc.file.save(source_id, ContentFile(text.encode()), save=False)
    doc.size, doc.kind = len(text.encode()), "text"
    doc.save()
    documents_services.parse_version_add(
        document=doc, parser="plaintext", parser_version="1", text=text, page_starts=page_starts
    )
    return doc


@pytest.fixture
def manual(workspace):
    return _add_document(workspace, "manual.txt", MANUAL, [0, len(MANUAL_PAGES[0])])


@pytest.fixture
def rich(evalset, manual, annotator):
    """m1: answer, qtype, meta, two anchors on page 2 (one the 2nd copy there, grade 1
    the other); m2: no answer, filters, the 3rd copy of a repeated quote; m3: no evidence."""
    m1 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="m1",
        question=Q_M1,
        qtype="numeric",
        answer="30 jours",
        meta={"tags": ["ü"], "lang": "fr"},
    )
    anchoring_services.anchor_create_typed(
        item=m1, user=annotator, source_id="manual.txt", quote=DELAY, page_hint=2, occurrence=1
    )
    anchoring_services.anchor_create_typed(
        item=m1, user=annotator, source_id="manual.txt", quote=WARRANTY, grade=1, page_hint=2
    )
    m2 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="m2",
        question=Q_M2,
        qtype="factoid",
        meta={"filters": {"lang": ["fr", "de"]}},
    )
    anchoring_services.anchor_create_typed(
        item=m2, user=annotator, source_id="manual.txt", quote=DELAY, occurrence=2
    )
    anchoring_services.item_create(evalset=evalset, user=annotator, item_id="m3", question=Q_M3)
    return evalset


def _state(evalset) -> dict:
    """Everything an import could touch in the set, field by field."""
    items = EvalItem.objects.filter(evalset=evalset).order_by("item_id")
    anchors = GoldAnchor.objects.filter(item__evalset=evalset).order_by("pk")
    return {
        "items": list(
            items.values("item_id", "question", "qtype", "answer", "meta", "state", "row_version")
        ),
        "anchors": list(
            anchors.values(
                "item__item_id",
                "public_id",
                "source_id",
                "quote",
                "grade",
                "page_hint",
                "occurrence",
                "document_id",
                "prefix",
                "suffix",
            )
        ),
        "pending": list(
            PendingImportLabel.objects.filter(item__evalset=evalset).values(
                "item__item_id", "source_id", "start", "end", "context", "quote", "status"
            )
        ),
    }


def _cg_rich() -> CgSet:
    """The `rich` set as context-grid objects, written out by hand."""
    return CgSet(
        id="quiz",
        items=(
            CgItem(
                id="m1",
                question=Q_M1,
                anchors=(
                    CgAnchor("manual.txt", DELAY, grade=2, page_hint=2, occurrence=1),
                    CgAnchor("manual.txt", WARRANTY, grade=1, page_hint=2),
                ),
                qtype="numeric",
                answer="30 jours",
                meta={"tags": ["ü"], "lang": "fr"},
            ),
            CgItem(
                id="m2",
                question=Q_M2,
                anchors=(CgAnchor("manual.txt", DELAY, occurrence=2),),
                qtype="factoid",
                meta={"filters": {"lang": ["fr", "de"]}},
            ),
            CgItem(id="m3", question=Q_M3),
        ),
    )


def _contextgrid_jsonl(tmp_path) -> bytes:
    from contextgrid.evalset.io import write_jsonl

    return write_jsonl(_cg_rich(), tmp_path / "set.jsonl").read_bytes()


def _contextgrid_csv(tmp_path) -> bytes:
    """context-grid's `write_csv`: the first anchor of each item, CRLF (Python's csv)."""
    from contextgrid.evalset.io import write_csv

    return write_csv(_cg_rich(), tmp_path / "set.csv").read_bytes()


def _excel(data: bytes) -> bytes:
    """As Excel's "CSV UTF-8" saves it: a byte-order mark and CRLF line ends."""
    return b"\xef\xbb\xbf" + data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _csv_text(rows: list[list], *, index: bool = False) -> bytes:
    """Rows as pandas' `to_csv` writes them (minimal quoting, LF), with its index column."""
    import csv

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for number, row in enumerate(rows):
        writer.writerow(([""] if number == 0 else [number - 1]) + row if index else row)
    return out.getvalue().encode()


def _deepset_qa_rows(as_float: bool) -> list[list]:
    """deepset's QA layout: question, text (the answer), context (the text around it),
    file_name, answer_start/answer_end (offsets of `text` in `context`, end exclusive),
    filters (`{"key1":"value1", "key1":"value2"}` gives one key two values)."""

    def offset(value: int):
        return f"{value}.0" if as_float else value  # pandas: an int column with blanks

    second = PAGE_TWO_LINE.index("30 jours", PAGE_TWO_LINE.index("30 jours") + 1)
    header = ["question", "text", "context", "file_name", "answer_start", "answer_end"]
    return [
        [*header, "filters", "question_id"],
        [
            Q_M1,
            "30 jours",
            PAGE_TWO_LINE,
            "manual.txt",
            offset(second),
            offset(second + 8),
            "",
            "m1",
        ],
        [Q_M1, WARRANTY, WARRANTY, "manual.txt", offset(0), offset(len(WARRANTY)), "", "m1"],
        [
            Q_M2,
            DELAY,
            PAGE_TWO_LINE,
            "manual.txt",
            offset(0),
            offset(len(DELAY)),
            '{"lang":"fr","lang":"de"}',
            "m2",
        ],
        [Q_M3, "", "", "", "", "", "", "m3"],
    ]


def _deepset_qa_pandas(tmp_path) -> bytes:
    return _csv_text(_deepset_qa_rows(as_float=True), index=True)


def _deepset_qa_excel(tmp_path) -> bytes:
    return _excel(_csv_text(_deepset_qa_rows(as_float=False)))


def _deepset_retrieval(tmp_path) -> bytes:
    """deepset's retrieval layout: `text` empty, `context` the passage to retrieve."""
    return _excel(
        _csv_text(
            [
                ["question", "text", "context", "file_name", "filters", "question_id"],
                [Q_M1, "", PAGE_TWO_LINE, "manual.txt", "", "m1"],
                [Q_M1, "", WARRANTY, "manual.txt", "", "m1"],
                [Q_M2, "", PAGE_TWO_LINE, "manual.txt", '{"lang":"fr","lang":"de"}', "m2"],
                [Q_M3, "", "", "", "", "m3"],
            ]
        )
    )


def _deepset_rag(tmp_path) -> bytes:
    """deepset's RAG layout: `question` filled in, every other column present and empty
    (plus `question_id`, a column deepset ignores, as Groundwork's export writes it)."""
    header = ["question", "text", "context", "file_name", "answer_start", "answer_end"]
    questions = (("m1", Q_M1), ("m2", Q_M2), ("m3", Q_M3))
    rows = [[*header, "filters", "question_id"]]
    rows += [[q, "", "", "", "", "", "", i] for i, q in questions]
    return _csv_text(rows, index=True)


def _beir(tmp_path) -> bytes:
    """BEIR: queries.jsonl (`_id`, `text`) and qrels/test.tsv (query-id, corpus-id, score)."""
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        queries = [{"_id": i, "text": q} for i, q in (("m1", Q_M1), ("m2", Q_M2), ("m3", Q_M3))]
        archive.writestr(
            "queries.jsonl", "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
        )
        archive.writestr(
            "qrels/test.tsv", "query-id\tcorpus-id\tscore\nm1\tmanual.txt\t2\nm2\tmanual.txt\t1\n"
        )
    return out.getvalue()


def _legalbench(tmp_path) -> bytes:
    """LegalBench-RAG: spans into corpus files named relative to the corpus folder."""

    def snippet(start: int, text: str) -> dict:
        return {
            "file_path": "corpus/manual.txt",
            "span": [start, start + len(text)],
            "answer": text,
        }

    tests = [
        {"id": "m1", "query": Q_M1, "snippets": [snippet(C3, DELAY)]},
        {"id": "m2", "query": Q_M2, "snippets": [snippet(C2, DELAY)]},
        {"id": "m3", "query": Q_M3, "snippets": []},
    ]
    return json.dumps({"tests": tests}, ensure_ascii=False).encode()


def _with_meta(before: dict, changes: dict[str, dict]) -> dict:
    """``before`` with each named item's meta updated and its row version bumped once."""
    after = json.loads(json.dumps(before, default=str))
    for item in after["items"]:
        if item["item_id"] in changes:
            item["meta"] = {**item["meta"], **changes[item["item_id"]]}
            item["row_version"] += 1
    return after


ROUND_TRIPS = [
    pytest.param("contextgrid-jsonl", _contextgrid_jsonl, "set.jsonl", {}, id="jsonl-contextgrid"),
    pytest.param("contextgrid-csv", _contextgrid_csv, "set.csv", {}, id="csv-contextgrid"),
    pytest.param(
        "contextgrid-csv", lambda p: _excel(_contextgrid_csv(p)), "set.csv", {}, id="csv-excel"
    ),
    pytest.param("deepset-qa", _deepset_qa_pandas, "qa.csv", {}, id="deepset-qa-pandas"),
    pytest.param("deepset-qa", _deepset_qa_excel, "qa.csv", {}, id="deepset-qa-excel"),
    pytest.param("deepset-retrieval", _deepset_retrieval, "r.csv", {}, id="deepset-retrieval"),
    pytest.param("deepset-rag", _deepset_rag, "rag.csv", {}, id="deepset-rag-pandas"),
    pytest.param(
        "beir",
        _beir,
        "beir.zip",
        # m1's anchors already judge manual.txt 2 (a release writes that qrel from them)
        {"m2": {"gold_documents": [["manual.txt", 1]]}},
        id="beir",
    ),
    pytest.param(
        "legalbench-rag",
        _legalbench,
        "bench.json",
        {
            "m1": {"legalbench_spans": [["corpus/manual.txt", C3, C3 + len(DELAY)]]},
            "m2": {"legalbench_spans": [["corpus/manual.txt", C2, C2 + len(DELAY)]]},
        },
        id="legalbench",
    ),
]


@pytest.mark.filterwarnings("ignore:CSV holds one anchor per question")  # context-grid's note
@pytest.mark.parametrize(("fmt", "build", "name", "meta_changes"), ROUND_TRIPS)
def test_a_file_of_the_same_set_changes_only_what_its_format_carries(
    commit, owner_client, rich, tmp_path, fmt, build, name, meta_changes
):
    data = build(tmp_path)
    before = json.loads(json.dumps(_state(rich), default=str))

    preview = _post(owner_client, f"{SET}/imports/preview/", data, name, format=fmt).json()
    commit(f"{SET}/imports/", data, name, format=fmt)

    assert preview["can_commit"] is True, preview["refused"]
    assert sorted(i["id"] for i in preview["update"]) == sorted(meta_changes)
    for planned in preview["update"]:
        assert [c["field"] for c in planned["changes"]] == ["meta"]
        assert planned["anchors_added"] == [] and planned["anchors_changed"] == []
    after = json.loads(json.dumps(_state(rich), default=str))
    assert after == _with_meta(before, meta_changes)


def test_re_importing_a_deepset_file_changes_a_question_and_shows_old_and_new(
    commit, owner_client, rich, tmp_path
):
    rows = _deepset_qa_rows(as_float=False)
    rows[3][0] = "Combien de jours exactement ?"
    data = _csv_text(rows)
    before = _state(rich)

    preview = _post(owner_client, f"{SET}/imports/preview/", data, "qa.csv", format="deepset-qa")
    commit(f"{SET}/imports/", data, "qa.csv", format="deepset-qa", status=201)

    planned = preview.json()["update"]
    assert [(p["id"], p["changes"]) for p in planned] == [
        ("m2", [{"field": "question", "old": Q_M2, "new": "Combien de jours exactement ?"}])
    ]
    assert preview.json()["carries"] == [
        "question",
        "answer (new items)",
        "meta.filters",
        "anchors (added)",
    ]
    after = _state(rich)
    assert after["anchors"] == before["anchors"]  # no near-duplicates, grades and hints kept
    m2 = EvalItem.objects.get(item_id="m2")
    assert (m2.question, m2.qtype, m2.answer, m2.meta) == (
        "Combien de jours exactement ?",
        "factoid",
        None,  # the row's `text` is the evidence, not an answer
        {"filters": {"lang": ["fr", "de"]}},
    )


def test_a_deepset_file_into_a_new_set_takes_each_answer_from_text(commit, manual):
    data = _csv_text(_deepset_qa_rows(as_float=True), index=True)

    commit(f"{WS}/imports/", data, "qa.csv", format="deepset-qa", evalset="fresh", status=201)

    m1 = EvalItem.objects.get(evalset__slug="fresh", item_id="m1")
    assert m1.answer == "30 jours"
    # stored as highlights of the places the contexts name: page, copy on that page, offsets
    on_page_two = [at - len(MANUAL_PAGES[0]) for at in _copies(MANUAL, "30 jours")][2:]
    assert list(m1.anchors.values_list("quote", "page_hint", "occurrence", "ref_start")) == [
        (
            "30 jours",
            2,
            on_page_two.index(C3 + DELAY.index("30 jours") - len(MANUAL_PAGES[0])),
            C3 + DELAY.index("30 jours"),
        ),
        (WARRANTY, 2, 0, MANUAL.index(WARRANTY)),
    ]
    m2 = EvalItem.objects.get(evalset__slug="fresh", item_id="m2")
    assert m2.meta == {"filters": {"lang": ["fr", "de"]}}
    assert list(m2.anchors.values_list("quote", "page_hint", "occurrence", "ref_start")) == [
        (DELAY, 2, 0, C2)
    ]


def test_a_jsonl_file_regrades_known_evidence_and_shows_the_old_grade(
    commit, owner_client, rich, tmp_path
):
    from contextgrid.evalset.io import write_jsonl

    evalset = _cg_rich()
    m1 = evalset.items[0]
    # The same evidence, described another way (no page hint, counted over the whole file).
    regraded = CgItem(
        id="m1",
        question=m1.question,
        anchors=(CgAnchor("manual.txt", DELAY, grade=1, occurrence=3), m1.anchors[1]),
        qtype=m1.qtype,
        answer=m1.answer,
        meta=m1.meta,
    )
    data = write_jsonl(evalset.with_items((regraded,)), tmp_path / "g.jsonl").read_bytes()
    before = _state(rich)

    preview = _post(owner_client, f"{SET}/imports/preview/", data, "g.jsonl").json()
    commit(f"{SET}/imports/", data, "g.jsonl", status=201)

    changed = preview["update"][0]["anchors_changed"]
    assert changed == [
        {
            "anchor": str(before["anchors"][0]["public_id"]),
            "source_id": "manual.txt",
            "quote": DELAY,
            "field": "grade",
            "old": 2,
            "new": 1,
        }
    ]
    after = _state(rich)
    assert [a["grade"] for a in after["anchors"]] == [1, 1, 2]
    assert [a["public_id"] for a in after["anchors"]] == [a["public_id"] for a in before["anchors"]]


def test_a_question_id_shared_by_two_questions_is_refused_with_both_lines(
    commit, owner_client, evalset
):
    data = (
        b"question,text,context,file_name,answer_start,answer_end,question_id\n"
        b"First question?,,,,,,d1\n"
        b"Another question?,,,,,,d1\n"
    )
    before = _counts()

    preview = _post(owner_client, f"{SET}/imports/preview/", data, "d.csv", format="deepset-qa")
    committed = commit(f"{SET}/imports/", data, "d.csv", format="deepset-qa", status=400)

    refused = preview.json()["refused"]
    assert preview.json()["can_commit"] is False and len(refused) == 1
    assert (refused[0]["line"], refused[0]["field"]) == (3, "question_id")
    assert "on line 2" in refused[0]["message"] and "on line 3" in refused[0]["message"]
    assert "nothing was imported" in committed.json()["detail"] and _counts() == before


def test_deepset_filters_with_a_repeated_key_keep_every_value(commit, evalset):
    data = (
        b"question,text,context,file_name,filters,question_id\n"
        b'Q?,,,,"{""key1"":""value1"", ""key1"":""value2"", ""key2"":""value3""}",d1\n'
    )

    commit(f"{SET}/imports/", data, "f.csv", format="deepset-qa", status=201)

    assert EvalItem.objects.get(item_id="d1").meta == {
        "filters": {"key1": ["value1", "value2"], "key2": "value3"}
    }


def test_a_deepset_label_waiting_for_its_file_is_placed_through_its_context(
    commit, evalset, owner, workspace, django_capture_on_commit_callbacks
):
    late = "Intro. Pay in 30 days.\n\nPay in 30 days. Late fees apply after that.\n"
    context = "Pay in 30 days. Late fees apply"
    data = _csv_text(
        [
            QA_HEADER,
            ["When must I pay?", "Pay in 30 days.", context, "late.txt", 0, 15, "p1"],
        ]
    )
    commit(f"{SET}/imports/", data, "late.csv", format="deepset-qa", status=201)
    assert not GoldAnchor.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        documents_services.document_upload(
            workspace=workspace, user=owner, upload=_file(late.encode(), "late.txt")
        )

    anchor = GoldAnchor.objects.get()
    assert (anchor.quote, anchor.occurrence) == ("Pay in 30 days.", 1)
    assert anchor.resolutions.get().start == late.index(context)
    assert PendingImportLabel.objects.get().status == "attached"


def test_a_legalbench_span_that_does_not_hold_its_answer_is_refused_with_where_it_is(
    owner_client, evalset, manual
):
    data = json.dumps(
        {
            "tests": [
                {
                    "id": "lb",
                    "query": "Garantie ?",
                    "snippets": [
                        {
                            "file_path": "manual.txt",
                            "span": [MANUAL.index(WARRANTY) + 2, MANUAL.index(WARRANTY) + 20],
                            "answer": WARRANTY,
                        }
                    ],
                }
            ]
        }
    ).encode()

    body = _post(owner_client, f"{SET}/imports/preview/", data, "lb.json").json()

    assert body["can_commit"] is False
    problem = body["refused"][0]
    assert problem["field"] == "tests[0].snippets[0].span" and problem["item"] == "lb"
    assert f"the answer is at [{MANUAL.index(WARRANTY)}," in problem["message"]
    assert "off by -2" in problem["message"]


def test_legalbench_paths_match_uploads_by_suffix_or_are_refused_when_ambiguous(
    owner_client, evalset, manual, workspace
):
    start = MANUAL.index(WARRANTY)
    snippet = {"span": [start, start + len(WARRANTY)], "answer": WARRANTY}
    data = json.dumps(
        [
            {
                "id": "lb",
                "query": "Garantie ?",
                "snippets": [{"file_path": "cuad/manual.txt", **snippet}],
            }
        ]
    ).encode()

    suffix = _post(owner_client, f"{SET}/imports/preview/", data, "lb.json").json()
    _add_document(workspace, "other/manual.txt", MANUAL, [0])
    data = data.replace(b"cuad/manual.txt", b"cuad/other/manual.txt")
    ambiguous = _post(owner_client, f"{SET}/imports/preview/", data, "lb.json").json()

    assert suffix["can_commit"] is True
    assert suffix["matched_files"] == [
        {"file": "cuad/manual.txt", "source_id": "manual.txt", "how": "suffix"}
    ]
    assert suffix["create"][0]["anchors_added"][0]["source_id"] == "manual.txt"
    assert ambiguous["can_commit"] is False
    message = ambiguous["refused"][0]["message"]
    assert "matches 2 documents" in message and "'manual.txt'" in message
    assert "'other/manual.txt'" in message


def test_a_legalbench_span_waiting_for_its_file_must_hold_its_answer_when_it_arrives(
    commit, evalset, owner, workspace, django_capture_on_commit_callbacks
):
    start = CONTRACT.index("Either party")
    data = json.dumps(
        [
            {
                "id": "lb",
                "query": "Who may end it?",
                "snippets": [
                    {
                        "file_path": "contract.txt",
                        "span": [start, start + 12],
                        "answer": "Either party",
                    },
                    {
                        "file_path": "contract.txt",
                        "span": [start + 1, start + 13],
                        "answer": "Either party",
                    },
                ],
            }
        ]
    ).encode()
    commit(f"{SET}/imports/", data, "lb.json", status=201)

    with django_capture_on_commit_callbacks(execute=True):
        documents_services.document_upload(
            workspace=workspace, user=owner, upload=_file(CONTRACT.encode(), "contract.txt")
        )

    assert GoldAnchor.objects.get().quote == "Either party"
    failed = PendingImportLabel.objects.get(status="failed")
    assert (
        "not the snippet's answer 'Either party'" in failed.message
        and "off by -1" in failed.message
    )


def _reviewed_jsonl(tmp_path) -> bytes:
    from contextgrid.evalset.io import write_jsonl

    item = CgItem(
        id="r1",
        question="Reviewed already?",
        anchors=(CgAnchor("manual.txt", WARRANTY),),
        meta={
            "reviewed": True,
            "reviewed_by": "rita",
            "reviewed_at": "2026-11-02T10:00:00Z",
            "k": 1,
        },
    )
    return write_jsonl(CgSet(id="quiz", items=(item,)), tmp_path / "r.jsonl").read_bytes()


def test_a_reviewed_item_in_the_file_comes_in_approved_with_an_audit_entry(
    commit, owner_client, evalset, manual, tmp_path
):
    from evalsets.models import ItemEvent

    data = _reviewed_jsonl(tmp_path)

    preview = _post(owner_client, f"{SET}/imports/preview/", data, "r.jsonl").json()
    commit(f"{SET}/imports/", data, "r.jsonl", status=201)
    again = _post(owner_client, f"{SET}/imports/preview/", data, "r.jsonl").json()

    assert preview["create"][0]["state"] == {
        "old": "draft",
        "new": "approved",
        "reviewed_by": "rita",
        "reviewed_at": "2026-11-02T10:00:00Z",
    }
    item = EvalItem.objects.get(item_id="r1")
    assert (item.state, item.meta) == ("approved", {"k": 1})
    event = ItemEvent.objects.get(item=item, kind="approved")
    assert event.actor.username == "olive" and "r.jsonl" in event.reason
    assert "rita" in event.reason and event.data["reviewed_at"] == "2026-11-02T10:00:00Z"
    assert again["unchanged"] == ["r1"]


def test_a_file_s_review_does_not_approve_when_the_importer_is_not_an_owner(
    evalset, manual, annotator, tmp_path
):
    plan = imports.import_plan(
        workspace=evalset.workspace,
        evalset=evalset,
        evalset_id="quiz",
        data=_reviewed_jsonl(tmp_path),
        filename="r.jsonl",
        user=annotator,
    )

    assert plan.items[0].approve is None
    assert "only an owner's import approves it" in plan.warnings[0].message


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_the_import_page_shows_the_old_and_new_value_of_every_change(
    page, live_server, evalset, annotator, tmp_path
):
    from contextgrid.evalset.io import write_jsonl
    from playwright.sync_api import expect

    from tests.browser import log_in
    from tests.conftest import PASSWORD

    anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="m2", question=Q_M2, qtype="factoid"
    )
    edited = CgItem(id="m2", question="Combien de jours exactement ?", qtype="numeric")
    upload = write_jsonl(CgSet(id="quiz", items=(edited,)), tmp_path / "edit.jsonl")
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/import/")

    page.get_by_label("File").set_input_files(str(upload))
    page.get_by_role("button", name="Preview").click()

    tables = page.locator("#import-tables")
    expect(tables.locator("tr", has_text="question")).to_contain_text(Q_M2)
    expect(tables.locator("tr", has_text="question")).to_contain_text(
        "Combien de jours exactement ?"
    )
    expect(tables.locator("tr", has_text="qtype")).to_contain_text("factoid")
    expect(tables.locator("tr", has_text="qtype")).to_contain_text("numeric")
    expect(page.locator("#import-summary")).to_contain_text("This format changes only: question")


# -- what each format carries, unit by unit ----------------------------------------------------


def test_a_csv_without_some_columns_carries_only_the_rest():
    carries = imports.CARRIES["contextgrid-csv"].narrowed({"qtype", "grade", "meta"})

    assert carries == imports.Carries(
        fields=("question", "answer"), meta=(), anchors=True, grade=False, review=False
    )
    assert imports.CARRIES["contextgrid-csv"].narrowed({"anchors"}).anchors is False
    assert (
        imports.CARRIES["contextgrid-jsonl"].narrowed(set()) == imports.CARRIES["contextgrid-jsonl"]
    )


def test_a_file_without_an_answer_or_filters_leaves_them_alone():
    legalbench = imports.CARRIES["legalbench-rag"].narrowed({"answer"})
    deepset = imports.CARRIES["deepset-qa"].narrowed({"filters"})

    assert (legalbench.fields, legalbench.meta) == (("question",), ("legalbench_spans",))
    assert (deepset.new_only, deepset.meta, deepset.same_evidence) == (("answer",), (), "inside")
    assert imports.CARRIES["deepset-qa"].narrowed({"answer"}).new_only == ()
    assert imports.carried_fields(imports.CARRIES["contextgrid-jsonl"]) == [
        "question",
        "qtype",
        "answer",
        "meta",
        "anchors (added)",
        "anchor grades",
        "review",
    ]


def test_meta_is_replaced_whole_without_review_keys_or_only_in_the_keys_a_format_carries():
    whole = imports.CARRIES["contextgrid-jsonl"]
    beir = imports.CARRIES["beir"]
    given = {"reviewed": True, "reviewed_by": "rita", "reviewed_at": "now", "k": ("a", 1)}
    old = {"tags": ["x"], "gold_documents": [["old.txt", 1]]}

    assert imports._meta(old, given, whole) == {"k": ["a", 1]}
    assert imports._meta(old, {"gold_documents": [("d", 2)]}, beir) == {
        "tags": ["x"],
        "gold_documents": [["d", 2]],
    }
    assert imports._meta(old, {}, beir) == {"tags": ["x"]}
    assert imports._meta(None, {"gold_documents": []}, beir) == {"gold_documents": []}


def test_a_review_in_the_file_is_read_only_where_the_format_carries_it():
    whole = imports.CARRIES["contextgrid-jsonl"]
    item = CgItem(id="r", question="Q?", meta={"reviewed": 1})
    draft, approved = EvalItem(state="submitted"), EvalItem(state="approved")

    assert imports._review(item, draft, whole) == {"reviewed_by": "", "reviewed_at": ""}
    assert imports._review(item, None, whole) == {"reviewed_by": "", "reviewed_at": ""}
    assert imports._review(item, approved, whole) is None
    assert imports._review(item, draft, imports.CARRIES["beir"]) is None
    assert imports._review(CgItem(id="r", question="Q?"), draft, whole) is None


def _jsonl_items(tmp_path, *items: CgItem) -> bytes:
    from contextgrid.evalset.io import write_jsonl

    return write_jsonl(CgSet(id="quiz", items=items), tmp_path / "i.jsonl").read_bytes()


def test_two_descriptions_of_one_passage_in_a_file_become_one_anchor(commit, rich, tmp_path):
    # The 4th copy in the file is the 2nd copy on page 2: the same characters twice, kept
    # as a highlight of that copy keeps it.
    item = CgItem(
        id="n1",
        question="Twice the same evidence?",
        anchors=(
            CgAnchor("manual.txt", DELAY, occurrence=3),
            CgAnchor("manual.txt", DELAY, page_hint=2, occurrence=1),
            CgAnchor("manual.txt", DELAY, grade=0, page_hint=2, occurrence=1),
        ),
    )

    commit(f"{SET}/imports/", _jsonl_items(tmp_path, item), "i.jsonl", status=201)

    assert list(
        GoldAnchor.objects.filter(item__item_id="n1").values_list("page_hint", "occurrence")
    ) == [(2, 1)]


def test_known_evidence_given_twice_with_other_grades_is_regraded_once(
    owner_client, rich, tmp_path
):
    m1 = _cg_rich().items[0]
    twice = CgItem(
        id="m1",
        question=m1.question,
        anchors=(
            CgAnchor("manual.txt", DELAY, grade=1, occurrence=3),
            CgAnchor("manual.txt", DELAY, grade=0, page_hint=2, occurrence=1),
        ),
        qtype=m1.qtype,
        answer=m1.answer,
        meta=m1.meta,
    )

    body = _post(owner_client, f"{SET}/imports/preview/", _jsonl_items(tmp_path, twice)).json()

    changed = body["update"][0]["anchors_changed"]
    assert [(c["old"], c["new"]) for c in changed] == [(2, 1)]


def test_an_anchor_waiting_for_its_file_is_known_by_quote_and_occurrence(
    commit, owner_client, evalset, tmp_path
):
    first = CgItem(
        id="w1",
        question="Waiting?",
        anchors=(CgAnchor("contract.txt", "Either party", page_hint=2),),
    )
    commit(f"{SET}/imports/", _jsonl_items(tmp_path, first), "i.jsonl", status=201)
    other_hint = CgItem(
        id="w1",
        question="Waiting?",
        anchors=(
            CgAnchor("contract.txt", "Either party", page_hint=3),
            CgAnchor("contract.txt", "Either party", occurrence=1),
            CgAnchor("lease.txt", "Either party", page_hint=2),
        ),
    )

    body = _post(owner_client, f"{SET}/imports/preview/", _jsonl_items(tmp_path, other_hint)).json()

    added = body["update"][0]["anchors_added"]
    assert [(a["source_id"], a["occurrence"]) for a in added] == [
        ("contract.txt", 1),
        ("lease.txt", 0),
    ]


def test_a_deepset_label_not_in_its_document_is_new_evidence_with_a_warning(owner_client, rich):
    rows = _deepset_qa_rows(as_float=False)
    rows[2] = [Q_M1, "Garantie : 3 ans", "Garantie : 3 ans", "manual.txt", 0, 16, "", "m1"]

    body = _post(owner_client, f"{SET}/imports/preview/", _csv_text(rows), "qa.csv").json()

    (planned,) = body["update"]
    assert [a["quote"] for a in planned["anchors_added"]] == ["Garantie : 3 ans"]
    assert "was not found in 'manual.txt'" in body["warnings"][0]["message"]


def test_a_question_answering_file_read_as_rag_brings_questions_only(commit, manual):
    data = _csv_text(_deepset_qa_rows(as_float=False))

    commit(f"{WS}/imports/", data, "qa.csv", format="deepset-rag", evalset="rag", status=201)

    m1 = EvalItem.objects.get(evalset__slug="rag", item_id="m1")
    assert (m1.answer, m1.meta, m1.anchors.count()) == (None, {}, 0)


def test_new_deepset_labels_one_inside_the_other_become_one_anchor(commit, manual):
    second = PAGE_TWO_LINE.index("30 jours", PAGE_TWO_LINE.index("30 jours") + 1)
    data = _csv_text(
        [
            QA_HEADER,
            [Q_M1, "30 jours", PAGE_TWO_LINE, "manual.txt", second, second + 8, "n1"],
            [Q_M1, DELAY, PAGE_TWO_LINE, "manual.txt", 26, 26 + len(DELAY), "n1"],
        ]
    )

    commit(f"{WS}/imports/", data, "qa.csv", format="deepset-qa", evalset="inside", status=201)

    assert list(GoldAnchor.objects.values_list("quote", flat=True)) == ["30 jours"]


def test_a_deepset_answer_at_either_end_of_known_evidence_is_it_and_an_overlap_is_not(
    owner_client, rich
):
    def row(question: str, item_id: str, context: str, start: int, end: int) -> list:
        return [question, context[start:end], context, "manual.txt", start, end, item_id]

    straddle = PAGE_TWO_LINE.index("jours. Le")  # from inside the 3rd copy into the 4th
    data = _csv_text(
        [
            QA_HEADER,
            row(Q_M1, "m1", WARRANTY, 0, 8),  # "Garantie": where m1's warranty starts
            row(Q_M1, "m1", WARRANTY, 11, len(WARRANTY)),  # "2 ans ✓": where it ends
            row(Q_M1, "m1", PAGE_TWO_LINE, straddle, straddle + 15),  # m1 has the 4th copy
            row(Q_M2, "m2", PAGE_TWO_LINE, straddle, straddle + 15),  # m2 has the 3rd
        ]
    )

    body = _post(owner_client, f"{SET}/imports/preview/", data, "qa.csv", format="deepset-qa")

    added = {p["id"]: [a["quote"] for a in p["anchors_added"]] for p in body.json()["update"]}
    assert added == {"m1": ["jours. Le délai"], "m2": ["jours. Le délai"]}
