"""The changes feed the open item and document pages poll: who changed what since the page
last looked, and whether it was this tab, the same person elsewhere, or someone else; and the
409 a stale save gets, naming who saved in between."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evalsets.anchoring import services as anchoring_services
from evalsets.models import ItemEvent
from evalsets.review import selectors as review_selectors

pytestmark = pytest.mark.django_db

CHANGES = "/api/workspaces/acme/changes/"
ITEM = "/api/workspaces/acme/evalsets/quiz/items/q1/"


def changes(client, tab: str = "", **params):
    headers = {"HTTP_X_GROUNDWORK_TAB": tab} if tab else {}
    return client.get(CHANGES, params, **headers)


def edit(client, item, tab: str, **fields):
    item.refresh_from_db()
    return client.patch(
        ITEM,
        {"row_version": item.row_version, **fields},
        format="json",
        HTTP_X_GROUNDWORK_TAB=tab,
    )


def test_an_edit_by_someone_else_is_reported_with_who_and_what(client_for, item, annotator, owner):
    seen = review_selectors.last_change(item.evalset.workspace)
    assert edit(client_for(owner), item, "tab-owner", question="How many days?").status_code == 200
    body = changes(client_for(annotator), "tab-a", after=seen, set="quiz", item="q1").json()
    (change,) = body["changes"]
    assert change["by"] == "olive" and change["source"] == "other"
    assert change["what"] == "changed the question" and change["fields"] == ["question"]
    assert body["last"] == change["id"]


def test_my_own_tab_is_told_apart_from_my_other_tab(client_for, item, annotator):
    client = client_for(annotator)
    seen = review_selectors.last_change(item.evalset.workspace)
    edit(client, item, "tab-1", answer="1.5 days")
    edit(client, item, "tab-2", answer="1.5 days a month")
    body = changes(client, "tab-1", after=seen, set="quiz", item="q1").json()
    assert [c["source"] for c in body["changes"]] == ["this_tab", "you"]


def test_nothing_new_answers_an_empty_list_and_the_same_marker(client_for, item, annotator):
    seen = review_selectors.last_change(item.evalset.workspace)
    body = changes(client_for(annotator), after=seen, set="quiz", item="q1").json()
    assert body == {"last": seen, "more": False, "changes": []}


def test_another_items_changes_are_not_reported(client_for, evalset, item, annotator, owner):
    anchoring_services.item_create(evalset=evalset, user=owner, item_id="q2", question="Other?")
    body = changes(client_for(annotator), after=0, set="quiz", item="q1").json()
    assert {c["item"] for c in body["changes"]} == {"q1"}


def test_a_documents_feed_reports_evidence_added_on_it(
    client_for, item, annotator, reviewer, reference
):
    seen = review_selectors.last_change(item.evalset.workspace)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=0, end=8
    )
    body = changes(client_for(reviewer), after=seen, document="handbook.txt").json()
    (change,) = body["changes"]
    assert (change["what"], change["by"], change["item"]) == ("added evidence", "ann", "q1")
    assert change["quote"] == "Employee"
    assert changes(client_for(reviewer), after=seen, document="other.pdf").json()["changes"] == []


def test_the_feed_costs_one_query_whatever_the_number_of_changes(client_for, item, annotator):
    client = client_for(annotator)
    for n in range(5):
        edit(client, item, "t", answer=f"{n} days")
    workspace = item.evalset.workspace
    with CaptureQueriesContext(connection) as queries:
        found = review_selectors.changes_after(
            workspace, after=0, evalset_slug="quiz", item_key="q1"
        )
    assert len(found) == 6
    assert len(queries.captured_queries) == 1


@pytest.mark.parametrize(
    "params",
    [{"after": "soon", "set": "quiz", "item": "q1"}, {"after": "0"}, {"after": "0", "item": "q1"}],
)
def test_a_bad_poll_is_a_400_naming_what_is_wrong(client_for, item, annotator, params):
    answer = changes(client_for(annotator), **params)
    assert answer.status_code == 400
    assert answer.json()["errors"]


def test_another_workspaces_feed_is_a_404(client_for, item, outsider):
    assert changes(client_for(outsider), after=0, set="quiz", item="q1").status_code == 404


def test_a_header_that_is_not_a_tab_id_is_not_recorded(client_for, item, annotator):
    edit(client_for(annotator), item, "<script>", answer="x")
    assert ItemEvent.objects.order_by("-id").first().tab == ""


def test_a_stale_save_names_who_saved_in_between(client_for, item, annotator, owner):
    stale = item.row_version
    edit(client_for(owner), item, "tab-o", question="Changed by the owner?")
    answer = client_for(annotator).patch(
        ITEM, {"row_version": stale, "question": "Mine?"}, format="json"
    )
    assert answer.status_code == 409
    (change,) = answer.json()["changes"]
    assert change["by"] == "olive" and change["fields"] == ["question"]
