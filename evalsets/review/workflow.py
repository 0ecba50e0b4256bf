"""The review workflow: what may be edited in which state, four eyes, and the transitions
``draft -> submitted -> approved`` or ``submitted -> changes_requested -> submitted``.

Every transition is one conditional ``UPDATE`` that names the state it leaves (and, for a
reviewer's decision, the ``row_version`` they looked at), so two reviewers racing get exactly
one winner; the other gets a 409 that says why. Each is recorded in the audit trail in the
same transaction.

What editing does, by state: a ``draft``, ``submitted`` or ``changes_requested`` item can be
edited (an edit bumps ``row_version``, so a reviewer who opened the older version cannot
approve it); an ``approved`` item cannot: edits, anchor changes and deleting it are refused
with 409 until an owner reopens it, which sends it back to ``draft`` and out of any future
release.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evalsets.errors import Conflict, Forbidden, InvalidInput
from evalsets.models import (
    AssignmentKind,
    EvalItem,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemState,
    NotificationKind,
)
from evalsets.review import selectors as review_selectors
from evalsets.review.audit import record
from evalsets.review.comments import check_body, comment_create
from evalsets.review.inbox import notify

# -- editing rules -----------------------------------------------------------------------------


def check_editable(item: EvalItem, change: str = "edited") -> int | None:
    """Refuse (409) to change or delete an approved item, whoever asks; lock its row so an
    approval waits for us. ``change`` says what was refused ("edited", "deleted"). Returns
    the locked row's version (None if the row is gone): nobody else changes it until the
    caller's transaction ends."""
    state, row_version = (
        EvalItem.objects.select_for_update()
        .filter(pk=item.pk)
        .values_list("state", "row_version")
        .first()
    ) or (None, None)
    if state == ItemState.APPROVED:
        raise Conflict(locked_message(item.item_id, change), field="state", extra={"state": state})
    return row_version


def locked_message(item_id: str, change: str = "edited") -> str:
    """Why an approved item refuses ``change``: the API's 409 and the page's disabled control."""
    return (
        f"eval item {item_id!r} is approved; an owner must reopen it before it is "
        f"{change} (reopening takes it out of future releases until it is approved again)"
    )


# -- four eyes ---------------------------------------------------------------------------------


def check_four_eyes(item: EvalItem, user) -> None:
    if user.pk in review_selectors.writers(item):
        raise Forbidden(four_eyes_message(item.item_id), field="item")


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


#: "item 'q1' <words>" in a refusal: people's words, not the stored value.
_STATE_WORDS = {
    ItemState.DRAFT: "is a draft",
    ItemState.SUBMITTED: "is submitted",
    ItemState.APPROVED: "is approved",
    ItemState.CHANGES_REQUESTED: "has changes requested",
}


def illegal_message(item_id: str, state: str, action: str) -> str | None:
    """Why ``action`` cannot move an item in ``state`` (None: it can), in the API's words."""
    allowed, _ = _LEGAL[action]
    if state in allowed:
        return None
    return f"item {item_id!r} {_STATE_WORDS[state]}; {_ONLY[action]}"


def refusals(item_id: str) -> dict[str, dict[str, str | None]]:
    """For each state, why each control on an item's pages is refused (None: allowed).

    Pages show a refused control disabled with this reason instead of offering it and
    letting the API refuse; the sentences are the API's own (``locked_message``,
    ``illegal_message``), so the rule and its wording live here once.
    """
    out: dict[str, dict[str, str | None]] = {}
    for state in ItemState.values:
        locked = state == ItemState.APPROVED
        out[state] = {
            "save": locked_message(item_id) if locked else None,
            "delete": locked_message(item_id, "deleted") if locked else None,
            **{action: illegal_message(item_id, state, action) for action in _LEGAL},
        }
    return out


def four_eyes_message(item_id: str) -> str:
    return f"you wrote or anchored eval item {item_id!r}; someone else must approve it (four eyes)"


def _refuse(item: EvalItem, action: str, row_version: int | None) -> None:
    """The conditional update changed nothing: say why, as a 409."""
    allowed, _ = _LEGAL[action]
    current = EvalItem.objects.filter(pk=item.pk).first()
    if current is None:
        raise Conflict(f"eval item {item.item_id!r} was deleted by someone else")
    if current.state not in allowed:
        raise Conflict(
            illegal_message(item.item_id, current.state, action),
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
            "changed": review_selectors.changes_since(current, row_version or 0),
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


def _assigned_users(item: EvalItem, kind: str) -> list:
    return [
        a.user for a in ItemAssignment.objects.filter(item=item, kind=kind).select_related("user")
    ]


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
    # A resubmitted item is back in its reviewers' queues, and in their inboxes.
    ItemAssignment.objects.filter(item=item, kind=AssignmentKind.REVIEW).update(done_at=None)
    notify(
        users=_assigned_users(item, AssignmentKind.REVIEW),
        item=item,
        kind=NotificationKind.REVIEW,
        actor=user,
        text=comment,
    )
    if comment:
        comment_create(item=item, user=user, body=comment, kind="submitted")
    return item, []


@transaction.atomic
def item_approve(*, item: EvalItem, user, row_version: int, comment: str = "") -> EvalItem:
    check_four_eyes(item, user)
    item = _transition(
        item=item, user=user, action="approve", row_version=row_version, reason=comment
    )
    _open_assignments(item, AssignmentKind.REVIEW).filter(user=user).update(done_at=timezone.now())
    if comment:
        comment_create(item=item, user=user, body=comment, kind="approved")
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
    comment = check_body(comment, field="comment", what="a request for changes")
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
    # Back in the annotators' queues; the author and the annotators are told why.
    ItemAssignment.objects.filter(item=item, kind=AssignmentKind.ANNOTATE).update(done_at=None)
    notify(
        users=[item.author, item.assignee, *_assigned_users(item, AssignmentKind.ANNOTATE)],
        item=item,
        kind=NotificationKind.CHANGES_REQUESTED,
        actor=user,
        text=comment,
    )
    comment_create(item=item, user=user, body=comment, anchor=anchor, kind="changes_requested")
    return item


@transaction.atomic
def item_reopen(*, item: EvalItem, user, reason: str = "") -> EvalItem:
    """Send an approved item back to draft; it leaves future releases until approved again."""
    item = _transition(item=item, user=user, action="reopen", reason=reason)
    if reason:
        comment_create(item=item, user=user, body=reason, kind="reopened")
    return item
