"""Find background work that was lost and queue it again.

Tasks are acknowledged late, so a worker that dies mid-task leaves its message to be
redelivered. A broker that restarts without persistence, or a whole worker host that is
killed, can still lose a message. Because every task is idempotent, the cure is simple: look
for work the database says is unfinished and has not moved for a while, and queue it again.
Workers run this when they start, so restarting a worker completes what was interrupted; an
operator can also run ``manage.py sweep``.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, Q
from django.utils import timezone

from evalsets.models import GoldAnchor, ParseStatus, ParseVersion


def stale_after() -> timedelta:
    """Work untouched this long is taken to be lost (``GROUNDWORK_SWEEP_STALE_S``).

    A running parse writes its progress at least once a page, so a live one is never stale.
    """
    return timedelta(seconds=settings.GROUNDWORK_SWEEP_STALE_S)


def stale_parses(older_than: timedelta | None = None) -> list[int]:
    cutoff = timezone.now() - (older_than or stale_after())
    return list(
        ParseVersion.objects.filter(
            status__in=[ParseStatus.QUEUED, ParseStatus.PARSING], updated_at__lt=cutoff
        ).values_list("pk", flat=True)
    )


def parses_missing_resolutions() -> list[int]:
    """Ready parses with fewer resolution rows than their document has anchors."""
    ready = (
        ParseVersion.objects.filter(status=ParseStatus.READY)
        .annotate(rows=Count("resolutions", distinct=True))
        .annotate(
            anchors=Count(
                "document__anchors",
                filter=Q(document__anchors__isnull=False),
                distinct=True,
            )
        )
        .filter(rows__lt=F("anchors"))
    )
    return list(ready.values_list("pk", flat=True))


def sweep(older_than: timedelta | None = None) -> dict[str, int]:
    """Queue again every stale parse and every parse with anchors left unresolved."""
    from evalsets import tasks

    parses = stale_parses(older_than)
    for pk in parses:
        tasks.parse_version.delay(pk)
    unresolved = parses_missing_resolutions()
    for pk in unresolved:
        tasks.resolve_parse.delay(pk)
    return {"parses": len(parses), "resolutions": len(unresolved)}


def pending_summary() -> dict[str, int]:
    """What is waiting in the background, for pages and the API to show."""
    return {
        "parses_queued": ParseVersion.objects.filter(status=ParseStatus.QUEUED).count(),
        "parses_running": ParseVersion.objects.filter(status=ParseStatus.PARSING).count(),
        "parses_missing_resolutions": len(parses_missing_resolutions()),
        "anchors_waiting_for_their_file": GoldAnchor.objects.filter(document__isnull=True).count(),
    }
