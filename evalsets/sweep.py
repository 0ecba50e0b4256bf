"""Find background work that was lost and queue it again.

Tasks are acknowledged late, so a worker that dies mid-task leaves its message to be
redelivered. A broker that restarts without persistence, or a whole worker host that is
killed, can still lose a message. Because every task is idempotent, the cure is simple: look
for work the database says is unfinished and has not moved for a while, and queue it again.
Workers run this when they start, so restarting a worker completes what was interrupted,
again when they reconnect to a broker that went away (``tasks.SweepOnReconnect``), and every
``sweep_period()`` while they run (``tasks.SweepPeriodically``); between those, every
``lease_sweep_period()`` they look only for leases whose holder died (``sweep_leases``), so a
parse, page range, resolution or release build whose worker was killed is taken over soon
after its lease expires; an operator can also run ``manage.py sweep``. Work
that could not even be published because the broker was down (``evalsets.queue``) is found
the same way.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from kombu.transport import resolve_transport

from evalsets import idempotency, queue
from evalsets.anchoring import resolution
from evalsets.documents import ingest
from evalsets.experiments import cells as experiment_cells
from evalsets.models import (
    AnchorResolution,
    CellStatus,
    Document,
    ExperimentCell,
    GoldAnchor,
    ParseRange,
    ParseStatus,
    ParseVersion,
    Passage,
    PendingImportLabel,
    PendingLabelStatus,
    Release,
    ReleaseStatus,
)
from evalsets.releases import services as releases_services
from evalsets.storage import stored_names


def stale_after() -> timedelta:
    """Work untouched this long is taken to be lost (``GROUNDWORK_SWEEP_STALE_S``).

    A running parse renews its lease (``ingest.lease_length``, at most half of this) four
    times a lease, so a live one is never taken for lost.
    """
    return timedelta(seconds=settings.GROUNDWORK_SWEEP_STALE_S)


def _cutoff(older_than: timedelta | None) -> datetime:
    """Work untouched since before this is lost (``older_than`` ago, zero included)."""
    return timezone.now() - (stale_after() if older_than is None else older_than)


def sweep_period() -> timedelta:
    """How often each worker sweeps while it runs: a quarter of the stale limit."""
    return max(stale_after() / 4, timedelta(seconds=0.5))


def lease_sweep_period() -> timedelta:
    """How often each worker looks for leases whose holder died: half a lease, so a killed
    worker's parse, range, resolution or release build is taken over within about one and
    a half leases (``ingest.lease_length``) rather than waiting for the next full sweep."""
    return max(ingest.lease_length() / 2, timedelta(seconds=0.5))


def stale_parses(older_than: timedelta | None = None) -> list[int]:
    """Parses still queued after the stale interval, and parses whose lease expired.

    ``older_than`` (the default stale limit, or what ``manage.py sweep`` was given) applies
    to queued parses; a parse being run is judged by its lease alone (``ingest``).
    """
    cutoff = _cutoff(older_than)
    queued = Q(status=ParseStatus.QUEUED, updated_at__lt=cutoff)
    return list(
        ParseVersion.objects.filter(queued | _abandoned_parses()).values_list("pk", flat=True)
    )


def _abandoned_parses() -> Q:
    return Q(status=ParseStatus.PARSING) & ingest.abandoned()


def _abandoned_ranges() -> Q:
    return Q(parse__status=ParseStatus.PARSING, status=ParseStatus.PARSING) & ingest.lease_expired()


def stale_ranges(older_than: timedelta | None = None) -> list[int]:
    """Page ranges of parses still being read that are queued after the stale interval, or
    whose lease expired: only those ranges are read again, not their whole parse."""
    cutoff = _cutoff(older_than)
    queued = Q(parse__status=ParseStatus.PARSING, status=ParseStatus.QUEUED, updated_at__lt=cutoff)
    return list(
        ParseRange.objects.filter(queued | _abandoned_ranges()).values_list("pk", flat=True)
    )


def _count(queryset, key: str) -> Coalesce:
    counted = queryset.order_by().values(key).annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def _missing_resolutions(workspace=None, anchored_before=None):
    """Ready parses with fewer resolution rows than their document has anchors (counting
    only anchors made before ``anchored_before``, when given).

    Two counting subqueries rather than two joined ``Count``s: joining both relations would
    multiply each parse's rows by anchors x resolutions (10,000 rows a parse for a document
    with 100 anchors): 8 s against 0.85 s for 3,000 parses and 100,000 anchors
    (bench/resolve_throughput_bench.py), and every worker runs this when it starts.
    """
    ready = ParseVersion.objects.filter(status=ParseStatus.READY)
    if workspace is not None:
        ready = ready.filter(document__workspace=workspace)
    anchors = GoldAnchor.objects.filter(document=OuterRef("document"))
    if anchored_before is not None:
        anchors = anchors.filter(created_at__lt=anchored_before)
    return (
        ready.annotate(
            rows=_count(AnchorResolution.objects.filter(parse=OuterRef("pk")), "parse"),
            anchors=_count(anchors, "document"),
        )
        .filter(rows__lt=F("anchors"))
        .order_by()
    )


def parses_missing_resolutions(workspace=None, older_than: timedelta | None = None) -> list[int]:
    """Ready parses with fewer resolution rows than their document has anchors (anchors
    made more than ``older_than`` ago, when given)."""
    before = None if older_than is None else timezone.now() - older_than
    return list(_missing_resolutions(workspace, before).values_list("pk", flat=True))


def documents_missing_resolutions(workspace=None, older_than: timedelta | None = None) -> list[int]:
    """Documents with a ready parse that lacks a row for some anchor (made more than
    ``older_than`` ago, when given): ``resolve_document`` computes only what is missing.

    A document whose resolving lease is live is left out: its holder resolves what it
    lacks, and a task queued beside it would only find the lease held and leave."""
    before = None if older_than is None else timezone.now() - older_than
    missing = (
        _missing_resolutions(workspace, before)
        .exclude(
            Exists(Document.objects.filter(resolution.being_resolved(), pk=OuterRef("document")))
        )
        .values_list("document", flat=True)
    )
    return sorted(set(missing))


def parses_missing_vectors(older_than: timedelta | None = None) -> list[int]:
    """With the embedding extra on: parses untouched since the cutoff whose passages lack
    vectors, because ``embed_passages`` was lost or they were indexed with the extra off."""
    if not settings.GROUNDWORK_SEARCH_EMBEDDINGS:
        return []
    return sorted(
        set(
            Passage.objects.filter(
                vector__isnull=True, parse__updated_at__lt=_cutoff(older_than)
            ).values_list("parse_id", flat=True)
        )
    )


def parses_missing_passages(older_than: timedelta | None = None) -> list[int]:
    """Ready reference parses with text and no passages, untouched since the cutoff: their
    ``index_parse`` was lost, or they were read before workspace search existed."""
    return list(
        ParseVersion.objects.filter(
            status=ParseStatus.READY,
            is_reference=True,
            text_length__gt=0,
            updated_at__lt=_cutoff(older_than),
        )
        .filter(~Exists(Passage.objects.filter(parse=OuterRef("pk"))))
        .values_list("pk", flat=True)
    )


def stale_releases(older_than: timedelta | None = None) -> list[int]:
    """Releases still queued after the stale interval (their build message was lost, or
    storage refused their files and they wait to be tried again), and releases whose
    builder stopped renewing them (its worker was killed mid-build): the build task's
    ``release_claim`` takes those over, and a redelivered build does the same. A ready or
    failed release is never among them: its files are final.
    """
    cutoff = _cutoff(older_than)
    queued = Q(status=ReleaseStatus.QUEUED, updated_at__lt=cutoff)
    return list(
        Release.objects.filter(queued | releases_services.abandoned_builds()).values_list(
            "pk", flat=True
        )
    )


def stale_experiment_cells(older_than: timedelta | None = None) -> list[int]:
    """Experiment cells still queued past the stale limit (their message was lost), and
    running ones whose worker died."""
    queued = Q(status=CellStatus.QUEUED, updated_at__lt=_cutoff(older_than))
    return _ids(ExperimentCell, queued | experiment_cells.abandoned())


def documents_with_labels_to_attach(older_than: timedelta | None = None) -> list[int]:
    """Documents whose reference parse is ready while imported spans still wait for it
    (their ``attach_pending_labels`` message was lost, or never sent: the broker was down)."""
    cutoff = _cutoff(older_than)
    waiting = PendingImportLabel.objects.filter(
        workspace=OuterRef("workspace"),
        source_id=OuterRef("source_id"),
        status=PendingLabelStatus.WAITING,
        updated_at__lt=cutoff,
    )
    return list(
        Document.objects.filter(
            Exists(waiting), parses__is_reference=True, parses__status=ParseStatus.READY
        )
        .distinct()
        .values_list("pk", flat=True)
    )


#: An uploaded file no document points at is removed once it is this old: long enough for
#: the upload that stored it to have committed (or given up).
ORPHAN_GRACE = timedelta(hours=1)


def orphan_files(older_than: timedelta | None = None) -> list[str]:
    """Uploaded files that no document points at, and parses' character-box files that no
    parse points at, untouched for ``older_than`` (default ``ORPHAN_GRACE``): left by an
    upload or a parse whose row was never written (or was written again with a new box
    file) and that could not remove its file itself (its process died, or an outer
    transaction rolled back)."""
    storage = Document._meta.get_field("file").storage
    cutoff = timezone.now() - (ORPHAN_GRACE if older_than is None else older_than)
    documents = Document.objects.exclude(file="").values_list("file", flat=True)
    boxes = ParseVersion.objects.exclude(char_boxes="").values_list("char_boxes", flat=True)
    return _unreferenced(storage, "documents", set(documents), cutoff) + [
        name
        for name in _unreferenced(storage, "parses", set(boxes), cutoff)
        if name.endswith(".boxes")
    ]


def _unreferenced(storage, folder: str, referenced: set[str], cutoff: datetime) -> list[str]:
    found = []
    for name in stored_names(folder, storage):
        if name in referenced:
            continue
        try:
            modified = storage.get_modified_time(name)
        except (NotImplementedError, OSError):
            continue
        if modified < cutoff:
            found.append(name)
    return found


def remove_orphan_files(older_than: timedelta | None = None) -> int:
    storage = Document._meta.get_field("file").storage
    orphans = orphan_files(older_than)
    for name in orphans:
        storage.delete(name)
    return len(orphans)


def sweep(older_than: timedelta | None = None, *, periodic: bool = False) -> dict[str, int]:
    """Queue again every stale parse, page range and release, every document with anchors
    unresolved, every document with imported spans waiting for its ready text and every
    reference parse without passages.

    A sweep when a worker starts or reconnects queues every missing resolution (a broker
    that restarted may have lost them all) and removes orphaned upload files; a
    ``periodic`` one queues only the resolutions of anchors older than the stale limit, so
    resolutions still waiting their turn are not queued twice, and leaves storage alone
    (listing it is not cheap on every storage).
    """
    parses = stale_parses(older_than)
    for pk in parses:
        ingest.send_parse(pk)  # on the parse queue it belongs to (slow or not)
    ranges = stale_ranges(older_than)
    for pk in ranges:
        ingest.send_range(pk)
    unresolved = documents_missing_resolutions(
        older_than=(older_than if older_than is not None else stale_after()) if periodic else None
    )
    for pk in unresolved:
        queue.send("resolve_document", pk)
    releases_services = stale_releases(older_than)
    for pk in releases_services:
        queue.send("build_release", pk)
    labelled = documents_with_labels_to_attach(older_than)
    for pk in labelled:
        queue.send("attach_pending_labels", pk)
    cells = stale_experiment_cells(older_than)
    for pk in cells:
        queue.send("run_experiment_cell", pk)
    unindexed = parses_missing_passages(older_than)
    for pk in unindexed:
        queue.send("index_parse", pk)
    unembedded = parses_missing_vectors(older_than)
    for pk in unembedded:
        queue.send("embed_passages", pk)
    return {
        "parses": len(parses),
        "ranges": len(ranges),
        "resolutions": len(unresolved),
        "releases": len(releases_services),
        "labels": len(labelled),
        "experiment_cells": len(cells),
        "passages": len(unindexed),
        "vectors": len(unembedded),
        "files": 0 if periodic else remove_orphan_files(),
        "broker_parts": remove_broker_parts(),
        "idempotency_keys": idempotency.forget_expired(),
    }


def remove_broker_parts() -> int:
    """Half-written messages the embedded default's broker folder keeps after a writer died
    (the ``filesystem`` transport, found the way kombu finds it); none under another broker."""
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        return 0
    folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_out")
    transport = resolve_transport("filesystem")
    return transport.remove_stale_parts(folder) if folder else 0


def documents_with_dead_resolvers() -> list[int]:
    """Documents whose resolving lease is still set but no longer renewed: its holder died
    mid-pass, and the task queued here takes the lease over and finishes the work."""
    cutoff = timezone.now() - ingest.lease_length()
    return list(
        Document.objects.exclude(resolving_by="")
        .filter(resolving_heartbeat_at__lt=cutoff)
        .values_list("pk", flat=True)
    )


def _ids(model, condition: Q) -> list[int]:
    return list(model.objects.filter(condition).values_list("pk", flat=True))


def sweep_leases() -> dict[str, int]:
    """Queue again only the work whose holder died (its lease expired): a few indexed
    reads, cheap enough to run every ``lease_sweep_period()``, unlike ``sweep``'s counting of
    every missing resolution."""
    found = {
        "parse_version": _ids(ParseVersion, _abandoned_parses()),
        "parse_range": _ids(ParseRange, _abandoned_ranges()),
        "resolve_document": documents_with_dead_resolvers(),
        "build_release": _ids(Release, releases_services.abandoned_builds()),
        "run_experiment_cell": experiment_cells.abandoned_cells(),
    }
    # a parse or range goes back to the parse queue it belongs to (slow or not)
    senders = {"parse_version": ingest.send_parse, "parse_range": ingest.send_range}
    for task_name, ids in found.items():
        for pk in ids:
            if task_name in senders:
                senders[task_name](pk)
            else:
                queue.send(task_name, pk)
    return {task_name: len(ids) for task_name, ids in found.items()}


#: How far back "how fast the backlog drains" looks.
DRAIN_WINDOW = timedelta(minutes=1)


def pending_summary(workspace=None) -> dict[str, int | float | None]:
    """What is waiting in the background (in one workspace, or everywhere) and how fast it
    drains, for pages, the API and ``manage.py sweep`` to show.

    The drain rate counts resolution rows written in the last minute; the estimate divides
    what is missing by it (None while nothing is missing, or nothing was written lately).
    """
    parses = ParseVersion.objects.all()
    anchors = GoldAnchor.objects.all()
    releases_services = Release.objects.all()
    rows = AnchorResolution.objects.all()
    if workspace is not None:
        parses = parses.filter(document__workspace=workspace)
        anchors = anchors.filter(item__evalset__workspace=workspace)
        releases_services = releases_services.filter(evalset__workspace=workspace)
        rows = rows.filter(parse__document__workspace=workspace)
    missing = list(_missing_resolutions(workspace).values_list("anchors", "rows"))
    resolutions_missing = sum(anchors - rows for anchors, rows in missing)
    done = rows.filter(updated_at__gte=timezone.now() - DRAIN_WINDOW).count()
    rate = done / DRAIN_WINDOW.total_seconds()
    summary = {
        "parses_queued": parses.filter(status=ParseStatus.QUEUED).count(),
        "parses_running": parses.filter(status=ParseStatus.PARSING).count(),
        "parses_missing_resolutions": len(missing),
        "resolutions_missing": resolutions_missing,
        "anchors_waiting_for_their_file": anchors.filter(document__isnull=True).count(),
        "releases_queued": releases_services.filter(status=ReleaseStatus.QUEUED).count(),
        "releases_building": releases_services.filter(status=ReleaseStatus.BUILDING).count(),
        "resolutions_done_last_minute": done,
        "resolutions_per_second": round(rate, 2),
        "resolutions_eta_seconds": (
            math.ceil(resolutions_missing / rate) if resolutions_missing and rate else None
        ),
    }
    summary["waiting"] = sum(summary[key] for key in WAITING_KEYS)
    return summary


#: The counts a worker will bring to zero by itself (anchors waiting for their file need
#: someone to upload it).
WAITING_KEYS = (
    "parses_queued",
    "parses_running",
    "resolutions_missing",
    "releases_queued",
    "releases_building",
)
