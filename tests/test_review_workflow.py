"""The review workflow: every legal and illegal transition, four eyes, row versions, comments,
and what editing does in each state."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.models import Comment, EvalItem
from evalsets.review import assignments, workflow

pytestmark = pytest.mark.django_db

ITEM = "/api/workspaces/acme/evalsets/quiz/items/q1/"


def post(client, action: str, **body):
    return client.post(f"{ITEM}{action}/", body, format="json")


def state_of(item) -> str:
    return EvalItem.objects.get(pk=item.pk).state


def version_of(item) -> int:
    return EvalItem.objects.get(pk=item.pk).row_version


@pytest.fixture
def submitted(item, annotator):
    workflow.item_submit(item=item, user=annotator)
    item.refresh_from_db()
    return item


@pytest.fixture
def approved(submitted, reviewer):
    workflow.item_approve(item=submitted, user=reviewer, row_version=submitted.row_version)
    submitted.refresh_from_db()
    return submitted


# -- legal transitions ---------------------------------------------------------------------------


def test_an_annotator_submits_a_draft(client_for, item, annotator):
    response = post(client_for(annotator), "submit")
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "id": "q1",
        "state": "submitted",
        "row_version": item.row_version + 1,
        "waiting_for": [],
    }


def test_a_reviewer_approves_a_submitted_item(client_for, submitted, reviewer):
    response = post(client_for(reviewer), "approve", row_version=submitted.row_version)
    assert response.status_code == 200, response.json()
    assert response.json()["state"] == "approved"


def test_a_reviewer_requests_changes_with_a_comment(client_for, submitted, reviewer):
    response = post(
        client_for(reviewer),
        "request-changes",
        row_version=submitted.row_version,
        comment="The quote should include the carry-over rule.",
    )
    assert response.status_code == 200, response.json()
    assert state_of(submitted) == "changes_requested"
    comment = Comment.objects.get(item=submitted)
    assert comment.kind == "changes_requested"
    assert comment.body == "The quote should include the carry-over rule."
    assert comment.author.username == "rita"


def test_an_item_with_changes_requested_is_submitted_again(
    client_for, submitted, reviewer, annotator
):
    workflow.item_request_changes(
        item=submitted, user=reviewer, row_version=submitted.row_version, comment="fix it"
    )
    response = post(client_for(annotator), "submit")
    assert response.status_code == 200
    assert response.json()["state"] == "submitted"


def test_an_owner_reopens_an_approved_item_to_draft(client_for, approved, owner):
    response = post(client_for(owner), "reopen", reason="the policy changed")
    assert response.status_code == 200, response.json()
    assert state_of(approved) == "draft"


def test_every_transition_bumps_the_row_version(item, annotator, reviewer, owner):
    versions = [item.row_version]
    workflow.item_submit(item=item, user=annotator)
    versions.append(version_of(item))
    workflow.item_approve(item=item, user=reviewer, row_version=versions[-1])
    versions.append(version_of(item))
    workflow.item_reopen(item=item, user=owner)
    versions.append(version_of(item))
    assert versions == sorted(set(versions))


# -- illegal transitions -------------------------------------------------------------------------

ILLEGAL = [
    # (state the item is in, action, the reason in the 409)
    ("draft", "approve", "item 'q1' is a draft; only a submitted item can be approved"),
    (
        "draft",
        "request-changes",
        "item 'q1' is a draft; only a submitted item can be sent back for changes",
    ),
    ("draft", "reopen", "item 'q1' is a draft; only an approved item can be reopened"),
    (
        "submitted",
        "submit",
        "item 'q1' is submitted; only a draft item or one with changes requested can be submitted",
    ),
    ("submitted", "reopen", "item 'q1' is submitted; only an approved item can be reopened"),
    (
        "approved",
        "submit",
        "item 'q1' is approved; only a draft item or one with changes requested can be submitted",
    ),
    ("approved", "approve", "item 'q1' is approved; only a submitted item can be approved"),
    (
        "approved",
        "request-changes",
        "item 'q1' is approved; only a submitted item can be sent back for changes",
    ),
    (
        "changes_requested",
        "approve",
        "item 'q1' has changes requested; only a submitted item can be approved",
    ),
    (
        "changes_requested",
        "request-changes",
        "item 'q1' has changes requested; only a submitted item can be sent back for changes",
    ),
    (
        "changes_requested",
        "reopen",
        "item 'q1' has changes requested; only an approved item can be reopened",
    ),
]


@pytest.mark.parametrize(("state", "action", "reason"), ILLEGAL)
def test_an_illegal_transition_is_a_409_with_the_reason(
    client_for, item, owner, state, action, reason
):
    EvalItem.objects.filter(pk=item.pk).update(state=state)
    version = version_of(item)
    response = post(client_for(owner), action, row_version=version, comment="why not")
    assert response.status_code == 409, response.json()
    assert response.json()["detail"] == reason
    assert response.json()["state"] == state
    assert state_of(item) == state
    assert version_of(item) == version


# -- four eyes -----------------------------------------------------------------------------------


def test_nobody_approves_an_item_they_wrote(client_for, make_user, workspace, evalset, owner):
    mine = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="q1", question="Mine?"
    )
    workflow.item_submit(item=mine, user=owner)
    response = post(client_for(owner), "approve", row_version=version_of(mine))
    assert response.status_code == 403
    assert "you wrote or anchored eval item 'q1'" in response.json()["detail"]
    assert state_of(mine) == "submitted"


def test_nobody_approves_an_item_they_anchored(client_for, item, reviewer, annotator, document):
    anchoring_services.anchor_create_typed(
        item=item, user=reviewer, source_id="handbook.txt", quote="Employees accrue"
    )
    workflow.item_submit(item=item, user=annotator)
    response = post(client_for(reviewer), "approve", row_version=version_of(item))
    assert response.status_code == 403
    assert state_of(item) == "submitted"


def test_an_editor_of_the_question_cannot_approve_but_someone_else_can(
    client_for, item, reviewer, owner, annotator
):
    anchoring_services.item_update(
        item=item, user=reviewer, row_version=item.row_version, question="Reworded?"
    )
    workflow.item_submit(item=item, user=annotator)
    version = version_of(item)
    assert post(client_for(reviewer), "approve", row_version=version).status_code == 403
    assert post(client_for(owner), "approve", row_version=version).status_code == 200


def test_the_writer_may_still_be_asked_for_changes_by_a_reviewer(client_for, submitted, owner):
    response = post(
        client_for(owner), "request-changes", row_version=submitted.row_version, comment="x"
    )
    assert response.status_code == 200


# -- row versions and races on SQLite (PostgreSQL races: test_review_races) ----------------------


def test_approving_a_version_that_changed_since_it_was_opened_is_refused(
    client_for, submitted, reviewer, annotator
):
    seen = submitted.row_version
    anchoring_services.item_update(
        item=submitted, user=annotator, row_version=seen, answer="1.5 days"
    )
    response = post(client_for(reviewer), "approve", row_version=seen)
    assert response.status_code == 409
    body = response.json()
    assert "changed since you opened it" in body["detail"]
    assert body["current_row_version"] == seen + 1
    assert body["changed"][0]["kind"] == "edited"
    assert body["changed"][0]["fields"] == ["answer"]
    assert body["changed"][0]["by"] == "ann"
    assert state_of(submitted) == "submitted"


def test_an_anchor_added_after_opening_makes_the_approval_stale(
    client_for, submitted, reviewer, annotator, document
):
    seen = submitted.row_version
    anchoring_services.anchor_create_typed(
        item=submitted, user=annotator, source_id="handbook.txt", quote="Leave may be carried"
    )
    response = post(client_for(reviewer), "approve", row_version=seen)
    assert response.status_code == 409
    assert response.json()["changed"][0]["kind"] == "anchor_created"
    assert response.json()["changed"][0]["quote"] == "Leave may be carried"


def test_the_second_of_two_approvals_of_the_same_version_gets_a_409(
    client_for, submitted, reviewer, owner
):
    seen = submitted.row_version
    assert post(client_for(reviewer), "approve", row_version=seen).status_code == 200
    second = post(client_for(owner), "approve", row_version=seen)
    assert second.status_code == 409
    assert second.json()["detail"] == "item 'q1' is approved; only a submitted item can be approved"


def test_request_changes_needs_a_comment(client_for, submitted, reviewer):
    response = post(
        client_for(reviewer), "request-changes", row_version=submitted.row_version, comment="  "
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "comment": ["a request for changes needs a comment saying what to change"]
    }
    assert state_of(submitted) == "submitted"


def test_approve_and_request_changes_need_the_row_version_you_saw(client_for, submitted, reviewer):
    response = post(client_for(reviewer), "approve")
    assert response.status_code == 400
    assert "row_version" in response.json()["errors"]


def test_a_request_for_changes_can_point_at_one_anchor(
    client_for, submitted, reviewer, annotator, document
):
    anchor = anchoring_services.anchor_create_typed(
        item=submitted, user=annotator, source_id="handbook.txt", quote="Employees accrue"
    )
    response = post(
        client_for(reviewer),
        "request-changes",
        row_version=version_of(submitted),
        comment="too short",
        anchor=str(anchor.public_id),
    )
    assert response.status_code == 200, response.json()
    assert Comment.objects.get(item=submitted).anchor_uuid == anchor.public_id


def test_an_unknown_item_is_a_404(client_for, evalset, reviewer):
    response = client_for(reviewer).post(
        "/api/workspaces/acme/evalsets/quiz/items/nope/approve/", {"row_version": 1}, format="json"
    )
    assert response.status_code == 404


# -- editing by state ----------------------------------------------------------------------------


def test_editing_an_approved_item_is_refused_until_it_is_reopened(
    client_for, approved, annotator, owner
):
    client = client_for(annotator)
    response = client.patch(
        ITEM, {"row_version": approved.row_version, "answer": "2"}, format="json"
    )
    assert response.status_code == 409
    assert "is approved; an owner must reopen it before it is edited" in response.json()["detail"]
    workflow.item_reopen(item=approved, user=owner, reason="new policy")
    response = client.patch(
        ITEM, {"row_version": version_of(approved), "answer": "2"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["state"] == "draft"


def test_anchors_of_an_approved_item_cannot_be_added_regraded_or_deleted(
    approved, annotator, document
):
    EvalItem.objects.filter(pk=approved.pk).update(state="draft")
    anchor = anchoring_services.anchor_create_typed(
        item=approved, user=annotator, source_id="handbook.txt", quote="Employees accrue"
    )
    EvalItem.objects.filter(pk=approved.pk).update(state="approved")
    from evalsets.errors import Conflict

    with pytest.raises(Conflict, match="is approved"):
        anchoring_services.anchor_create_typed(
            item=approved, user=annotator, source_id="handbook.txt", quote="Remote work"
        )
    with pytest.raises(Conflict, match="is approved"):
        anchoring_services.anchor_update_grade(anchor=anchor, grade=1, user=annotator)
    with pytest.raises(Conflict, match="is approved"):
        anchoring_services.anchor_delete(anchor=anchor, user=annotator)
    assert approved.anchors.count() == 1


def test_editing_a_submitted_item_keeps_it_submitted_and_makes_open_reviews_stale(
    client_for, submitted, annotator
):
    response = client_for(annotator).patch(
        ITEM, {"row_version": submitted.row_version, "answer": "1.5"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["state"] == "submitted"
    assert response.json()["row_version"] == submitted.row_version + 1


# -- comments ------------------------------------------------------------------------------------

COMMENTS = f"{ITEM}comments/"


def test_comments_thread_and_point_at_anchors(client_for, item, annotator, reviewer, document):
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Employees accrue"
    )
    first = client_for(reviewer).post(
        COMMENTS, {"body": "Is this the right sentence?", "anchor": str(anchor.public_id)}
    )
    assert first.status_code == 201, first.json()
    reply = client_for(annotator).post(
        COMMENTS, {"body": "Yes, page 1.", "parent": first.json()["id"]}, format="json"
    )
    assert reply.status_code == 201, reply.json()
    assert reply.json()["parent"] == first.json()["id"]
    # A reply inherits the anchor its thread is about, so the UI jumps to the same place.
    assert reply.json()["anchor"] == str(anchor.public_id)
    listed = client_for(reviewer).get(COMMENTS).json()["results"]
    assert [(c["author"], c["body"]) for c in listed] == [
        ("rita", "Is this the right sentence?"),
        ("ann", "Yes, page 1."),
    ]
    assert listed[0]["created_at"]
    only_anchor = client_for(reviewer).get(COMMENTS, {"anchor": str(anchor.public_id)}).json()
    assert only_anchor["count"] == 2


def test_a_blank_comment_is_refused(client_for, item, annotator):
    response = client_for(annotator).post(COMMENTS, {"body": " "})
    assert response.status_code == 400
    assert response.json()["errors"] == {"body": ["a comment needs some text"]}


def test_a_comment_on_another_items_anchor_is_refused(
    client_for, evalset, item, annotator, document
):
    other = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q2", question="Q2?"
    )
    anchor = anchoring_services.anchor_create_typed(
        item=other, user=annotator, source_id="handbook.txt", quote="Remote work"
    )
    response = client_for(annotator).post(COMMENTS, {"body": "hm", "anchor": str(anchor.public_id)})
    assert response.status_code == 400
    assert "has no anchor" in response.json()["errors"]["anchor"][0]


def test_a_reply_to_an_unknown_comment_is_refused(client_for, item, annotator):
    response = client_for(annotator).post(
        COMMENTS, {"body": "hm", "parent": "00000000-0000-0000-0000-000000000000"}
    )
    assert response.status_code == 400
    assert "no comment" in response.json()["errors"]["parent"][0]


# -- the review page (server side; the keyboard path is in test_e2e_review) -----------------------


def _page(client, username: str, query: str = "") -> str:
    from tests.conftest import PASSWORD

    client.login(username=username, password=PASSWORD)
    response = client.get(f"/w/acme/sets/quiz/review/{query}")
    assert response.status_code == 200
    return response.content.decode()


def test_the_review_page_shows_each_anchor_in_context_with_its_resolutions(
    client, item, annotator, reference, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=19, end=64
        )
    workflow.item_submit(item=item, user=annotator)
    html = _page(client, "rita")
    assert "<mark>Employees accrue 1.5 days of leave per month.</mark>" in html
    assert "…Employee Handbook" in html
    assert 'class="res res-exact"' in html
    assert "data-approve" in html and 'data-can-approve="true"' in html


def test_viewers_read_the_review_page_without_decision_buttons(client, submitted):
    html = _page(client, "vic")
    assert "How much leave" in html
    assert "data-approve" not in html


def test_the_review_page_can_show_only_my_assigned_queue(client, evalset, submitted, owner):
    other = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="q2", question="Other?"
    )
    workflow.item_submit(item=other, user=owner)
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["rita"], kind="review", item_ids=["q2"]
    )
    html = _page(client, "rita", "?queue=mine")
    assert 'id="review-q2"' in html
    assert 'id="review-q1"' not in html
