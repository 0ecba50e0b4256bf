"""Adjudication: a reviewer settles an item several annotators worked on blind.

Once every annotator assigned to an overlapped item has finished (the item is ``submitted``),
a reviewer or owner who did not annotate it sees the versions side by side (``versions``:
each annotator's anchors, with their agreement on this item) and either **picks** one
annotator's version (every other anchor is removed) or **merges** (keeps a chosen subset of
anchors from any versions). Either way it is one transaction: the item row is locked, the
anchors not kept are deleted, the item is marked adjudicated (which lifts the blind rule,
``evalsets.review.blind``) and one ``adjudicated`` event in the audit trail lists what was kept
and what was removed (quote, grade, page, who made it). A second adjudication of the same
item, or one from a reviewer who saw an older row version, is a 409 and changes nothing.

The item stays ``submitted``: it goes on through the normal review (approve, or request
changes). Adjudicating does not make the reviewer one of the item's writers, so the same
reviewer may approve it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.db import transaction
from django.db.models import F, Prefetch
from django.utils import timezone

from evalsets.anchoring.selectors import PARSE_BULK
from evalsets.errors import Conflict, Forbidden, InvalidInput
from evalsets.models import (
    AnchorResolution,
    AssignmentKind,
    EvalItem,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemState,
)
from evalsets.review import blind
from evalsets.review.audit import record
from evalsets.review.dashboard import item_agreement, versions_record

#: The most anchor ids one merge may name (an item with more is not adjudicated by hand).
MAX_KEEP = 500


def _annotators(item: EvalItem) -> list[ItemAssignment]:
    return list(
        ItemAssignment.objects.filter(item=item, kind=AssignmentKind.ANNOTATE)
        .select_related("user")
        .order_by("user__username")
    )


def _anchors(item: EvalItem) -> list[GoldAnchor]:
    """The item's anchors, each with who made it and its resolutions (for agreement)."""
    resolutions = AnchorResolution.objects.select_related("parse").defer(
        "detail", *(f"parse__{name}" for name in PARSE_BULK)
    )
    return list(
        GoldAnchor.objects.filter(item=item)
        .select_related("created_by")
        .prefetch_related(Prefetch("resolutions", queryset=resolutions))
        .order_by("created_at", "id")
    )


def refusal(item: EvalItem, user, annotators: list[ItemAssignment]) -> str | None:
    """Why ``user`` cannot adjudicate ``item`` now (None: they can); the API's words."""
    if len(annotators) < blind.OVERLAP:
        return f"item {item.item_id!r} has one annotator; only an overlapped item is adjudicated"
    if item.adjudicated_at is not None:
        return f"item {item.item_id!r} was already adjudicated"
    if any(a.user_id == user.pk for a in annotators):
        return f"you annotated item {item.item_id!r}; someone who did not must adjudicate it"
    waiting = sorted(a.user.username for a in annotators if a.done_at is None)
    if waiting:
        return f"item {item.item_id!r} waits for {', '.join(waiting)} to finish"
    if item.state != ItemState.SUBMITTED:
        return f"item {item.item_id!r} is {item.state}; only a submitted item is adjudicated"
    return None


def _anchor_row(anchor: GoldAnchor) -> dict:
    return {
        "id": str(anchor.public_id),
        "quote": anchor.quote,
        "source_id": anchor.source_id,
        "page": anchor.page_hint,
        "grade": anchor.grade,
        "by": anchor.created_by.username if anchor.created_by_id else None,
    }


def versions(item: EvalItem, *, user) -> dict:
    """The item's versions side by side: each annotator's anchors (quote, page, grade), the
    anchors nobody assigned made (``others``), their agreement on this item and ``refusal``
    (why this user cannot adjudicate it now; None when they can)."""
    annotators = _annotators(item)
    anchors = _anchors(item)
    by_user: dict[int, list[dict]] = {a.user_id: [] for a in annotators}
    others = []
    for anchor in anchors:
        (by_user.get(anchor.created_by_id, others)).append(_anchor_row(anchor))
    return {
        "item": item.item_id,
        "state": item.state,
        "row_version": item.row_version,
        "adjudicated_at": item.adjudicated_at.isoformat() if item.adjudicated_at else None,
        "versions": [
            {
                "annotator": a.user.username,
                "finished": a.done_at is not None,
                "anchors": by_user[a.user_id],
            }
            for a in annotators
        ],
        "others": others,
        "agreement": item_agreement([(a.user_id, a.user.username) for a in annotators], anchors)
        if len(annotators) >= blind.OVERLAP
        else None,
        "refusal": refusal(item, user, annotators),
    }


def _kept_ids(
    anchors: list[GoldAnchor], annotators: list[ItemAssignment], pick: str | None, keep
) -> set[uuid.UUID]:
    """The anchors to keep: every anchor of annotator ``pick``, or the ids in ``keep``."""
    if (pick is None) == (keep is None):
        raise InvalidInput("give either 'pick' (an annotator) or 'keep' (anchor ids)", field="pick")
    if pick is not None:
        chosen = next((a for a in annotators if a.user.username == pick), None)
        if chosen is None:
            names = ", ".join(a.user.username for a in annotators)
            raise InvalidInput(
                f"{pick!r} did not annotate this item (its annotators: {names})", field="pick"
            )
        return {a.public_id for a in anchors if a.created_by_id == chosen.user_id}
    return _checked_keep(anchors, keep)


def _checked_keep(anchors: list[GoldAnchor], keep: Sequence) -> set[uuid.UUID]:
    if len(keep) > MAX_KEEP:
        raise InvalidInput(
            f"'keep' names at most {MAX_KEEP} anchors, got {len(keep)}", field="keep"
        )
    known = {a.public_id for a in anchors}
    wanted, bad = set(), []
    for raw in keep:
        try:
            value = uuid.UUID(str(raw))
        except ValueError:
            bad.append(str(raw))
            continue
        if value in known:
            wanted.add(value)
        else:
            bad.append(str(raw))
    if bad:
        shown = ", ".join(repr(b[:64]) for b in bad[:10])
        raise InvalidInput(
            f"no anchor {shown} on this item", field="keep", extra={"unknown": bad[:10]}
        )
    return wanted


@transaction.atomic
def adjudicate(
    *,
    item: EvalItem,
    user,
    row_version: int,
    pick: str | None = None,
    keep: Sequence | None = None,
    reason: str = "",
) -> dict:
    """Settle ``item``: keep annotator ``pick``'s version, or the anchors in ``keep``; every
    other anchor is removed. One transaction; 409 when someone adjudicated or changed the item
    since ``row_version``. Returns ``{"kept": [...], "removed": [...]}`` (anchor rows)."""
    current = (
        EvalItem.objects.select_for_update().filter(pk=item.pk).select_related("evalset").first()
    )
    if current is None:
        raise Conflict(f"eval item {item.item_id!r} was deleted by someone else")
    annotators = _annotators(current)
    why = refusal(current, user, annotators)
    if why is not None:
        status = Forbidden if any(a.user_id == user.pk for a in annotators) else Conflict
        raise status(why, field="item", extra={"state": current.state})
    if current.row_version != row_version:
        raise Conflict(
            f"item {item.item_id!r} changed since you opened it (you saw row_version "
            f"{row_version}, it is now {current.row_version}); look at it again",
            field="row_version",
            extra={"current_row_version": current.row_version},
        )
    anchors = _anchors(current)
    kept_ids = _kept_ids(anchors, annotators, pick, keep)
    # The versions' agreement, before their anchors go: the dashboard still compares them.
    compared = versions_record([(a.user_id, a.user.username) for a in annotators], anchors)
    kept = [_anchor_row(a) for a in anchors if a.public_id in kept_ids]
    removed = [_anchor_row(a) for a in anchors if a.public_id not in kept_ids]
    GoldAnchor.objects.filter(item=current).exclude(public_id__in=kept_ids).delete()
    EvalItem.objects.filter(pk=current.pk).update(
        adjudicated_at=timezone.now(), row_version=F("row_version") + 1, updated_at=timezone.now()
    )
    current.refresh_from_db()
    record(
        item=current,
        kind=EventKind.ADJUDICATED,
        actor=user,
        reason=reason,
        data={"pick": pick, "kept": kept, "removed": removed, "versions": compared},
        row_version=current.row_version,
    )
    return {"item": current, "kept": kept, "removed": removed}
