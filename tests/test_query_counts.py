"""Pages and API lists cost the same number of queries for 5 items as for 25.

Each item is written, edited, anchored (found in two parses), commented on, assigned and
submitted, so every relation a page shows has rows to read. A read that asks per item (an
item's writers, its anchors, a parse's text) grows with the set and fails here. The review
page is also checked for what it reads: a window of each reference parse, never a whole text.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.review import assignments, comments, workflow
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.django_db

SET_API = "/api/workspaces/acme/evalsets/quiz/"
URLS = {
    "review page": "/w/acme/sets/quiz/review/",
    "item list page": "/w/acme/sets/quiz/",
    "item list page, filtered": "/w/acme/sets/quiz/?state=submitted&qtype=numeric",
    "item list page, searched": "/w/acme/sets/quiz/?q=leave+month",
    "items API list": f"{SET_API}items/?page_size=50",
    "items API search": f"{SET_API}items/?page_size=50&q=leave",
    "dashboard page": "/w/acme/sets/quiz/dashboard/",
    "dashboard API": f"{SET_API}dashboard/",
    "document anchors API": "/api/workspaces/acme/documents/handbook.txt/anchors/",
}


@pytest.fixture
def grow(
    evalset,
    document,
    reference,
    annotator,
    owner,
    reviewer,
    django_capture_on_commit_callbacks,
):
    """Add items to the set (each resolved in every parse of the handbook) up to ``total``."""
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(
            document=document, parser="other", text=HANDBOOK.replace("\n", " ")
        )
    made = 0

    def to(total: int) -> None:
        nonlocal made
        with django_capture_on_commit_callbacks(execute=True):
            _fill_from(made, total)
        made = total

    def _fill_from(first: int, last: int) -> None:
        start = HANDBOOK.index("Remote work")
        for n in range(first, last):
            item = anchoring_services.item_create(
                evalset=evalset,
                user=annotator,
                item_id=f"q{n}",
                question=f"How much leave, case {n}?",
                qtype="numeric",
            )
            item = anchoring_services.item_update(
                item=item, user=owner, row_version=item.row_version, answer=f"{n} days"
            )
            anchor = anchoring_services.anchor_create_from_highlight(
                item=item, user=annotator, parse=reference, start=start, end=start + 11
            )
            comments.comment_add(item=item, user=reviewer, body=f"check {n}", anchor=anchor)
            assignments.assignments_create(
                evalset=evalset,
                by=owner,
                usernames=[annotator.username, owner.username],
                kind="annotate",
                item_ids=[item.item_id],
                overlap=2,
            )
            item.refresh_from_db()
            workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
            workflow.item_submit(item=item, user=owner)  # the second annotator: now submitted

    return to


def _queries(client: Client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return [q["sql"] for q in captured.captured_queries]


@pytest.mark.parametrize("name", URLS)
def test_a_page_or_list_costs_the_same_queries_for_5_items_as_for_25(grow, reviewer, name):
    client = Client()
    client.force_login(reviewer)
    grow(5)
    client.get(URLS[name])  # warm: sessions, content types
    few = _queries(client, URLS[name])
    grow(25)
    many = _queries(client, URLS[name])
    assert len(many) == len(few), "\n\n".join(many)


def test_the_review_page_reads_windows_of_the_reference_parse_never_a_whole_text(grow, reviewer):
    client = Client()
    client.force_login(reviewer)
    grow(5)
    queries = _queries(client, URLS["review page"])
    reads_text = [
        sql
        for sql in queries
        for hit in re.finditer(r'(SUBSTR(?:ING)?\()?(?:"\w+"\.)?"text"', sql, re.IGNORECASE)
        if hit.group(1) is None
    ]
    assert reads_text == []
    windows = r'SUBSTR(?:ING)?\("evalsets_parseversion"\."text"'
    assert any(re.search(windows, sql, re.IGNORECASE) for sql in queries)
    body = client.get(URLS["review page"]).content.decode()
    # The window holds the quote with its context from the reference parse.
    assert "<mark>Remote work</mark> is limited to 30 days a year." in body
    assert "reference parse" in body
