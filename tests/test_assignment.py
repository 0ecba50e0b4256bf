"""Assignment: owners fill people's queues (round-robin, with optional overlap); "next item for
me" takes the next one; overlapped items wait for every annotator before review."""

from __future__ import annotations

import pytest
from django.test import Client

from evalsets.anchoring import services as anchoring_services
from evalsets.models import EvalItem, ItemAssignment, Membership, Role
from evalsets.review import workflow

pytestmark = pytest.mark.django_db

SET = "/api/workspaces/acme/evalsets/quiz/"
ASSIGN = f"{SET}assignments/"


@pytest.fixture
def items(evalset, annotator):
    return [
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=f"q{n}", question=f"Q{n}?"
        )
        for n in range(1, 6)
    ]


@pytest.fixture
def bob(make_user, workspace):
    user = make_user("bob")
    Membership.objects.create(workspace=workspace, user=user, role=Role.ANNOTATOR)
    return user


def assigned(kind: str) -> list[tuple[str, str]]:
    return list(
        ItemAssignment.objects.filter(kind=kind)
        .order_by("item__item_id", "user__username")
        .values_list("item__item_id", "user__username")
    )


def test_an_owner_assigns_a_whole_set_round_robin(client_for, items, owner, bob):
    response = client_for(owner).post(
        ASSIGN, {"users": ["ann", "bob"], "kind": "annotate"}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert assigned("annotate") == [
        ("q1", "ann"),
        ("q2", "bob"),
        ("q3", "ann"),
        ("q4", "bob"),
        ("q5", "ann"),
    ]
    assert response.json()["skipped"] == []
    assert EvalItem.objects.get(item_id="q2").assignee.username == "bob"


def test_assigning_chosen_items_only(client_for, items, owner):
    response = client_for(owner).post(
        ASSIGN, {"users": ["ann"], "kind": "annotate", "items": ["q2", "q4"]}, format="json"
    )
    assert response.status_code == 201
    assert assigned("annotate") == [("q2", "ann"), ("q4", "ann")]


def test_overlap_gives_each_item_n_annotators_and_running_it_again_adds_nothing(
    client_for, items, owner, bob
):
    body = {"users": ["ann", "bob"], "kind": "annotate", "overlap": 2, "items": ["q1", "q2"]}
    assert client_for(owner).post(ASSIGN, body, format="json").status_code == 201
    assert client_for(owner).post(ASSIGN, body, format="json").json()["created"] == []
    assert assigned("annotate") == [("q1", "ann"), ("q1", "bob"), ("q2", "ann"), ("q2", "bob")]


def test_reviewers_are_never_assigned_an_item_they_wrote(client_for, evalset, owner, reviewer):
    anchoring_services.item_create(evalset=evalset, user=reviewer, item_id="mine", question="Mine?")
    response = client_for(owner).post(ASSIGN, {"users": ["rita"], "kind": "review"}, format="json")
    assert response.status_code == 201
    assert response.json()["skipped"] == [
        {"item": "mine", "reason": "every listed reviewer wrote or anchored it"}
    ]
    assert assigned("review") == []


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"users": ["vic"], "kind": "annotate"}, "users", "'vic' has the viewer role; to annotate"),
        ({"users": ["ann"], "kind": "review"}, "users", "'ann' has the annotator role; to review"),
        ({"users": ["otto"], "kind": "annotate"}, "users", "'otto' is not a member of 'acme'"),
        ({"users": ["ann"], "kind": "annotate", "overlap": 2}, "overlap", "between 1 and"),
        ({"users": ["ann"], "kind": "annotate", "items": ["q9"]}, "items", "no eval item 'q9'"),
        ({"users": ["ann"], "kind": "label"}, "kind", "kind must be annotate or review"),
        ({"users": [], "kind": "annotate"}, "users", ""),
    ],
)
def test_bad_assignments_are_refused_naming_the_problem(
    client_for, items, owner, outsider, body, field, message
):
    response = client_for(owner).post(ASSIGN, body, format="json")
    assert response.status_code == 400, response.json()
    assert message in response.json()["errors"][field][0]
    assert ItemAssignment.objects.count() == 0


def test_next_item_takes_the_first_open_one_from_my_queue(client_for, items, owner, bob):
    client_for(owner).post(ASSIGN, {"users": ["ann", "bob"], "kind": "annotate"}, format="json")
    ann = client_for(items[0].author)
    first = ann.get(f"{SET}next/", {"role": "annotate"}).json()
    assert (first["item"]["id"], first["remaining"]) == ("q1", 3)
    workflow.item_submit(item=items[0], user=items[0].author)
    second = ann.get(f"{SET}next/", {"role": "annotate"}).json()
    assert (second["item"]["id"], second["remaining"]) == ("q3", 2)


def test_an_empty_queue_says_so(client_for, items, annotator):
    body = client_for(annotator).get(f"{SET}next/", {"role": "annotate"}).json()
    assert body == {"role": "annotate", "remaining": 0, "item": None}


def test_next_needs_a_known_role(client_for, items, annotator):
    response = client_for(annotator).get(f"{SET}next/", {"role": "approve"})
    assert response.status_code == 400
    assert response.json()["errors"]["role"] == ["role must be annotate or review, got 'approve'"]


def test_the_review_queue_holds_submitted_items_until_decided_and_again_when_resubmitted(
    client_for, items, owner, reviewer, annotator
):
    client_for(owner).post(ASSIGN, {"users": ["rita"], "kind": "review"}, format="json")
    rita = client_for(reviewer)
    assert rita.get(f"{SET}next/", {"role": "review"}).json()["remaining"] == 0
    q1 = items[0]
    workflow.item_submit(item=q1, user=annotator)
    q1.refresh_from_db()
    assert rita.get(f"{SET}next/", {"role": "review"}).json()["item"]["id"] == "q1"
    workflow.item_request_changes(item=q1, user=reviewer, row_version=q1.row_version, comment="x")
    assert rita.get(f"{SET}next/", {"role": "review"}).json()["remaining"] == 0
    workflow.item_submit(item=q1, user=annotator)
    assert rita.get(f"{SET}next/", {"role": "review"}).json()["item"]["id"] == "q1"


def test_an_overlapped_item_is_submitted_when_its_last_annotator_submits(
    client_for, items, owner, annotator, bob
):
    client_for(owner).post(
        ASSIGN,
        {"users": ["ann", "bob"], "kind": "annotate", "overlap": 2, "items": ["q1"]},
        format="json",
    )
    url = f"{SET}items/q1/submit/"
    first = client_for(annotator).post(url, {}, format="json")
    assert first.status_code == 200
    assert first.json()["state"] == "draft"
    assert first.json()["waiting_for"] == ["bob"]
    # Ann's part is done: q1 leaves her queue, not Bob's.
    assert client_for(annotator).get(f"{SET}next/", {"role": "annotate"}).json()["item"] is None
    assert client_for(bob).get(f"{SET}next/", {"role": "annotate"}).json()["item"]["id"] == "q1"
    second = client_for(bob).post(url, {}, format="json")
    assert second.json() == {
        "id": "q1",
        "state": "submitted",
        "row_version": second.json()["row_version"],
        "waiting_for": [],
    }


def test_an_owner_removes_an_assignment(client_for, items, owner):
    created = client_for(owner).post(
        ASSIGN, {"users": ["ann"], "kind": "annotate", "items": ["q1"]}, format="json"
    )
    assignment = created.json()["created"][0]["id"]
    assert client_for(owner).delete(f"{ASSIGN}{assignment}/").status_code == 204
    assert ItemAssignment.objects.count() == 0
    assert EvalItem.objects.get(item_id="q1").assignee is None


def test_assignments_list_filters_by_person_kind_and_open(client_for, items, owner, bob):
    client_for(owner).post(ASSIGN, {"users": ["ann", "bob"], "kind": "annotate"}, format="json")
    workflow.item_submit(item=items[0], user=items[0].author)
    client = client_for(owner)
    assert client.get(ASSIGN, {"user": "bob"}).json()["count"] == 2
    assert client.get(ASSIGN, {"user": "ann", "open": "true"}).json()["count"] == 2
    assert client.get(ASSIGN, {"kind": "review"}).json()["count"] == 0


def test_everyone_an_overlapped_item_is_assigned_to_sees_it_under_assigned_to_you(
    client_for, evalset, owner, annotator
):
    # Written by someone else, so it can only reach Ann's home page by being assigned to her.
    anchoring_services.item_create(evalset=evalset, user=owner, item_id="o1", question="Shared?")
    body = {"users": ["olive", "ann"], "kind": "annotate", "overlap": 2}
    assert client_for(owner).post(ASSIGN, body, format="json").status_code == 201
    assert EvalItem.objects.get(item_id="o1").assignee == owner
    for person in (owner, annotator):
        web = Client()
        web.force_login(person)
        assigned = web.get("/").context["assigned"]
        assert [item.item_id for item in assigned] == ["o1"], person.username


def test_the_items_api_filters_by_every_annotator_an_item_is_assigned_to(
    client_for, evalset, owner, annotator
):
    anchoring_services.item_create(evalset=evalset, user=owner, item_id="o1", question="Shared?")
    anchoring_services.item_create(evalset=evalset, user=owner, item_id="o2", question="Alone?")
    body = {"users": ["olive", "ann"], "kind": "annotate", "overlap": 2, "items": ["o1"]}
    assert client_for(owner).post(ASSIGN, body, format="json").status_code == 201
    listed = client_for(owner).get(f"{SET}items/", {"assignee": "ann"}).json()
    assert [item["id"] for item in listed["results"]] == ["o1"]
    assert client_for(owner).get(f"{SET}items/", {"assignee": "olive"}).json()["count"] == 1
