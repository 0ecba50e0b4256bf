"""Anchors through the API: from a highlight or typed, with their per-parse resolutions."""

from __future__ import annotations

import bisect
import random
import string

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from evalsets.anchoring import resolution as resolution_module
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, EvalItem, GoldAnchor, ParseVersion
from labelling.celery import app as celery_app
from tests.conftest import HANDBOOK
from tests.resolving import resolve_anchor

pytestmark = pytest.mark.django_db

ANCHORS = "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/"


def _highlight(client, reference, start, end, **extra):
    return client.post(
        ANCHORS,
        {"parse": str(reference.public_id), "start": start, "end": end, **extra},
        format="json",
    )


def test_a_highlight_becomes_an_anchor_with_quote_page_occurrence_and_context(
    client_for, item, annotator, reference, django_capture_on_commit_callbacks
):
    quote = "Employees accrue 1.5 days of leave per month."
    second_copy = HANDBOOK.rindex(quote)
    with django_capture_on_commit_callbacks(execute=True):
        response = _highlight(
            client_for(annotator), reference, second_copy, second_copy + len(quote)
        )
    assert response.status_code == 201
    body = response.json()
    assert body["quote"] == quote
    assert body["page_hint"] == 2  # the second copy is on page 2
    assert body["occurrence"] == 0  # ...and the first copy of it on that page
    assert body["prefix"] == HANDBOOK[second_copy - 32 : second_copy]
    assert body["suffix"] == HANDBOOK[second_copy + len(quote) :][:32]
    assert body["highlight"] == {
        "parse": str(reference.public_id),
        "start": second_copy,
        "end": second_copy + len(quote),
    }


def test_occurrence_counts_earlier_copies_on_the_same_page(client_for, document, item, annotator):
    text = "Alpha beta. Alpha beta. Alpha beta."
    parse = documents_services.parse_version_add(document=document, parser="p", text=text)
    response = _highlight(client_for(annotator), parse, 24, 34)
    assert response.json()["quote"] == "Alpha beta"
    assert response.json()["occurrence"] == 2


def test_the_highlight_lands_where_context_grids_resolver_would_find_it(
    client_for, item, annotator, reference
):
    """Our page_hint/occurrence make context-grid's own AnchorResolver find the same span."""
    from contextgrid.core.documents import Document as CgDocument
    from contextgrid.score.anchor import AnchorResolver

    quote = "Employees accrue 1.5 days of leave per month."
    start = HANDBOOK.rindex(quote)
    body = _highlight(client_for(annotator), reference, start, start + len(quote)).json()
    anchor = GoldAnchor.objects.get(public_id=body["id"])
    from evalsets.releases.bridge import anchor_to_cg

    parsed = _cg_parsed(CgDocument, HANDBOOK, reference.page_starts)
    match = AnchorResolver().locate(anchor_to_cg(anchor), parsed)
    assert (match.span.start, match.span.end) == (start, start + len(quote))


def _cg_parsed(cg_document_cls, text: str, page_starts: list[int]):
    from contextgrid.core.documents import Block, ParsedDocument
    from contextgrid.core.span import Span

    doc = cg_document_cls(id="handbook.txt", text=text)
    bounds = [*page_starts, len(text)]
    blocks = tuple(
        Block(
            span=Span("handbook.txt", bounds[i], bounds[i + 1]),
            text=text[bounds[i] : bounds[i + 1]],
            page=i + 1,
        )
        for i in range(len(page_starts))
    )
    return ParsedDocument(document=doc, blocks=blocks)


def test_whitespace_around_a_selection_is_trimmed(client_for, item, annotator, reference):
    start = HANDBOOK.index("Leave may")
    response = _highlight(client_for(annotator), reference, start - 1, start + 9)
    assert response.json()["quote"] == "Leave may"


def test_a_selection_of_only_whitespace_is_refused(client_for, item, annotator, reference):
    start = HANDBOOK.index("\n\n")
    response = _highlight(client_for(annotator), reference, start, start + 2)
    assert response.status_code == 400
    assert response.json()["detail"] == "a gold anchor must quote some text"
    assert not GoldAnchor.objects.exists()


def test_offsets_outside_the_parse_are_refused_with_the_bounds(
    client_for, item, annotator, reference
):
    response = _highlight(client_for(annotator), reference, 5, 10_000)
    assert response.status_code == 400
    assert f"<= {len(HANDBOOK)}" in response.json()["detail"]


def test_a_parse_from_another_workspace_is_refused(client_for, item, annotator, outsider):
    from django.core.files.base import ContentFile

    from evalsets.models import Document, Workspace

    other = Document(workspace=Workspace.objects.get(slug="elsewhere"), source_id="x", sha256="1")
    other.file.save("x", ContentFile(b"secret text"), save=False)
    other.save()
    parse = documents_services.parse_version_add(document=other, parser="p", text="secret text")
    response = _highlight(client_for(annotator), parse, 0, 6)
    assert response.status_code == 400
    assert "no parse" in response.json()["detail"]


def test_a_typed_anchor_needs_a_document_in_the_workspace(client_for, item, annotator, document):
    client = client_for(annotator)
    missing = client.post(ANCHORS, {"source_id": "nope.pdf", "quote": "x"}, format="json")
    assert missing.status_code == 400
    assert missing.json()["detail"] == "no document 'nope.pdf' in workspace 'acme'; upload it first"
    made = client.post(
        ANCHORS,
        {"source_id": "handbook.txt", "quote": "Leave may be carried over.", "grade": 1},
        format="json",
    )
    assert made.status_code == 201
    assert made.json()["grade"] == 1 and made.json()["highlight"] is None


def test_a_request_that_mixes_highlight_and_typed_fields_is_refused(
    client_for, item, annotator, reference
):
    response = client_for(annotator).post(
        ANCHORS,
        {"parse": str(reference.public_id), "start": 0, "end": 3, "quote": "x"},
        format="json",
    )
    assert response.status_code == 400
    assert "not both" in response.json()["detail"]


def test_a_new_anchor_is_resolved_in_every_parse_of_its_document(
    client_for, item, annotator, document, reference, django_capture_on_commit_callbacks
):
    other_text = "Employee Handbook\nEmployees   accrue 1.5 days of leave\nper month."
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(document=document, parser="other", text=other_text)
    quote = "Employees accrue 1.5 days of leave per month."
    start = HANDBOOK.index(quote)
    with django_capture_on_commit_callbacks(execute=True):
        body = _highlight(client_for(annotator), reference, start, start + len(quote)).json()
    listed = client_for(annotator).get(f"{ANCHORS}{body['id']}/").json()
    by_parser = {r["parser"]: r for r in listed["resolutions"]}
    assert by_parser["plaintext"]["status"] == "exact"
    assert by_parser["plaintext"]["start"] == start
    assert by_parser["other"]["status"] == "normalised"
    found = other_text[by_parser["other"]["start"] : by_parser["other"]["end"]]
    assert found == "Employees   accrue 1.5 days of leave\nper month."


def test_a_new_parse_resolves_every_anchor_already_on_the_document(
    item, annotator, document, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
        )
    with django_capture_on_commit_callbacks(execute=True):
        parse = documents_services.parse_version_add(
            document=document, parser="late", text="Intro.\nRemote work is limited to 30 days."
        )
    row = AnchorResolution.objects.get(parse=parse)
    assert row.status == "exact" and (row.start, row.end) == (7, 29)


def test_resolving_twice_keeps_one_row_per_anchor_and_parse(
    item, annotator, document, reference, django_capture_on_commit_callbacks
):
    from evalsets.anchoring import resolution

    with django_capture_on_commit_callbacks(execute=True):
        anchor = anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
        )
    resolve_anchor(anchor)
    resolution.resolve_parse(reference)
    assert AnchorResolution.objects.filter(anchor=anchor).count() == 1


def _anchor_from_whole_text(text: str, starts: list[int], start: int, end: int) -> dict:
    """What a highlight should become, worked out plainly from the whole text."""
    while text[start].isspace():
        start += 1
    while text[end - 1].isspace():
        end -= 1
    quote = text[start:end]
    page = bisect.bisect_right(starts, start)
    begin = starts[page - 1]
    return {
        "quote": quote,
        "page_hint": page,
        "occurrence": sum(text.startswith(quote, i) for i in range(begin, start)),
        "prefix": text[max(0, start - 32) : start],
        "suffix": text[end : end + 32],
        "highlight": (start, end),
    }


def test_a_highlight_reads_only_its_part_of_the_parse_and_makes_the_same_anchor(
    client_for, item, annotator, document
):
    """The API reads a window of the text (page start or prefix to just past the end); the
    anchor must be what the whole text gives, at the edges too."""
    page_one = "Leave is accrued. " * 3 + "\n"
    page_two = "Leave is accrued monthly. Leave is accrued monthly again.   \n"
    page_three = "  Leave is accrued last."
    text = page_one + page_two + page_three
    starts = [0, len(page_one), len(page_one) + len(page_two)]
    parse = documents_services.parse_version_add(
        document=document, parser="windowed", parser_version="1", text=text, page_starts=starts
    )
    second_on_page_two = text.index("Leave is accrued monthly again")
    selections = [
        (0, 16),  # the very start: no prefix
        (36, 52),  # the third copy on page 1: occurrence 2, a prefix from the page
        (second_on_page_two - 1, second_on_page_two + 16),  # second copy, a space to trim
        (starts[2] - 4, starts[2] + 24),  # whitespace across a page break, trimmed into page 3
        (len(text) - 24, len(text)),  # the very end: no suffix
    ]
    client = client_for(annotator)
    made = []
    for start, end in selections:
        response = client.post(
            ANCHORS, {"parse": str(parse.public_id), "start": start, "end": end}, format="json"
        )
        assert response.status_code == 201, response.json()
        body = response.json()
        body["highlight"] = (body["highlight"]["start"], body["highlight"]["end"])
        expected = _anchor_from_whole_text(text, starts, start, end)
        assert {key: body[key] for key in expected} == expected
        made.append(expected)
    assert [(a["page_hint"], a["occurrence"]) for a in made] == [
        (1, 0),
        (1, 2),
        (2, 1),
        (3, 0),
        (3, 0),
    ]


def _text_reads(captured) -> list[str]:
    """The queries that read a parse's text, whole or a slice of it."""
    return [q["sql"] for q in captured.captured_queries if '"text"' in q["sql"]]


def test_highlights_in_a_parse_read_its_text_once_per_process_and_make_the_same_anchors(
    client_for, item, annotator, reference
):
    """The web process keeps the texts highlighted in most recently: on SQLite a slice of a
    2 MB text costs the database reading and decoding all of it, every time."""
    client = client_for(annotator)
    quotes = ["Remote work is limited", "Employees accrue 1.5 days of leave per month."]
    made = []
    for n, quote in enumerate(quotes):
        start = HANDBOOK.index(quote)
        with CaptureQueriesContext(connection) as captured:
            response = _highlight(client, reference, start, start + len(quote))
        assert response.status_code == 201, response.json()
        assert bool(_text_reads(captured)) == (n == 0), _text_reads(captured)
        made.append(response.json())
    assert [body["quote"] for body in made] == quotes
    start = HANDBOOK.index(quotes[1])
    assert made[1]["prefix"] == HANDBOOK[max(0, start - 32) : start]
    assert made[1]["suffix"] == HANDBOOK[start + len(quotes[1]) :][:32]


def test_a_parse_written_again_is_highlighted_in_its_new_text(
    client_for, item, annotator, reference
):
    from evalsets.models import ParseVersion

    client = client_for(annotator)
    quote = "Remote work is limited"
    start = HANDBOOK.index(quote)
    assert _highlight(client, reference, start, start + len(quote)).json()["quote"] == quote
    moved = "Preface.\n" + HANDBOOK
    ParseVersion.objects.filter(pk=reference.pk).update(
        text=moved, text_length=len(moved), updated_at=timezone.now()
    )
    body = _highlight(client, reference, start, start + len(quote)).json()
    assert body["quote"] == moved[start : start + len(quote)] != quote


def test_the_new_anchor_is_answered_as_a_read_of_it_shows_it(
    client_for, item, annotator, reference, django_capture_on_commit_callbacks
):
    """The answer is built from the anchor just written (no second read of it and its
    reference parse), with its resolutions when they are already there."""
    from evalsets.anchoring import selectors as anchoring_selectors

    client = client_for(annotator)
    quote = "Remote work is limited"
    start = HANDBOOK.index(quote)
    made = _highlight(client, reference, start, start + len(quote)).json()
    typed = client.post(
        ANCHORS, {"source_id": "handbook.txt", "quote": "Leave may be"}, format="json"
    ).json()
    for body in (made, typed):
        # Plus, on creation only, the evidence of other questions it overlaps (a warning).
        assert body.pop("overlaps") == []
        assert body == client.get(f"{ANCHORS}{body['id']}/").json()
    assert made["highlight"]["start"] == start and typed["highlight"] is None
    with django_capture_on_commit_callbacks(execute=True):
        anchor = anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
        )
    shown = anchoring_selectors.with_resolutions(anchor).prefetched_resolutions
    assert [(r.parse_id, r.status) for r in shown] == [(reference.pk, "exact")]


def test_a_new_anchor_reuses_the_parses_this_worker_already_prepared(
    item, annotator, document, reference, django_capture_on_commit_callbacks, monkeypatch
):
    from evalsets.pure import resolver

    folded = []
    real_prepare = resolver.prepare
    monkeypatch.setattr(
        resolver, "prepare", lambda text, **kw: folded.append(len(text)) or real_prepare(text, **kw)
    )
    with django_capture_on_commit_callbacks(execute=True):
        first = anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
        )
        second = anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Leave may be carried"
        )
    assert folded == [len(HANDBOOK)], "the reference parse is folded once, for both anchors"
    for anchor in (first, second):
        row = AnchorResolution.objects.get(anchor=anchor, parse=reference)
        assert row.status == "exact"
        assert HANDBOOK[row.start : row.end] == anchor.quote


def test_a_parse_written_again_is_prepared_again_not_served_stale(
    item, annotator, document, reference, django_capture_on_commit_callbacks
):
    from evalsets.models import ParseVersion

    with django_capture_on_commit_callbacks(execute=True):
        anchor = anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
        )
    moved = "Preface.\n" + HANDBOOK
    ParseVersion.objects.filter(pk=reference.pk).update(
        text=moved, text_length=len(moved), updated_at=timezone.now()
    )
    resolve_anchor(anchor)
    row = AnchorResolution.objects.get(anchor=anchor, parse=reference)
    assert moved[row.start : row.end] == anchor.quote
    assert row.start == HANDBOOK.index(anchor.quote) + len("Preface.\n")


def _parses(document, count: int) -> list[ParseVersion]:
    return [
        documents_services.parse_version_add(
            document=document, parser=f"p{n}", parser_version="1", text=HANDBOOK, page_starts=[0]
        )
        for n in range(count)
    ]


def test_the_prepared_parse_cache_stays_within_its_budget(document, settings):
    parses = _parses(document, 3)
    one = resolution_module.resolver.prepare(HANDBOOK).nbytes()
    settings.GROUNDWORK_RESOLVER_CACHE_MB = 1
    cache = resolution_module.PreparedCache(unit=int(one * 2.5))  # room for two
    for parse in parses:
        cache.put(parse, resolution_module.resolver.prepare(parse.text))
    assert cache.get(parses[0]) is None, "the least recently used one made room"
    assert cache.get(parses[1]) is not None and cache.get(parses[2]) is not None
    small = resolution_module.PreparedCache(unit=one - 1)
    small.put(parses[0], resolution_module.resolver.prepare(parses[0].text))
    assert small.get(parses[0]) is None, "a parse larger than the whole budget is not kept"


def test_a_prepared_parse_that_grew_its_indexes_makes_the_older_ones_go(document, settings):
    parses = _parses(document, 2)
    first, second = (resolution_module.resolver.prepare(p.text) for p in parses)
    settings.GROUNDWORK_RESOLVER_CACHE_MB = 1
    cache = resolution_module.PreparedCache(unit=first.nbytes() * 2)  # room for the two
    cache.put(parses[0], first)
    cache.put(parses[1], second)
    assert cache.get(parses[0]) is first and cache.get(parses[1]) is second
    # Approximate matching builds the parse's seed index, after it was stored.
    second.resolve("Employees accrue leave at a rate nobody wrote down anywhere in it")
    assert second.nbytes() > first.nbytes()
    assert cache.get(parses[1]) is second
    assert cache.get(parses[0]) is None


def test_the_grade_can_be_changed_and_the_anchor_deleted(client_for, item, annotator, document):
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Leave may be"
    )
    client = client_for(annotator)
    changed = client.patch(f"{ANCHORS}{anchor.public_id}/", {"grade": 0}, format="json")
    assert changed.status_code == 200 and changed.json()["grade"] == 0
    bad = client.patch(f"{ANCHORS}{anchor.public_id}/", {"grade": 7}, format="json")
    assert bad.status_code == 400
    assert client.delete(f"{ANCHORS}{anchor.public_id}/").status_code == 204
    assert not GoldAnchor.objects.exists()


def test_changing_anchors_bumps_the_items_row_version(client_for, item, annotator, document):
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Leave"
    )
    item.refresh_from_db()
    assert item.row_version == 2


def test_an_anchor_created_event_holds_the_row_version_without_reading_it_back(
    client_for, item, annotator, reference
):
    from evalsets.models import ItemEvent

    quote = "Remote work is limited"
    start = HANDBOOK.index(quote)
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Leave"
    )
    with CaptureQueriesContext(connection) as queries:
        response = _highlight(client_for(annotator), reference, start, start + len(quote))
    assert response.status_code == 201
    item.refresh_from_db()
    events = ItemEvent.objects.filter(item=item, kind="anchor_created").order_by("pk")
    assert [e.data["row_version"] for e in events] == [2, 3] == [2, item.row_version]
    # the row was locked and bumped by one in the same transaction: nothing to read back
    read_back = [
        q
        for q in queries.captured_queries
        if q["sql"].startswith('SELECT "evalsets_evalitem"."row_version"')
    ]
    assert read_back == []


def test_the_item_says_in_how_many_parses_its_anchors_were_found(
    client_for, item, annotator, document, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(
            document=document, parser="other", text="Nothing relevant."
        )
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
        )
    body = client_for(annotator).get("/api/workspaces/acme/evalsets/quiz/items/q1/").json()
    rows = {r["parser"]: (r["found"], r["lost"]) for r in body["portability"]}
    assert rows == {"plaintext": (1, 0), "other": (0, 1)}


def test_an_owner_can_re_resolve_the_whole_workspace(
    client_for, item, owner, annotator, document, reference, django_capture_on_commit_callbacks
):
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Remote work is limited"
    )
    assert not AnchorResolution.objects.filter(anchor=anchor).exists()  # callbacks not run
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(owner).post("/api/workspaces/acme/resolve/")
    assert response.status_code == 202 and response.json() == {"queued_parses": 1}
    assert AnchorResolution.objects.get(anchor=anchor).status == "exact"
    assert client_for(annotator).post("/api/workspaces/acme/resolve/").status_code == 403


def test_the_default_resolver_cache_holds_the_three_parses_of_a_1000_page_pdf():
    # A new anchor is resolved in each parse of its document in turn: all three must stay,
    # each with the index approximate matching builds. Weighed on a tenth of such a parse,
    # of varied words (repeated text would leave its seed index nearly empty).
    rng = random.Random(0)
    letters = string.ascii_lowercase
    words = ["".join(rng.choices(letters, k=rng.randint(2, 11))) for _ in range(9000)]
    text = " ".join(rng.choices(words, k=70_000))[:420_000]
    prepared = resolution_module.resolver.prepare(text)
    prepared.resolve("a passage that is nowhere in it, so that approximate matching runs there")
    per_character = prepared.nbytes() / len(text)
    assert 3 * 4_200_000 * per_character < resolution_module.PreparedCache().budget()


@pytest.fixture
def tasks_on_workers():
    """Tasks are queued for workers, as in production, not run in this process."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = eager


#: What one anchor create over HTTP reads and writes, with tasks on workers: the token and
#: its user, the membership and its workspace, the parse, the item and its set; the item's
#: lock-and-bump, the anchor, its event (in a savepoint here, the test's transaction being
#: open); then the overlapping evidence. The coalescing flag is read after the commit.
CREATE_QUERIES = 10


def test_one_anchor_create_makes_a_fixed_handful_of_queries_however_much_the_workspace_holds(
    client_for, item, annotator, reference, tasks_on_workers, django_assert_max_num_queries
):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    quote = "Remote work is limited"
    start = HANDBOOK.index(quote)
    for n in range(5):  # other anchors, overlapping: read in the one overlap query
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start + n, end=start + 12
        )
    # An earlier highlight in this parse: this process holds its text since (as a web
    # process in steady state does), so the text is not read again.
    assert _highlight(client_for(annotator), reference, start, start + 6).status_code == 201
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator).key}")
    other = anchoring_services.item_create(
        evalset=item.evalset, user=annotator, item_id="q9", question="Where?"
    )

    with django_assert_max_num_queries(CREATE_QUERIES):
        response = client.post(
            ANCHORS.replace("q1", other.item_id),
            {"parse": str(reference.public_id), "start": start, "end": start + len(quote)},
            format="json",
        )

    assert response.status_code == 201, response.content
    assert len(response.json()["overlaps"]) == 6
    assert response.json()["resolutions"] == []  # queued, not resolved in this process


def test_a_highlight_on_an_approved_item_is_refused_and_leaves_its_row_version_alone(
    client_for, item, annotator, reference
):
    EvalItem.objects.filter(pk=item.pk).update(state="approved")
    before = EvalItem.objects.get(pk=item.pk).row_version
    quote = "Remote work is limited"
    start = HANDBOOK.index(quote)

    response = _highlight(client_for(annotator), reference, start, start + len(quote))

    assert response.status_code == 409
    assert "is approved" in response.json()["errors"]["state"][0]
    assert EvalItem.objects.get(pk=item.pk).row_version == before
    assert not GoldAnchor.objects.filter(item=item).exists()
