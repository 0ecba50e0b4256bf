"""A write that sets what is already there changes nothing: no new row version, no history.

A retried or repeated save (a grade picked again, an untouched form saved) is not an edit
someone made; bumping the row version would make another editor's next save a false 409.
"""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.models import ItemEvent

pytestmark = pytest.mark.django_db

ITEMS = "/api/workspaces/acme/evalsets/quiz/items/"


def _anchor(item, annotator, grade=2):
    return anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Leave may be", grade=grade
    )


def test_setting_an_anchors_grade_to_its_current_value_changes_nothing(
    client_for, item, annotator, document
):
    anchor = _anchor(item, annotator, grade=1)
    item.refresh_from_db()
    version, events = item.row_version, ItemEvent.objects.filter(item=item).count()

    response = client_for(annotator).patch(
        f"{ITEMS}q1/anchors/{anchor.public_id}/", {"grade": 1}, format="json"
    )

    assert response.status_code == 200 and response.json()["grade"] == 1
    item.refresh_from_db()
    assert item.row_version == version
    assert ItemEvent.objects.filter(item=item).count() == events


def test_a_changed_grade_still_bumps_the_row_version_and_is_recorded(
    client_for, item, annotator, document
):
    anchor = _anchor(item, annotator, grade=1)
    item.refresh_from_db()
    version, events = item.row_version, ItemEvent.objects.filter(item=item).count()

    client_for(annotator).patch(
        f"{ITEMS}q1/anchors/{anchor.public_id}/", {"grade": 0}, format="json"
    )

    item.refresh_from_db()
    assert item.row_version == version + 1
    assert ItemEvent.objects.filter(item=item).count() == events + 1


def test_an_item_edit_that_sends_the_current_values_changes_nothing(client_for, item, annotator):
    events = ItemEvent.objects.filter(item=item).count()

    response = client_for(annotator).patch(
        f"{ITEMS}q1/",
        {"row_version": item.row_version, "question": item.question, "qtype": item.qtype},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["row_version"] == item.row_version
    assert ItemEvent.objects.filter(item=item).count() == events


def test_an_item_edit_that_changes_one_value_of_several_is_an_edit(client_for, item, annotator):
    response = client_for(annotator).patch(
        f"{ITEMS}q1/",
        {"row_version": item.row_version, "question": item.question, "answer": "1.5 days"},
        format="json",
    )

    assert response.json()["row_version"] == item.row_version + 1
