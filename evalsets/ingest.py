"""From an uploaded file to queued parse versions, and from a queued parse to text.

This is the Django side of ``evalsets.parsers``: it decides which parsers run for a
workspace, records one ``ParseVersion`` row per parser, and runs each parser in a child
process so a file that hangs a parser or eats all memory ends as a failed parse with a
reason a person can read, while the worker lives on.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import DatabaseError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from evalsets import parsers, queue
from evalsets.errors import InvalidInput
from evalsets.models import Document, ParseStatus, ParseVersion, Workspace

log = logging.getLogger(__name__)

#: How often a running parse writes its progress, at most.
PROGRESS_INTERVAL_S = 0.5


def sniff_upload(upload: UploadedFile) -> str:
    """The kind of file (``pdf``, ``docx``, ``html``, ``markdown``, ``text``), by content."""
    data = upload.read()
    upload.seek(0)
    try:
        return parsers.sniff(data, upload.name or "")
    except parsers.ParseError as error:
        raise InvalidInput(f"{upload.name!r}: {error.reason}", field="file") from None


def parser_names_for(workspace: Workspace, kind: str) -> tuple[list[str], str | None]:
    """The parsers this workspace runs on ``kind`` files, and which one is the reference."""
    chosen = (workspace.parser_settings or {}).get("parsers", {}).get(kind)
    names = list(chosen) if chosen else list(parsers.DEFAULT_PARSERS.get(kind, []))
    reference = (workspace.parser_settings or {}).get("reference", {}).get(kind)
    if reference not in names:
        reference = parsers.DEFAULT_REFERENCE.get(kind)
    if reference not in names:
        reference = names[0] if names else None
    return names, reference


def queue_parses(document: Document) -> list[ParseVersion]:
    """One queued parse version per parser not yet run at its current version.

    Must run inside the caller's transaction; the tasks are sent when it commits.
    """
    names, reference = parser_names_for(document.workspace, document.kind)
    has_reference = document.parses.filter(is_reference=True).exists()
    queued = []
    for name in names:
        parser = parsers.get_parser(name)
        parse, created = ParseVersion.objects.get_or_create(
            document=document,
            parser=name,
            parser_version=parser.version,
            defaults={"origin": "parsed", "status": ParseStatus.QUEUED},
        )
        if not created:
            continue
        if not has_reference and name == reference:
            parse.is_reference = True
            parse.save(update_fields=["is_reference"])
            has_reference = True
        queued.append(parse)
    for parse in queued:
        queue.after_commit("parse_version", parse.pk)
    return queued


# -- the parse lease ---------------------------------------------------------------------------


def lease_length() -> timedelta:
    """A parse whose holder has not renewed its lease for this long may be taken over.

    Half the stale limit (``GROUNDWORK_SWEEP_STALE_S``), so with the workers' sweep every
    quarter of it, work a dead worker held resumes within the stale limit; at least a
    second, so a stale limit of zero (tests) does not hand a live parse to every sweep.
    """
    return timedelta(seconds=max(settings.GROUNDWORK_SWEEP_STALE_S / 2, 1))


def heartbeat_interval() -> float:
    """How often a parse's holder renews its lease, in seconds: four times per lease."""
    return max(lease_length().total_seconds() / 4, 0.1)


def lease_expired() -> Q:
    """Parses whose holder stopped renewing its lease (or that nobody ever held)."""
    cutoff = timezone.now() - lease_length()
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, updated_at__lt=cutoff)


@dataclass(frozen=True)
class ParseLease:
    """A parse held by one task run: only the holder of ``token`` may write its results."""

    parse: ParseVersion
    token: str


def claim_parse(parse_id: int) -> ParseLease | None:
    """Take the lease on a queued parse, or on one whose holder stopped renewing it.

    A conditional update, so of two workers handed the same parse only one gets it while
    the lease is live; a worker that died mid-parse stops renewing, and once the lease has
    expired a redelivered (or swept) task takes the parse over. None when the parse is
    gone, done or held by a live worker.
    """
    token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
    now = timezone.now()
    claimed = (
        ParseVersion.objects.filter(pk=parse_id)
        .filter(Q(status=ParseStatus.QUEUED) | (Q(status=ParseStatus.PARSING) & lease_expired()))
        .update(
            status=ParseStatus.PARSING,
            claimed_by=token,
            heartbeat_at=now,
            progress_done=0,
            updated_at=now,
        )
    )
    if not claimed:
        return None
    parse = ParseVersion.objects.select_related("document").filter(pk=parse_id).first()
    return None if parse is None else ParseLease(parse, token)


def _held(lease: ParseLease):
    return ParseVersion.objects.filter(pk=lease.parse.pk, claimed_by=lease.token)


class _Heartbeat:
    """Renews a lease from a thread of its own while the parse runs, however slow a page."""

    def __init__(self, lease: ParseLease) -> None:
        self.lease = lease
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="parse-heartbeat", daemon=True)

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(heartbeat_interval()):
                try:
                    if not _held(self.lease).update(heartbeat_at=timezone.now()):
                        return  # taken over or finished: nothing left to renew
                except DatabaseError:  # a missed beat only risks a takeover, which is safe
                    log.warning("could not renew the lease on parse %s", self.lease.parse.pk)
        finally:
            connection.close()

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()


def run_parse(lease: ParseLease) -> ParseVersion:
    """Parse the document's file with the leased parse's parser; record text or a readable
    failure, unless the lease was lost meanwhile (then the row is left to its new holder)."""
    parse = lease.parse
    document = parse.document
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ValueError):
        return _fail(
            lease, "missing", "The uploaded file is no longer in storage; upload it again."
        )

    last_write = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_INTERVAL_S or done >= total:
            last_write[0] = now
            _held(lease).update(progress_done=done, progress_total=total, updated_at=timezone.now())

    try:
        with _Heartbeat(lease):
            result = parsers.parse_isolated(
                parse.parser,
                data,
                timeout_s=settings.GROUNDWORK_PARSE_TIMEOUT_S,
                memory_mb=settings.GROUNDWORK_PARSE_MEMORY_MB,
                max_pages=settings.GROUNDWORK_MAX_PAGES,
                progress=progress,
            )
    except parsers.ParseError as error:
        return _fail(lease, error.code, error.reason)
    except Exception:  # the worker must live and the user must get words, not a trace
        log.exception("parser %s crashed on document %s", parse.parser, document.pk)
        return _fail(
            lease,
            "crashed",
            f"The {parse.parser} parser failed on this file; the other parses are unaffected.",
        )
    total = len(result.page_starts)
    _held(lease).update(
        text=result.text,
        text_length=len(result.text),
        page_starts=result.page_starts,
        diagnostics=result.meta,  # failed and empty pages, the encoding: kept, and shown
        status=ParseStatus.READY,
        error="",
        error_code="",
        progress_done=total,
        progress_total=total,
        updated_at=timezone.now(),
    )
    parse.refresh_from_db()
    return parse


def _fail(lease: ParseLease, code: str, reason: str) -> ParseVersion:
    _held(lease).update(
        status=ParseStatus.FAILED, error=reason, error_code=code, updated_at=timezone.now()
    )
    lease.parse.refresh_from_db()
    return lease.parse


@transaction.atomic
def document_reparse(*, document: Document) -> list[ParseVersion]:
    """Queue parsers whose current version has not read this document yet, and retry the
    ones that failed (a worker that ran out of memory, a file stored again since).

    Old parse versions stay: anchors were resolved against them.
    """
    failed = list(
        ParseVersion.objects.select_for_update().filter(
            document=document, status=ParseStatus.FAILED
        )
    )
    ParseVersion.objects.filter(pk__in=[p.pk for p in failed]).update(
        status=ParseStatus.QUEUED,
        error="",
        error_code="",
        progress_done=0,
        claimed_by="",
        heartbeat_at=None,
        updated_at=timezone.now(),
    )
    for parse in failed:
        parse.status = ParseStatus.QUEUED
        queue.after_commit("parse_version", parse.pk)
    return failed + queue_parses(document)
