"""Input no database can hold is refused at the boundary with a 400 naming the field.

A lone surrogate is stored by SQLite and then breaks every read of the row; PostgreSQL refuses
it, NUL characters and integers wider than the column with an error. Each case here is sent
through the API (and through an import) and must come back as a 400 that names the field,
with nothing written.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from rest_framework.test import APIClient

from evalsets.anchoring import services as anchoring_services
from evalsets.errors import InvalidInput
from evalsets.models import EvalItem, EvalSet, GoldAnchor, ImportRecord, ItemEvent
from evalsets.validation import (
    check_db_int,
    check_storable_json,
    check_storable_text,
    column_range,
)

pytestmark = pytest.mark.django_db

WS = "/api/workspaces/acme"
SET = f"{WS}/evalsets/quiz"


def _rows() -> tuple[int, ...]:
    return (
        EvalSet.objects.count(),
        EvalItem.objects.count(),
        GoldAnchor.objects.count(),
        ItemEvent.objects.count(),
        ImportRecord.objects.count(),
    )


def _send(client, method: str, url: str, raw: str):
    """``raw`` is the JSON text itself, so it can carry escapes a dict cannot (\\ud800, NaN)."""
    return getattr(client, method)(url, data=raw, content_type="application/json")


@pytest.fixture
def annotator_client(client_for, annotator, workspace):
    return client_for(annotator)


@pytest.fixture
def owner_client(client_for, owner, workspace):
    return client_for(owner)


def test_a_lone_surrogate_in_an_items_meta_is_a_400_naming_meta(annotator_client, evalset):
    before = _rows()
    response = _send(
        annotator_client,
        "post",
        f"{SET}/items/",
        '{"id": "q9", "question": "Why?", "meta": {"note": "a\\ud800b"}}',
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert "meta" in body["errors"]
    assert "lone surrogate" in body["detail"] and "meta.note" in body["detail"]
    assert _rows() == before


def test_a_lone_surrogate_in_meta_is_refused_on_update_and_the_item_still_reads(
    annotator_client, item
):
    response = _send(
        annotator_client,
        "patch",
        f"{SET}/items/q1/",
        json.dumps({"row_version": item.row_version, "meta": {"k": "\ud800"}}),
    )
    assert response.status_code == 400, response.content
    assert "meta" in response.json()["errors"]
    assert annotator_client.get(f"{SET}/items/q1/").status_code == 200
    assert annotator_client.get(f"{SET}/items/").status_code == 200


def test_a_lone_surrogate_in_a_meta_key_is_refused(annotator_client, evalset):
    response = _send(
        annotator_client,
        "post",
        f"{SET}/items/",
        '{"id": "q9", "question": "Why?", "meta": {"\\udc00": 1}}',
    )
    assert response.status_code == 400
    assert "meta" in response.json()["errors"]


def test_a_nul_in_a_question_is_a_400_naming_question(annotator_client, evalset):
    before = _rows()
    response = _send(
        annotator_client, "post", f"{SET}/items/", '{"id": "q9", "question": "Wh\\u0000y?"}'
    )
    assert response.status_code == 400, response.content
    assert "question" in response.json()["errors"]
    assert _rows() == before


def test_a_nul_inside_meta_is_a_400_naming_meta(annotator_client, evalset):
    response = _send(
        annotator_client,
        "post",
        f"{SET}/items/",
        '{"id": "q9", "question": "Why?", "meta": {"tags": ["ok", "b\\u0000d"]}}',
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "meta": [
            "meta.tags[1] contains a NUL character (\\u0000) at character 1, which cannot be "
            "stored; send valid Unicode text"
        ]
    }


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_non_finite_numbers_in_json_are_refused_while_parsing(annotator_client, evalset, number):
    before = _rows()
    response = _send(
        annotator_client,
        "post",
        f"{SET}/items/",
        f'{{"id": "q9", "question": "Why?", "meta": {{"score": {number}}}}}',
    )
    assert response.status_code == 400, response.content
    assert "finite" in response.json()["detail"]
    assert _rows() == before


@pytest.mark.parametrize(
    ("deep", "words"),
    [
        ('{"a": ' * 40 + "1" + "}" * 40, "nests deeper than 32 levels"),  # our JSON limit
        ("[" * 100_000 + "]" * 100_000, "nests too deeply"),  # past the parser's recursion
    ],
)
def test_meta_nested_too_deeply_is_refused(annotator_client, evalset, deep, words):
    response = _send(
        annotator_client,
        "post",
        f"{SET}/items/",
        f'{{"id": "q9", "question": "?", "meta": {deep}}}',
    )
    assert response.status_code == 400
    assert words in response.json()["detail"]


def test_a_huge_integer_is_refused_without_echoing_all_its_digits():
    with pytest.raises(InvalidInput, match="got a number of 3322 bits"):
        check_db_int(10**1000, "occurrence")


@pytest.mark.parametrize(
    ("field", "value"),
    [("occurrence", 2**40), ("page_hint", 2**31), ("grade", 2**15), ("occurrence", -(2**63) - 1)],
)
def test_integers_wider_than_their_column_are_a_400_naming_the_field(
    annotator_client, item, document, field, value
):
    before = _rows()
    body = {"source_id": "handbook.txt", "quote": "Leave may be carried over.", field: value}
    response = _send(annotator_client, "post", f"{SET}/items/q1/anchors/", json.dumps(body))
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert _rows() == before


def test_the_largest_occurrence_a_column_holds_is_accepted_by_the_boundary(
    annotator_client, item, document
):
    body = {"source_id": "handbook.txt", "quote": "Leave may be carried over.", "occurrence": 0}
    body["page_hint"] = 2**31 - 1
    response = _send(annotator_client, "post", f"{SET}/items/q1/anchors/", json.dumps(body))
    assert response.status_code == 201, response.content
    assert GoldAnchor.objects.get(page_hint=2**31 - 1)


def test_a_row_version_past_the_column_is_a_400_not_a_500(annotator_client, item):
    response = _send(
        annotator_client, "patch", f"{SET}/items/q1/", json.dumps({"row_version": 2**70})
    )
    assert response.status_code == 400
    assert "row_version" in response.json()["errors"]


def test_the_checks_bound_integers_by_the_model_columns_width():
    assert column_range(GoldAnchor, "grade") == (-(2**15), 2**15 - 1)
    assert column_range(GoldAnchor, "occurrence") == (-(2**31), 2**31 - 1)
    assert column_range(EvalSet, "not_a_field") == (-(2**31), 2**31 - 1)
    with pytest.raises(InvalidInput, match="occurrence must be between"):
        check_db_int(2**31, "occurrence")
    assert check_storable_text("caf\u00e9 \U0001f600", "q") == "caf\u00e9 \U0001f600"
    assert check_storable_json({"a": [1, 2.5, None, True, "x"]}, "meta")
    with pytest.raises(InvalidInput, match="not a JSON value"):
        check_storable_json({"a": object()}, "meta")


# -- imports -------------------------------------------------------------------------------------


def _import(client, url: str, data: bytes, name: str = "set.jsonl"):
    return client.post(url, {"file": SimpleUploadedFile(name, data)}, format="multipart")


HEADER = '{"_evalset": {"id": "quiz", "version": 1, "source": "test", "meta": {}}}\n'
GOOD = '{"id": "q5", "question": "Fine?", "gold": [], "anchors": []}\n'


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        ('{"id": "q6", "question": "Bad?", "meta": {"n": "\\ud83d"}}', "meta", "lone surrogate"),
        ('{"id": "q6", "question": "B\\u0000d?"}', "question", "NUL"),
        ('{"id": "q6", "question": "Bad?", "meta": {"n": NaN}}', "meta", "finite"),
        (
            '{"id": "q6", "question": "Bad?", "anchors": [{"source_id": "handbook.txt", '
            '"quote": "Leave may be carried over.", "occurrence": 1099511627776}]}',
            "occurrence",
            "between",
        ),
    ],
)
def test_an_import_with_unstorable_values_is_refused_in_preview_and_commit_with_the_line(
    owner_client, evalset, document, line, field, words, django_capture_on_commit_callbacks
):
    data = (HEADER + GOOD + line + "\n").encode()
    before = _rows()
    preview = _import(owner_client, f"{SET}/imports/preview/", data)
    assert preview.status_code == 200, preview.content
    body = preview.json()
    assert body["can_commit"] is False
    [refused] = body["refused"]
    assert (refused["line"], refused["item"], refused["field"]) == (3, "q6", field)
    assert words in refused["message"]
    with django_capture_on_commit_callbacks(execute=True):
        commit = _import(owner_client, f"{SET}/imports/", data)
    assert commit.status_code == 400, commit.content
    assert "set.jsonl:3" in commit.json()["detail"]
    assert _rows() == before


def test_an_import_header_with_a_version_past_its_column_is_refused(owner_client, workspace):
    header = '{"_evalset": {"id": "big", "version": 1099511627776, "source": "t", "meta": {}}}\n'
    before = _rows()
    response = owner_client.post(
        f"{WS}/imports/",
        {"file": SimpleUploadedFile("set.jsonl", (header + GOOD).encode()), "evalset": "big"},
        format="multipart",
    )
    assert response.status_code == 400, response.content
    assert "version" in response.json()["detail"]
    assert _rows() == before


# -- unexpected errors ---------------------------------------------------------------------


def test_an_unexpected_error_under_api_is_a_json_500_without_a_traceback(
    monkeypatch, owner, workspace, evalset
):
    def broken(**kwargs):
        raise RuntimeError("secret internals: /srv/app/evalsets/services.py line 12")

    monkeypatch.setattr(anchoring_services, "item_create", broken)
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(owner)
    response = client.post(f"{SET}/items/", {"id": "q9", "question": "Why?"}, format="json")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["errors"] == {} and "logged" in body["detail"]
    assert (
        "secret" not in response.content.decode() and "Traceback" not in response.content.decode()
    )


def test_an_unexpected_error_on_a_page_is_still_the_html_500(monkeypatch, owner, workspace, client):
    from labelling import views

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(views, "render", broken)
    client.raise_request_exception = False
    client.force_login(owner)
    response = client.get("/")
    assert response.status_code == 500
    assert not response["Content-Type"].startswith("application/json")


def test_the_database_is_the_one_configured(settings):
    """The same tests run on PostgreSQL in CI's service run (DATABASE_URL)."""
    assert connection.vendor in ("sqlite", "postgresql")


# -- URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("/api/workspaces/acme/evalsets/quiz/items/?qtype=a%00b", "query parameter 'qtype'"),
        ("/api/workspaces/acme/evalsets/quiz/items/q%001/", "the URL's path"),
        ("/w/acme/sets/quiz/search.json?q=a%00b", "query parameter 'q'"),
        ("/w/acme/sets/quiz/items/q%001/", "the URL's path"),
    ],
)
def test_a_nul_in_a_url_is_a_400_before_any_lookup(owner, item, url, where):
    client = APIClient()
    client.force_login(owner)
    response = client.get(url)
    assert response.status_code == 400
    assert f"{where} contains a NUL character" in response.content.decode()


def test_a_lone_surrogate_in_a_gold_parsers_key_is_a_400_that_can_be_sent(owner_client, evalset):
    """DRF names a dict field's bad key in its error; the answer must still encode as UTF-8."""
    raw = '{"formats": ["contextgrid-jsonl"], "gold_parsers": {"\\ud9fe": [1]}}'
    response = _send(owner_client, "post", f"{SET}/releases/", raw)
    assert response.status_code == 400
    body = response.json()
    assert "gold_parsers.\\ud9fe" in body["errors"]
    assert evalset.releases.count() == 0
