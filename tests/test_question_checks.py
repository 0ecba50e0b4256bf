"""Before a question is saved: a question too long is refused with the limit, and one that
repeats (or nearly repeats) another in the set is found by the dashboard's own test."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.models import EvalItem
from evalsets.review import dashboard
from evalsets.validation import MAX_QUESTION_CHARS

pytestmark = pytest.mark.django_db

ITEMS = "/api/workspaces/acme/evalsets/quiz/items/"
SIMILAR = "/api/workspaces/acme/evalsets/quiz/similar/"


def test_a_200000_character_question_is_refused_naming_the_field_and_the_limit(
    client_for, evalset, annotator
):
    answer = client_for(annotator).post(
        ITEMS, {"id": "q9", "question": "x" * 200_000}, format="json"
    )
    assert answer.status_code == 400
    assert "question" in answer.json()["errors"]
    assert f"at most {MAX_QUESTION_CHARS:,} characters" in answer.json()["detail"]
    assert not EvalItem.objects.filter(item_id="q9").exists()


def test_an_edit_that_makes_the_question_too_long_is_refused_and_changes_nothing(
    client_for, item, annotator
):
    answer = client_for(annotator).patch(
        f"{ITEMS}q1/",
        {"row_version": item.row_version, "question": "y" * (MAX_QUESTION_CHARS + 1)},
        format="json",
    )
    assert answer.status_code == 400
    assert "2,001 characters" in answer.json()["errors"]["question"][0]
    item.refresh_from_db()
    assert item.question.startswith("How much leave")


def test_a_question_at_the_limit_is_accepted(client_for, evalset, annotator):
    answer = client_for(annotator).post(
        ITEMS, {"id": "q9", "question": "z" * MAX_QUESTION_CHARS}, format="json"
    )
    assert answer.status_code == 201


def test_a_near_duplicate_question_is_found_before_saving(client_for, item, annotator):
    answer = client_for(annotator).post(
        SIMILAR, {"question": "how much LEAVE do employees accrue per month"}, format="json"
    )
    assert answer.status_code == 200
    (hit,) = answer.json()["similar"]
    assert hit["id"] == "q1" and hit["exact"] is True


def test_a_reworded_question_counts_as_a_near_duplicate(client_for, item, annotator):
    body = (
        client_for(annotator)
        .post(SIMILAR, {"question": "Employees accrue how much leave per month?"}, format="json")
        .json()
    )
    assert [h["id"] for h in body["similar"]] == ["q1"]
    assert body["similar"][0]["exact"] is False


def test_the_item_being_edited_is_not_its_own_duplicate(client_for, item, annotator):
    body = (
        client_for(annotator)
        .post(SIMILAR, {"question": item.question, "exclude": "q1"}, format="json")
        .json()
    )
    assert body["similar"] == []


def test_a_different_question_has_no_duplicates(client_for, item, annotator):
    body = (
        client_for(annotator)
        .post(SIMILAR, {"question": "Who approves remote work?"}, format="json")
        .json()
    )
    assert body["similar"] == []


def test_the_warning_and_the_dashboard_use_the_same_test(evalset, item, annotator):
    twin = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q2", question=item.question.upper()
    )
    (pair,) = dashboard.duplicates([item, twin])["pairs"]
    (hit,) = dashboard.near_duplicates_of(twin.question, [(item.item_id, item.question)])
    assert (pair["score"], pair["exact"]) == (hit["score"], hit["exact"])


def test_another_workspaces_set_is_a_404(client_for, item, outsider):
    answer = client_for(outsider).post(SIMILAR, {"question": "leave"}, format="json")
    assert answer.status_code == 404
