"""An eval set's guidelines and managed question types, and what undo needs of the API: an
anchor removed and created again holds what it held, and the history records both."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.pure.guidelines import MAX_GUIDELINES_CHARS, render_guidelines

pytestmark = pytest.mark.django_db

SET = "/api/workspaces/acme/evalsets/quiz/"
ITEMS = f"{SET}items/"
ITEM = f"{ITEMS}q1/"
ANCHORS = f"{ITEM}anchors/"


def _patch_set(client, **body):
    return client.patch(SET, body, format="json")


# -- guidelines ---------------------------------------------------------------------------------


def test_an_owner_writes_guidelines_and_the_set_shows_them_rendered(client_for, evalset, owner):
    text = "# Rules\n\nQuote **whole** sentences. See [the policy](https://example.org/p)."
    response = _patch_set(client_for(owner), guidelines=text)
    assert response.status_code == 200, response.json()
    body = client_for(owner).get(SET).json()
    assert body["guidelines"] == text
    assert "<h1>Rules</h1>" in body["guidelines_html"]
    assert "<strong>whole</strong>" in body["guidelines_html"]
    assert 'href="https://example.org/p"' in body["guidelines_html"]
    assert 'rel="noopener noreferrer nofollow"' in body["guidelines_html"]


def test_guidelines_never_carry_script_or_handlers_into_the_page():
    html = render_guidelines(
        '<script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\n'
        "[click](javascript:alert(3)) <b onclick='x'>b</b>"
    )
    # Written as text, never as elements: no tag of theirs reaches the page.
    assert "&lt;script&gt;" in html and "<script" not in html
    assert "<img" not in html and "<b " not in html
    assert "href=" not in html


def test_guidelines_longer_than_the_limit_are_a_400_naming_the_field(client_for, evalset, owner):
    response = _patch_set(client_for(owner), guidelines="x" * (MAX_GUIDELINES_CHARS + 1))
    assert response.status_code == 400
    assert "guidelines" in response.json()["errors"]


@pytest.mark.parametrize("who", ["reviewer", "annotator", "viewer"])
def test_only_an_owner_changes_guidelines_or_question_types(client_for, evalset, request, who):
    client = client_for(request.getfixturevalue(who))
    assert _patch_set(client, guidelines="Mine now").status_code == 403
    assert _patch_set(client, qtypes=["factoid"]).status_code == 403
    assert client.get(SET).json()["guidelines"] == ""


def test_another_workspaces_member_gets_a_404_for_the_sets_settings(client_for, evalset, outsider):
    client = client_for(outsider)
    assert client.get(SET).status_code == 404
    assert _patch_set(client, guidelines="x").status_code == 404


# -- question types -----------------------------------------------------------------------------


def test_an_owner_keeps_a_list_of_question_types_trimmed_and_each_once(client_for, evalset, owner):
    response = _patch_set(client_for(owner), qtypes=[" factoid ", "multi-hop", "factoid"])
    assert response.status_code == 200, response.json()
    assert client_for(owner).get(SET).json()["qtypes"] == ["factoid", "multi-hop"]


def test_an_empty_question_type_in_the_list_is_a_400_naming_qtypes(client_for, evalset, owner):
    response = _patch_set(client_for(owner), qtypes=["factoid", "  "])
    assert response.status_code == 400
    assert response.json()["errors"] == {"qtypes": ["a question type cannot be empty"]}


def test_an_item_of_a_type_outside_the_list_is_a_400_naming_the_allowed_ones(
    client_for, evalset, owner, annotator
):
    _patch_set(client_for(owner), qtypes=["factoid", "multi-hop"])
    response = client_for(annotator).post(
        ITEMS, {"id": "q2", "question": "Who?", "qtype": "opinion"}, format="json"
    )
    assert response.status_code == 400
    message = response.json()["errors"]["qtype"][0]
    assert "'opinion'" in message and "'factoid', 'multi-hop'" in message


def test_an_item_of_a_listed_type_or_none_or_unanswerable_is_taken(
    client_for, evalset, owner, annotator
):
    _patch_set(client_for(owner), qtypes=["factoid"])
    client = client_for(annotator)
    for n, qtype in enumerate(["factoid", None, "unanswerable"]):
        body = {"id": f"q{n + 2}", "question": "Who?", "qtype": qtype}
        assert client.post(ITEMS, body, format="json").status_code == 201


def test_changing_an_items_type_to_one_outside_the_list_is_a_400(
    client_for, item, owner, annotator
):
    _patch_set(client_for(owner), qtypes=["factoid"])
    item.refresh_from_db()
    response = client_for(annotator).patch(
        ITEM, {"row_version": item.row_version, "qtype": "opinion"}, format="json"
    )
    assert response.status_code == 400
    assert "'factoid'" in response.json()["errors"]["qtype"][0]


def test_an_item_keeps_a_type_it_had_before_the_list_while_nobody_changes_it(
    client_for, item, owner, annotator
):
    anchoring_services.item_update(item=item, user=annotator, row_version=1, qtype="legacy")
    _patch_set(client_for(owner), qtypes=["factoid"])
    item.refresh_from_db()
    response = client_for(annotator).patch(
        ITEM,
        {"row_version": item.row_version, "qtype": "legacy", "answer": "Two days."},
        format="json",
    )
    assert response.status_code == 200, response.json()


def test_without_a_list_any_question_type_is_free_text(client_for, evalset, annotator):
    response = client_for(annotator).post(
        ITEMS, {"id": "q2", "question": "Who?", "qtype": "anything-goes"}, format="json"
    )
    assert response.status_code == 201


# -- undo: creating a removed anchor again --------------------------------------------------


def _history_kinds(client) -> list[str]:
    return [e["kind"] for e in client.get(f"{ITEM}history/").json()["results"]]


def _kept(anchor: dict) -> dict:
    return {k: anchor[k] for k in ("quote", "page_hint", "occurrence", "prefix", "suffix", "grade")}


def test_a_removed_highlight_created_again_holds_the_same_quote_place_and_context(
    client_for, item, annotator, reference
):
    client = client_for(annotator)
    text = reference.text
    start = text.index("Remote work")
    made = client.post(
        ANCHORS,
        {"parse": str(reference.public_id), "start": start, "end": start + 24, "grade": 1},
        format="json",
    ).json()
    assert client.delete(f"{ANCHORS}{made['id']}/").status_code == 204
    # What the page sends to undo the removal (static/js/undo.js recreateBody).
    again = client.post(
        ANCHORS,
        {**made["highlight"], "grade": made["grade"]},
        format="json",
    )
    assert again.status_code == 201, again.json()
    assert _kept(again.json()) == _kept(made)
    assert again.json()["highlight"] == made["highlight"]
    assert _history_kinds(client)[-3:] == ["anchor_created", "anchor_deleted", "anchor_created"]


def test_a_removed_typed_quote_created_again_keeps_its_context(
    client_for, item, annotator, document
):
    client = client_for(annotator)
    typed = {
        "source_id": document.source_id,
        "quote": "Remote work",
        "grade": 2,
        "page_hint": 1,
        "occurrence": 0,
        "prefix": "Section 4. ",
        "suffix": " is allowed",
    }
    made = client.post(ANCHORS, typed, format="json").json()
    assert client.delete(f"{ANCHORS}{made['id']}/").status_code == 204
    again = client.post(ANCHORS, {**typed}, format="json")
    assert again.status_code == 201, again.json()
    assert _kept(again.json()) == _kept(made)
    assert again.json()["prefix"] == "Section 4. " and again.json()["suffix"] == " is allowed"
    assert _history_kinds(client)[-2:] == ["anchor_deleted", "anchor_created"]


def test_context_sent_with_a_highlight_is_a_400_naming_it(client_for, item, annotator, reference):
    response = client_for(annotator).post(
        ANCHORS,
        {"parse": str(reference.public_id), "start": 0, "end": 8, "prefix": "made up"},
        format="json",
    )
    assert response.status_code == 400
    assert "prefix" in response.json()["errors"]
