"""Imports keep the evidence they were given: where each label lies, and nothing twice.

The set below is the hard case for a file: a two-page document whose passages repeat, on
both pages, with anchors highlighted on later copies. Our own release files are exported
from it and imported back, into the set they came from (nothing may change) and into a new
set (the same anchors, on the same copies). Other files are written by hand from their
format's documentation.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import imports, releases, services
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    GoldAnchor,
    ItemEvent,
    ParseVersion,
    ReleaseFile,
)
from evalsets.review import workflow

pytestmark = pytest.mark.django_db

WS = "/api/workspaces/acme"

CLAUSE = "Payment is due within 30 days."
NOTICE = "Notice must be given in writing."
PAGE_ONE = (
    "Terms of supply\n\n"
    f"{CLAUSE} Late payment costs interest.\n\n"
    f"{NOTICE} {CLAUSE}\n"
)
PAGE_TWO = (
    f"Schedule B\n\n{CLAUSE} Returns are accepted for 14 days.\n\n"
    f"{NOTICE} Either party may end the agreement.\n"
)
SUPPLY = PAGE_ONE + PAGE_TWO


def copies(text: str, quote: str) -> list[int]:
    found, at = [], text.find(quote)
    while at != -1:
        found.append(at)
        at = text.find(quote, at + 1)
    return found


def add_document(workspace, source_id: str, text: str, page_starts: list[int]) -> Document:
    doc = Document(workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0")[:64])
    doc.file.save(source_id, ContentFile(text.encode()), save=False)
    doc.size, doc.kind = len(text.encode()), "text"
    doc.save()
    services.parse_version_add(
        document=doc, parser="plaintext", parser_version="1", text=text, page_starts=page_starts
    )
    return doc


@pytest.fixture
def supply(workspace):
    return add_document(workspace, "supply.txt", SUPPLY, [0, len(PAGE_ONE)])


def highlight(item, user, document, start: int, end: int, grade: int = 2) -> GoldAnchor:
    parse = document.parses.get(is_reference=True)
    return services.anchor_create_from_highlight(
        item=item, user=user, parse=parse, start=start, end=end, grade=grade
    )


def approve(item, annotator, reviewer) -> None:
    item.refresh_from_db()
    item, _ = workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)


@pytest.fixture
def source(workspace, owner, annotator, reviewer, supply):
    """`quiz`, all approved: s1 the third copy of CLAUSE (page 2) and the second of NOTICE
    (page 2, grade 1); s2 the second copy of CLAUSE (page 1), with filters; s3 a unique
    sentence; s4 no evidence."""
    evalset = services.evalset_create(workspace=workspace, user=owner, slug="quiz", name="Quiz")
    clause, notice = copies(SUPPLY, CLAUSE), copies(SUPPLY, NOTICE)
    s1 = services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="s1",
        question="When is payment due?",
        answer="within 30 days",
    )
    highlight(s1, annotator, supply, clause[2], clause[2] + len(CLAUSE))
    highlight(s1, annotator, supply, notice[1], notice[1] + len(NOTICE), grade=1)
    s2 = services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="s2",
        question="How long until payment is late?",
        meta={"filters": {"lang": ["en"], "region": "eu"}},
    )
    highlight(s2, annotator, supply, clause[1], clause[1] + len(CLAUSE))
    s3 = services.item_create(
        evalset=evalset, user=annotator, item_id="s3", question="Who may end the agreement?"
    )
    end = SUPPLY.index("Either party")
    highlight(s3, annotator, supply, end, end + len("Either party may end the agreement."))
    s4 = services.item_create(
        evalset=evalset, user=annotator, item_id="s4", question="Is there a warranty?"
    )
    for item in (s1, s2, s3, s4):
        approve(item, annotator, reviewer)
    return evalset


EXPORTED = [
    "contextgrid-jsonl",
    "contextgrid-csv",
    "deepset-qa",
    "deepset-retrieval",
    "deepset-rag",
    "beir",
]


def exported(evalset, owner, capture, fmt: str) -> tuple[bytes, str]:
    with capture(execute=True):
        release = releases.release_create(evalset=evalset, user=owner, formats=[fmt])
    stored = ReleaseFile.objects.get(release=release, format=fmt)
    with stored.file.open("rb") as handle:
        return handle.read(), stored.filename


def dump(evalset) -> dict:
    """Everything an import could touch in the set, field by field."""
    items = EvalItem.objects.filter(evalset=evalset).order_by("item_id")
    anchors = GoldAnchor.objects.filter(item__evalset=evalset).order_by("pk")
    events = ItemEvent.objects.filter(item__evalset=evalset).order_by("pk")
    return json.loads(
        json.dumps(
            {
                "items": list(
                    items.values(
                        "item_id", "question", "qtype", "answer", "meta", "state", "row_version"
                    )
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
                        "prefix",
                        "suffix",
                        "ref_start",
                        "ref_end",
                    )
                ),
                "events": list(events.values("pk", "kind", "data")),
            },
            default=str,
        )
    )


def post(client, url: str, data: bytes, name: str, **fields):
    return client.post(
        url, {"file": SimpleUploadedFile(name, data), **fields}, format="multipart"
    )


@pytest.fixture
def owner_client(client_for, owner, workspace):
    return client_for(owner)


@pytest.mark.parametrize("fmt", EXPORTED)
def test_our_own_file_imported_into_its_source_set_changes_nothing(
    source, owner, owner_client, django_capture_on_commit_callbacks, fmt
):
    data, name = exported(source, owner, django_capture_on_commit_callbacks, fmt)
    before = dump(source)

    preview = post(owner_client, f"{WS}/evalsets/quiz/imports/preview/", data, name, format=fmt)
    with django_capture_on_commit_callbacks(execute=True):
        committed = post(owner_client, f"{WS}/evalsets/quiz/imports/", data, name, format=fmt)

    body = preview.json()
    assert body["can_commit"] is True, body["refused"]
    assert body["counts"]["create"] == 0 and body["update"] == [], body
    assert committed.status_code == 200, committed.json()
    assert dump(source) == before
