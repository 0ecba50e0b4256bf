"""The inbox's writes: notify the people a change asks for, and their "seen it" marks.

The workflow, comment and assignment services call ``notify`` inside the transaction of the
change itself, so a refused change leaves no notification behind and a committed one always
has its notification. Nobody is notified of what they did themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import transaction
from django.utils import timezone

from evalsets.models import EvalItem, Notification

TEXT_CHARS = 500


def notify(*, users: Iterable, item: EvalItem, kind: str, actor=None, text: str = "") -> int:
    """One unread notification of ``kind`` about ``item`` for each of ``users`` but ``actor``.

    ``users`` may hold users or None (an item without an author, say) and repeat people.
    """
    actor_pk = getattr(actor, "pk", None)
    recipients = {}
    for user in users:
        if user is not None and user.pk is not None and user.pk != actor_pk:
            recipients[user.pk] = user
    if not recipients:
        return 0
    evalset = item.evalset
    Notification.objects.bulk_create(
        Notification(
            recipient=user,
            workspace_id=evalset.workspace_id,
            kind=kind,
            evalset_slug=evalset.slug,
            item_key=item.item_id,
            item=item,
            actor=actor if actor_pk else None,
            actor_name=getattr(actor, "username", "") or "",
            text=(text or "")[:TEXT_CHARS],
        )
        for user in recipients.values()
    )
    return len(recipients)


@transaction.atomic
def notifications_mark_read(*, user, ids: Sequence[str] | None = None) -> int:
    """Mark ``user``'s notifications read: those with these public ids, or all when None.

    Another person's notification is never touched (their ids are simply not found here).
    Returns how many were unread and are read now.
    """
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if ids is not None:
        unread = unread.filter(public_id__in=list(ids))
    return unread.update(read_at=timezone.now())
