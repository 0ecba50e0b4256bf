"""Review and collaboration services: workflow transitions, four eyes, comments, the audit
trail and assignments. Writes only: what pages and the API read about reviews (history,
changes since a version, an item's writers, my queue) is in ``evalsets.selectors``.

Every transition is one conditional ``UPDATE`` that names the state it leaves (and, for a
reviewer's decision, the ``row_version`` they looked at), so two reviewers racing get exactly
one winner; the other gets a 409 that says why. The audit trail is written in the same
transaction as the change it describes, so it can never disagree with the data.

What editing does, by state: a ``draft``, ``submitted`` or ``changes_requested`` item can be
edited (an edit bumps ``row_version``, so a reviewer who opened the older version cannot
approve it); an ``approved`` item cannot: edits, anchor changes and deleting it are refused
with 409 until an owner reopens it, which sends it back to ``draft`` and out of any future
release.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evalsets import access, selectors
from evalsets.errors import Conflict, Forbidden, InvalidInput
from evalsets.models import (
    AssignmentKind,
    Comment,
    EvalItem,
    EvalSet,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemEvent,
    ItemState,
    Membership,
)

User = get_user_model()

MAX_COMMENT_CHARS = 10_000


# -- the audit trail --------------------------------------------------------------------------


def _username(user) -> str:
    return getattr(user, "username", "") or ""


def _current_row_version(item: EvalItem) -> int | None:
    return EvalItem.objects.filter(pk=item.pk).values_list("row_version", flat=True).first()


def record(
    *,
    item: EvalItem,
    kind: str,
    actor=None,
    reason: str = "",
    from_state: str = "",
    to_state: str = "",
    anchor_uuid=None,
    data: dict | None = None,
    row_version: int | None = None,
    deleted: bool = False,
) -> ItemEvent:
    """Append one event to ``item``'s history (inside the caller's transaction)."""
    evalset = item.evalset
    data = dict(data or {})
    if row_version is None and not deleted:
        row_version = _current_row_version(item)
    if row_version is not None:
        data["row_version"] = row_version
    return ItemEvent.objects.create(
        workspace_id=evalset.workspace_id,
        evalset_slug=evalset.slug,
        item_key=item.item_id,
        item=item,
        kind=kind,
        actor=actor if getattr(actor, "pk", None) else None,
        actor_name=_username(actor),
        reason=reason or "",
        from_state=from_state,
        to_state=to_state,
        anchor_uuid=anchor_uuid,
        data=data,
    )


def _plain(value: Any) -> Any:
    """A field value as JSON: users by username."""
    if isinstance(value, User):
        return value.username
    return value


def record_item_created(*, item: EvalItem, user) -> None:
    record(
        item=item,
        kind=EventKind.CREATED,
        actor=user,
        to_state=item.state,
        data={"after": {f: getattr(item, f) for f in ("question", "qtype", "answer", "meta")}},
        row_version=item.row_version,
    )


def record_item_edited(*, item: EvalItem, user, before: dict, fields: Iterable[str]) -> None:
    """``before`` holds the values read before the edit; ``item`` is the refreshed row."""
    changes = {}
    for name in fields:
        after = _plain(getattr(item, name))
        if before.get(name) != after:
            changes[name] = {"before": before.get(name), "after": after}
    if changes:
        record(
            item=item,
            kind=EventKind.EDITED,
            actor=user,
            data={"changes": changes},
            row_version=item.row_version,
        )


def snapshot(item: EvalItem, fields: Iterable[str]) -> dict:
    return {name: _plain(getattr(item, name)) for name in fields}


def record_item_deleted(*, item: EvalItem, user) -> None:
    record(
        item=item,
        kind=EventKind.DELETED,
        actor=user,
        from_state=item.state,
        data={
            "before": {
                "question": item.question,
                "qtype": item.qtype,
                "answer": item.answer,
                "state": item.state,
                "anchors": [
                    {"id": str(a.public_id), "source_id": a.source_id, "quote": a.quote}
                    for a in item.anchors.all()
                ],
            }
        },
        deleted=True,
    )


def record_anchor(*, anchor: GoldAnchor, kind: str, user, **data: Any) -> None:
    record(
        item=anchor.item,
        kind=kind,
        actor=user,
        anchor_uuid=anchor.public_id,
        data={"source_id": anchor.source_id, "quote": anchor.quote, **data},
    )


# -- editing rules -----------------------------------------------------------------------------


def check_editable(item: EvalItem, change: str = "edited") -> None:
    """Refuse (409) to change or delete an approved item, whoever asks; lock its row so an
    approval waits for us. ``change`` says what was refused ("edited", "deleted")."""
    state = (
        EvalItem.objects.select_for_update()
        .filter(pk=item.pk)
        .values_list("state", flat=True)
        .first()
    )
    if state == ItemState.APPROVED:
        raise Conflict(
            f"eval item {item.item_id!r} is approved; an owner must reopen it before it is "
            f"{change} (reopening takes it out of future releases until it is approved again)",
            field="state",
            extra={"state": state},
        )


# -- four eyes ---------------------------------------------------------------------------------


def check_four_eyes(item: EvalItem, user) -> None:
    if user.pk in selectors.writers(item):
        raise Forbidden(
            f"you wrote or anchored eval item {item.item_id!r}; someone else must approve it "
            "(four eyes)",
            field="item",
        )


# -- transitions -------------------------------------------------------------------------------

_LEGAL = {
    "submit": ((ItemState.DRAFT, ItemState.CHANGES_REQUESTED), ItemState.SUBMITTED),
    "approve": ((ItemState.SUBMITTED,), ItemState.APPROVED),
    "request_changes": ((ItemState.SUBMITTED,), ItemState.CHANGES_REQUESTED),
    "reopen": ((ItemState.APPROVED,), ItemState.DRAFT),
}
_EVENT = {
    "submit": EventKind.SUBMITTED,
    "approve": EventKind.APPROVED,
    "request_changes": EventKind.CHANGES_REQUESTED,
    "reopen": EventKind.REOPENED,
}


_ONLY = {
    "submit": "only a draft item or one with changes requested can be submitted",
    "approve": "only a submitted item can be approved",
    "request_changes": "only a submitted item can be sent back for changes",
    "reopen": "only an approved item can be reopened",
}


def _refuse(item: EvalItem, action: str, row_version: int | None) -> None:
    """The conditional update changed nothing: say why, as a 409."""
    allowed, _ = _LEGAL[action]
    current = EvalItem.objects.filter(pk=item.pk).first()
    if current is None:
        raise Conflict(f"eval item {item.item_id!r} was deleted by someone else")
    if current.state not in allowed:
        raise Conflict(
            f"item {item.item_id!r} is {current.state}; {_ONLY[action]}",
            field="state",
            extra={"state": current.state, "current_row_version": current.row_version},
        )
    raise Conflict(
        f"item {item.item_id!r} changed since you opened it (you saw row_version {row_version}, "
        f"it is now {current.row_version}); look at it again before you decide",
        field="row_version",
        extra={
            "state": current.state,
            "current_row_version": current.row_version,
            "changed": selectors.changes_since(current, row_version or 0),
        },
    )


def _transition(
    *,
    item: EvalItem,
    user,
    action: str,
    row_version: int | None = None,
    reason: str = "",
    anchor_uuid=None,
) -> EvalItem:
    """Move ``item`` along one legal edge with a conditional update, and record it."""
    allowed, target = _LEGAL[action]
    for source in allowed:
        query = EvalItem.objects.filter(pk=item.pk, state=source)
        if row_version is not None:
            query = query.filter(row_version=row_version)
        if query.update(state=target, row_version=F("row_version") + 1, updated_at=timezone.now()):
            break
    else:
        _refuse(item, action, row_version)
    item.refresh_from_db()
    record(
        item=item,
        kind=_EVENT[action],
        actor=user,
        reason=reason,
        from_state=source,
        to_state=target,
        anchor_uuid=anchor_uuid,
        row_version=item.row_version,
    )
    return item


def _open_assignments(item: EvalItem, kind: str):
    return ItemAssignment.objects.filter(item=item, kind=kind, done_at__isnull=True)


@transaction.atomic
def item_submit(
    *, item: EvalItem, user, row_version: int | None = None, comment: str = ""
) -> tuple[EvalItem, list[str]]:
    """Send ``item`` for review. Returns ``(item, waiting_for)``.

    With overlap (several annotators assigned), an assigned annotator's submit closes their
    own part; the item moves to ``submitted`` when the last of them submits, and until then
    ``waiting_for`` names the others. Anyone not assigned (an owner, say) submits outright.
    """
    allowed, _ = _LEGAL["submit"]
    current = EvalItem.objects.select_for_update().filter(pk=item.pk).first()
    if current is None or current.state not in allowed:
        _refuse(item, "submit", row_version)
    mine = _open_assignments(item, AssignmentKind.ANNOTATE).filter(user=user)
    was_assigned = ItemAssignment.objects.filter(
        item=item, kind=AssignmentKind.ANNOTATE, user=user
    ).exists()
    others = _open_assignments(item, AssignmentKind.ANNOTATE).exclude(user=user)
    if was_assigned and others.exists():
        if mine.update(done_at=timezone.now()):
            record(item=item, kind=EventKind.ANNOTATION_DONE, actor=user, reason=comment)
        waiting = sorted(others.values_list("user__username", flat=True))
        item.refresh_from_db()
        return item, waiting
    item = _transition(
        item=item, user=user, action="submit", row_version=row_version, reason=comment
    )
    now = timezone.now()
    _open_assignments(item, AssignmentKind.ANNOTATE).update(done_at=now)
    # A resubmitted item is back in its reviewers' queues.
    ItemAssignment.objects.filter(item=item, kind=AssignmentKind.REVIEW).update(done_at=None)
    if comment:
        _comment_create(item=item, user=user, body=comment, kind="submitted")
    return item, []


@transaction.atomic
def item_approve(*, item: EvalItem, user, row_version: int, comment: str = "") -> EvalItem:
    check_four_eyes(item, user)
    item = _transition(
        item=item, user=user, action="approve", row_version=row_version, reason=comment
    )
    _open_assignments(item, AssignmentKind.REVIEW).filter(user=user).update(done_at=timezone.now())
    if comment:
        _comment_create(item=item, user=user, body=comment, kind="approved")
    return item


@transaction.atomic
def item_approve_imported(
    *, item: EvalItem, user, filename: str, reviewed_by: str = "", reviewed_at: str = ""
) -> EvalItem:
    """Approve ``item`` because the file an owner imported says it was reviewed.

    A release carries each approved item's review (context-grid's ``meta.reviewed``, with
    ``reviewed_by`` and ``reviewed_at``); importing it back restores the approval from any
    state instead of leaving the item a draft. The audit entry says the approval came from
    the import, by whom and when the file says it was reviewed.
    """
    current = EvalItem.objects.select_for_update().filter(pk=item.pk).first()
    if current is None:
        raise Conflict(f"eval item {item.item_id!r} was deleted by someone else")
    if current.state == ItemState.APPROVED:
        return current
    before = current.state
    EvalItem.objects.filter(pk=item.pk).update(
        state=ItemState.APPROVED, row_version=F("row_version") + 1, updated_at=timezone.now()
    )
    current.refresh_from_db()
    who = f" by {reviewed_by}" if reviewed_by else ""
    when = f" at {reviewed_at}" if reviewed_at else ""
    record(
        item=current,
        kind=EventKind.APPROVED,
        actor=user,
        reason=f"approved by importing {filename}, which says it was reviewed{who}{when}",
        from_state=before,
        to_state=ItemState.APPROVED,
        data={"import": filename, "reviewed_by": reviewed_by, "reviewed_at": reviewed_at},
        row_version=current.row_version,
    )
    return current


@transaction.atomic
def item_request_changes(
    *, item: EvalItem, user, row_version: int, comment: str, anchor: GoldAnchor | None = None
) -> EvalItem:
    comment = _check_body(comment, field="comment", what="a request for changes")
    if anchor is not None and anchor.item_id != item.pk:
        raise InvalidInput("that anchor belongs to another item", field="anchor")
    item = _transition(
        item=item,
        user=user,
        action="request_changes",
        row_version=row_version,
        reason=comment,
        anchor_uuid=anchor.public_id if anchor else None,
    )
    now = timezone.now()
    _open_assignments(item, AssignmentKind.REVIEW).filter(user=user).update(done_at=now)
    # Back in the annotators' queues.
    ItemAssignment.objects.filter(item=item, kind=AssignmentKind.ANNOTATE).update(done_at=None)
    _comment_create(item=item, user=user, body=comment, anchor=anchor, kind="changes_requested")
    return item


@transaction.atomic
def item_reopen(*, item: EvalItem, user, reason: str = "") -> EvalItem:
    """Send an approved item back to draft; it leaves future releases until approved again."""
    item = _transition(item=item, user=user, action="reopen", reason=reason)
    if reason:
        _comment_create(item=item, user=user, body=reason, kind="reopened")
    return item


# -- comments ----------------------------------------------------------------------------------


def _check_body(body: str | None, *, field: str, what: str) -> str:
    body = (body or "").strip()
    if not body:
        raise InvalidInput(f"{what} needs a comment saying what to change", field=field)
    if len(body) > MAX_COMMENT_CHARS:
        raise InvalidInput(
            f"a comment is at most {MAX_COMMENT_CHARS} characters; this one has {len(body)}",
            field=field,
        )
    return body


def _comment_create(
    *,
    item: EvalItem,
    user,
    body: str,
    anchor: GoldAnchor | None = None,
    parent: Comment | None = None,
    kind: str = "comment",
) -> Comment:
    comment = Comment.objects.create(
        item=item,
        anchor=anchor,
        anchor_uuid=anchor.public_id if anchor else None,
        parent=parent,
        author=user,
        body=body,
        kind=kind,
    )
    record(
        item=item,
        kind=EventKind.COMMENTED,
        actor=user,
        reason=body,
        anchor_uuid=comment.anchor_uuid,
        data={
            "comment": str(comment.public_id),
            "parent": str(parent.public_id) if parent else None,
            "comment_kind": kind,
        },
    )
    return comment


@transaction.atomic
def comment_add(
    *,
    item: EvalItem,
    user,
    body: str,
    anchor: GoldAnchor | None = None,
    parent: Comment | None = None,
) -> Comment:
    """A comment on ``item`` (or on one of its anchors), optionally answering ``parent``."""
    body = (body or "").strip()
    if not body:
        raise InvalidInput("a comment needs some text", field="body")
    if len(body) > MAX_COMMENT_CHARS:
        raise InvalidInput(
            f"a comment is at most {MAX_COMMENT_CHARS} characters; this one has {len(body)}",
            field="body",
        )
    if anchor is not None and anchor.item_id != item.pk:
        raise InvalidInput(
            f"that anchor is not one of eval item {item.item_id!r}'s anchors", field="anchor"
        )
    if parent is not None:
        if parent.item_id != item.pk:
            raise InvalidInput(
                f"a reply must answer a comment on eval item {item.item_id!r}", field="parent"
            )
        if anchor is None and parent.anchor_id is not None:
            anchor = parent.anchor
    return _comment_create(item=item, user=user, body=body, anchor=anchor, parent=parent)


# -- assignment --------------------------------------------------------------------------------


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
    who_wrote = selectors.writers_of(items) if kind == AssignmentKind.REVIEW else {}
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
