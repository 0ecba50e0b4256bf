"""Found, lost and ambiguous per parse: every place that reports them says the same thing.

One item carries three anchors on the handbook: one found exactly, one that has two copies
nothing tells apart (ambiguous: neither found nor lost), one quoting text the handbook does
not hold (lost). The eval set, the item, the parse's health and the dashboard must all count
them that way.
"""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.models import GoldAnchor
from evalsets.review import dashboard

pytestmark = pytest.mark.django_db

SET = "/api/workspaces/acme/evalsets/quiz/"
FOUND = "Remote work is limited"
AMBIGUOUS = "Employees accrue 1.5 days of leave per month"  # the handbook says it twice
LOST = "a clause the handbook never had"


@pytest.fixture
def three_anchors(item, annotator, document, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for quote in (FOUND, AMBIGUOUS, LOST):
            anchoring_services.anchor_create_typed(
                item=item, user=annotator, source_id="handbook.txt", quote=quote
            )
    return {a.quote: a for a in GoldAnchor.objects.all()}


def test_the_eval_set_counts_an_ambiguous_anchor_as_ambiguous_not_lost(
    client_for, annotator, three_anchors
):
    body = client_for(annotator).get(SET).json()
    (row,) = body["portability"]["by_parser"]
    assert (row["anchors"], row["found"], row["lost"], row["ambiguous"]) == (3, 1, 1, 1)


def test_the_item_counts_an_ambiguous_anchor_as_ambiguous_not_lost(
    client_for, annotator, three_anchors
):
    body = client_for(annotator).get(f"{SET}items/q1/").json()
    (row,) = body["portability"]
    assert (row["found"], row["lost"], row["ambiguous"]) == (1, 1, 1)


def test_parse_health_lists_exactly_the_anchors_the_parse_could_not_place(
    client_for, annotator, three_anchors, reference
):
    url = f"/api/workspaces/acme/documents/handbook.txt/parses/{reference.public_id}/"
    health = client_for(annotator).get(url).json()["health"]
    assert sorted(health["lost_anchors"]) == sorted(
        str(three_anchors[q].public_id) for q in (AMBIGUOUS, LOST)
    )
    assert health["found"] == 1 and health["anchors"] == 3 and health["pending"] == 0
    assert health["by_status"]["ambiguous"] == 1 and health["by_status"]["not_found"] == 1


def test_the_dashboard_counts_an_ambiguous_anchor_as_ambiguous_not_lost(evalset, three_anchors):
    (row,) = dashboard.evalset_dashboard(evalset)["resolution"]
    assert (row["anchors"], row["found"], row["lost"], row["ambiguous"]) == (3, 1, 1, 1)
    assert row["pending"] == 0
