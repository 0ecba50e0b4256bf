"""Races on real PostgreSQL: two reviewers approving at once, an approval against an edit.

Each contender runs in its own thread with its own database connection and transaction; a
barrier releases them together. Exactly one wins; the other gets a Conflict that says why.
"""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.errors import Conflict
from evalsets.models import EvalItem, ItemEvent, Membership, Role
from evalsets.review import workflow
from tests.services import race, services_configured

# The races queue no background work: a worker resolving an anchor a race made would still
# hold its locks when the test database is flushed after the test, and deadlock the flush.
pytestmark = [pytest.mark.services, pytest.mark.usefixtures("sent")]


@pytest.fixture(autouse=True)
def _postgresql():
    reason = services_configured()
    if reason:
        pytest.skip(f"needs PostgreSQL: {reason}")


@pytest.fixture
def submitted(item, annotator, make_user, workspace):
    workflow.item_submit(item=item, user=annotator)
    item.refresh_from_db()
    return item


@pytest.mark.parametrize("attempt", range(5))
def test_two_reviewers_approving_the_same_version_get_exactly_one_winner(
    submitted, reviewer, owner, attempt
):
    seen = submitted.row_version
    results = race(
        lambda: workflow.item_approve(
            item=EvalItem.objects.get(pk=submitted.pk), user=reviewer, row_version=seen
        ),
        lambda: workflow.item_approve(
            item=EvalItem.objects.get(pk=submitted.pk), user=owner, row_version=seen
        ),
    )
    winners = [r for r in results if isinstance(r, EvalItem)]
    losers = [r for r in results if isinstance(r, Conflict)]
    assert (len(winners), len(losers)) == (1, 1), results
    assert "only a submitted item can be approved" in losers[0].message
    item = EvalItem.objects.get(pk=submitted.pk)
    assert (item.state, item.row_version) == ("approved", seen + 1)
    assert ItemEvent.objects.filter(item=item, kind="approved").count() == 1


@pytest.mark.parametrize("attempt", range(5))
def test_an_approval_racing_an_edit_of_the_same_version_gets_exactly_one_winner(
    submitted, reviewer, annotator, attempt
):
    seen = submitted.row_version
    results = race(
        lambda: workflow.item_approve(
            item=EvalItem.objects.get(pk=submitted.pk), user=reviewer, row_version=seen
        ),
        lambda: anchoring_services.item_update(
            item=EvalItem.objects.get(pk=submitted.pk),
            user=annotator,
            row_version=seen,
            answer="edited",
        ),
    )
    assert sum(isinstance(r, EvalItem) for r in results) == 1, results
    assert sum(isinstance(r, Conflict) for r in results) == 1, results
    item = EvalItem.objects.get(pk=submitted.pk)
    assert item.row_version == seen + 1
    # Never both: an approved item never carries an edit made after the reviewer looked.
    assert (item.state, item.answer) in {("approved", None), ("submitted", "edited")}


def test_an_anchor_added_while_a_reviewer_approves_never_lands_on_an_approved_item(
    submitted, reviewer, annotator, document, make_user, workspace
):
    carol = make_user("carol")
    Membership.objects.create(workspace=workspace, user=carol, role=Role.REVIEWER)
    for _ in range(5):
        item = EvalItem.objects.get(pk=submitted.pk)
        if item.state != "submitted":
            EvalItem.objects.filter(pk=item.pk).update(state="submitted")
            item.refresh_from_db()
        seen = item.row_version
        results = race(
            lambda seen=seen: workflow.item_approve(
                item=EvalItem.objects.get(pk=submitted.pk), user=carol, row_version=seen
            ),
            lambda: anchoring_services.anchor_create_typed(
                item=EvalItem.objects.get(pk=submitted.pk),
                user=annotator,
                source_id="handbook.txt",
                quote="Employees accrue",
            ),
        )
        assert sum(isinstance(r, Conflict) for r in results) == 1, results
        item = EvalItem.objects.get(pk=submitted.pk)
        anchors_after = [r for r in results if not isinstance(r, Conflict | EvalItem)]
        if item.state == "approved":
            assert not anchors_after
