"""Assigning items to annotators (with overlap) and reviewers (never an item they wrote)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from evalsets import access
from evalsets.errors import InvalidInput
from evalsets.models import (
    AssignmentKind,
    EvalItem,
    EvalSet,
    EventKind,
    ItemAssignment,
    Membership,
    NotificationKind,
)
from evalsets.review import selectors as review_selectors
from evalsets.review.audit import record
from evalsets.review.inbox import notify


def _members_for(evalset: EvalSet, usernames: Sequence[str], kind: str) -> list:
    if not usernames:
        raise InvalidInput("name at least one person to assign", field="users")
    memberships = {
        m.user.username: m
        for m in Membership.objects.filter(
            workspace=evalset.workspace_id, user__username__in=usernames
        ).select_related("user", "workspace")
    }
    users = []
    for name in dict.fromkeys(usernames):
        membership = memberships.get(name)
        if membership is None:
            raise InvalidInput(
                f"{name!r} is not a member of {evalset.workspace.slug!r}", field="users"
            )
        if not membership.allows(access.WORK[kind]):
            raise InvalidInput(
                f"{name!r} has the {membership.role} role; to {kind} they need the "
                f"{access.WORK[kind]} role or above",
                field="users",
            )
        users.append(membership.user)
    return users


def _items_for(evalset: EvalSet, item_ids: Sequence[str] | None) -> list[EvalItem]:
    items = EvalItem.objects.filter(evalset=evalset).order_by("created_at", "id")
    if item_ids is None:
        return list(items.select_related("evalset"))
    found = {i.item_id: i for i in items.filter(item_id__in=item_ids).select_related("evalset")}
    missing = [i for i in item_ids if i not in found]
    if missing:
        raise InvalidInput(
            f"no eval item {', '.join(repr(m) for m in missing[:10])} in {evalset.slug!r}",
            field="items",
        )
    return [found[i] for i in dict.fromkeys(item_ids)]


@transaction.atomic
def assignments_create(
    *,
    evalset: EvalSet,
    by,
    usernames: Sequence[str],
    kind: str,
    item_ids: Sequence[str] | None = None,
    overlap: int = 1,
) -> dict:
    """Assign items (the whole set when ``item_ids`` is None) round-robin over ``usernames``.

    Each item ends with ``overlap`` assignments of ``kind`` (existing ones count, so running
    it again adds nothing). Reviewers are never given an item they wrote or anchored; an item
    no listed reviewer may review is reported in ``skipped``.
    """
    if kind not in AssignmentKind.values:
        raise InvalidInput(
            f"kind must be one of {', '.join(AssignmentKind.values)}, got {kind!r}", field="kind"
        )
    users = _members_for(evalset, usernames, kind)
    if not 1 <= overlap <= len(users):
        raise InvalidInput(
            f"overlap must be between 1 and the number of people listed ({len(users)}), "
            f"got {overlap}",
            field="overlap",
        )
    if kind == AssignmentKind.REVIEW and overlap != 1:
        raise InvalidInput("overlap is for annotation; each item needs one reviewer", "overlap")
    items = _items_for(evalset, item_ids)
    existing: dict[int, set[int]] = {}
    for item_pk, user_pk in ItemAssignment.objects.filter(item__in=items, kind=kind).values_list(
        "item", "user"
    ):
        existing.setdefault(item_pk, set()).add(user_pk)

    created: list[ItemAssignment] = []
    skipped: list[dict] = []
    cursor = 0
    who_wrote = review_selectors.writers_of(items) if kind == AssignmentKind.REVIEW else {}
    for item in items:
        have = existing.get(item.pk, set())
        needed = overlap - len(have)
        barred = who_wrote.get(item.pk, set())
        tried = 0
        while needed > 0 and tried < len(users):
            user = users[cursor % len(users)]
            cursor += 1
            tried += 1
            if user.pk in have or user.pk in barred:
                continue
            created.append(ItemAssignment(item=item, user=user, kind=kind, assigned_by=by))
            have.add(user.pk)
            needed -= 1
        if needed > 0:
            reason = (
                "every listed reviewer wrote or anchored it"
                if kind == AssignmentKind.REVIEW
                else f"only {len(have)} of the listed people are free for it"
            )
            skipped.append({"item": item.item_id, "reason": reason})
    ItemAssignment.objects.bulk_create(created)
    by_item: dict[int, list[ItemAssignment]] = {}
    for assignment in created:
        by_item.setdefault(assignment.item.pk, []).append(assignment)
    for assignments in by_item.values():
        item = assignments[0].item
        record(
            item=item,
            kind=EventKind.ASSIGNED,
            actor=by,
            data={"kind": kind, "users": [a.user.username for a in assignments]},
            row_version=item.row_version,
        )
        notify(
            users=[a.user for a in assignments],
            item=item,
            kind=NotificationKind.ASSIGNED
            if kind == AssignmentKind.ANNOTATE
            else NotificationKind.REVIEW,
            actor=by,
        )
        if kind == AssignmentKind.ANNOTATE and item.assignee_id is None:
            # Keep the item's single assignee (the home page's "assigned to you") in step;
            # not a content change, so the row version stays.
            EvalItem.objects.filter(pk=item.pk, assignee__isnull=True).update(
                assignee=assignments[0].user
            )
    return {"created": created, "skipped": skipped}


@transaction.atomic
def assignment_delete(*, assignment: ItemAssignment, by) -> None:
    item = assignment.item
    record(
        item=item,
        kind=EventKind.UNASSIGNED,
        actor=by,
        data={"kind": assignment.kind, "users": [assignment.user.username]},
    )
    if assignment.kind == AssignmentKind.ANNOTATE:
        EvalItem.objects.filter(pk=item.pk, assignee=assignment.user_id).update(assignee=None)
    assignment.delete()
