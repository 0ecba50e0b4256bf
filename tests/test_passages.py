"""Workspace search and suggested evidence: passages cut, indexed, ranked, scoped and used."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from contextgrid.evalset.io import read_jsonl

from evalsets import sweep
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document, GoldAnchor, ItemEvent, Passage, Workspace
from evalsets.passages import ranking
from evalsets.passages import services as passages_services
from evalsets.pure import passages as cutting
from evalsets.pure.formats import get_format
from evalsets.releases import bridge

pytestmark = pytest.mark.django_db

#: A small fixed corpus: each document answers one question, in words of its own.
CORPUS = {
    "leave.txt": (
        "Annual leave\n\nEmployees accrue 1.5 days of paid leave per month worked.\n\n"
        "Unused leave may be carried over to the next year, up to ten days."
    ),
    "remote.txt": (
        "Remote work\n\nStaff may work remotely for up to 30 days a year.\n\n"
        "Remote work needs a manager's approval in advance."
    ),
    "expenses.txt": (
        "Expenses\n\nTravel expenses are reimbursed within 30 days of a claim.\n\n"
        "Receipts must be attached to every expense claim."
    ),
    "security.txt": (
        "Security\n\nLaptops must be encrypted and locked when unattended.\n\n"
        "Report a lost laptop to the security desk within one day."
    ),
}


@pytest.fixture(autouse=True)
def _fresh_indexes():
    ranking.indexes.clear()
    yield
    ranking.indexes.clear()


def add_document(workspace, source_id: str, text: str, page_starts=None) -> Document:
    document = Document.objects.create(
        workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0"), kind="text"
    )
    documents_services.parse_version_add(
        document=document,
        parser="plaintext",
        parser_version="1",
        text=text,
        page_starts=page_starts or [0],
        origin="parsed",
    )
    return document


@pytest.fixture
def corpus(workspace, settings, django_capture_on_commit_callbacks):
    settings.GROUNDWORK_PASSAGE_CHARS = 80  # a paragraph each
    with django_capture_on_commit_callbacks(execute=True):
        return {sid: add_document(workspace, sid, text) for sid, text in CORPUS.items()}


def search(client, query: str, ws: str = "acme", **params):
    return client.get(f"/api/workspaces/{ws}/search/", {"q": query, **params})


# -- cutting and words ------------------------------------------------------------------------


def test_passages_are_paragraph_windows_that_never_cross_a_page():
    text = "First para.\n\nSecond para.\n\nThird on page one.\fPage two starts here."
    starts = [0, text.index("Page two")]
    cuts = cutting.cut_passages(text, starts, size=30)
    assert [text[c.start : c.end] for c in cuts] == [
        "First para.\n\nSecond para.",
        "Third on page one.",
        "Page two starts here.",
    ]
    assert [c.page for c in cuts] == [1, 1, 2]


def test_a_paragraph_longer_than_a_window_is_cut_at_a_space():
    text = " ".join(["word"] * 100)
    cuts = cutting.cut_passages(text, [0], size=50)
    assert all(c.end - c.start <= 50 for c in cuts)
    assert all(text[c.start] != " " and text[c.end - 1] != " " for c in cuts)
    # Nothing is lost between windows but the spaces they were cut at.
    assert "".join(text[c.start : c.end] for c in cuts).replace(" ", "") == text.replace(" ", "")


def test_terms_drop_function_words_and_meet_across_plural_and_tense():
    assert cutting.terms("The policies were mounted") == cutting.terms("policy mount")


def test_a_snippet_marks_the_query_words_it_shows():
    text = "Nothing here. " * 20 + "Employees accrue leave monthly."
    begin, shown, marks = cutting.snippet(text, set(cutting.terms("accrue leave")), 80)
    assert [shown[s:e] for s, e in marks] == ["accrue", "leave"]
    assert text[begin : begin + len(shown)] == shown


# -- ranking on a small fixed corpus ----------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how many days of leave accrue each month", "leave.txt"),
        ("working remotely days per year", "remote.txt"),
        ("when are travel expenses reimbursed", "expenses.txt"),
        ("lost laptop report", "security.txt"),
    ],
)
def test_the_passage_that_answers_ranks_first(corpus, client_for, viewer, query, expected):
    body = search(client_for(viewer), query).json()
    assert body["results"][0]["document"] == expected
    assert body["results"][0]["rank"] == 1


def test_a_result_names_its_page_offsets_and_marks_words_in_its_snippet(corpus, client_for, viewer):
    hit = search(client_for(viewer), "encrypted laptops").json()["results"][0]
    document = corpus["security.txt"]
    parse = document.parses.get(is_reference=True)
    assert hit["parse"] == str(parse.public_id)
    assert hit["page"] == 1
    assert "Laptops must be encrypted" in parse.text[hit["start"] : hit["end"]]
    marked = [hit["snippet"][s:e] for s, e in hit["marks"]]
    assert marked == ["Laptops", "encrypted"]


def test_words_no_passage_has_find_nothing(corpus, client_for, viewer):
    assert search(client_for(viewer), "zebra quantum").json()["results"] == []


def test_one_document_can_be_searched_alone(corpus, client_for, viewer):
    body = search(client_for(viewer), "30 days", document="expenses.txt").json()
    assert {r["document"] for r in body["results"]} == {"expenses.txt"}


# -- the index follows parses ------------------------------------------------------------------


def test_a_new_document_is_found_once_its_parse_is_ready(
    corpus, workspace, client_for, viewer, django_capture_on_commit_callbacks
):
    client = client_for(viewer)
    assert search(client, "parking garage").json()["results"] == []
    with django_capture_on_commit_callbacks(execute=True):
        add_document(workspace, "parking.txt", "Parking\n\nThe parking garage opens at 7.")
    assert search(client, "parking garage").json()["results"][0]["document"] == "parking.txt"


def test_a_new_reference_parse_replaces_the_old_ones_passages(
    corpus, client_for, viewer, owner, django_capture_on_commit_callbacks
):
    document = corpus["leave.txt"]
    old = document.parses.get(is_reference=True)
    with django_capture_on_commit_callbacks(execute=True):
        new = documents_services.parse_version_add(
            document=document,
            parser="theirs",
            parser_version="2",
            text="Annual leave\n\nHolidays are granted by the sabbatical committee.",
            page_starts=[0],
            origin="uploaded",
        )
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_make_reference(parse=new)
    assert not Passage.objects.filter(parse=old).exists()
    client = client_for(viewer)
    hit = search(client, "sabbatical committee").json()["results"][0]
    assert (hit["document"], hit["parse"]) == ("leave.txt", str(new.public_id))
    assert search(client, "unused carried").json()["results"] == []


def test_a_deleted_document_leaves_the_index(corpus, client_for, viewer):
    client = client_for(viewer)
    assert search(client, "laptop").json()["results"]
    documents_services.document_delete(document=corpus["security.txt"])
    assert search(client, "laptop").json()["results"] == []
    assert not Passage.objects.filter(document_id=corpus["security.txt"].pk).exists()


# -- roles and workspaces ----------------------------------------------------------------------


def test_another_workspaces_documents_never_appear(
    corpus, outsider, client_for, django_capture_on_commit_callbacks
):

    elsewhere = Workspace.objects.get(slug="elsewhere")
    with django_capture_on_commit_callbacks(execute=True):
        add_document(elsewhere, "secret.txt", "Secret\n\nThe laptop vault code is 1234.")
    mine = search(client_for(outsider), "laptop", ws="elsewhere").json()["results"]
    assert {r["document"] for r in mine} == {"secret.txt"}


def test_a_non_member_gets_a_404_for_search_and_suggestions(corpus, item, client_for, outsider):
    client = client_for(outsider)
    assert search(client, "leave").status_code == 404
    url = "/api/workspaces/acme/evalsets/quiz/items/q1/suggestions/"
    assert client.get(url).status_code == 404


def test_a_document_of_another_workspace_is_a_404(corpus, outsider, client_for, viewer):
    assert search(client_for(viewer), "leave", document="nope.txt").status_code == 404


def test_a_query_without_words_is_a_400_that_names_q(corpus, client_for, viewer):
    answer = search(client_for(viewer), "")
    assert answer.status_code == 400
    assert "q" in answer.json()["errors"]


# -- suggestions and provenance ----------------------------------------------------------------


def test_an_items_suggestions_rank_the_passage_answering_its_question(
    corpus, item, client_for, viewer
):
    url = "/api/workspaces/acme/evalsets/quiz/items/q1/suggestions/"
    body = client_for(viewer).get(url).json()
    assert body["item"] == "q1"
    assert body["results"][0]["document"] == "leave.txt"


def _save_from_suggestion(client, hit, start, end):
    return client.post(
        "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/",
        {
            "parse": hit["parse"],
            "start": start,
            "end": end,
            "suggested": {
                "parse": hit["parse"],
                "start": hit["start"],
                "end": hit["end"],
                "via": "suggestions",
                "rank": hit["rank"],
            },
        },
        format="json",
    )


def test_an_anchor_made_from_a_suggestion_records_it_in_history_and_export(
    corpus, item, client_for, annotator
):
    client = client_for(annotator)
    hit = client.get("/api/workspaces/acme/evalsets/quiz/items/q1/suggestions/").json()["results"][
        0
    ]
    # The annotator trims the passage to the words that answer.
    parse = corpus["leave.txt"].parses.get(is_reference=True)
    start = parse.text.index("1.5 days")
    answer = _save_from_suggestion(client, hit, start, start + len("1.5 days of paid leave"))
    assert answer.status_code == 201, answer.json()
    assert answer.json()["suggested"]["via"] == "suggestions"
    anchor = GoldAnchor.objects.get(public_id=answer.json()["id"])
    assert anchor.suggested["start"] == hit["start"]
    event = ItemEvent.objects.filter(item=item, kind="anchor_created").latest("id")
    assert event.data["suggested"]["rank"] == 1
    meta = bridge.item_to_cg(item).meta
    assert meta["suggested_anchors"] == [
        {"anchor": 0, "source_id": "leave.txt", "page": 1, "via": "suggestions"}
    ]


def test_a_highlight_outside_the_suggested_passage_is_refused(corpus, item, client_for, annotator):
    client = client_for(annotator)
    hit = search(client, "laptop encrypted").json()["results"][0]
    parse = corpus["security.txt"].parses.get(is_reference=True)
    elsewhere = parse.text.index("Report a lost")
    assert elsewhere >= hit["end"]
    answer = _save_from_suggestion(client, hit, elsewhere, elsewhere + len("Report a lost"))
    assert answer.status_code == 400
    assert "suggested" in answer.json()["errors"]
    assert not GoldAnchor.objects.filter(
        item__item_id="q1", document__source_id=parse.document.source_id
    ).exists()


def test_evidence_already_given_to_another_question_is_named(
    corpus, evalset, item, annotator, client_for
):
    parse = corpus["leave.txt"].parses.get(is_reference=True)
    start = parse.text.index("Employees accrue")
    other = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q9", question="What is accrued?"
    )
    anchoring_services.anchor_create_from_highlight(
        item=other, user=annotator, parse=parse, start=start, end=start + 30
    )
    answer = client_for(annotator).post(
        "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/",
        {"parse": str(parse.public_id), "start": start + 10, "end": start + 40},
        format="json",
    )
    assert answer.status_code == 201
    assert [(o["item"], o["set"]) for o in answer.json()["overlaps"]] == [("q9", "quiz")]


def test_a_highlight_nobody_else_used_names_no_overlap(corpus, item, annotator, client_for):
    parse = corpus["leave.txt"].parses.get(is_reference=True)
    answer = client_for(annotator).post(
        "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/",
        {"parse": str(parse.public_id), "start": 0, "end": 12},
        format="json",
    )
    assert answer.json()["overlaps"] == []


def test_the_sweep_indexes_a_reference_parse_whose_indexing_was_lost(
    workspace, client_for, viewer, sent
):

    add_document(workspace, "parking.txt", "Parking\n\nThe parking garage opens at 7.")
    assert not Passage.objects.exists()  # the task was never published
    assert sweep.sweep(timedelta(0))["passages"] == 1
    (parse_id,) = [ids[0] for name, ids in sent if name == "index_parse"]
    passages_services.parse_index(parse_id)
    assert search(client_for(viewer), "parking").json()["results"][0]["document"] == "parking.txt"
    assert sweep.sweep(timedelta(0))["passages"] == 0


def test_a_query_counts_at_most_its_first_distinct_terms(corpus, settings):
    index = ranking.indexes.get(corpus["leave.txt"].workspace_id)
    padding = [f"filler{n}" for n in range(ranking.MAX_TERMS)]
    assert index.top(["laptop"], 5)
    assert index.top([*padding, "laptop"], 5) == []  # "laptop" came after the limit


def test_context_grids_reader_loads_an_export_naming_a_suggested_anchor(
    corpus, item, annotator, tmp_path
):

    parse = corpus["leave.txt"].parses.get(is_reference=True)
    start = parse.text.index("1.5 days")
    passage = Passage.objects.get(parse=parse, start__lte=start, end__gt=start)
    offered = {"parse": str(parse.public_id), "start": passage.start, "end": passage.end}
    anchoring_services.anchor_create_from_highlight(
        item=item,
        user=annotator,
        parse=parse,
        start=start,
        end=start + len("1.5 days"),
        suggested={**offered, "via": "search", "rank": 2},
    )
    exported = bridge.evalset_to_cg(item.evalset)
    path = tmp_path / "quiz.jsonl"
    with path.open("wb") as out:
        get_format("contextgrid-jsonl").writer(exported, iter(exported.items), out)
    (read,) = read_jsonl(path).items
    assert read.anchors[0].quote == "1.5 days"
    assert read.meta["suggested_anchors"] == [
        {"anchor": 0, "source_id": "leave.txt", "page": 1, "via": "search"}
    ]


def test_past_its_bound_the_index_holds_the_first_passages_and_says_it_is_partial(
    corpus, client_for, viewer, settings
):
    settings.GROUNDWORK_SEARCH_INDEX_MAX_PASSAGES = 2
    body = search(client_for(viewer), "laptop").json()
    assert (body["passages"], body["partial"]) == (2, True)
    assert body["results"] == []  # security.txt was indexed last


def test_a_workspace_whose_index_is_being_built_does_not_hold_up_another_workspaces_search(
    monkeypatch,
):
    release_big = threading.Event()
    big_started = threading.Event()

    def build(workspace_id, key):
        if workspace_id == 1:
            big_started.set()
            assert release_big.wait(timeout=60)
        return ranking.Index(key, ranking.np.array([workspace_id]), None, None, False)

    monkeypatch.setattr(ranking, "version_key", lambda workspace_id: (1, workspace_id))
    monkeypatch.setattr(ranking, "build", build)
    cache = ranking.IndexCache()
    big = threading.Thread(target=cache.get, args=(1,))
    big.start()
    try:
        assert big_started.wait(timeout=60)
        answered = []
        small = threading.Thread(target=lambda: answered.append(cache.get(2)))
        small.start()
        small.join(timeout=30)
        # Workspace 2 is answered while workspace 1's build is still running.
        assert [index.ids.tolist() for index in answered] == [[2]]
        assert big.is_alive()
    finally:
        release_big.set()
        big.join(timeout=60)
    assert cache.get(1).ids.tolist() == [1]


def test_indexes_held_together_stay_under_the_passage_budget_oldest_let_go_first(
    monkeypatch, settings
):
    settings.GROUNDWORK_SEARCH_INDEXES = 8
    settings.GROUNDWORK_SEARCH_HELD_PASSAGES = 5
    sizes = {1: 3, 2: 2, 3: 4, 4: 9}
    monkeypatch.setattr(ranking, "version_key", lambda workspace_id: (1, workspace_id))
    monkeypatch.setattr(
        ranking,
        "build",
        lambda workspace_id, key: ranking.Index(
            key, ranking.np.arange(sizes[workspace_id]), None, None, False
        ),
    )
    cache = ranking.IndexCache()
    cache.get(1)
    cache.get(2)
    assert list(cache._held) == [1, 2]  # 3 + 2 passages: within the budget
    cache.get(3)
    assert list(cache._held) == [3]  # 2 + 4 and 3 + 2 + 4 are over it
    cache.get(4)
    assert list(cache._held) == [4]  # alone over the budget, but the one just used is kept
