"""What the pages say: people's words for states, Groundwork's words where context-grid's
library wording leaked in, and the item page opening "Highlight evidence in" on the item's
own document. Each of these failed on the pages before they were mended."""

from __future__ import annotations

import re

import pytest
from django.core.files.base import ContentFile
from django.test import Client

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document
from labelling.labels import plain_words

pytestmark = pytest.mark.django_db


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def visible_text(html: str) -> str:
    """The page without its tags, its attributes and its JSON blocks (the labels)."""
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_the_dashboard_never_names_context_grids_python_api_or_file_format(
    annotator, reviewer, item
):
    html = page(reviewer, "/w/acme/sets/quiz/dashboard/")
    text = visible_text(html)
    assert "is noise on this set" in text  # the small-set warning is there, in our words
    assert "is_the_winner_real()" not in text
    assert '"reviewed": true' not in text and "&quot;reviewed&quot;: true" not in text
    assert "`" not in text
    assert "Approving an item on the Review page marks it checked" in text


def test_plain_words_keep_the_sense_and_drop_backticks():
    assert plain_words("`context` is the paragraph") == "context is the paragraph"


def test_the_item_history_says_changes_requested_in_words(changes_requested, annotator):
    text = visible_text(page(annotator, "/w/acme/sets/quiz/items/q1/"))
    assert "submitted → changes requested" in text
    assert "changes_requested" not in text


def test_the_review_page_says_states_in_words(changes_requested, reviewer):
    text = visible_text(page(reviewer, "/w/acme/sets/quiz/review/?state=changes_requested"))
    assert "(changes requested)" in text
    assert "changes_requested" not in text


def test_an_empty_review_list_says_the_state_in_words(item, reviewer):
    text = visible_text(page(reviewer, "/w/acme/sets/quiz/review/?state=changes_requested"))
    assert "Nothing here is changes requested." in text


def test_a_refused_transition_names_the_state_in_words(client_for, changes_requested, reviewer):
    answer = client_for(reviewer).post(
        "/api/workspaces/acme/evalsets/quiz/items/q1/approve/", {"row_version": 1}, format="json"
    )
    assert answer.status_code == 409
    assert "has changes requested" in answer.json()["detail"]
    assert "changes_requested" not in answer.json()["detail"]


def _document(workspace, source_id: str) -> Document:
    doc = Document(workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0"))
    doc.file.save(source_id, ContentFile(b"Policies apply to everyone."), save=False)
    doc.kind = "text"
    doc.save()
    documents_services.parse_version_add(
        document=doc, parser="plaintext", text="Policies apply to everyone."
    )
    return doc


def test_highlight_evidence_in_opens_on_the_items_own_document(workspace, evalset, annotator):
    _document(workspace, "alpha.txt")
    own = _document(workspace, "zeta.txt")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="Who?"
    )
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=own.parses.get(), start=0, end=8
    )
    html = page(annotator, "/w/acme/sets/quiz/items/q1/")
    assert '<option value="zeta.txt" selected>' in html
    assert '<option value="alpha.txt">' in html
