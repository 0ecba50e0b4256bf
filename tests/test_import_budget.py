"""Imports and previews read with a budget: problems, lines and questions are bounded, and a
file past a bound is refused with a 400 naming the limit and the line; a parse's body is
refused by its size before it is parsed, and a large one is checked in one pass.

Every test counts (problems kept, lines read, comparisons made, bytes answered, memory at
its peak), never the time taken.
"""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

import contextgrid as cg
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.models import EvalItem, EvalSet, ImportRecord, ParseVersion
from evalsets.pure.formats import BudgetExceeded, ImportResult, ReadBudget, get_format
from evalsets.pure.formats.reading import physical_lines
from evalsets.pure.formats.results import WARNING, Problem
from evalsets.releases import imports

WS = "/api/workspaces/acme"
SET = f"{WS}/evalsets/quiz"
DOCS = f"{WS}/documents/"
SMALL = ReadBudget(max_problems=5, max_lines=50, max_items=3)


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


#: Under 1 KB zipped, 600 KB unpacked (under the archive's ratio floor): 300,000 lines that
#: are not JSON. Read without a budget it kept 300,000 problems (65 MB traced, 5 s).
BAD_LINES_ZIP = _zip({"queries.jsonl": b"x\n" * 300_000, "qrels/test.tsv": b"q\td\t1\n"})


def _refusal(slug: str, data: bytes, name: str, budget: ReadBudget = SMALL) -> BudgetExceeded:
    with pytest.raises(BudgetExceeded) as caught:
        get_format(slug).reader(data, filename=name, documents={}, budget=budget)
    return caught.value


# -- readers, no database ----------------------------------------------------------------------


def test_a_beir_zip_of_many_bad_lines_stops_after_the_problem_budget_in_little_memory():
    tracemalloc.start()
    try:
        refused = _refusal("beir", BAD_LINES_ZIP, "tiny.zip", ReadBudget())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.limit == "max_problems" and refused.line == 101
    assert len(refused.result.problems) == 100
    assert refused.result.lines_read == 101
    assert "reading stopped at line 101 after 100 problems" in refused.message
    assert "queries.jsonl line 101 is not valid JSON" in refused.message
    assert peak < 2 * 2**20


def test_judgements_of_unknown_queries_are_one_warning_with_their_count():
    qrels = b"query-id\tcorpus-id\tscore\n" + b"nobody\td\t1\n" * 1000 + b"q1\td\t1\n"
    data = _zip({"queries.jsonl": b'{"_id": "q1", "text": "Why?"}\n', "qrels/test.tsv": qrels})
    result = get_format("beir").reader(data, filename="b.zip", documents=None)
    assert [item.id for item in result.items] == ["q1"]
    [warning] = result.problems
    assert warning.line == 2 and "1,000 judgement(s)" in warning.message


def test_warnings_past_the_problem_budget_are_counted_and_an_error_stops_the_reading():
    result = ImportResult(format="x", filename="f.csv", budget=SMALL)
    for line in range(1, 9):
        result.add("odd but kept", line=line, severity="warning")
    assert len(result.problems) == 5 and result.unlisted == 3
    with pytest.raises(BudgetExceeded) as caught:
        result.add("broken", line=9)
    assert caught.value.limit == "max_problems" and caught.value.line == 9


LONG_FILES = [
    ("contextgrid-jsonl", "set.jsonl", "{}\n" * 60),
    ("contextgrid-csv", "set.csv", "question\n" + "Why?\n" * 59),
    ("deepset-qa", "labels.csv", "question,text,context,file_name\n" + "Why?,,,\n" * 59),
    ("legalbench-rag", "bench.json", '{"tests": [\n' + "\n" * 58 + "]}"),
    ("contextgrid-csv", "mac.csv", "question\r" + "Why?\r" * 59),
]


@pytest.mark.parametrize(("slug", "name", "text"), LONG_FILES)
def test_a_file_past_the_line_budget_is_refused_before_a_line_is_parsed(slug, name, text):
    refused = _refusal(slug, text.encode(), name)
    assert refused.limit == "max_lines" and refused.line == 51
    assert f"{name} passes the limit of 50 lines" in refused.message
    assert "stopped at line 51" in refused.message
    assert refused.result.problems == [] and refused.result.items == []


def test_a_file_of_exactly_the_line_budget_is_read():
    text = "question\n" + "Why?\n" * 49
    result = get_format("contextgrid-csv").reader(
        text.encode(), filename="set.csv", budget=ReadBudget(max_lines=50, max_items=100)
    )
    assert len(result.items) == 49 and result.lines_read == 50


def test_the_line_budget_counts_every_member_of_a_beir_zip_together():
    queries = b"".join(b'{"_id": "q%d", "text": "Why %d?"}\n' % (i, i) for i in range(30))
    qrels = b"".join(b"q%d\td\t1\n" % i for i in range(30))
    refused = _refusal("beir", _zip({"queries.jsonl": queries, "qrels/test.tsv": qrels}), "b.zip")
    assert refused.limit == "max_lines" and refused.line == 21
    assert "qrels/test.tsv in b.zip passes the limit of 50 lines" in refused.message


def _jsonl_items(count: int) -> bytes:
    return b"".join(b'{"id": "q%d", "question": "Why %d?"}\n' % (i, i) for i in range(count))


QUESTION_FILES = [
    ("contextgrid-jsonl", "set.jsonl", _jsonl_items(5), 4),
    (
        "contextgrid-csv",
        "set.csv",
        b"id,question\n" + b"".join(b"q%d,Why?\n" % i for i in range(5)),
        5,
    ),
    (
        "deepset-qa",
        "labels.csv",
        b"question,text,context,file_name\n" + b"".join(b"Why %d?,,,\n" % i for i in range(5)),
        5,
    ),
    (
        "legalbench-rag",
        "bench.json",
        json.dumps({"tests": [{"query": f"Why {i}?", "snippets": []} for i in range(5)]}).encode(),
        None,
    ),
]


@pytest.mark.parametrize(("slug", "name", "data", "line"), QUESTION_FILES)
def test_a_file_of_more_questions_than_the_budget_is_refused_naming_the_limit(
    slug, name, data, line
):
    refused = _refusal(slug, data, name)
    assert refused.limit == "max_items" and refused.line == line
    assert f"{name} holds more than 3 questions" in refused.message


class _CountingEvidence(imports.Evidence):
    """The planner's evidence rule with no reference parse, counting pairwise comparisons."""

    def __init__(self) -> None:
        super().__init__(workspace=None)
        self.compared = 0

    def _reference(self, source_id):
        return None

    def same(self, one, two, rule):
        self.compared += 1
        return super().same(one, two, rule)


@pytest.mark.parametrize("fmt", ["contextgrid-jsonl", "deepset-qa"])
def test_an_item_with_many_anchors_is_planned_without_comparing_every_pair(fmt):
    anchors = [cg.GoldAnchor("doc.txt", f"quote number {i}") for i in range(3000)]
    anchors += anchors[:10]  # the same evidence twice is still one anchor
    evidence = _CountingEvidence()
    added, regraded = imports._plan_anchors(anchors, [], imports.CARRIES[fmt], evidence)
    assert len(added) == 3000 and regraded == []
    assert evidence.compared == 0  # a scan of the kept ones compared 4.5 million pairs


# -- the API, on the database ------------------------------------------------------------------


@pytest.fixture
def owner_client(client_for, owner, workspace):
    return client_for(owner)


def _post(client, url: str, data: bytes, name: str):
    return client.post(url, {"file": SimpleUploadedFile(name, data)}, format="multipart")


def _written() -> tuple[int, ...]:
    return EvalSet.objects.count(), EvalItem.objects.count(), ImportRecord.objects.count()


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["preview/", ""])
def test_a_beir_preview_or_commit_of_many_bad_lines_is_a_400_naming_the_limit(
    owner_client, evalset, step
):
    before = _written()
    tracemalloc.start()
    try:
        response = _post(owner_client, f"{SET}/imports/{step}", BAD_LINES_ZIP, "tiny.zip")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert response.status_code == 400
    assert peak < 16 * 2**20  # 300,000 problems were kept before the budget (65 MB traced)
    body = response.json()
    assert "GROUNDWORK_IMPORT_MAX_PROBLEMS=100" in body["detail"]
    assert "line 101" in body["detail"] and "nothing was imported" in body["detail"]
    assert len(body["problems"]) == 100
    assert body["limit"] == {"setting": "GROUNDWORK_IMPORT_MAX_PROBLEMS", "value": 100, "line": 101}
    assert body["counts"] == {"problems_listed": 100, "lines_read": 101, "items_read": 0}
    assert _written() == before


@pytest.mark.django_db
def test_a_preview_past_the_line_setting_is_a_400_naming_it_and_the_line(
    owner_client, evalset, settings
):
    settings.GROUNDWORK_IMPORT_MAX_LINES = 10
    response = _post(owner_client, f"{SET}/imports/preview/", _jsonl_items(20), "set.jsonl")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "set.jsonl passes the limit of 10 lines" in detail
    assert "stopped at line 11" in detail and "GROUNDWORK_IMPORT_MAX_LINES=10" in detail


@pytest.mark.django_db
def test_a_new_set_of_more_questions_than_the_setting_is_a_400_and_nothing_is_created(
    owner_client, workspace, settings
):
    settings.GROUNDWORK_IMPORT_MAX_ITEMS = 3
    response = owner_client.post(
        f"{WS}/imports/",
        {"file": SimpleUploadedFile("set.jsonl", _jsonl_items(5)), "evalset": "fresh"},
        format="multipart",
    )
    assert response.status_code == 400
    body = response.json()
    assert "holds more than 3 questions (question 4 is at line 4)" in body["detail"]
    assert body["limit"]["setting"] == "GROUNDWORK_IMPORT_MAX_ITEMS"
    assert not EvalSet.objects.filter(slug="fresh").exists()


@pytest.mark.django_db
def test_a_preview_counts_what_it_read_and_the_warnings_it_did_not_list(
    owner_client, evalset, settings
):
    settings.GROUNDWORK_IMPORT_MAX_PROBLEMS = 2
    rows = "".join(f"q{i},Why {i}?,an extra cell\n" for i in range(5))
    response = _post(
        owner_client, f"{SET}/imports/preview/", f"id,question\n{rows}".encode(), "set.csv"
    )
    assert response.status_code == 200
    body = response.json()
    assert len(body["warnings"]) == 2
    assert body["counts"]["warnings"] == 5 and body["counts"]["not_listed"] == 3
    assert body["counts"]["lines_read"] == 6 and body["counts"]["create"] == 5


# -- a parse made elsewhere --------------------------------------------------------------------


def _parse_post(client, raw: bytes):
    url = f"{DOCS}handbook.txt/parses/"
    return client.generic("POST", url, raw, content_type="application/json")


@pytest.mark.django_db
def test_a_parse_body_past_the_limit_is_a_413_naming_it_before_it_is_parsed(
    client_for, document, annotator, settings
):
    settings.GROUNDWORK_MAX_PARSE_UPLOAD_BYTES = 64 * 1024
    before = ParseVersion.objects.count()
    response = _parse_post(client_for(annotator), b"{" + b"not json at all " * 5000)
    assert response.status_code == 413
    detail = response.json()["detail"]
    assert "past the 64 KB limit (GROUNDWORK_MAX_PARSE_UPLOAD_MB)" in detail
    assert ParseVersion.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "values", "words"),
    [
        ("page_starts", [-1] * 100_000, "page_starts[0] must be at least 0"),
        ("page_starts", [0, 1, "x"] * 30_000, "page_starts[2] must be a whole number"),
        ("blocks", [{"start": -1, "end": 1}] * 50_000, "blocks[0].start must be at least 0"),
        ("blocks", [{"start": 0}] * 50_000, "blocks[0].end is required"),
        ("page_starts", ["0", "--5"], "page_starts[1] must be a whole number"),
        ("page_starts", [0, "\u00b2"], "page_starts[1] must be a whole number"),
        ("blocks", [{"start": 0, "end": 1, "page": 0}], "blocks[0].page must be at least 1"),
    ],
)
def test_a_parse_with_many_bad_offsets_is_refused_at_the_first_in_a_short_answer(
    client_for, document, annotator, field, values, words
):
    raw = json.dumps({"parser": "mine", "text": "Some text.", field: values}).encode()
    response = _parse_post(client_for(annotator), raw)
    assert response.status_code == 400
    assert words in response.json()["detail"]
    assert len(response.content) < 2000  # one error, not one a value (111 MB for a million)


@pytest.mark.django_db
def test_a_large_allowed_parse_is_stored_with_every_page_start(client_for, document, annotator):
    text = "word " * 200_000
    starts = list(range(0, len(text), 10))
    raw = json.dumps({"parser": "mine", "text": text, "page_starts": starts}).encode()
    response = _parse_post(client_for(annotator), raw)
    assert response.status_code == 201
    stored = ParseVersion.objects.get(parser="mine")
    assert stored.page_starts == starts


@pytest.mark.django_db
def test_blocks_still_give_the_page_starts(client_for, document, annotator):
    blocks = [{"start": 0, "end": 4, "page": 1}, {"start": 5, "end": 9, "page": 2}]
    raw = json.dumps({"parser": "mine", "text": "Page one two", "blocks": blocks}).encode()
    response = _parse_post(client_for(annotator), raw)
    assert response.status_code == 201
    assert ParseVersion.objects.get(parser="mine").page_starts == [0, 5]


@pytest.mark.django_db
def test_a_file_of_more_anchors_than_the_setting_is_a_400_naming_it(
    owner_client, evalset, settings
):
    settings.GROUNDWORK_IMPORT_MAX_ANCHORS = 4
    anchors = [{"source_id": "handbook.txt", "quote": f"quote {i}"} for i in range(3)]
    lines = [json.dumps({"id": f"q{i}", "question": "Why?", "anchors": anchors}) for i in range(2)]
    data = "\n".join(lines).encode()
    before = _written()
    response = _post(owner_client, f"{SET}/imports/preview/", data, "set.jsonl")
    assert response.status_code == 400
    body = response.json()
    assert "holds 6 anchors and labels, past the limit of 4" in body["detail"]
    assert body["limit"] == {"setting": "GROUNDWORK_IMPORT_MAX_ANCHORS", "value": 4}
    assert _written() == before


def test_an_import_file_over_the_upload_limit_is_refused_with_413_naming_the_setting(
    owner_client, evalset, settings
):
    settings.GROUNDWORK_MAX_UPLOAD_BYTES = 1024 * 1024
    body = b'{"id": "q1", "question": "Why?"}\n' * 40_000
    response = _post(owner_client, f"{SET}/imports/preview/", body, "big.jsonl")
    assert response.status_code == 413
    assert response.json()["limit"] == {"setting": "GROUNDWORK_MAX_UPLOAD_MB", "value": 1}
    assert "'big.jsonl' is too large" in response.json()["detail"]


# -- the budget's own arithmetic and words -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", 1),
        ("one", 1),
        ("one\n", 1),
        ("one\ntwo", 2),
        ("one\r\ntwo\r\n", 2),
        ("one\rtwo\rthree", 3),
        ("one\r", 1),
        ("a\r\n\rb\n\nc", 5),
    ],
)
def test_physical_lines_counts_lf_crlf_and_lone_cr_endings_and_an_unended_last_line(text, lines):
    assert physical_lines(text) == lines


def test_a_problem_within_the_budget_is_kept_whole():
    result = ImportResult(format="contextgrid-jsonl", filename="set.jsonl")
    result.add(
        "eval item 'q1' has an empty question",
        line=3,
        item="q1",
        field="question",
        severity=WARNING,
        hint="write one",
    )
    assert result.problems == [
        Problem(3, "q1", "question", "eval item 'q1' has an empty question", WARNING, "write one")
    ]


def test_past_the_budget_a_warning_is_counted_and_an_error_stops_with_the_next_problem_named():
    result = ImportResult(
        format="contextgrid-jsonl", filename="set.jsonl", budget=ReadBudget(max_problems=1)
    )
    result.add("first.", line=1, item="q1")
    result.add("a warning.", line=2, item="q2", severity=WARNING)
    assert (len(result.problems), result.unlisted) == (1, 1)
    with pytest.raises(BudgetExceeded) as caught:
        result.add("the second error.", line=3, item="q3")
    assert caught.value.message == (
        "set.jsonl: reading stopped at line 3 after 1 problems, the limit for one import (the "
        "next: the second error); fix the problems listed and import again"
    )
    assert (caught.value.limit, caught.value.line) == ("max_problems", 3)
    with pytest.raises(BudgetExceeded) as unlined:
        result.add("no line.", item="q4")
    assert "reading stopped after 1 problems" in unlined.value.message


def test_past_the_question_budget_the_message_says_where_the_first_one_too_many_is():
    result = ImportResult(format="beir", filename="f.zip", budget=ReadBudget(max_items=2))
    result.check_items(2, line=9)  # at the limit: fine
    with pytest.raises(BudgetExceeded) as caught:
        result.check_items(3, line=9)
    assert caught.value.message == (
        "f.zip holds more than 2 questions (question 3 is at line 9), the limit for one "
        "import. Split the file and import each part"
    )
    with pytest.raises(BudgetExceeded) as unlined:
        result.check_items(3)
    assert unlined.value.message.startswith("f.zip holds more than 2 questions, the limit")


def test_the_stop_names_the_next_problem_cut_to_200_characters_and_no_hint_is_empty():
    result = ImportResult(
        format="contextgrid-jsonl", filename="set.jsonl", budget=ReadBudget(max_problems=1)
    )
    result.add("a problem without a hint.", line=1)
    assert result.problems[0].hint == ""
    with pytest.raises(BudgetExceeded) as long:
        result.add("x" * 199 + "yz.", line=2)
    assert f"(the next: {'x' * 199}y); fix" in long.value.message
    with pytest.raises(BudgetExceeded) as ends:
        result.add("the column named X.", line=3)
    assert "(the next: the column named X); fix" in ends.value.message
