"""Imports keep the evidence they were given: where each label lies, and nothing twice.

The last section tests the readers' placing and matching rules alone, without a database
(the mutation run of the readers is judged by those: `-m "not django_db"`).

The set below is the hard case for a file: a two-page document whose passages repeat, on
both pages, with anchors highlighted on later copies. Our own release files are exported
from it and imported back, into the set they came from (nothing may change) and into a new
set (the same anchors, on the same copies). Other files are written by hand from their
format's documentation.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from contextgrid.core.documents import Document as CgDocument
from contextgrid.core.documents import ParsedDocument
from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import GoldAnchor as CgAnchor
from contextgrid.score.anchor import AnchorResolver
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemEvent,
    ParseVersion,
    ReleaseFile,
)
from evalsets.pure.formats import deepset
from evalsets.pure.formats.legalbench import match_path, path_matches
from evalsets.pure.formats.locating import span_from_context, trimmed_span
from evalsets.pure.formats.reading import spreadsheet_marked
from evalsets.pure.formats.results import PendingLabel
from evalsets.releases import services as releases_services
from evalsets.review import workflow

WS = "/api/workspaces/acme"

CLAUSE = "Payment is due within 30 days."
NOTICE = "Notice must be given in writing."
PAGE_ONE = f"Terms of supply\n\n{CLAUSE} Late payment costs interest.\n\n{NOTICE} {CLAUSE}\n"
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
    documents_services.parse_version_add(
        document=doc, parser="plaintext", parser_version="1", text=text, page_starts=page_starts
    )
    return doc


@pytest.fixture
def supply(workspace):
    return add_document(workspace, "supply.txt", SUPPLY, [0, len(PAGE_ONE)])


def highlight(item, user, document, start: int, end: int, grade: int = 2) -> GoldAnchor:
    parse = document.parses.get(is_reference=True)
    return anchoring_services.anchor_create_from_highlight(
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
    sentence; s4 no evidence; s5 the first copy of NOTICE (page 1)."""
    evalset = anchoring_services.evalset_create(
        workspace=workspace, user=owner, slug="quiz", name="Quiz"
    )
    clause, notice = copies(SUPPLY, CLAUSE), copies(SUPPLY, NOTICE)
    s1 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="s1",
        question="When is payment due?",
        answer="within 30 days",
    )
    highlight(s1, annotator, supply, clause[2], clause[2] + len(CLAUSE))
    highlight(s1, annotator, supply, notice[1], notice[1] + len(NOTICE), grade=1)
    s2 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="s2",
        question="How long until payment is late?",
        meta={"filters": {"lang": ["en"], "region": "eu"}},
    )
    highlight(s2, annotator, supply, clause[1], clause[1] + len(CLAUSE))
    s3 = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="s3", question="Who may end the agreement?"
    )
    end = SUPPLY.index("Either party")
    highlight(s3, annotator, supply, end, end + len("Either party may end the agreement."))
    s4 = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="s4", question="Is there a warranty?"
    )
    s5 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="s5",
        question="How is notice given?",
        answer="in writing",
    )
    highlight(s5, annotator, supply, notice[0], notice[0] + len(NOTICE))
    for item in (s1, s2, s3, s4, s5):
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
        release = releases_services.release_create(evalset=evalset, user=owner, formats=[fmt])
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
    return client.post(url, {"file": SimpleUploadedFile(name, data), **fields}, format="multipart")


@pytest.fixture
def owner_client(client_for, owner, workspace):
    return client_for(owner)


@pytest.mark.django_db
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


def placed_spans(evalset) -> dict[str, list[tuple[str, int, int, str]]]:
    """Each item's anchors as the resolver places them in the reference parse."""
    out: dict[str, list[tuple[str, int, int, str]]] = {}
    rows = AnchorResolution.objects.filter(
        anchor__item__evalset=evalset, parse__is_reference=True
    ).order_by("anchor__item__item_id", "start")
    for item_id, source_id, start, end, status in rows.values_list(
        "anchor__item__item_id", "anchor__source_id", "start", "end", "status"
    ):
        out.setdefault(item_id, []).append((source_id, start, end, status))
    return out


def highlighted_spans(evalset) -> dict[str, list[tuple[str, int, int]]]:
    out: dict[str, list[tuple[str, int, int]]] = {}
    anchors = GoldAnchor.objects.filter(item__evalset=evalset).order_by(
        "item__item_id", "ref_start"
    )
    for item_id, source_id, start, end in anchors.values_list(
        "item__item_id", "source_id", "ref_start", "ref_end"
    ):
        out.setdefault(item_id, []).append((source_id, start, end))
    return out


#: What each format carries of an item's anchors: all of them, the first only (context-grid
#: CSV has one anchor column), a span inside each (deepset QA's `text` is the answer) or
#: around each (deepset retrieval's label is the passage holding the evidence).
CARRIED = {
    "contextgrid-jsonl": "all",
    "contextgrid-csv": "first",
    "deepset-qa": "inside",
    "deepset-retrieval": "around",
}


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", sorted(CARRIED))
def test_our_own_file_imported_into_a_new_set_places_every_anchor_on_the_same_copy(
    source, owner, owner_client, django_capture_on_commit_callbacks, fmt
):
    data, name = exported(source, owner, django_capture_on_commit_callbacks, fmt)
    wanted = highlighted_spans(source)

    with django_capture_on_commit_callbacks(execute=True):
        response = post(owner_client, f"{WS}/imports/", data, name, format=fmt, evalset="copy")

    assert response.status_code == 201, response.json()
    assert response.json()["warnings"] == []
    copy = EvalSet.objects.get(slug="copy")
    got = placed_spans(copy)
    questions = dict(EvalItem.objects.filter(evalset=copy).values_list("question", "item_id"))
    for item in EvalItem.objects.filter(evalset=source):
        mine = got.get(questions[item.question], [])
        assert all(status == "exact" for *_, status in mine), mine
        spans = [(s, a, b) for s, a, b, _ in mine]
        expected = wanted.get(item.item_id, [])
        if CARRIED[fmt] == "all":
            assert spans == expected
        elif CARRIED[fmt] == "first":
            first = GoldAnchor.objects.filter(item=item).order_by("created_at", "id").first()
            assert spans == ([(first.source_id, first.ref_start, first.ref_end)] if first else [])
        else:
            assert len(spans) == len(expected)
            for (doc, start, end), (_, lo, hi) in zip(spans, expected, strict=True):
                inner, outer = ((start, end), (lo, hi))[:: 1 if CARRIED[fmt] == "inside" else -1]
                assert doc == "supply.txt" and outer[0] <= inner[0] < inner[1] <= outer[1]


def deepset_qa(*rows: list) -> bytes:
    """deepset's question-answering layout, written as its documentation shows it:
    `text` the answer, `context` the passage it was cut from, offsets of `text` in it."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["question", "text", "context", "file_name", "answer_start", "answer_end"])
    writer.writerows(rows)
    return out.getvalue().encode()


CLAUSES = copies(SUPPLY, CLAUSE)
FIRST_PARAGRAPH = f"{CLAUSE} Late payment costs interest."


def resolved(evalset_slug: str) -> list[tuple[int, int, str]]:
    rows = AnchorResolution.objects.filter(
        anchor__item__evalset__slug=evalset_slug, parse__is_reference=True
    )
    return list(rows.values_list("start", "end", "status"))


@pytest.mark.django_db
def test_a_deepset_label_on_the_first_of_several_copies_resolves_to_that_copy(commit_new, supply):
    data = deepset_qa(
        ["When is payment due?", "within 30 days", FIRST_PARAGRAPH, "supply.txt", 15, 29]
    )

    commit_new(data, "qa.csv", "deepset-qa")

    at = CLAUSES[0] + 15
    assert resolved("fresh") == [(at, at + len("within 30 days"), "exact")]
    anchor = GoldAnchor.objects.get()
    assert (anchor.page_hint, anchor.ref_start, anchor.ref_end) == (1, at, at + 14)
    assert anchor.prefix and anchor.suffix.startswith(". Late payment")


@pytest.mark.django_db
def test_a_legalbench_span_on_a_repeated_quote_resolves_to_that_copy(commit_new, supply):
    start = CLAUSES[0]
    data = json.dumps(
        {
            "tests": [
                {
                    "query": "When is payment due?",
                    "snippets": [{"file_path": "supply.txt", "span": [start, start + len(CLAUSE)]}],
                }
            ]
        }
    ).encode()

    commit_new(data, "bench.json", "legalbench-rag")

    assert resolved("fresh") == [(start, start + len(CLAUSE), "exact")]


@pytest.mark.django_db
def test_a_pending_deepset_label_attaches_as_the_highlight_of_its_copy(
    commit_new, workspace, owner, django_capture_on_commit_callbacks
):
    data = deepset_qa(
        ["When is payment due?", CLAUSE, FIRST_PARAGRAPH, "supply.txt", 0, len(CLAUSE)]
    )
    commit_new(data, "qa.csv", "deepset-qa")
    assert not GoldAnchor.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        documents_services.document_upload(
            workspace=workspace,
            user=owner,
            upload=SimpleUploadedFile("supply.txt", SUPPLY.encode()),
        )

    assert resolved("fresh") == [(CLAUSES[0], CLAUSES[0] + len(CLAUSE), "exact")]
    assert GoldAnchor.objects.get().ref_start == CLAUSES[0]


@pytest.mark.django_db
def test_a_legalbench_span_waiting_under_its_corpus_path_attaches_to_the_file_of_that_name(
    commit_new, workspace, owner, django_capture_on_commit_callbacks
):
    start = CLAUSES[2]
    data = json.dumps(
        [
            {
                "id": "lb",
                "query": "When is payment due?",
                "snippets": [
                    {
                        "file_path": "cuad/contracts/supply.txt",
                        "span": [start, start + len(CLAUSE)],
                        "answer": CLAUSE,
                    }
                ],
            }
        ]
    ).encode()
    commit_new(data, "bench.json", "legalbench-rag")

    with django_capture_on_commit_callbacks(execute=True):
        documents_services.document_upload(
            workspace=workspace,
            user=owner,
            upload=SimpleUploadedFile("supply.txt", SUPPLY.encode()),
        )

    anchor = GoldAnchor.objects.get()
    assert (anchor.source_id, anchor.ref_start) == ("supply.txt", start)
    assert resolved("fresh") == [(start, start + len(CLAUSE), "exact")]


@pytest.mark.django_db
def test_a_repeated_quote_with_no_page_or_occurrence_lands_where_context_grid_puts_it(
    owner_client, supply
):
    data = (
        json.dumps({"_evalset": {"id": "x", "version": 1, "source": "s", "meta": {}}})
        + "\n"
        + json.dumps(
            {
                "id": "q",
                "question": "When is payment due?",
                "anchors": [{"source_id": "supply.txt", "quote": CLAUSE}],
            }
        )
        + "\n"
    ).encode()
    text = ParseVersion.objects.get(document__source_id="supply.txt", is_reference=True).text
    reader = AnchorResolver().locate(
        CgAnchor(source_id="supply.txt", quote=CLAUSE),
        ParsedDocument(document=CgDocument(id="supply.txt", text=text), blocks=()),
    )

    body = post(owner_client, f"{WS}/imports/", data, "x.jsonl", evalset="fresh").json()

    assert body["warnings"] == []
    anchor = GoldAnchor.objects.get(item__item_id="q")
    assert text.count(CLAUSE) == 3
    assert (anchor.ref_start, anchor.ref_end) == (reader.span.start, reader.span.end)


@pytest.mark.django_db
def test_a_deepset_context_found_twice_says_which_copy_was_taken_and_why(owner_client, supply):
    data = deepset_qa(["Notice?", "in writing", NOTICE, "supply.txt", 21, 31])

    body = post(
        owner_client, f"{WS}/imports/preview/", data, "qa.csv", format="deepset-qa", evalset="f"
    ).json()

    [warning] = body["warnings"]
    first, second = (SUPPLY.count("\n", 0, at) + 1 for at in copies(SUPPLY, NOTICE))
    assert f"appears 2 times in 'supply.txt' (line {first}, line {second})" in warning["message"]
    assert f"cannot say which it means; the first, on line {first}, was used" in warning["message"]


@pytest.mark.django_db
def test_the_same_deepset_file_imported_twice_adds_its_anchors_once(
    commit_new, owner_client, supply, django_capture_on_commit_callbacks
):
    data = deepset_qa(
        ["When is payment due?", "within 30 days", FIRST_PARAGRAPH, "supply.txt", 15, 29],
        ["When is payment due?", "within 30 days", PAGE_TWO.split("\n\n")[1], "supply.txt", 15, 29],
    )
    commit_new(data, "qa.csv", "deepset-qa")
    before = dump(EvalSet.objects.get(slug="fresh"))

    with django_capture_on_commit_callbacks(execute=True):
        again = post(
            owner_client, f"{WS}/evalsets/fresh/imports/", data, "qa.csv", format="deepset-qa"
        )

    assert again.status_code == 200, again.json()
    assert again.json()["counts"]["unchanged"] == 1
    assert dump(EvalSet.objects.get(slug="fresh")) == before
    assert len(before["anchors"]) == 2


@pytest.mark.django_db
def test_a_legalbench_span_equal_to_a_stored_highlight_is_that_anchor(
    owner_client, workspace, owner, annotator, supply
):
    evalset = anchoring_services.evalset_create(workspace=workspace, user=owner, slug="lb")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="lb0", question="When is payment due?"
    )
    highlight(item, annotator, supply, CLAUSES[0], CLAUSES[0] + len(CLAUSE))
    data = json.dumps(
        [
            {
                "query": "When is payment due?",
                "snippets": [{"file_path": "supply.txt", "span": [CLAUSES[0], CLAUSES[0] + 30]}],
            }
        ]
    ).encode()

    body = post(
        owner_client, f"{WS}/evalsets/lb/imports/preview/", data, "b.json", format="legalbench-rag"
    ).json()

    [planned] = body["update"]
    assert planned["anchors_added"] == []
    assert planned["changed"] == ["meta"]  # the spans as given, kept beside the anchor


@pytest.mark.django_db
def test_a_legalbench_test_without_an_answer_keeps_the_item_s_answer(
    commit, workspace, owner, annotator, supply
):
    evalset = anchoring_services.evalset_create(workspace=workspace, user=owner, slug="lb")
    for item_id, answer in (("a", "30 days"), ("b", "in writing")):
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=f"{item_id}?", answer=answer
        )
    data = json.dumps(
        [
            {"id": "a", "query": "a?", "answer": "thirty days"},
            {"id": "b", "query": "b?"},
        ]
    ).encode()

    commit(f"{WS}/evalsets/lb/imports/", data, "b.json", "legalbench-rag")

    answers = dict(EvalItem.objects.filter(evalset=evalset).values_list("item_id", "answer"))
    assert answers == {"a": "thirty days", "b": "in writing"}


@pytest.mark.django_db
def test_a_new_deepset_item_takes_its_answer_from_the_row_that_has_it(commit_new, supply):
    data = deepset_qa(
        ["What about notice?", NOTICE, f"{NOTICE} {CLAUSE}", "supply.txt", 0, len(NOTICE)],
        ["What about notice?", "in writing", f"{NOTICE} {CLAUSE}", "supply.txt", 21, 31],
    )

    commit_new(data, "qa.csv", "deepset-qa")

    assert EvalItem.objects.get().answer == "in writing"


@pytest.mark.django_db
def test_pandas_nan_cells_read_as_empty(commit_new, supply):
    rows = [
        ["", "question", "text", "context", "file_name", "answer_start", "answer_end", "filters"],
        ["0", "Anything else?", "NaN", "NaN", "NaN", "NaN", "NaN", "NaN"],
        ["1", "Notice?", "in writing", f"{NOTICE} {CLAUSE}", "supply.txt", "21.0", "31.0", "NaN"],
    ]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)

    body = commit_new(out.getvalue().encode(), "qa.csv", "deepset-qa")

    assert body["refused"] == [] and body["warnings"] == []
    answers = dict(EvalItem.objects.values_list("question", "answer"))
    assert answers == {"Anything else?": None, "Notice?": "in writing"}


@pytest.mark.django_db
def test_pandas_nan_cells_in_a_context_grid_csv_read_as_empty(commit_new):
    data = (
        b"id,question,source_id,quote,grade,page,occurrence,qtype,answer,meta\n"
        b"q1,Anything?,NaN,NaN,NaN,NaN,NaN,NaN,NaN,NaN\n"
    )

    body = commit_new(data, "set.csv", "contextgrid-csv")

    assert body["refused"] == [] and body["warnings"] == []
    item = EvalItem.objects.get()
    assert (item.qtype, item.answer, item.meta) == (None, None, {})


@pytest.mark.django_db
def test_a_spreadsheet_csv_imported_with_its_format_guessed_says_so_and_drops_the_marks(
    commit_new,
):
    data = (
        b"id,question,source_id,quote,grade,page,occurrence,qtype,answer,meta\n"
        b"q1,'=1+1 is two?,,,,,,,'-2,\n"
    )

    body = commit_new(data, "set.csv", None)

    assert body["format"] == "contextgrid-csv" and body["format_guessed"] is True
    [warning] = body["warnings"]
    assert "question, answer started with ' before a formula sign" in warning["message"]
    item = EvalItem.objects.get()
    assert (item.question, item.answer) == ("=1+1 is two?", "-2")


@pytest.mark.django_db
def test_a_csv_a_spreadsheet_padded_with_empty_cells_reads_without_a_warning(commit_new):
    data = b"id,question,answer\r\nq1,Anything?,no,,,\r\n,,,,,\r\nq2,Else?,yes,,,\r\n"

    body = commit_new(data, "set.csv", "contextgrid-csv")

    assert body["warnings"] == [] and body["counts"]["create"] == 2


@pytest.mark.django_db
def test_a_jsonl_file_without_a_header_named_json_is_guessed_as_jsonl(commit_new):
    line = {"id": "q1", "question": "Anything?", "anchors": []}
    data = (json.dumps(line) + "\n" + json.dumps({**line, "id": "q2"}) + "\n").encode()

    body = commit_new(data, "set.json", None)

    assert body["format"] == "contextgrid-jsonl"
    assert sorted(EvalItem.objects.values_list("item_id", flat=True)) == ["q1", "q2"]


@pytest.mark.django_db
def test_a_release_after_a_jsonl_import_keeps_the_file_s_reviewer_and_time(
    commit_new, owner, django_capture_on_commit_callbacks
):
    header = {"_evalset": {"id": "x", "version": 1, "source": "s", "meta": {}}}
    line = {
        "id": "q1",
        "question": "Anything?",
        "anchors": [],
        "meta": {
            "reviewed": True,
            "reviewed_by": "rita",
            "reviewed_at": "2026-01-02T03:04:05+00:00",
        },
    }
    commit_new((json.dumps(header) + "\n" + json.dumps(line) + "\n").encode(), "x.jsonl", None)

    with django_capture_on_commit_callbacks(execute=True):
        release = releases_services.release_create(
            evalset=EvalSet.objects.get(slug="fresh"), user=owner, formats=["contextgrid-jsonl"]
        )

    meta = release.items.get().data["meta"]
    assert (meta["reviewed_by"], meta["reviewed_at"]) == ("rita", "2026-01-02T03:04:05+00:00")


@pytest.fixture
def commit_new(owner_client, workspace, django_capture_on_commit_callbacks):
    """Import a file into a new set, `fresh`; the answer's body."""

    def run(data: bytes, name: str, fmt: str | None) -> dict:
        fields = {"evalset": "fresh"} if fmt is None else {"evalset": "fresh", "format": fmt}
        with django_capture_on_commit_callbacks(execute=True):
            response = post(owner_client, f"{WS}/imports/", data, name, **fields)
        assert response.status_code == 201, response.json()
        return response.json()

    return run


@pytest.fixture
def commit(owner_client, workspace, django_capture_on_commit_callbacks):
    def run(url: str, data: bytes, name: str, fmt: str) -> dict:
        with django_capture_on_commit_callbacks(execute=True):
            response = post(owner_client, url, data, name, format=fmt)
        assert response.status_code in (200, 201), response.json()
        return response.json()

    return run


# -- the readers' rules alone, no database -------------------------------------------------


def test_a_corpus_path_means_a_file_whose_name_ends_it_component_by_component():
    assert path_matches("cuad/x.txt", "x.txt") and path_matches("x.txt", "cuad/x.txt")
    assert path_matches("cuad\\x.txt", "x.txt") and path_matches("./x.txt", "x.txt")
    assert path_matches("x.txt", "x.txt")
    assert not path_matches("a/x.txt", "b/x.txt")
    assert not path_matches("cuad/xx.txt", "x.txt") and not path_matches("x.txt", "")


def test_a_path_takes_its_exact_name_first_then_the_one_name_it_ends_with():
    names = ["a/x.txt", "x.txt", "y.txt"]
    assert match_path("x.txt", names) == ("x.txt", ["x.txt"], "exact")
    assert match_path("cuad/y.txt", names) == ("y.txt", ["y.txt"], "suffix")
    assert match_path("cuad/a/x.txt", names) == (None, ["a/x.txt", "x.txt"], "")
    assert match_path("cuad/z.txt", names) == (None, [], "")


def test_a_span_is_trimmed_to_what_it_quotes_and_refused_when_it_does_not_fit():
    text = "ab  cd  ef"
    assert trimmed_span(text, "t.txt", 2, 8) == (4, 6)
    assert trimmed_span(text, "t.txt", 0, 10) == (0, 10)
    assert trimmed_span(text, "t.txt", 9, 10) == (9, 10)
    for start, end in ((-1, 3), (3, 11), (4, 4), (5, 4)):
        with pytest.raises(EvalSetError, match=r"does not fit 't\.txt', which has 10"):
            trimmed_span(text, "t.txt", start, end)
    with pytest.raises(EvalSetError, match="must quote some text"):
        trimmed_span(text, "t.txt", 2, 4)


TWICE = "Intro.\nPay in 30 days. Late fees apply.\nMiddle.\nPay in 30 days. Late fees apply.\n"


def test_a_context_places_its_quote_on_its_own_copy():
    text = "Pay in 30 days.\nOther.\nPay in 30 days. Late fees apply.\n"
    start = text.index("Pay in 30 days. Late")
    assert span_from_context(text, "t.txt", " Pay in 30 days. Late", 0, 16) == (
        start,
        start + 15,
        "",
    )


def test_a_context_found_twice_takes_the_first_and_names_every_copy_s_line():
    start, end, note = span_from_context(TWICE, "t.txt", "Pay in 30 days. Late", 0, 15)

    assert (start, end) == (TWICE.index("Pay"), TWICE.index("Pay") + 15)
    assert note == (
        "the context appears 2 times in 't.txt' (line 2, line 4) and the file cannot say "
        "which it means; the first, on line 2, was used."
    )


def test_a_context_with_other_line_breaks_places_the_copy_nearest_its_offset():
    text = "A b.\nx y z\nx y z\n"
    context = "x y z x y z"  # the two lines, joined by a space instead of a line break
    assert span_from_context(text, "t.txt", context, 6, 11) == (11, 16, "")
    assert span_from_context(text, "t.txt", context, 0, 5) == (5, 10, "")


def test_a_context_not_in_the_file_falls_back_to_its_quote_and_says_when_that_repeats():
    middle = TWICE.index("Middle.")
    assert span_from_context(TWICE, "t.txt", "Zz Middle. Zz", 3, 10) == (middle, middle + 7, "")
    start, end, note = span_from_context(TWICE, "t.txt", "Zz Late fees apply. Zz", 3, 19)
    assert (start, end) == (TWICE.index("Late"), TWICE.index("Late") + 16)
    assert note == (
        "the context was not found in 't.txt' and the quote appears there more than once; "
        "the first copy was used (line 2)."
    )
    with pytest.raises(EvalSetError, match=r"is not in 't\.txt', nor is the context"):
        span_from_context(TWICE, "t.txt", "Zz Nope. Zz", 3, 8)
    with pytest.raises(EvalSetError, match="must quote some text"):
        span_from_context(TWICE, "t.txt", "Zz   Zz", 2, 5)


def test_a_pending_label_finds_its_place_in_the_text_that_arrived():
    by_context = PendingLabel(
        line=2, item="q", file_name="t.txt", would_create="", span=(0, 15), context=TWICE[7:27]
    )
    by_span = PendingLabel(
        line=None, item="q", file_name="t.txt", would_create="", span=(6, 11), expected="Pay"
    )
    wrong = PendingLabel(
        line=None, item="q", file_name="t.txt", would_create="", span=(7, 10), expected="Late"
    )

    assert by_context.span_in(TWICE)[:2] == (7, 22)
    assert by_span.span_in("Intro.\nPay\n" + TWICE) == (7, 10, "")
    with pytest.raises(EvalSetError, match="not the snippet's answer 'Late'"):
        wrong.span_in(TWICE)
    with pytest.raises(EvalSetError, match="needs the file's text"):
        by_span.span_in(None)
    with pytest.raises(EvalSetError, match="needs the file's text"):
        PendingLabel(line=None, item="q", file_name="t.txt", would_create="").span_in(TWICE)


def test_only_a_quote_mark_before_a_formula_sign_is_the_spreadsheet_export_s_mark():
    for marked in ("'=1", "'+1", "'-1", "'@a", "'\tx", "'\rx"):
        assert spreadsheet_marked(marked), marked
    for plain in ("'", "'a", "=1", "''=1", "it's"):
        assert not spreadsheet_marked(plain), plain


def read_qa(*rows: list, **documents: str):
    return deepset.read(deepset_qa(*rows), filename="qa.csv", documents=documents)


def test_deepset_offsets_are_whole_numbers_inside_the_context():
    context = f"{NOTICE} {CLAUSE}"
    good = read_qa(["N?", "in writing", context, "s.txt", "21.0", "3.1e1"], **{"s.txt": context})
    assert good.problems == [] and good.places == {CgAnchor("s.txt", "in writing"): (21, 31)}
    for start, end, field, words in (
        ("21.5", "31", "answer_start", "must be a whole number of characters, found '21.5'"),
        ("21", "x", "answer_end", "must be a whole number of characters, found 'x'"),
        ("21", "", "answer_end", "must be a whole number of characters, found ''"),
        ("31", "21", "answer_start", "answer offsets [31, 21) fall outside the context"),
        ("-1", "21", "answer_start", "answer offsets [-1, 21) fall outside the context"),
        ("0", str(len(context) + 1), "answer_start", "fall outside the context, which has 63"),
    ):
        result = read_qa(["N?", "in writing", context, "s.txt", start, end])
        [problem] = result.problems
        assert (problem.field, problem.severity, problem.line) == (field, "error", 2), words
        assert words in problem.message
        assert result.items == []
    whole = read_qa(["N?", "", context, "s.txt", "0", str(len(context))])
    assert whole.problems == [] and whole.pending[0].anchor.quote == context


def test_deepset_filters_that_are_not_an_object_are_a_warning_and_left_out():
    rows = [
        ["question", "text", "context", "file_name", "filters"],
        ["A?", "", "", "", '["legal"]'],
        ["B?", "", "", "", "{not json"],
        ["C?", "", "", "", '{"k": "v", "k": ["w", "x"]}'],
    ]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)

    result = deepset.read(out.getvalue().encode(), filename="f.csv")

    assert [(p.line, p.field, p.severity) for p in result.problems] == [
        (2, "filters", "warning"),
        (3, "filters", "warning"),
    ]
    assert "is not a JSON object, so it was not imported: '[\"legal\"]'" in (
        result.problems[0].message
    )
    assert [item.meta for item in result.items] == [{}, {}, {"filters": {"k": ["v", "w", "x"]}}]


def test_a_pending_label_that_does_not_fit_names_its_file():
    def label(**fields):
        return PendingLabel(line=None, item="q", file_name="t.txt", would_create="", **fields)

    with pytest.raises(EvalSetError, match=r"^the quote 'Nope' is not in 't\.txt'"):
        label(span=(3, 7), context="Zz Nope Zz").span_in(TWICE)
    with pytest.raises(EvalSetError, match=r"^span \[7, 10\) of 't\.txt' reads"):
        label(span=(7, 10), expected="Late").span_in(TWICE)
    with pytest.raises(EvalSetError, match=r"^span \[7, 999\) does not fit 't\.txt'"):
        label(span=(7, 999)).span_in(TWICE)
    with pytest.raises(EvalSetError, match=r"^a gold anchor must quote some text$"):
        label(span=(6, 7)).span_in(TWICE)


def test_deepset_offset_and_filter_problems_say_what_to_do_next():
    context = f"{NOTICE} {CLAUSE}"
    [bad] = read_qa(["N?", "x", context, "s.txt", "x", "3"]).problems
    [outside] = read_qa(["N?", "x", context, "s.txt", "0", "99"]).problems
    long = '["' + "x" * 80 + '"]'
    rows = [["question", "filters"], ["A?", long]]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    [filters] = deepset.read(out.getvalue().encode(), filename="f.csv").problems

    assert bad.hint == (
        "Offsets count characters in `context` from 0; leave both empty when the row has no answer."
    )
    assert outside.hint == "Offsets count characters in `context` from 0, answer_end exclusive."
    assert filters.message.endswith(f"{long[:60]!r}.")
    assert filters.hint == 'Filters look like {"category": "legal"}.'
