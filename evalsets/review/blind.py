"""Blind overlap: whose evidence a reader may see on an item several annotators work on.

One rule, read by every path that shows anchors (the item API and page, the anchor API,
a document's highlights, the next item in a queue, the review page), by the counts of them
(the set page's, the document list's, a parse's health) and by the audit reads that carry
their quotes (an item's history, the changes feed):

* An item is *blind* while it has two or more annotate assignments (overlap) and has not
  been adjudicated (``EvalItem.adjudicated_at`` is empty).
* On a blind item, an annotator or a viewer sees only the anchors they made themselves:
  an assigned annotator works without the others' evidence, and one without an assignment
  cannot read it and pass it on either.
* Reviewers and owners see every anchor on every item: they decide between the versions.
  That holds when one of them is also assigned to annotate it (an owner filling in as a
  second annotator sees the first one's evidence; assign annotators for independent
  versions). Someone who annotated an item never adjudicates it (``adjudication``).
* On an item without overlap, or once adjudicated, everyone sees everything, as before.

Each anchor says who made it (``created_by``), so the people who see all can tell them apart.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from evalsets.models import (
    AssignmentKind,
    EvalItem,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemEvent,
    Role,
)

#: Annotators per item from which an item is worked blind (``overlapped`` asks for a second
#: annotate assignment, which is what 2 means).
OVERLAP = 2
#: The audit events that carry an anchor's quote: hidden by the same rule as the anchor.
ANCHOR_EVENT_KINDS = (
    EventKind.ANCHOR_CREATED,
    EventKind.ANCHOR_GRADE_CHANGED,
    EventKind.ANCHOR_DELETED,
    EventKind.ANCHOR_CONFIRMED,
)


def overlapped(item: str) -> Exists:
    """Whether the item named by ``item`` (a path from the outer query: ``"item"`` from an
    anchor or an event, ``"pk"`` from an item) has ``OVERLAP`` or more annotate assignments.

    Correlated to that one item (its second assignment exists), so the cost is an index look-up
    per row read, not an aggregate over every assignment in the database.
    """
    first = (
        ItemAssignment.objects.filter(item=OuterRef("item"), kind=AssignmentKind.ANNOTATE)
        .order_by("pk")
        .values("pk")[:1]
    )
    return Exists(
        ItemAssignment.objects.filter(
            item=OuterRef(item), kind=AssignmentKind.ANNOTATE, pk__gt=Subquery(first)
        )
    )


def sees_all(role: Role | str) -> bool:
    """Whether a member with ``role`` sees every version of every item (reviewer, owner)."""
    return Role(role).at_least(Role.REVIEWER)


def blind_items() -> QuerySet[EvalItem]:
    """The items worked blind now: overlapped and not adjudicated."""
    return EvalItem.objects.filter(overlapped("pk"), adjudicated_at__isnull=True)


def _blind_item(path: str = "item") -> Q:
    """On rows that point at an item (``path``): the item is worked blind now."""
    return Q(overlapped(path), **{f"{path}__adjudicated_at__isnull": True})


def visible_anchors(anchors: QuerySet[GoldAnchor], membership) -> QuerySet[GoldAnchor]:
    """``anchors`` less those the member may not see: another person's, on a blind item,
    unless the member sees all. ``membership=None`` is the system itself (a task, a
    command): it sees everything."""
    if membership is None or sees_all(membership.role):
        return anchors
    return anchors.exclude(_blind_item() & ~Q(created_by=membership.user))


def hidden_anchor_sql(anchor: str, item: str) -> tuple[str, list]:
    """``visible_anchors``' rule for a query written out in SQL, which reads anchors as
    ``anchor`` joined to their item as ``item``: a condition true for the anchors the member
    may not see, and its parameters but the member's user id, which comes last. The same
    predicate Django builds for ``visible_anchors`` (the query of the overlap warning asks
    it on every anchor create); ``tests/test_adjudication.py`` holds the two to the same
    answers."""
    q = connection.ops.quote_name
    table = q(ItemAssignment._meta.db_table)
    kind = AssignmentKind.ANNOTATE.value
    second = (
        f"EXISTS (SELECT 1 FROM {table} v WHERE v.{q('item_id')} = {anchor}.{q('item_id')} "
        f"AND v.{q('kind')} = %s AND v.{q('id')} > (SELECT u.{q('id')} FROM {table} u "
        f"WHERE u.{q('item_id')} = v.{q('item_id')} AND u.{q('kind')} = %s "
        f"ORDER BY u.{q('id')} LIMIT 1))"
    )
    return (
        f"({second} AND {item}.{q('adjudicated_at')} IS NULL "
        f"AND NOT ({anchor}.{q('created_by_id')} = %s))",
        [kind, kind],
    )


def visible_anchor_count(relation: str, membership) -> Coalesce:
    """For an annotation on rows that anchors point at through ``relation`` (``"item"`` on
    items, ``"document"`` on documents): how many of each row's anchors the member may see
    (``visible_anchors``), so a count never tells of evidence the member cannot read."""
    anchors = GoldAnchor.objects.filter(**{relation: OuterRef("pk")})
    counted = (
        visible_anchors(anchors, membership)
        .order_by()
        .values(relation)
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted), 0)


def visible_events(events: QuerySet[ItemEvent], membership) -> QuerySet[ItemEvent]:
    """``events`` less another person's anchor events on an item blind to the member (they
    carry the quote): the history and the changes feed follow the anchors' rule."""
    if membership is None or sees_all(membership.role):
        return events
    hidden = Q(kind__in=ANCHOR_EVENT_KINDS) & _blind_item() & ~Q(actor=membership.user)
    return events.exclude(hidden)


def works_blind(item: EvalItem, membership) -> bool:
    """Whether ``item`` is blind to the member now: they see only their own anchors on it."""
    return not sees_all(membership.role) and blind_items().filter(pk=item.pk).exists()
