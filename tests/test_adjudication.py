"""Blind overlap and adjudication: each read path of anchors hides the other annotators'
evidence on an overlapped item until a reviewer settles it, and settling it (pick or merge)
keeps exactly what the reviewer chose, in one step recorded in the history."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.utils import timezone

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import selectors as documents_selectors
from evalsets.models import EvalItem, GoldAnchor, ItemEvent, Membership, Role
from evalsets.passages.selectors import overlapping_evidence
from evalsets.review import adjudication, assignments, dashboard, workflow
from evalsets.review import blind as blind_rule
from tests.world import HANDBOOK

pytestmark = pytest.mark.django_db

ANN_QUOTE = "1.5 days of leave per month"
BOB_QUOTE = "Leave may be carried over"
BASE = "/api/workspaces/acme/evalsets/quiz/items/b1/"


@pytest.fixture
def bob(make_user, workspace):
    user = make_user("bob")
    Membership.objects.create(workspace=workspace, user=user, role=Role.ANNOTATOR)
    return user


@pytest.fixture
def cara(make_user, workspace):
    """An annotator with no assignment on the overlapped item."""
    user = make_user("cara")
    Membership.objects.create(workspace=workspace, user=user, role=Role.ANNOTATOR)
    return user


def _highlight(item, user, quote: str, reference, grade: int = 2):
    start = HANDBOOK.index(quote)
    return anchoring_services.anchor_create_from_highlight(
        item=item, user=user, parse=reference, start=start, end=start + len(quote), grade=grade
    )


@pytest.fixture
def blind(evalset, owner, annotator, bob, reference):
    """``b1``, assigned to ann and bob with overlap 2; each has highlighted one passage."""
    item = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="b1", question="How much leave, and can it carry?"
    )
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "bob"], kind="annotate", overlap=2
    )
    _highlight(item, annotator, ANN_QUOTE, reference)
    _highlight(item, bob, BOB_QUOTE, reference, grade=1)
    return item


@pytest.fixture
def finished(blind, annotator, bob):
    """``b1`` once both annotators submitted their part: it is submitted."""
    workflow.item_submit(item=blind, user=annotator)
    workflow.item_submit(item=blind, user=bob)
    blind.refresh_from_db()
    assert blind.state == "submitted"
    return blind


def _quotes(anchors: list[dict]) -> set[str]:
    return {a["quote"] for a in anchors}


# -- every read path hides the others' evidence --------------------------------------------------


def test_an_assigned_annotator_sees_only_their_own_anchors_in_the_item_api(
    blind, annotator, client_for
):
    api = client_for(annotator)
    shown = api.get(BASE).json()
    assert _quotes(shown["anchors"]) == {ANN_QUOTE}
    listed = api.get("/api/workspaces/acme/evalsets/quiz/items/").json()["results"]
    assert _quotes(next(i for i in listed if i["id"] == "b1")["anchors"]) == {ANN_QUOTE}


def test_an_assigned_annotator_cannot_list_open_or_compare_another_annotators_anchor(
    blind, annotator, bob, client_for
):
    api = client_for(annotator)
    assert _quotes(api.get(BASE + "anchors/").json()["results"]) == {ANN_QUOTE}
    theirs = GoldAnchor.objects.get(item=blind, created_by=bob).public_id
    assert api.get(f"{BASE}anchors/{theirs}/").status_code == 404
    assert api.get(f"{BASE}anchors/{theirs}/compare/").status_code == 404
    assert client_for(bob).get(f"{BASE}anchors/{theirs}/").status_code == 200


def test_an_assigned_annotator_sees_only_their_own_highlights_in_the_document_view(
    blind, annotator, client_for
):
    listed = client_for(annotator).get("/api/workspaces/acme/documents/handbook.txt/anchors/")
    assert _quotes(listed.json()["results"]) == {ANN_QUOTE}


def test_the_item_page_carries_only_the_annotators_own_anchors(blind, annotator):
    web = Client()
    web.force_login(annotator)
    page = web.get("/w/acme/sets/quiz/items/b1/").content.decode()
    data = json.loads(re.search(r'id="item-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    assert _quotes(data["anchors"]) == {ANN_QUOTE}
    # The comment form's "about" list names the evidence too.
    assert f"evidence: \u201c{BOB_QUOTE}" not in page
    assert f"evidence: \u201c{ANN_QUOTE}" in page
    assert "data-blind-note" in page


def test_the_next_item_in_the_queue_carries_only_the_annotators_own_anchors(
    blind, annotator, client_for
):
    shown = client_for(annotator).get("/api/workspaces/acme/evalsets/quiz/next/?role=annotate")
    assert shown.json()["item"]["id"] == "b1"
    assert _quotes(shown.json()["item"]["anchors"]) == {ANN_QUOTE}


def test_a_new_highlights_overlap_warning_leaves_out_anothers_evidence_on_a_blind_item(
    blind, evalset, owner, annotator, reviewer, bob, reference, client_for
):
    other = anchoring_services.item_create(evalset=evalset, user=owner, item_id="b2", question="Q?")
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "bob"], kind="annotate", overlap=2
    )
    assert other.assignments.count() == 2
    start = HANDBOOK.index(BOB_QUOTE)
    body = {"parse": str(reference.public_id), "start": start, "end": start + len(BOB_QUOTE)}
    url = "/api/workspaces/acme/evalsets/quiz/items/b2/anchors/"
    mine = client_for(annotator).post(url, body, format="json")
    assert mine.status_code == 201 and mine.json()["overlaps"] == []  # bob's on b1 is hidden
    seen = client_for(reviewer).post(url, body, format="json")
    assert [(o["item"], o["quote"]) for o in seen.json()["overlaps"]] == [("b1", BOB_QUOTE)]


def test_the_overlap_warning_leaves_out_exactly_the_anchors_the_blind_rule_hides_from_each_member(
    blind, evalset, workspace, owner, annotator, bob, cara, reviewer, viewer, reference
):
    """The warning's query is written out in SQL; it must hide what ``visible_anchors`` hides:
    on a blind item, on one adjudicated since, on one without overlap, an anchor nobody
    made any more (its author deleted), for members of every role."""
    settled = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="s1", question="Settled?"
    )
    lone = anchoring_services.item_create(evalset=evalset, user=owner, item_id="l1", question="?")
    assignments.assignments_create(
        evalset=evalset,
        by=owner,
        usernames=["ann", "bob"],
        kind="annotate",
        item_ids=["s1"],
        overlap=2,
    )
    for item in (settled, lone):
        _highlight(item, annotator, ANN_QUOTE, reference)
        _highlight(item, bob, ANN_QUOTE, reference)
    EvalItem.objects.filter(pk=settled.pk).update(adjudicated_at=timezone.now())
    orphan = _highlight(blind, owner, ANN_QUOTE, reference)
    GoldAnchor.objects.filter(pk=orphan.pk).update(created_by=None)
    new = _highlight(
        anchoring_services.item_create(evalset=evalset, user=owner, item_id="n1", question="?"),
        cara,
        ANN_QUOTE,
        reference,
    )
    others = GoldAnchor.objects.exclude(item=new.item).filter(quote=ANN_QUOTE)
    seen_by = {}
    for user in (annotator, bob, cara, reviewer, viewer, owner):
        member = Membership.objects.get(workspace=workspace, user=user)
        warned = {o["anchor"] for o in overlapping_evidence(new, reader=member)}
        visible = {str(a.public_id) for a in blind_rule.visible_anchors(others, member)}
        assert warned == visible, user.username
        seen_by[user.username] = len(warned)
    assert overlapping_evidence(new, reader=None) == overlapping_evidence(
        new, reader=Membership.objects.get(workspace=workspace, user=owner)
    )
    # Each case tells: ann sees her own on b1, bob none there, nobody else's author-less one.
    assert seen_by == {"ann": 5, "bob": 4, "cara": 4, "rita": 6, "vic": 4, "olive": 6}


def test_the_history_and_the_changes_feed_leave_out_the_other_annotators_quotes(
    blind, annotator, reviewer, client_for
):
    api = client_for(annotator)
    history = api.get(BASE + "history/").json()["results"]
    assert {e["data"].get("quote") for e in history if e["kind"] == "anchor_created"} == {ANN_QUOTE}
    feeds = (
        "/api/workspaces/acme/changes/?set=quiz&item=b1&after=0",
        "/api/workspaces/acme/changes/?document=handbook.txt&after=0",
    )
    for feed in feeds:
        assert {c["quote"] for c in api.get(feed).json()["changes"] if c["quote"]} == {ANN_QUOTE}
    everything = client_for(reviewer).get(BASE + "history/").json()["results"]
    assert {e["data"].get("quote") for e in everything if e["kind"] == "anchor_created"} == {
        ANN_QUOTE,
        BOB_QUOTE,
    }


def _anchor_cell(page: str, item_id: str) -> str:
    """The Anchors cell of ``item_id``'s row in the set page's table of items."""
    row = re.search(rf"<code>{item_id}</code>.*?</tr>", page, re.S).group(0)
    return re.findall(r"<td>(.*?)</td>", row, re.S)[2]


def test_the_set_pages_anchor_count_leaves_out_the_other_annotators_evidence_until_adjudicated(
    finished, annotator, reviewer
):
    web = Client()
    web.force_login(annotator)
    assert _anchor_cell(web.get("/w/acme/sets/quiz/").content.decode(), "b1") == "1"
    web.force_login(reviewer)
    assert _anchor_cell(web.get("/w/acme/sets/quiz/").content.decode(), "b1") == "2"
    adjudication.adjudicate(
        item=finished, user=reviewer, row_version=finished.row_version, pick="bob"
    )
    web.force_login(annotator)
    assert _anchor_cell(web.get("/w/acme/sets/quiz/").content.decode(), "b1") == "1"


def test_the_document_lists_anchor_counts_leave_out_the_other_annotators_evidence(
    blind, annotator, bob, reviewer, workspace
):
    def counted(user) -> int:
        member = Membership.objects.get(workspace=workspace, user=user)
        listed = documents_selectors.documents_with_anchor_counts(workspace, reader=member)
        return next(d.anchor_count for d in listed if d.source_id == "handbook.txt")

    assert (counted(annotator), counted(bob), counted(reviewer)) == (1, 1, 2)


def test_a_parses_health_counts_only_the_anchors_the_reader_may_see(
    blind, annotator, reviewer, reference, client_for
):
    url = f"/api/workspaces/acme/documents/handbook.txt/parses/{reference.public_id}/"
    mine = client_for(annotator).get(url).json()["health"]
    everyone = client_for(reviewer).get(url).json()["health"]
    assert (mine["anchors"], everyone["anchors"]) == (1, 2)


def test_the_review_page_shows_a_viewer_no_version_of_a_blind_item(finished, viewer, reviewer):
    web = Client()
    web.force_login(viewer)
    page = web.get("/w/acme/sets/quiz/review/").content.decode()
    assert ANN_QUOTE not in page and BOB_QUOTE not in page
    web.force_login(reviewer)
    page = web.get("/w/acme/sets/quiz/review/").content.decode()
    assert ANN_QUOTE in page and BOB_QUOTE in page
    assert "/w/acme/sets/quiz/items/b1/adjudicate/" in page


def test_reviewers_and_owners_see_every_version_marked_by_who_made_it(
    blind, reviewer, owner, client_for
):
    for user in (reviewer, owner):
        anchors = client_for(user).get(BASE).json()["anchors"]
        assert {(a["quote"], a["created_by"]) for a in anchors} == {
            (ANN_QUOTE, "ann"),
            (BOB_QUOTE, "bob"),
        }


def test_an_annotator_without_an_assignment_sees_only_their_own_on_a_blind_item_and_all_elsewhere(
    blind, cara, item, reference, client_for, annotator
):
    _highlight(item, annotator, ANN_QUOTE, reference)  # q1: nobody overlaps on it
    api = client_for(cara)
    assert api.get(BASE).json()["anchors"] == []
    assert _quotes(api.get("/api/workspaces/acme/evalsets/quiz/items/q1/").json()["anchors"]) == {
        ANN_QUOTE
    }


def test_a_reviewer_assigned_to_annotate_still_sees_every_version_and_the_annotator_only_hers(
    evalset, owner, reviewer, annotator, reference, client_for
):
    item = anchoring_services.item_create(evalset=evalset, user=owner, item_id="b1", question="Q?")
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "rita"], kind="annotate", overlap=2
    )
    _highlight(item, annotator, ANN_QUOTE, reference)
    _highlight(item, reviewer, BOB_QUOTE, reference)
    assert _quotes(client_for(reviewer).get(BASE).json()["anchors"]) == {ANN_QUOTE, BOB_QUOTE}
    assert _quotes(client_for(annotator).get(BASE).json()["anchors"]) == {ANN_QUOTE}


def test_once_adjudicated_everyone_sees_what_was_kept(finished, reviewer, bob, client_for):
    adjudication.adjudicate(
        item=finished, user=reviewer, row_version=finished.row_version, pick="ann"
    )
    assert _quotes(client_for(bob).get(BASE).json()["anchors"]) == {ANN_QUOTE}
    web = Client()
    web.force_login(bob)
    assert "data-blind-note" not in web.get("/w/acme/sets/quiz/items/b1/").content.decode()


# -- the versions side by side ------------------------------------------------------------------


def test_a_reviewer_sees_each_version_with_quote_page_grade_and_their_agreement(
    finished, reviewer, client_for
):
    data = client_for(reviewer).get(BASE + "adjudication/").json()
    assert data["refusal"] is None
    assert [(v["annotator"], v["finished"]) for v in data["versions"]] == [
        ("ann", True),
        ("bob", True),
    ]
    (ann_anchor,) = data["versions"][0]["anchors"]
    assert (ann_anchor["quote"], ann_anchor["page"], ann_anchor["grade"]) == (ANN_QUOTE, 1, 2)
    (bob_anchor,) = data["versions"][1]["anchors"]
    assert (bob_anchor["quote"], bob_anchor["grade"]) == (BOB_QUOTE, 1)
    assert data["agreement"]["spans"] == 0.0  # two passages that do not overlap
    assert data["agreement"]["grades"]["units"] == 2


def test_the_versions_agree_fully_when_both_marked_the_same_passage_with_the_same_grade(
    blind, annotator, bob, reviewer, reference
):
    GoldAnchor.objects.filter(item=blind, created_by=bob).delete()
    _highlight(blind, bob, ANN_QUOTE, reference)
    data = adjudication.versions(blind, user=reviewer)
    assert data["agreement"]["spans"] == 1.0
    assert data["agreement"]["grades"]["units"] == 1


def test_the_adjudication_page_lists_both_versions_for_a_reviewer_and_refuses_an_annotator(
    finished, reviewer, annotator
):
    web = Client()
    web.force_login(reviewer)
    page = web.get("/w/acme/sets/quiz/items/b1/adjudicate/").content.decode()
    assert ANN_QUOTE in page and BOB_QUOTE in page and "data-adjudicate-form" in page
    web.force_login(annotator)
    assert web.get("/w/acme/sets/quiz/items/b1/adjudicate/").status_code == 403


# -- settling it --------------------------------------------------------------------------------


def test_picking_a_version_removes_the_others_anchors_and_the_history_lists_them(
    finished, reviewer, client_for
):
    response = client_for(reviewer).post(
        BASE + "adjudication/", {"row_version": finished.row_version, "pick": "bob"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert _quotes(response.json()["kept"]) == {BOB_QUOTE}
    assert set(GoldAnchor.objects.filter(item=finished).values_list("quote", flat=True)) == {
        BOB_QUOTE
    }
    event = ItemEvent.objects.get(item=finished, kind="adjudicated")
    assert event.actor_name == "rita" and event.data["pick"] == "bob"
    assert [(r["quote"], r["by"]) for r in event.data["removed"]] == [(ANN_QUOTE, "ann")]
    item = EvalItem.objects.get(pk=finished.pk)
    assert item.adjudicated_at is not None and item.state == "submitted"
    assert item.row_version == finished.row_version + 1


def test_merging_keeps_the_chosen_anchors_from_several_versions(
    finished, reviewer, annotator, reference, client_for
):
    extra = GoldAnchor.objects.create(
        item=finished, source_id="handbook.txt", quote="Remote work", created_by=annotator
    )
    keep = [
        str(GoldAnchor.objects.get(item=finished, quote=BOB_QUOTE).public_id),
        str(GoldAnchor.objects.get(item=finished, quote=ANN_QUOTE).public_id),
    ]
    response = client_for(reviewer).post(
        BASE + "adjudication/", {"row_version": finished.row_version, "keep": keep}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert set(GoldAnchor.objects.filter(item=finished).values_list("quote", flat=True)) == {
        ANN_QUOTE,
        BOB_QUOTE,
    }
    assert not GoldAnchor.objects.filter(pk=extra.pk).exists()


def test_the_dashboard_still_compares_the_versions_after_adjudication_removed_some(
    finished, reviewer, evalset
):
    before = dashboard.evalset_dashboard(evalset)["agreement"]
    assert before["items"] and before["grades"]["units"] == 2
    adjudication.adjudicate(
        item=finished, user=reviewer, row_version=finished.row_version, pick="ann"
    )
    assert dashboard.evalset_dashboard(evalset)["agreement"] == before


def test_after_adjudicating_the_same_reviewer_approves_it_in_the_normal_flow(finished, reviewer):
    done = adjudication.adjudicate(
        item=finished, user=reviewer, row_version=finished.row_version, pick="ann"
    )
    approved = workflow.item_approve(
        item=finished, user=reviewer, row_version=done["item"].row_version
    )
    assert approved.state == "approved"


def test_unknown_anchor_ids_are_a_400_that_names_them_and_nothing_is_removed(
    finished, reviewer, client_for
):
    response = client_for(reviewer).post(
        BASE + "adjudication/",
        {"row_version": finished.row_version, "keep": ["not-a-uuid", "00000000-0000-4000-8000-0"]},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert "'not-a-uuid'" in body["detail"] and "keep" in body["errors"]
    assert GoldAnchor.objects.filter(item=finished).count() == 2
    assert EvalItem.objects.get(pk=finished.pk).adjudicated_at is None


def test_picking_someone_who_did_not_annotate_is_a_400_naming_the_annotators(
    finished, reviewer, client_for
):
    response = client_for(reviewer).post(
        BASE + "adjudication/", {"row_version": finished.row_version, "pick": "vic"}, format="json"
    )
    assert response.status_code == 400
    assert "'vic' did not annotate" in response.json()["detail"]
    assert "ann, bob" in response.json()["detail"]


def test_neither_or_both_of_pick_and_keep_is_a_400(finished, reviewer, client_for):
    api = client_for(reviewer)
    for body in ({}, {"pick": "ann", "keep": []}):
        response = api.post(
            BASE + "adjudication/", {"row_version": finished.row_version, **body}, format="json"
        )
        assert response.status_code == 400 and "pick" in response.json()["errors"]


def test_annotators_get_403_and_another_workspace_404(finished, annotator, outsider, client_for):
    body = {"row_version": finished.row_version, "pick": "ann"}
    assert (
        client_for(annotator).post(BASE + "adjudication/", body, format="json").status_code == 403
    )
    assert client_for(annotator).get(BASE + "adjudication/").status_code == 403
    assert client_for(outsider).post(BASE + "adjudication/", body, format="json").status_code == 404
    assert EvalItem.objects.get(pk=finished.pk).adjudicated_at is None


def test_an_owner_who_annotated_the_item_may_not_adjudicate_it(
    evalset, owner, annotator, reviewer, reference, client_for
):
    item = anchoring_services.item_create(
        evalset=evalset, user=reviewer, item_id="b1", question="Q?"
    )
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "olive"], kind="annotate", overlap=2
    )
    workflow.item_submit(item=item, user=annotator)
    workflow.item_submit(item=item, user=owner)
    item.refresh_from_db()
    response = client_for(owner).post(
        BASE + "adjudication/", {"row_version": item.row_version, "pick": "ann"}, format="json"
    )
    assert response.status_code == 403
    assert "you annotated item 'b1'" in response.json()["detail"]


def test_adjudicating_before_every_annotator_finished_is_a_409_naming_who_is_missing(
    blind, annotator, reviewer, client_for
):
    workflow.item_submit(item=blind, user=annotator)
    blind.refresh_from_db()
    response = client_for(reviewer).post(
        BASE + "adjudication/", {"row_version": blind.row_version, "pick": "ann"}, format="json"
    )
    assert response.status_code == 409
    assert "waits for bob" in response.json()["detail"]


def test_a_second_adjudication_is_a_409_and_changes_nothing(finished, reviewer, owner, client_for):
    body = {"row_version": finished.row_version, "pick": "ann"}
    assert client_for(reviewer).post(BASE + "adjudication/", body, format="json").status_code == 200
    again = client_for(owner).post(BASE + "adjudication/", {**body, "pick": "bob"}, format="json")
    assert again.status_code == 409
    assert "already adjudicated" in again.json()["detail"]
    assert set(GoldAnchor.objects.filter(item=finished).values_list("quote", flat=True)) == {
        ANN_QUOTE
    }
    assert ItemEvent.objects.filter(item=finished, kind="adjudicated").count() == 1


def test_a_stale_row_version_is_a_409(finished, reviewer, client_for):
    response = client_for(reviewer).post(
        BASE + "adjudication/",
        {"row_version": finished.row_version - 1, "pick": "ann"},
        format="json",
    )
    assert response.status_code == 409 and "row_version" in response.json()["errors"]
    assert GoldAnchor.objects.filter(item=finished).count() == 2
