"""The inbox: who is told what, by which service, marking read, the API, the home page and the
header's count."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evalsets.anchoring import services as anchoring_services
from evalsets.errors import Conflict
from evalsets.models import Membership, Notification
from evalsets.review import assignments, comments, workflow
from evalsets.review import selectors as review_selectors

pytestmark = pytest.mark.django_db


def kinds_for(user) -> list[tuple[str, str]]:
    return [(n.kind, n.item_key) for n in Notification.objects.filter(recipient=user)]


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_changes_requested_on_my_item_reach_my_inbox_with_the_reviewers_words(
    changes_requested, annotator, reviewer
):
    (note,) = Notification.objects.filter(recipient=annotator)
    assert (note.kind, note.item_key, note.actor_name) == ("changes_requested", "q1", "rita")
    assert "whole <b>sentence</b>" in note.text
    assert not Notification.objects.filter(recipient=reviewer).exists()


def test_an_assignment_tells_each_person_given_work(evalset, item, owner, annotator, reviewer):
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[annotator.username], kind="annotate"
    )
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[reviewer.username], kind="review"
    )
    assert kinds_for(annotator) == [("assigned", "q1")]
    assert kinds_for(reviewer) == [("review", "q1")]


def test_nobody_is_told_of_what_they_did_themselves(evalset, item, owner):
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[owner.username], kind="annotate"
    )
    assert not Notification.objects.filter(recipient=owner).exists()


def test_a_submitted_item_tells_its_assigned_reviewer_a_review_waits(
    evalset, item, owner, annotator, reviewer
):
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[reviewer.username], kind="review"
    )
    Notification.objects.all().delete()
    workflow.item_submit(item=item, user=annotator)
    assert kinds_for(reviewer) == [("review", "q1")]


def test_a_reply_to_my_comment_reaches_me_and_not_the_replier(item, annotator, reviewer):
    first = comments.comment_add(item=item, user=annotator, body="Is 1.5 days right?")
    comments.comment_add(item=item, user=reviewer, body="Yes, page 1.", parent=first)
    assert kinds_for(annotator) == [("reply", "q1")]
    comments.comment_add(item=item, user=annotator, body="Thanks", parent=first)
    assert kinds_for(annotator) == [("reply", "q1")]


def test_a_refused_change_leaves_no_notification(item, reviewer):
    with pytest.raises(Conflict):
        workflow.item_request_changes(item=item, user=reviewer, row_version=1, comment="why")
    assert not Notification.objects.exists()


def test_the_api_lists_my_notifications_and_marks_one_read(
    client_for, changes_requested, annotator, evalset, owner
):
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[annotator.username], kind="annotate"
    )
    client = client_for(annotator)
    body = client.get("/api/inbox/").json()
    assert body["unread"] == 2
    assert [n["kind"] for n in body["results"]] == ["assigned", "changes_requested"]
    assert body["results"][1]["item_state"] == "changes_requested"
    marked = client.post(
        "/api/inbox/read/", {"ids": [body["results"][1]["id"]]}, format="json"
    ).json()
    assert marked == {"marked": 1, "unread": 1}
    assert [n["kind"] for n in client.get("/api/inbox/?unread=1").json()["results"]] == ["assigned"]


def test_marking_all_read_clears_the_count(client_for, changes_requested, annotator):
    client = client_for(annotator)
    assert client.post("/api/inbox/read/", {}, format="json").json() == {"marked": 1, "unread": 0}
    assert client.get("/api/inbox/").json()["unread"] == 0


def test_nobody_can_mark_another_persons_notification_read(
    client_for, changes_requested, annotator, reviewer
):
    (note,) = Notification.objects.filter(recipient=annotator)
    answer = client_for(reviewer).post(
        "/api/inbox/read/", {"ids": [str(note.public_id)]}, format="json"
    )
    assert answer.json()["marked"] == 0
    note.refresh_from_db()
    assert note.read_at is None


def test_mark_read_refuses_an_id_that_is_not_one(client_for, annotator, workspace):
    answer = client_for(annotator).post("/api/inbox/read/", {"ids": ["nope"]}, format="json")
    assert answer.status_code == 400
    assert "ids" in answer.json()["errors"]


def test_the_inbox_needs_a_signed_in_user(client_for):
    assert client_for(None).get("/api/inbox/").status_code in (401, 403)


def test_a_former_member_no_longer_reads_that_workspaces_notifications(
    client_for, changes_requested, annotator, workspace
):
    Membership.objects.filter(workspace=workspace, user=annotator).delete()
    assert client_for(annotator).get("/api/inbox/").json() == {"unread": 0, "results": []}


def test_the_home_page_shows_the_inbox_and_the_header_counts_it(changes_requested, annotator):
    html = page_client(annotator).get("/").content.decode()
    assert 'data-inbox-count aria-label="1 unread">1</span>' in html
    assert "asked for changes on" in html
    assert "acme/quiz/q1" in html


def test_every_page_header_shows_the_unread_count(changes_requested, annotator):
    html = page_client(annotator).get("/w/acme/sets/quiz/").content.decode()
    assert 'data-inbox-count aria-label="1 unread">1</span>' in html


def test_the_header_count_costs_one_query(changes_requested, annotator):
    client = page_client(annotator)
    client.get("/w/acme/")
    with CaptureQueriesContext(connection) as queries:
        client.get("/w/acme/")
    assert sum("evalsets_notification" in q["sql"] for q in queries.captured_queries) == 1


def test_the_inbox_list_costs_one_query_however_long(changes_requested, annotator, evalset, owner):
    for n in range(2, 12):
        anchoring_services.item_create(
            evalset=evalset, user=owner, item_id=f"q{n}", question=f"Q {n}?"
        )
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[annotator.username], kind="annotate"
    )
    with CaptureQueriesContext(connection) as queries:
        notes = review_selectors.inbox(annotator)
        states = [n.item.state for n in notes if n.item]
    assert len(notes) == 12 and len(states) == 12
    assert len(queries.captured_queries) == 1


def test_assigned_and_recent_items_on_the_home_page_do_not_repeat_each_other(
    evalset, owner, annotator
):
    mine = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="A?"
    )
    anchoring_services.item_create(evalset=evalset, user=annotator, item_id="q2", question="B?")
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=[annotator.username], kind="annotate", item_ids=["q1"]
    )
    assigned, recent = review_selectors.items_for_person(annotator, [evalset.workspace])
    assert [i.item_id for i in assigned] == [mine.item_id]
    assert [i.item_id for i in recent] == ["q2"]
