"""The audit trail: every transition, edit, anchor change and comment, with who, when and why;
append-only, and it outlives the item."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.errors import Conflict
from evalsets.models import AuditTrailIsAppendOnly, ItemEvent
from evalsets.review import comments, workflow

pytestmark = pytest.mark.django_db

ITEM = "/api/workspaces/acme/evalsets/quiz/items/q1/"
HISTORY = f"{ITEM}history/"


def history(client) -> list[dict]:
    response = client.get(HISTORY)
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def test_a_whole_review_cycle_is_in_the_history_in_order(
    client_for, item, annotator, reviewer, owner, document, reference
):
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=19, end=64
    )
    anchoring_services.anchor_update_grade(anchor=anchor, grade=1, user=annotator)
    item.refresh_from_db()
    anchoring_services.item_update(
        item=item, user=annotator, row_version=item.row_version, answer="1.5"
    )
    comments.comment_add(item=item, user=annotator, body="Ready for a look.", anchor=anchor)
    workflow.item_submit(item=item, user=annotator)
    item.refresh_from_db()
    workflow.item_request_changes(
        item=item, user=reviewer, row_version=item.row_version, comment="Say 'days'."
    )
    item.refresh_from_db()
    anchoring_services.item_update(
        item=item, user=annotator, row_version=item.row_version, answer="1.5 d"
    )
    workflow.item_submit(item=item, user=annotator)
    item.refresh_from_db()
    workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)
    workflow.item_reopen(item=item, user=owner, reason="policy changed in May")
    item.refresh_from_db()
    anchoring_services.anchor_delete(anchor=anchor, user=annotator)

    events = history(client_for(owner))
    assert [(e["kind"], e["actor"]) for e in events] == [
        ("created", "ann"),
        ("anchor_created", "ann"),
        ("anchor_grade_changed", "ann"),
        ("edited", "ann"),
        ("commented", "ann"),
        ("submitted", "ann"),
        ("changes_requested", "rita"),
        ("commented", "rita"),
        ("edited", "ann"),
        ("submitted", "ann"),
        ("approved", "rita"),
        ("reopened", "olive"),
        ("commented", "olive"),
        ("anchor_deleted", "ann"),
    ]
    assert all(e["at"] for e in events)
    by_kind = {e["kind"]: e for e in events}
    assert events[3]["data"]["changes"] == {"answer": {"before": None, "after": "1.5"}}
    assert events[8]["data"]["changes"] == {"answer": {"before": "1.5", "after": "1.5 d"}}
    assert by_kind["anchor_created"]["data"]["quote"] == anchor.quote
    assert by_kind["anchor_created"]["anchor"] == str(anchor.public_id)
    assert by_kind["anchor_grade_changed"]["data"]["changes"] == {
        "grade": {"before": 2, "after": 1}
    }
    assert by_kind["anchor_deleted"]["data"]["quote"] == anchor.quote
    assert by_kind["changes_requested"]["reason"] == "Say 'days'."
    assert (
        by_kind["changes_requested"]["from_state"],
        by_kind["changes_requested"]["to_state"],
    ) == (
        "submitted",
        "changes_requested",
    )
    assert by_kind["reopened"]["reason"] == "policy changed in May"
    assert events[4]["reason"] == "Ready for a look."
    assert events[4]["anchor"] == str(anchor.public_id)


def test_edits_through_the_api_record_only_the_fields_that_changed(client_for, item, annotator):
    client = client_for(annotator)
    response = client.patch(
        ITEM,
        {"row_version": item.row_version, "question": item.question, "qtype": "factoid"},
        format="json",
    )
    assert response.status_code == 200
    edit = history(client)[-1]
    assert edit["kind"] == "edited"
    assert edit["data"]["changes"] == {"qtype": {"before": "numeric", "after": "factoid"}}


def test_the_history_outlives_the_item(client_for, item, annotator, document):
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Employees accrue"
    )
    anchoring_services.item_delete(item=ItemEvent.objects.first().item, user=annotator)
    events = history(client_for(annotator))
    assert [e["kind"] for e in events] == ["created", "anchor_created", "deleted"]
    deleted = events[-1]
    assert deleted["actor"] == "ann"
    assert deleted["data"]["before"]["question"] == item.question
    assert deleted["data"]["before"]["anchors"][0]["quote"] == "Employees accrue"
    assert ItemEvent.objects.filter(item__isnull=True).count() == 3


def test_the_history_outlives_the_eval_set(client_for, item, owner, evalset):
    anchoring_services.evalset_delete(evalset=evalset)
    assert [e["kind"] for e in history(client_for(owner))] == ["created"]


def test_an_item_that_never_existed_has_no_history(client_for, evalset, annotator):
    response = client_for(annotator).get(
        "/api/workspaces/acme/evalsets/quiz/items/nothing/history/"
    )
    assert response.status_code == 404


def test_another_workspaces_history_is_invisible(client_for, item, outsider):
    assert client_for(outsider).get(HISTORY).status_code == 404


def test_audit_events_cannot_be_changed_or_deleted(item):
    event = ItemEvent.objects.get(item=item)
    event.reason = "rewritten"
    with pytest.raises(AuditTrailIsAppendOnly):
        event.save()
    with pytest.raises(AuditTrailIsAppendOnly):
        event.delete()
    with pytest.raises(AuditTrailIsAppendOnly):
        ItemEvent.objects.filter(item=item).update(reason="rewritten")
    with pytest.raises(AuditTrailIsAppendOnly):
        ItemEvent.objects.filter(item=item).delete()
    assert ItemEvent.objects.get(pk=event.pk).reason == ""


def test_a_refused_change_leaves_no_event(item, annotator, reviewer):
    before = ItemEvent.objects.count()
    with pytest.raises(Conflict, match="changed since you read it"):
        anchoring_services.item_update(item=item, user=annotator, row_version=99, answer="x")
    with pytest.raises(Conflict, match="only a submitted item can be approved"):
        workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)
    assert ItemEvent.objects.count() == before


def test_assignments_are_in_the_history(client_for, item, owner, annotator):
    client = client_for(owner)
    response = client.post(
        "/api/workspaces/acme/evalsets/quiz/assignments/",
        {"users": ["ann"], "kind": "annotate"},
        format="json",
    )
    assert response.status_code == 201
    assignment = response.json()["created"][0]["id"]
    client.delete(f"/api/workspaces/acme/evalsets/quiz/assignments/{assignment}/")
    events = history(client)
    assert [(e["kind"], e["actor"], e["data"]["users"]) for e in events[1:]] == [
        ("assigned", "olive", ["ann"]),
        ("unassigned", "olive", ["ann"]),
    ]
