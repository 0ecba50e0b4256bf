"""The audit trail: one append-only ``ItemEvent`` per transition, edit, anchor change,
comment and assignment, with who, when and why.

Every writer calls ``record`` inside the transaction of the change it describes, so the trail
can never disagree with the data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model

from evalsets import origin, written
from evalsets.models import EvalItem, EventKind, GoldAnchor, ItemEvent

User = get_user_model()


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
    event = ItemEvent(
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
        tab=origin.current_tab(),
    )
    written.insert(event)
    return event


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


def record_anchor(
    *, anchor: GoldAnchor, kind: str, user, row_version: int | None = None, **data: Any
) -> None:
    """``row_version``: the item's version after the change, when the caller knows it (it
    locked the row); read back otherwise."""
    record(
        item=anchor.item,
        kind=kind,
        actor=user,
        anchor_uuid=anchor.public_id,
        data={"source_id": anchor.source_id, "quote": anchor.quote, **data},
        row_version=row_version,
    )
