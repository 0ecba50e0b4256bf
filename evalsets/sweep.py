"""Find background work that was lost and queue it again.

Tasks are acknowledged late, so a worker that dies mid-task leaves its message to be
redelivered. A broker that restarts without persistence, or a whole worker host that is
killed, can still lose a message. Because every task is idempotent, the cure is simple: look
for work the database says is unfinished and has not moved for a while, and queue it again.
Workers run this when they start, so restarting a worker completes what was interrupted, and
again when they reconnect to a broker that went away (``tasks.SweepOnReconnect``); an
operator can also run ``manage.py sweep``. Work that could not even be published because the
broker was down (``enqueue``) is found the same way.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from evalsets.models import AnchorResolution, GoldAnchor, ParseStatus, ParseVersion

logger = logging.getLogger(__name__)


def enqueue(task, *args) -> bool:
    """Publish ``task``; if the broker cannot be reached, log it and leave it to the sweep.

    Called after the write that needs the work has committed, so refusing the request then
    would only report a saved change as failed (and invite a duplicate on retry). The
    database still says the work is unfinished, so ``sweep`` queues it again once the broker
    is back and ``pending_summary`` shows it meanwhile.
    """
    try:
        task.delay(*args)
    except BrokerUnreachable as exc:
        logger.warning(
            "could not queue %s%r (%s); the sweep will queue it again", task.name, args, exc
        )
        return False
    return True


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


def _count(queryset, key: str) -> Coalesce:
    counted = queryset.order_by().values(key).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def _missing_resolutions(workspace=None):
    """Ready parses with fewer resolution rows than their document has anchors.

    Two counting subqueries rather than two joined ``Count``s: joining both relations would
    multiply each parse's rows by anchors x resolutions (10,000 rows a parse for a document
    with 100 anchors): 8 s against 0.85 s for 3,000 parses and 100,000 anchors
    (bench/resolve_throughput_bench.py), and every worker runs this when it starts.
    """
    ready = ParseVersion.objects.filter(status=ParseStatus.READY)
    if workspace is not None:
        ready = ready.filter(document__workspace=workspace)
    return (
        ready.annotate(
            rows=_count(AnchorResolution.objects.filter(parse=OuterRef("pk")), "parse"),
            anchors=_count(GoldAnchor.objects.filter(document=OuterRef("document")), "document"),
        )
        .filter(rows__lt=F("anchors"))
        .order_by()
    )


def parses_missing_resolutions(workspace=None) -> list[int]:
    """Ready parses with fewer resolution rows than their document has anchors."""
    return list(_missing_resolutions(workspace).values_list("pk", flat=True))


def stale_releases(older_than: timedelta | None = None) -> list[int]:
    """Releases still queued after the stale interval (their build message was lost).

    A release being built is left alone: ``release_claim`` takes one over only once it has
    not moved for ``STALE_BUILD_SECONDS``, and a redelivered build does that itself.
    """
    from evalsets.models_release import Release, ReleaseStatus

    cutoff = timezone.now() - (older_than or stale_after())
    return list(
        Release.objects.filter(status=ReleaseStatus.QUEUED, updated_at__lt=cutoff).values_list(
            "pk", flat=True
        )
    )


def sweep(older_than: timedelta | None = None) -> dict[str, int]:
    """Queue again every stale parse and release, and every parse with anchors unresolved."""
    from evalsets import tasks
    from evalsets.release_tasks import build_release

    parses = stale_parses(older_than)
    for pk in parses:
        tasks.parse_version.delay(pk)
    unresolved = parses_missing_resolutions()
    for pk in unresolved:
        tasks.resolve_parse.delay(pk)
    releases = stale_releases(older_than)
    for pk in releases:
        build_release.delay(pk)
    return {"parses": len(parses), "resolutions": len(unresolved), "releases": len(releases)}


def pending_summary(workspace=None) -> dict[str, int]:
    """What is waiting in the background (in one workspace, or everywhere), for pages,
    the API and ``manage.py sweep`` to show."""
    from evalsets.models_release import Release, ReleaseStatus

    parses = ParseVersion.objects.all()
    anchors = GoldAnchor.objects.all()
    releases = Release.objects.all()
    if workspace is not None:
        parses = parses.filter(document__workspace=workspace)
        anchors = anchors.filter(item__evalset__workspace=workspace)
        releases = releases.filter(evalset__workspace=workspace)
    missing = list(_missing_resolutions(workspace).values_list("anchors", "rows"))
    return {
        "parses_queued": parses.filter(status=ParseStatus.QUEUED).count(),
        "parses_running": parses.filter(status=ParseStatus.PARSING).count(),
        "parses_missing_resolutions": len(missing),
        "resolutions_missing": sum(anchors - rows for anchors, rows in missing),
        "anchors_waiting_for_their_file": anchors.filter(document__isnull=True).count(),
        "releases_queued": releases.filter(status=ReleaseStatus.QUEUED).count(),
        "releases_building": releases.filter(status=ReleaseStatus.BUILDING).count(),
    }
