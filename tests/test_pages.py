"""The annotator's pages, server side: who sees what, and the page-range API they load text from."""

from __future__ import annotations

import pytest
from django.test import Client

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Comment, Document
from labelling import views
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.django_db


@pytest.fixture
def web():
    def make(user) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    return make


def pages_url(parse, doc="handbook.txt", ws="acme"):
    return f"/api/workspaces/{ws}/documents/{doc}/parses/{parse.public_id}/pages/"


# -- pages: who may see them ------------------------------------------------------------------


PAGE_URLS = [
    "/w/acme/",
    "/w/acme/sets/quiz/",
    "/w/acme/sets/quiz/items/q1/",
    "/w/acme/documents/handbook.txt",
]


@pytest.mark.parametrize("url", PAGE_URLS)
def test_every_page_opens_for_a_viewer(web, viewer, item, document, url):
    assert web(viewer).get(url).status_code == 200


@pytest.mark.parametrize("url", PAGE_URLS)
def test_every_page_is_a_404_for_someone_from_another_workspace(web, outsider, item, document, url):
    assert web(outsider).get(url).status_code == 404


@pytest.mark.parametrize("url", PAGE_URLS)
def test_every_page_sends_an_anonymous_visitor_to_log_in(web, item, document, url):
    response = web(None).get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_missing_objects_in_my_workspace_are_404s(web, annotator, item, document):
    client = web(annotator)
    assert client.get("/w/acme/sets/nope/").status_code == 404
    assert client.get("/w/acme/sets/quiz/items/q404/").status_code == 404
    assert client.get("/w/acme/documents/missing.pdf").status_code == 404
    assert client.get("/w/acme/documents/handbook.txt?parse=0000").status_code == 404


# -- pages: what they show --------------------------------------------------------------------


def test_home_lists_my_workspaces_my_items_and_each_sets_progress(web, annotator, item, outsider):
    anchoring_services.item_create(
        evalset=item.evalset, user=annotator, item_id="q2", question="Why?"
    )
    body = web(annotator).get("/").content.decode()
    assert 'href="/w/acme/"' in body
    assert "elsewhere" not in body
    assert "/w/acme/sets/quiz/items/q1/" in body
    assert "0/2 approved" in body


def test_the_workspace_page_lists_documents_with_parse_status_and_eval_sets(
    web, annotator, document, item
):
    body = web(annotator).get("/w/acme/").content.decode()
    assert 'href="/w/acme/documents/handbook.txt"' in body
    assert 'data-status="ready"' in body
    assert 'href="/w/acme/sets/quiz/"' in body
    assert "data-dropzone" in body
    assert "New eval set" not in body  # only owners create eval sets


def test_a_viewer_gets_no_upload_zone_and_an_owner_gets_the_eval_set_form(
    web, viewer, owner, workspace
):
    assert "data-dropzone" not in web(viewer).get("/w/acme/").content.decode()
    assert "New eval set" in web(owner).get("/w/acme/").content.decode()


def test_a_parse_still_running_shows_its_progress(web, annotator, document):
    parse = document.parses.get()
    parse.status, parse.progress_done, parse.progress_total = "parsing", 3, 10
    parse.save()
    body = web(annotator).get("/w/acme/").content.decode()
    assert '<progress max="10" value="3"' in body


def test_the_eval_set_page_filters_items_by_state_and_qtype(web, annotator, item):
    anchoring_services.item_create(
        evalset=item.evalset, user=annotator, item_id="q2", question="Is it?", qtype="factoid"
    )
    client = web(annotator)
    both = client.get("/w/acme/sets/quiz/").content.decode()
    assert "q1" in both and "q2" in both
    factoid = client.get("/w/acme/sets/quiz/?qtype=factoid").content.decode()
    assert "<code>q2</code>" in factoid and "<code>q1</code>" not in factoid
    approved = client.get("/w/acme/sets/quiz/?state=approved").content.decode()
    assert "No items match these filters" in approved


def test_the_eval_set_page_searches_questions_and_answers_and_keeps_the_search_in_links(
    web, annotator, item, monkeypatch
):
    anchoring_services.item_create(
        evalset=item.evalset,
        user=annotator,
        item_id="q2",
        question="How long may staff work from home?",
        answer="Thirty days of remote work a year.",
    )
    anchoring_services.item_create(
        evalset=item.evalset, user=annotator, item_id="q3", question="Why?"
    )
    client = web(annotator)
    # Every word must be somewhere in the id, question or answer, in any case.
    body = client.get("/w/acme/sets/quiz/?q=REMOTE+staff").content.decode()
    assert "<code>q2</code>" in body and "<code>q1</code>" not in body
    assert "Answer: Thirty days of remote work a year." in body
    assert 'value="REMOTE staff"' in body
    none = client.get("/w/acme/sets/quiz/?q=sabbatical").content.decode()
    assert "No items match “sabbatical”" in none
    monkeypatch.setattr(views, "ITEMS_PER_PAGE", 1)
    paged = client.get("/w/acme/sets/quiz/?q=how").content.decode()
    assert "?q=how&amp;state=&amp;qtype=&amp;page=2" in paged


def test_the_items_api_searches_answers_too(web, annotator, item):
    anchoring_services.item_create(
        evalset=item.evalset, user=annotator, item_id="q2", question="Who?", answer="A director."
    )
    found = web(annotator).get("/api/workspaces/acme/evalsets/quiz/items/?q=DIRECTOR").json()
    assert [i["id"] for i in found["results"]] == ["q2"]


def test_the_eval_set_page_answers_a_partial_request_with_just_the_table(web, annotator, item):
    response = web(annotator).get("/w/acme/sets/quiz/", headers={"X-Partial": "items"})
    body = response.content.decode()
    assert "<table" in body and "<html" not in body


def test_the_eval_set_page_suggests_the_next_free_item_id(web, annotator, item):
    assert 'value="q2"' in web(annotator).get("/w/acme/sets/quiz/").content.decode()


def test_the_items_api_searches_ids_and_question_words_for_the_popover(web, annotator, item):
    anchoring_services.item_create(
        evalset=item.evalset, user=annotator, item_id="q2", question="Remote?"
    )
    client = web(annotator)
    found = client.get("/api/workspaces/acme/evalsets/quiz/items/?q=LEAVE").json()
    assert [i["id"] for i in found["results"]] == ["q1"]
    by_id = client.get("/api/workspaces/acme/evalsets/quiz/items/?q=q2").json()
    assert [i["id"] for i in by_id["results"]] == ["q2"]
    evalset = client.get("/api/workspaces/acme/evalsets/quiz/").json()
    assert evalset["next_item_id"] == "q3"


def test_the_documents_anchors_come_from_the_api_with_their_items(
    web, annotator, item, reference, django_capture_on_commit_callbacks
):
    start = HANDBOOK.index("Remote work")
    with django_capture_on_commit_callbacks(execute=True):
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + 11
        )
    body = web(annotator).get("/api/workspaces/acme/documents/handbook.txt/anchors/").json()
    (anchor,) = body["results"]
    assert anchor["item"] == {
        "set": "quiz",
        "id": "q1",
        "question": item.question,
        "state": "draft",
    }
    assert anchor["highlight"] == {
        "parse": str(reference.public_id),
        "start": start,
        "end": start + 11,
    }
    assert [(r["parse"], r["status"]) for r in anchor["resolutions"]] == [
        (str(reference.public_id), "exact")
    ]


def test_the_page_scripts_private_json_endpoints_are_gone(web, annotator, item, document):
    client = web(annotator)
    assert client.get("/w/acme/sets/quiz/search.json?q=leave").status_code == 404
    assert client.get("/w/acme/anchors.json?doc=handbook.txt").status_code == 404


def test_the_item_editor_suggests_context_grid_question_types(web, annotator, item):
    body = web(annotator).get("/w/acme/sets/quiz/items/q1/").content.decode()
    assert '<option value="multi_hop">' in body
    assert 'id="item-data"' in body
    assert "How much leave do employees accrue per month?" in body


def test_the_document_page_carries_page_starts_but_not_the_text(web, annotator, item, reference):
    anchoring_services.anchor_create_from_highlight(
        item=item, user=item.author, parse=reference, start=19, end=64
    )
    body = web(annotator).get("/w/acme/documents/handbook.txt?set=quiz").content.decode()
    assert f'"page_starts": [0, {HANDBOOK.index("Remote")}]' in body
    assert "Remote work is limited" not in body  # the text arrives page by page
    # The anchors arrive from the API (test_the_documents_anchors_come_from_the_api_...).
    assert "How much leave" not in body


def test_the_document_page_escapes_a_hostile_source_id_and_question(web, annotator, evalset):
    doc = Document.objects.create(
        workspace=evalset.workspace, source_id="<script>x</script>.txt", sha256="1" * 64
    )
    documents_services.parse_version_add(document=doc, parser="p", text="hello <b>world</b>")
    body = web(annotator).get(f"/w/acme/documents/{doc.source_id}").content.decode()
    assert "<script>x</script>" not in body


def test_a_document_source_id_with_slashes_opens(web, annotator, workspace):
    doc = Document.objects.create(workspace=workspace, source_id="hr/2024/policy.txt", sha256="2")
    documents_services.parse_version_add(document=doc, parser="p", text="policy text")
    assert web(annotator).get("/w/acme/documents/hr/2024/policy.txt").status_code == 200


def test_the_nav_links_home_and_has_a_shortcut_overlay(web, annotator, workspace):
    body = web(annotator).get("/w/acme/").content.decode()
    assert '<a href="/">Home</a>' in body
    assert "data-shortcuts" in body


# -- the page-range API -----------------------------------------------------------------------


def test_pages_come_with_their_numbers_start_offsets_and_text(client_for, viewer, reference):
    data = client_for(viewer).get(pages_url(reference)).json()
    split = HANDBOOK.index("Remote")
    assert data["page_count"] == 2
    assert data["length"] == len(HANDBOOK)
    assert data["pages"] == [
        {"number": 1, "start": 0, "text": HANDBOOK[:split]},
        {"number": 2, "start": split, "text": HANDBOOK[split:]},
    ]


def test_a_page_range_is_capped_at_fifty_pages(client_for, annotator, document):
    text = "".join(f"page {n}\n" for n in range(1, 121))
    starts = [text.index(f"page {n}\n") for n in range(1, 121)]
    parse = documents_services.parse_version_add(
        document=document, parser="big", text=text, page_starts=starts
    )
    data = client_for(annotator).get(pages_url(parse) + "?from=10&to=120").json()
    assert [p["number"] for p in data["pages"]] == list(range(10, 60))
    assert data["pages"][0]["text"] == "page 10\n"
    assert data["to"] == 59


def test_page_starts_are_code_points_so_emoji_do_not_shift_them(client_for, annotator, document):
    text = "🙂 one\n" + "二 two 🙂\n" + "three"
    starts = [0, text.index("二"), text.index("three")]
    parse = documents_services.parse_version_add(
        document=document, parser="emoji", text=text, page_starts=starts
    )
    data = client_for(annotator).get(pages_url(parse) + "?from=2&to=3").json()
    assert [p["start"] for p in data["pages"]] == starts[1:]
    assert data["pages"][0]["text"] == "二 two 🙂\n"
    assert data["length"] == len(text)


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ("?from=x", "from", "must be a page number"),
        ("?from=0", "from", "counts pages from 1"),
        ("?from=3", "from", "has 2 pages"),
        ("?from=2&to=1", "to", "must not be before"),
    ],
)
def test_a_bad_page_range_is_a_400_naming_the_parameter(
    client_for, annotator, reference, query, field, words
):
    response = client_for(annotator).get(pages_url(reference) + query)
    assert response.status_code == 400
    assert words in response.json()["errors"][field][0]


def test_pages_of_a_parse_still_running_are_a_409(client_for, annotator, reference):
    reference.status = "parsing"
    reference.save()
    response = client_for(annotator).get(pages_url(reference))
    assert response.status_code == 409
    assert "not ready" in response.json()["detail"]


def test_pages_are_a_404_outside_the_workspace_and_for_another_documents_parse(
    client_for, outsider, annotator, reference, workspace
):
    assert client_for(outsider).get(pages_url(reference)).status_code == 404
    other = Document.objects.create(workspace=workspace, source_id="other.txt", sha256="3")
    assert client_for(annotator).get(pages_url(reference, doc="other.txt")).status_code == 404
    assert client_for(None).get(pages_url(reference)).status_code in (401, 403)
    assert other.pk


def test_pages_cannot_be_written(client_for, owner, reference):
    assert client_for(owner).post(pages_url(reference), {}).status_code == 405


def test_the_item_page_shows_a_request_for_changes_with_a_jump_to_its_evidence(
    web, annotator, changes_requested
):
    from evalsets.review import comments

    item, _, start = changes_requested
    first = Comment.objects.get()
    comments.comment_add(item=item, user=annotator, body="Done, see the new quote.", parent=first)

    html = web(annotator).get("/w/acme/sets/quiz/items/q1/").content.decode()
    assert "changes requested" in html
    assert "Quote the whole &lt;b&gt;sentence&lt;/b&gt;, please." in html
    assert f"/w/acme/documents/handbook.txt#at={start}-{start + 11}" in html
    assert html.index("Quote the whole") < html.index("Done, see the new quote.")
    assert 'class="replies"' in html
    assert "changes requested" in html.split("History")[1].lower()
