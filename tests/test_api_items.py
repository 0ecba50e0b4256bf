"""Eval sets and items through the API: validation, filters, pagination, optimistic locking."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services

pytestmark = pytest.mark.django_db

ITEMS = "/api/workspaces/acme/evalsets/quiz/items/"


def test_an_owner_creates_an_eval_set_with_a_slug_id(client_for, workspace, owner):
    response = client_for(owner).post(
        "/api/workspaces/acme/evalsets/", {"id": "hr-quiz", "meta": {"lang": "en"}}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["id"] == "hr-quiz"
    assert response.json()["version"] == 1


def test_a_duplicate_eval_set_id_is_a_409(client_for, evalset, owner):
    response = client_for(owner).post(
        "/api/workspaces/acme/evalsets/", {"id": "quiz"}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["detail"] == "an eval set called 'quiz' already exists in 'acme'"


def test_an_annotator_creates_an_item(client_for, evalset, annotator):
    response = client_for(annotator).post(
        ITEMS, {"id": "q2", "question": "Who approves leave?", "qtype": "factoid"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert body["id"] == "q2" and body["state"] == "draft" and body["author"] == "ann"
    assert body["row_version"] == 1 and body["is_answerable"] is False


def test_a_blank_question_is_a_400_with_context_grids_words(client_for, evalset, annotator):
    response = client_for(annotator).post(ITEMS, {"id": "q2", "question": "  "}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == "eval item 'q2' has an empty question"
    assert response.json()["errors"] == {"question": ["eval item 'q2' has an empty question"]}


def test_a_duplicate_item_id_is_a_409_with_context_grids_words(client_for, item, annotator):
    response = client_for(annotator).post(ITEMS, {"id": "q1", "question": "Again?"}, format="json")
    assert response.status_code == 409
    assert response.json()["detail"] == "duplicate eval item id 'q1' in eval set 'quiz'"


def test_an_item_id_with_a_slash_is_refused(client_for, evalset, annotator):
    response = client_for(annotator).post(ITEMS, {"id": "a/b", "question": "Q?"}, format="json")
    assert response.status_code == 400
    assert "without '/'" in response.json()["detail"]


def test_a_missing_field_is_a_400_naming_it(client_for, evalset, annotator):
    response = client_for(annotator).post(ITEMS, {"question": "Q?"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"id": ["This field is required."]}


def test_malformed_json_is_a_400_not_a_500(client_for, evalset, annotator):
    response = client_for(annotator).post(ITEMS, "{not json", content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


def test_an_update_with_the_current_row_version_applies(client_for, item, annotator):
    response = client_for(annotator).patch(
        f"{ITEMS}q1/", {"row_version": 1, "answer": "1.5 days"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["answer"] == "1.5 days"
    assert response.json()["row_version"] == 2


def test_a_stale_row_version_is_a_409_that_says_what_changed(client_for, item, annotator, reviewer):
    client_for(reviewer).patch(f"{ITEMS}q1/", {"row_version": 1, "answer": "A"}, format="json")
    response = client_for(annotator).patch(
        f"{ITEMS}q1/", {"row_version": 1, "answer": "B"}, format="json"
    )
    assert response.status_code == 409
    body = response.json()
    assert "changed since you read it" in body["detail"]
    assert body["current_row_version"] == 2
    item.refresh_from_db()
    assert item.answer == "A"


def test_an_update_without_a_row_version_is_refused(client_for, item, annotator):
    response = client_for(annotator).patch(f"{ITEMS}q1/", {"answer": "B"}, format="json")
    assert response.status_code == 400
    assert "row_version" in response.json()["errors"]


def test_blanking_the_question_on_update_is_refused_and_changes_nothing(
    client_for, item, annotator
):
    response = client_for(annotator).patch(
        f"{ITEMS}q1/", {"row_version": 1, "question": "", "answer": "x"}, format="json"
    )
    assert response.status_code == 400
    item.refresh_from_db()
    assert item.answer is None and item.row_version == 1


def test_assigning_someone_outside_the_workspace_is_refused(client_for, item, owner, outsider):
    response = client_for(owner).patch(
        f"{ITEMS}q1/", {"row_version": 1, "assignee": "otto"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "assignee: 'otto' is not a member of 'acme'"


def test_items_filter_by_state_qtype_and_assignee(client_for, evalset, owner, annotator, reviewer):
    for n, qtype in enumerate(["factoid", "numeric", "numeric"]):
        anchoring_services.item_create(
            evalset=evalset,
            user=owner,
            item_id=f"q{n}",
            question=f"Question {n}?",
            qtype=qtype,
            assignee=reviewer if n == 2 else None,
        )
    client = client_for(annotator)
    assert client.get(ITEMS, {"qtype": "numeric"}).json()["count"] == 2
    assert client.get(ITEMS, {"assignee": "rita"}).json()["count"] == 1
    assert client.get(ITEMS, {"state": "draft"}).json()["count"] == 3
    assert client.get(ITEMS, {"state": "nonsense"}).status_code == 400


def test_listing_items_costs_the_same_queries_for_3_or_30_items(
    client_for, evalset, annotator, document, django_assert_max_num_queries
):
    def add(count: int, offset: int) -> None:
        for n in range(offset, offset + count):
            item = anchoring_services.item_create(
                evalset=evalset, user=annotator, item_id=f"q{n}", question=f"Q{n}?"
            )
            anchoring_services.anchor_create_typed(
                item=item, user=annotator, source_id="handbook.txt", quote="Employees accrue"
            )

    client = client_for(annotator)
    add(3, 0)
    with django_assert_max_num_queries(12):
        assert client.get(ITEMS).json()["count"] == 3
    add(27, 3)
    with django_assert_max_num_queries(12):
        assert len(client.get(ITEMS).json()["results"]) == 30


def test_lists_paginate(client_for, evalset, annotator):
    for n in range(7):
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=f"q{n}", question="Q?"
        )
    page = client_for(annotator).get(ITEMS, {"page_size": 5}).json()
    assert page["count"] == 7 and len(page["results"]) == 5 and page["next"]


def test_deleting_an_item_removes_it(client_for, item, annotator):
    client = client_for(annotator)
    assert client.delete(f"{ITEMS}q1/").status_code == 204
    assert client.get(f"{ITEMS}q1/").status_code == 404


def test_the_eval_set_reports_its_portability(client_for, item, annotator, document):
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Employees accrue"
    )
    body = client_for(annotator).get("/api/workspaces/acme/evalsets/quiz/").json()
    assert body["item_count"] == 1
    assert body["portability"]["answerable"] == 1
    assert body["portability"]["is_portable"] is True


def test_a_database_that_is_busy_answers_503_and_saves_nothing(client_for, evalset, annotator):
    from unittest import mock

    from django.db import OperationalError

    with mock.patch(
        "evalsets.anchoring.services.EvalItem.objects.create",
        side_effect=OperationalError("database table is locked"),
    ):
        response = client_for(annotator).post(ITEMS, {"id": "q2", "question": "Q?"}, format="json")
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert "may or may not have been saved" in response.json()["detail"]
    assert not evalset.items.filter(item_id="q2").exists()
