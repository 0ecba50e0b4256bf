"""Searching a parse's whole text, and how each parse read one anchor's evidence (the API)."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import comparison
from evalsets.documents import services as documents_services
from evalsets.documents.search import searchable_parses
from evalsets.models import Document, ParseVersion
from evalsets.pure import textsearch
from evalsets.pure.textdiff import diff_passages, tally
from evalsets.workspaces import services as workspaces_services
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.django_db

ITEM = "/api/workspaces/acme/evalsets/quiz/items/q1"


@pytest.fixture(autouse=True)
def _fresh_search_cache():
    searchable_parses.clear()
    cache.clear()  # the searches counted against each user's rate
    yield
    searchable_parses.clear()


def search_url(parse, doc="handbook.txt", ws="acme"):
    return f"/api/workspaces/{ws}/documents/{doc}/parses/{parse.public_id}/search/"


def _search(client, parse, **params):
    return client.get(search_url(parse), params)


# -- search: what it finds ---------------------------------------------------------------------


def test_search_finds_a_phrase_in_any_case_and_across_any_whitespace(client_for, viewer, reference):
    body = _search(client_for(viewer), reference, q="  employees ACCRUE\n1.5  ").json()
    starts = [hit["start"] for hit in body["hits"]]
    first = HANDBOOK.index("Employees accrue 1.5")
    assert starts == [first, HANDBOOK.index("Employees accrue 1.5", first + 1)]
    assert body["total"] == 2 and body["total_is_lower_bound"] is False
    assert body["query"] == "employees ACCRUE\n1.5"
    hit = body["hits"][0]
    assert HANDBOOK[hit["start"] : hit["end"]] == "Employees accrue 1.5"
    assert hit["match"] == "Employees accrue 1.5"
    assert hit["after"].startswith(" days of leave per month.")
    assert hit["before"].endswith("Employee Handbook ")  # the blank line shown as one space


def test_each_hit_says_its_page(client_for, viewer, reference):
    body = _search(client_for(viewer), reference, q="remote work").json()
    assert [(h["page"], h["start"]) for h in body["hits"]] == [(2, HANDBOOK.index("Remote"))]


def test_typographic_quotes_and_dashes_match_their_plain_forms(document, client_for, viewer):
    text = "It\u2019s the team\u2014not one person\u2014that decides.\n"
    parse = documents_services.parse_version_add(document=document, parser="curly", text=text)
    ParseVersion.objects.filter(pk=parse.pk).update(status="ready")
    body = _search(client_for(viewer), parse, q="it's the team-not").json()
    assert [(h["start"], h["end"]) for h in body["hits"]] == [
        (0, len("It\u2019s the team\u2014not"))
    ]


PDF_TEXT = (
    "An of\ufb01cial \ufb01le and an o\ufb03cial one; the e\ufb00ect of the rule.\n"
    "Staff read the infor-\nmation, the pre\u00adsent e-mail and an email.\n"
)


def test_a_word_drawn_with_a_ligature_is_found_by_its_letters(document, client_for, viewer):
    parse = documents_services.parse_version_add(document=document, parser="pdfish", text=PDF_TEXT)
    ParseVersion.objects.filter(pk=parse.pk).update(status="ready")
    body = _search(client_for(viewer), parse, q="Official").json()
    assert [h["match"] for h in body["hits"]] == ["of\ufb01cial", "o\ufb03cial"]
    prepared = textsearch.prepare_search(PDF_TEXT)
    assert [h.match for h in prepared.search("file").hits] == ["\ufb01le"]
    assert [h.match for h in prepared.search("the effect").hits] == ["the e\ufb00ect"]
    # the ligature typed in the query finds itself, as any character does
    assert [h.match for h in prepared.search("\ufb01le").hits] == ["\ufb01le"]


def test_a_word_broken_at_the_end_of_a_line_is_found_whole():
    prepared = textsearch.prepare_search(PDF_TEXT)
    hit = prepared.search("the information").hits[0]
    assert PDF_TEXT[hit.start : hit.end] == "the infor-\nmation"
    assert hit.match == "the infor- mation"
    assert [h.match for h in prepared.search("present").hits] == ["pre\u00adsent"]
    # a typographic hyphen at the line's end is a hyphen too
    dashed = textsearch.prepare_search("the infor\u2010\nmation")
    assert [h.match for h in dashed.search("information").hits] == ["infor\u2010 mation"]
    # a hyphen inside a line is the word's own: "email" is not "e-mail", nor the other way
    assert [h.start for h in prepared.search("email").hits] == [PDF_TEXT.index("email")]
    assert [h.start for h in prepared.search("e-mail").hits] == [PDF_TEXT.index("e-mail")]


def test_a_text_without_ligatures_or_broken_words_is_searched_as_it_is():
    plain = textsearch.prepare_search("An official file.\nNothing broken here.")
    assert plain.edits is None  # the lowered text is the copy searched, offsets as they are
    assert plain.size == 2 * len(plain.text)
    pdf = textsearch.prepare_search(PDF_TEXT)
    assert pdf.lowered.startswith("an official file and an official one; the effect")
    assert "the information, the present e-mail" in pdf.lowered


def test_a_text_changing_more_often_than_prose_does_is_searched_as_it_is():
    crafted = "aﬁ" * 1000  # a ligature every other character: no PDF's prose
    prepared = textsearch.prepare_search(crafted)
    assert prepared.edits is None and prepared.size == 2 * len(crafted)
    assert prepared.search("aﬁaﬁ").total == 500  # the ligature as typed; hits do not overlap
    prose = textsearch.prepare_search("x" * 200 + "ﬁ" + "-\n" + "x" * 200)
    assert len(prose.edits) == 2 and prose.size == 2 * len(prose.text) + 4 * 2
    # a ligature typed in a query of a text without any finds the letters
    assert [h.start for h in prose.search("xﬁ").hits] == [199]


def test_hits_after_ligatures_and_breaks_come_a_page_at_a_time_at_their_own_offsets():
    text = "".join(f"The ﬁ{n}le of the long report on the infor-\nmation ﬁle.\n" for n in range(30))
    prepared = textsearch.prepare_search(text)
    every = [m.start() for m in re.finditer("ﬁle", text)]
    first = prepared.search("file", limit=10)
    assert [h.start for h in first.hits] == every[:10] and first.total == 30
    second = prepared.search("file", after=first.next_after, limit=10)
    assert second.index == 10 and [h.start for h in second.hits] == every[10:20]
    hits = prepared.search("information").hits
    assert [text[h.start : h.end] for h in hits] == ["infor-\nmation"] * 30


PIECES = ["a", "b", "f", "i", "l", " ", "\n", "ﬁ", "ﬂ", "ﬃ", "-\n", "- \n ", "\u00ad"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=40),
    st.text(alphabet="abfil", min_size=1, max_size=4),
)
def test_each_hit_is_the_query_once_its_ligatures_are_written_out_and_breaks_taken_out(
    pieces, query
):
    text = "x" * 20 * len(pieces) + "".join(pieces)  # prose-like: changes are rare
    hits = textsearch.prepare_search(text).search(query, limit=200).hits
    join = re.compile(r"-[ \t]*\n[ \t]*|\u00ad")
    copy = join.sub("", text).translate(str.maketrans(textsearch._WRITTEN))
    assert len(hits) == len(re.findall(re.escape(query), copy))
    for hit in hits:
        found = join.sub("", text[hit.start : hit.end]).translate(
            str.maketrans(textsearch._WRITTEN)
        )
        # a hit may begin and end inside a ligature: up to two of its other letters each side
        assert query in found and len(found) - len(query) <= 4


def test_past_the_counted_hits_the_search_goes_on_from_the_text_offset_asked(monkeypatch):
    monkeypatch.setattr(textsearch, "COUNT_LIMIT", 5)
    text = "".join(f"The ﬁ{n}le of the long report on the infor-\nmation ﬁle.\n" for n in range(30))
    every = [m.start() for m in re.finditer("ﬁle", text)]
    late = textsearch.prepare_search(text).search("file", after=every[20], limit=3)
    assert late.total_is_lower_bound and [h.start for h in late.hits] == every[20:23]
    # an offset inside a broken word or a ligature searches on from that change's start
    inside = textsearch.prepare_search(text).search("information", after=text.index("-\n"))
    assert inside.hits[0].start == text.index("infor-", text.index("-\n") + 1)


def test_hits_come_a_page_at_a_time_with_the_offset_to_ask_for_the_next(
    document, client_for, viewer
):
    text = "".join(f"Line {n}: the needle is here.\n" for n in range(120))
    parse = documents_services.parse_version_add(document=document, parser="many", text=text)
    client = client_for(viewer)
    first = _search(client, parse, q="needle", limit=50).json()
    assert len(first["hits"]) == 50 and first["total"] == 120 and first["index"] == 0
    second = _search(client, parse, q="needle", limit=50, after=first["next_after"]).json()
    assert second["index"] == 50
    assert second["hits"][0]["start"] == text.index("needle", first["hits"][-1]["start"] + 1)
    third = _search(client, parse, q="needle", limit=50, after=second["next_after"]).json()
    assert len(third["hits"]) == 20 and third["next_after"] is None


def test_a_common_word_is_counted_only_up_to_the_limit(monkeypatch):
    monkeypatch.setattr(textsearch, "COUNT_LIMIT", 10)
    prepared = textsearch.prepare_search("a b " * 40)
    found = prepared.search("a", limit=5)
    assert (found.total, found.total_is_lower_bound, len(found.hits)) == (11, True, 5)
    # Past what was counted, the hits still come, searched from ``after`` itself.
    late = prepared.search("a", after=4 * 30, limit=5)
    assert [h.start for h in late.hits] == [120, 124, 128, 132, 136]


def test_a_query_of_only_spaces_inside_a_longer_text_is_refused_by_the_pure_core():
    with pytest.raises(textsearch.QueryError, match="empty"):
        textsearch.prepare_search("text").search(" \n ")


# -- search: bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({}, "q", "'q' is empty"),
        ({"q": "   "}, "q", "'q' is empty"),
        ({"q": "x" * 201}, "q", "201 characters long; search for at most 200"),
        ({"q": "leave", "limit": "0"}, "limit", "from 1 to 200"),
        ({"q": "leave", "limit": "500"}, "limit", "from 1 to 200"),
        ({"q": "leave", "after": "-1"}, "after", "an offset (0 or more)"),
        ({"q": "leave", "after": "soon"}, "after", "an offset (0 or more), got 'soon'"),
    ],
)
def test_a_bad_search_is_a_400_that_says_what_was_wrong(
    client_for, viewer, reference, params, field, words
):
    response = _search(client_for(viewer), reference, **params)
    assert response.status_code == 400
    body = response.json()
    assert words in body["detail"]
    assert field in body["errors"]


def test_an_offset_past_the_end_finds_nothing_rather_than_failing(client_for, viewer, reference):
    body = _search(client_for(viewer), reference, q="leave", after=str(10**30)).json()
    assert (body["hits"], body["next_after"], body["total"]) == ([], None, 3)


def test_a_parse_that_is_not_ready_cannot_be_searched_yet(document, client_for, viewer):
    parse = documents_services.parse_version_add(
        document=document, parser="slow", text="Some text."
    )
    ParseVersion.objects.filter(pk=parse.pk).update(status="parsing")
    response = _search(client_for(viewer), parse, q="text")
    assert response.status_code == 409
    assert "not ready" in response.json()["detail"]


# -- search: who may -----------------------------------------------------------------------------


def test_a_viewer_may_search_and_someone_from_another_workspace_gets_a_404(
    client_for, viewer, outsider, reference
):
    assert _search(client_for(viewer), reference, q="leave").status_code == 200
    assert _search(client_for(outsider), reference, q="leave").status_code == 404
    assert _search(client_for(None), reference, q="leave").status_code in (401, 403)


def test_another_workspaces_parse_is_a_404_under_my_document(
    client_for, owner, outsider, viewer, reference
):
    elsewhere = workspaces_services.workspace_create(user=outsider, slug="their-ws", name="Theirs")
    doc = Document.objects.create(
        workspace=elsewhere, source_id="handbook.txt", sha256="1" * 64, size=4, kind="text"
    )
    theirs = documents_services.parse_version_add(
        document=doc, parser="plaintext", text="leave leave"
    )
    # Their parse under my document's URL, and my parse under their workspace: both 404.
    assert _search(client_for(viewer), theirs, q="leave").status_code == 404
    response = client_for(viewer).get(search_url(reference, ws="their-ws"), {"q": "leave"})
    assert response.status_code == 404
    assert client_for(viewer).get(search_url(reference, doc="missing.txt")).status_code == 404


def test_a_second_search_of_a_parse_does_not_read_its_text_again(client_for, viewer, reference):
    client = client_for(viewer)
    with CaptureQueriesContext(connection) as first:
        _search(client, reference, q="leave")
    with CaptureQueriesContext(connection) as second:
        _search(client, reference, q="remote")
    text_reads = [q["sql"] for q in first.captured_queries if '"text"' in q["sql"]]
    assert text_reads, "the first search reads the parse's text"
    assert not [q["sql"] for q in second.captured_queries if '"text"' in q["sql"]]
    assert len(second.captured_queries) == len(first.captured_queries) - len(text_reads)


def test_a_parse_written_again_is_searched_in_its_new_text(client_for, viewer, reference):
    client = client_for(viewer)
    assert _search(client, reference, q="sabbatical").json()["total"] == 0
    reference.text = HANDBOOK + "A sabbatical follows seven years.\n"
    reference.save()
    assert _search(client, reference, q="sabbatical").json()["total"] == 1


# -- search: its bounds --------------------------------------------------------------------------


def test_a_search_past_its_budget_says_where_it_stopped_and_the_next_page_goes_on(
    document, client_for, viewer, settings
):
    settings.GROUNDWORK_SEARCH_MAX_CHARS = 2000
    pages = ["a " * 1500, "a " * 200 + "the needle here "]
    text = "".join(pages)
    parse = documents_services.parse_version_add(
        document=document, parser="long", text=text, page_starts=[0, len(pages[0])]
    )
    client = client_for(viewer)
    body = _search(client, parse, q="needle").json()
    assert (body["complete"], body["hits"], body["total_is_lower_bound"]) == (False, [], True)
    assert body["searched_to"] == body["next_after"] == 2000
    assert body["searched_to_page"] == 1
    more = _search(client, parse, q="needle", after=body["next_after"]).json()
    assert [h["start"] for h in more["hits"]] == [text.index("needle")]
    assert (more["complete"], more["searched_to"], more["next_after"]) == (True, None, None)


def test_a_search_within_its_budget_is_complete(client_for, viewer, reference):
    body = _search(client_for(viewer), reference, q="leave").json()
    assert (body["complete"], body["searched_to"], body["searched_to_page"]) == (True, None, None)


def test_searching_faster_than_the_rate_is_a_429_that_names_the_limit(
    client_for, viewer, owner, reference, settings
):
    settings.GROUNDWORK_RATE_SEARCH = "2/min"
    client = client_for(viewer)
    assert [_search(client, reference, q="leave").status_code for _ in range(2)] == [200, 200]
    refused = _search(client, reference, q="leave")
    assert refused.status_code == 429
    body = refused.json()
    assert body["detail"].startswith("too many searches: GROUNDWORK_RATE_SEARCH allows 2 a minute")
    assert body["limit"] == {"setting": "GROUNDWORK_RATE_SEARCH", "value": "2/min"}
    assert 1 <= int(refused["Retry-After"]) <= 60
    # each user is counted alone
    assert _search(client_for(owner), reference, q="leave").status_code == 200


def test_a_bad_search_is_counted_against_the_rate_too(client_for, viewer, reference, settings):
    settings.GROUNDWORK_RATE_SEARCH = "1/min"
    client = client_for(viewer)
    assert _search(client, reference, q="").status_code == 400
    assert _search(client, reference, q="leave").status_code == 429


# -- how each parse read the evidence ------------------------------------------------------------

THEIRS = (
    "Employee Handbook\n\nEmployees accrue 1.5 days of leaveper month. "
    "Leave may be carried over.\n"
    "Remote work is limited to 30 days a year.\n"
)


@pytest.fixture
def anchored(item, annotator, document, reference, django_capture_on_commit_callbacks):
    """q1 anchored on the first "Employees accrue ..." sentence, resolved in two parses."""
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(
            document=document, parser="their-pipeline", parser_version="2.1", text=THEIRS
        )
    quote = "Employees accrue 1.5 days of leave per month."
    start = HANDBOOK.index(quote)
    with django_capture_on_commit_callbacks(execute=True):
        anchor = anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
        )
    return anchor


def test_the_comparison_shows_each_parses_text_status_and_differences(client_for, viewer, anchored):
    response = client_for(viewer).get(f"{ITEM}/anchors/{anchored.public_id}/compare/")
    assert response.status_code == 200
    body = response.json()
    assert body["compared_with"] == "reference"
    ref, theirs = body["parses"]
    assert (ref["parser"], ref["is_reference"], ref["status"]) == ("plaintext", True, "exact")
    assert ref["text"] == "Employees accrue 1.5 days of leave per month."
    assert ref["before"].endswith("Employee Handbook\n\n")
    assert ref["after"].startswith(" Leave may be carried over.")
    assert ref["differences"] == {}
    assert (theirs["parser"], theirs["parser_version"]) == ("their-pipeline", "2.1")
    assert theirs["status"] == "normalised" and 0 < theirs["score"] <= 1
    assert theirs["text"] == "Employees accrue 1.5 days of leaveper month."
    assert "".join(s["text"] for s in theirs["segments"]) == theirs["text"]
    changed = [s for s in theirs["segments"] if s["op"] != "equal"]
    assert changed == [{"op": "changed", "text": "leaveper", "ref": "leave per", "kind": "space"}]
    assert theirs["differences"] == {"space": 1}
    assert theirs["page"] == 1


def test_the_comparison_costs_the_same_queries_for_two_parses_as_for_five(
    client_for, viewer, anchored, document, django_capture_on_commit_callbacks
):
    url = f"{ITEM}/anchors/{anchored.public_id}/compare/"
    client = client_for(viewer)
    with CaptureQueriesContext(connection) as two:
        assert len(client.get(url).json()["parses"]) == 2
    for n in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            documents_services.parse_version_add(document=document, parser=f"more{n}", text=THEIRS)
    with CaptureQueriesContext(connection) as five:
        assert len(client.get(url).json()["parses"]) == 5
    assert len(five.captured_queries) == len(two.captured_queries)
    # Windows of the texts are cut by the database; no query reads a whole parse text.
    whole_text = re.compile(r'(?<!SUBSTR\()(?<!SUBSTRING\()"evalsets_parseversion"\."text"')
    assert not [q for q in five.captured_queries if whole_text.search(q["sql"])]


def test_a_parse_that_lost_the_evidence_says_so_without_text(
    client_for, viewer, anchored, document, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(
            document=document, parser="empty", text="Nothing here."
        )
    body = client_for(viewer).get(f"{ITEM}/anchors/{anchored.public_id}/compare/").json()
    lost = next(p for p in body["parses"] if p["parser"] == "empty")
    assert lost["status"] == "not_found"
    assert (lost["text"], lost["segments"], lost["start"]) == ("", [], None)


def test_a_long_span_is_compared_only_up_to_the_bound(
    client_for, viewer, item, annotator, document, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(comparison, "MAX_SPAN", 10)
    with django_capture_on_commit_callbacks(execute=True):
        anchor = anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
        )
    body = client_for(viewer).get(f"{ITEM}/anchors/{anchor.public_id}/compare/").json()
    (ref,) = body["parses"]
    assert ref["text"] == "Remote wor" and ref["truncated"] is True
    assert len(ref["after"]) <= comparison.CONTEXT


def test_the_comparison_is_a_404_from_another_workspace_and_for_another_items_anchor(
    client_for, viewer, outsider, anchored, evalset, annotator
):
    url = f"{ITEM}/anchors/{anchored.public_id}/compare/"
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(None).get(url).status_code in (401, 403)
    anchoring_services.item_create(evalset=evalset, user=annotator, item_id="q2", question="Other?")
    other = f"/api/workspaces/acme/evalsets/quiz/items/q2/anchors/{anchored.public_id}/compare/"
    assert client_for(viewer).get(other).status_code == 404


# -- the differences, named ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "other", "kind"),
    [
        ("the final report", "the \ufb01nal report", "ligature"),
        ("leave per month", "leaveper month", "space"),
        ("the information desk", "the infor-\nmation desk", "hyphen"),
        ("the Remote office", "the remote office", "case"),
        ("it's here", "it\u2019s here", "punctuation"),
        ("the **team** here", "the team here", "punctuation"),
        ("one two three four", "one two four", "missing"),
        ("one two four", "one two three four", "extra"),
        ("one two three four", "one deux three four", "text"),
    ],
)
def test_each_kind_of_difference_is_named(reference, other, kind):
    segments = diff_passages(reference, other)
    assert "".join(s["text"] for s in segments) == other
    assert set(tally(segments)) == {kind}


def test_columns_read_in_another_order_are_marked_as_moved():
    reference = "Intro words. Column one says this. Column two says that."
    other = "Intro words. Column two says that. Column one says this."
    kinds = {s["kind"] for s in diff_passages(reference, other) if s["op"] != "equal"}
    assert kinds == {"moved"}


def test_a_line_break_where_the_reference_has_a_space_is_no_difference():
    assert tally(diff_passages("leave per month", "leave\nper   month")) == {}
