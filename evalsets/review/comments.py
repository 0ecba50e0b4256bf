"""Comments on an item or one of its anchors, and replies; each is also an audit entry."""

from __future__ import annotations

from django.db import transaction

from evalsets.errors import InvalidInput
from evalsets.models import Comment, EvalItem, EventKind, GoldAnchor, NotificationKind
from evalsets.review.audit import record
from evalsets.review.inbox import notify

MAX_COMMENT_CHARS = 10_000


def check_body(body: str | None, *, field: str, what: str) -> str:
    """The stripped body of a comment a decision needs (``what``), or 400 saying why not."""
    body = (body or "").strip()
    if not body:
        raise InvalidInput(f"{what} needs a comment saying what to change", field=field)
    if len(body) > MAX_COMMENT_CHARS:
        raise InvalidInput(
            f"a comment is at most {MAX_COMMENT_CHARS} characters; this one has {len(body)}",
            field=field,
        )
    return body


def comment_create(
    *,
    item: EvalItem,
    user,
    body: str,
    anchor: GoldAnchor | None = None,
    parent: Comment | None = None,
    kind: str = "comment",
) -> Comment:
    """Write a comment the caller has checked, and its audit entry."""
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
    if parent is not None:
        notify(users=[parent.author], item=item, kind=NotificationKind.REPLY, actor=user, text=body)
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
    return comment_create(item=item, user=user, body=body, anchor=anchor, parent=parent)
