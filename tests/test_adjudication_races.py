"""Two reviewers adjudicating the same item at once, on real PostgreSQL: exactly one wins;
the other gets a 409 and the item holds one whole decision, never a mix of the two."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.errors import Conflict
from evalsets.models import EvalItem, GoldAnchor, ItemEvent, Membership, Role
from evalsets.review import adjudication, assignments, workflow
from tests.services import race, services_configured

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("sent")]


@pytest.fixture(autouse=True)
def _postgresql():
    reason = services_configured()
    if reason:
        pytest.skip(f"needs PostgreSQL: {reason}")


@pytest.fixture
def finished(evalset, owner, annotator, make_user, workspace, document):
    bob = make_user("bob")
    Membership.objects.create(workspace=workspace, user=bob, role=Role.ANNOTATOR)
    item = anchoring_services.item_create(evalset=evalset, user=owner, item_id="b1", question="Q?")
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "bob"], kind="annotate", overlap=2
    )
    for user, quote in ((annotator, "1.5 days of leave"), (bob, "carried over")):
        anchoring_services.anchor_create_typed(
            item=item, user=user, source_id="handbook.txt", quote=quote
        )
        workflow.item_submit(item=item, user=user)
    item.refresh_from_db()
    return item


@pytest.mark.parametrize("attempt", range(3))
def test_two_reviewers_adjudicating_at_once_get_one_winner_and_one_whole_decision(
    finished, reviewer, owner, attempt
):
    seen = finished.row_version
    results = race(
        lambda: adjudication.adjudicate(
            item=EvalItem.objects.get(pk=finished.pk), user=reviewer, row_version=seen, pick="ann"
        ),
        lambda: adjudication.adjudicate(
            item=EvalItem.objects.get(pk=finished.pk), user=owner, row_version=seen, pick="bob"
        ),
    )
    winners = [r for r in results if isinstance(r, dict)]
    losers = [r for r in results if isinstance(r, Conflict)]
    assert (len(winners), len(losers)) == (1, 1), results
    assert "already adjudicated" in losers[0].message
    kept = set(GoldAnchor.objects.filter(item=finished).values_list("quote", flat=True))
    assert kept == {a["quote"] for a in winners[0]["kept"]}
    assert len(kept) == 1
    assert ItemEvent.objects.filter(item=finished, kind="adjudicated").count() == 1
    assert EvalItem.objects.get(pk=finished.pk).row_version == seen + 1
