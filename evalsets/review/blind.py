"""Blind overlap: whose evidence a reader may see on an item several annotators work on.

One rule, read by every path that shows anchors (the item API and page, the anchor API,
a document's highlights, the next item in a queue, the review page) and by the audit reads
that carry their quotes (an item's history, the changes feed):

* An item is *blind* while it has two or more annotate assignments (overlap) and has not
  been adjudicated (``EvalItem.adjudicated_at`` is empty).
* On a blind item, a reader sees every anchor they made themselves, and another person's
  only when they are a reviewer or an owner **and** not one of its annotators: the people
  who decide between the versions see them all, the people who write them see their own.
* Everyone below reviewer (an annotator without an assignment on it, a viewer) sees only
  their own anchors on a blind item, so no colleague can pass the others' evidence on.
* On an item without overlap, or once adjudicated, everyone sees everything, as before.

Each anchor says who made it (``created_by``), so the people who see all can tell them apart.
"""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from evalsets.models import (
    AssignmentKind,
    EvalItem,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemEvent,
    Role,
)

#: Annotators per item from which an item is worked blind.
OVERLAP = 2
#: The audit events that carry an anchor's quote: hidden by the same rule as the anchor.
ANCHOR_EVENT_KINDS = (
    EventKind.ANCHOR_CREATED,
    EventKind.ANCHOR_GRADE_CHANGED,
    EventKind.ANCHOR_DELETED,
    EventKind.ANCHOR_CONFIRMED,
)


def overlapped_items() -> QuerySet:
    """The pks of items with ``OVERLAP`` or more annotate assignments (a subquery)."""
    return (
        ItemAssignment.objects.filter(kind=AssignmentKind.ANNOTATE)
        .values("item")
        .annotate(annotators=Count("id"))
        .filter(annotators__gte=OVERLAP)
        .values("item")
    )


def blind_items_for(user, role: Role | str | None) -> QuerySet[EvalItem]:
    """The items on which ``user`` (with ``role`` in their workspace) sees only their own
    anchors (a subquery; see the module's rule)."""
    blind = EvalItem.objects.filter(adjudicated_at__isnull=True, pk__in=overlapped_items())
    if role is not None and Role(role).at_least(Role.REVIEWER):
        blind = blind.filter(
            pk__in=ItemAssignment.objects.filter(user=user, kind=AssignmentKind.ANNOTATE).values(
                "item"
            )
        )
    return blind


def hidden_from(user, role: Role | str | None) -> Q:
    """A filter on anchors: those ``user`` may not see (another person's, on a blind item)."""
    mine = Q(created_by=user) if user is not None and user.pk is not None else Q(pk__in=[])
    return Q(item__in=blind_items_for(user, role)) & ~mine


def visible_anchors(anchors: QuerySet[GoldAnchor], membership) -> QuerySet[GoldAnchor]:
    """``anchors`` less those the member may not see. ``membership=None`` is the system
    itself (a task, a command): it sees everything."""
    if membership is None:
        return anchors
    return anchors.exclude(hidden_from(membership.user, membership.role))


def visible_events(events: QuerySet[ItemEvent], membership) -> QuerySet[ItemEvent]:
    """``events`` less another person's anchor events on an item blind to the member (they
    carry the quote): the history and the changes feed follow the anchors' rule."""
    if membership is None:
        return events
    user = membership.user
    hidden = Q(kind__in=ANCHOR_EVENT_KINDS, item__in=blind_items_for(user, membership.role)) & ~Q(
        actor=user
    )
    return events.exclude(hidden)


def works_blind(item: EvalItem, membership) -> bool:
    """Whether ``item`` is blind to the member now: they see only their own anchors on it."""
    return blind_items_for(membership.user, membership.role).filter(pk=item.pk).exists()
