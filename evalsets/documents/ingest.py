"""From an uploaded file to queued parse versions, and from a queued parse to text.

This is the Django side of ``evalsets.pure.parsers``: it decides which parsers run for a
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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Max, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from evalsets import queue
from evalsets.errors import InvalidInput
from evalsets.models import Document, ParseRange, ParseStatus, ParseVersion, Workspace
from evalsets.pure import parsers

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
        queue_parse(parse)
    return queued


# -- which queue a parse's work goes to, and its time ----------------------------------------

#: Set in a parse's ``diagnostics`` when Retry hands a parse that ran out of time to the slow
#: parse queue, with that queue's budget.
SLOW_RETRY = "slow_retry"
#: Set in a queued parse's ``diagnostics`` while it waits for its document's pages to be
#: counted before it is queued (``queue_parse``).
WAITS_FOR_COUNT = "waits_for_count"
#: Set in a failed parse's ``diagnostics`` when it ran out of time: which limit it reached
#: (``total`` or ``page``) and the seconds it had, so Retry knows whether more would help.
TIMED_OUT = "timed_out"


@dataclass(frozen=True)
class Budget:
    """The time one parse task may take, in all and for any one page."""

    timeout_s: float
    page_s: float


def budget(kind: str) -> Budget:
    """A parse task's time on the queue of ``kind``: the slow parse queue gives more
    (``GROUNDWORK_PARSE_SLOW_TIMEOUT_S``, ``GROUNDWORK_PARSE_SLOW_PAGE_S``) since nobody
    waits behind it there."""
    if kind == queue.PARSE_SLOW:
        return Budget(
            settings.GROUNDWORK_PARSE_SLOW_TIMEOUT_S, settings.GROUNDWORK_PARSE_SLOW_PAGE_S
        )
    return Budget(settings.GROUNDWORK_PARSE_TIMEOUT_S, settings.GROUNDWORK_PARSE_PAGE_S)


def _known_pages(document_id: int) -> int:
    """The document's page count as any of its parses has counted it (0: none has yet)."""
    found = ParseVersion.objects.filter(document_id=document_id).aggregate(n=Max("progress_total"))
    return found["n"] or 0


def is_slow(parse: ParseVersion, pages: int) -> bool:
    """Whether reading ``pages`` pages with ``parse``'s parser goes to the slow parse queue:
    its estimated time (``parsers.parse_seconds``) is more than ``GROUNDWORK_PARSE_SLOW_S``,
    and it is not the reference parse (the one everything waits for); or Retry sent it there
    after it ran out of time."""
    if (parse.diagnostics or {}).get(SLOW_RETRY):
        return True
    if parse.is_reference:
        return False
    try:
        parser = parsers.get_parser(parse.parser)
    except (KeyError, ImportError, AttributeError):  # a plugin since removed: its task says so
        return False
    return parsers.parse_seconds(parser, pages) > settings.GROUNDWORK_PARSE_SLOW_S


def parse_kind(parse: ParseVersion) -> str:
    """The queue kind of a parse's ``parse_version`` task. Its first task reads one page
    range when the parser splits long documents, else the whole file: the document's page
    count once any parse has counted it, else as many pages as a PDF may have (a slow
    parser on a PDF nobody has counted yet is taken to be long)."""
    pages = 1
    if parse.document.kind == "pdf":
        pages = _known_pages(parse.document_id) or settings.GROUNDWORK_MAX_PAGES
        span = _span(parse.parser)
        pages = min(span, pages) if span else pages
    return queue.PARSE_SLOW if is_slow(parse, pages) else queue.PARSE


def _span(parser_name: str) -> int | None:
    """``pages_per_range``, or None for a parser no longer registered (a plugin since
    removed): its task, not the one queueing it, reports that."""
    try:
        return pages_per_range(parser_name)
    except (KeyError, ImportError, AttributeError):
        return None


def range_kind(parse: ParseVersion, total: int) -> str:
    """The queue kind of a split parse's other ranges: the slow queue when reading the whole
    document (``total`` pages) with its parser is slow, so a long slow parse never fills the
    parse queue with its ranges."""
    return queue.PARSE_SLOW if is_slow(parse, total) else queue.PARSE


def queue_parse(parse: ParseVersion) -> None:
    """Queue ``parse_version`` for ``parse`` on its queue once the transaction commits.

    A parser that reads a PDF whole and would be slow on a long one waits, unqueued, until
    the reference parse has counted the pages (``send_waiting``): a short PDF's parse then
    goes to the parse queue rather than behind a long document's on the slow one.
    """
    if _waits_for_count(parse):
        parse.diagnostics = {WAITS_FOR_COUNT: True}
        ParseVersion.objects.filter(pk=parse.pk).update(diagnostics=parse.diagnostics)
        return
    queue.after_commit("parse_version", parse.pk, kind=parse_kind(parse))


def _waits_for_count(parse: ParseVersion) -> bool:
    """Whether ``parse`` is worth holding back until its document's pages are counted: the
    count decides its queue (slow on a long PDF, not on a short one), nobody has counted them
    yet, and the document's reference parse, which will, is still to be read."""
    if parse.document.kind != "pdf" or parse.is_reference or _span(parse.parser):
        return False
    if (parse.diagnostics or {}).get(SLOW_RETRY) or _known_pages(parse.document_id):
        return False
    if is_slow(parse, 1) or not is_slow(parse, settings.GROUNDWORK_MAX_PAGES):
        return False
    reading = (ParseStatus.QUEUED, ParseStatus.PARSING)
    return (
        ParseVersion.objects.filter(document_id=parse.document_id, is_reference=True)
        .filter(status__in=reading)
        .exists()
    )


def send_waiting(document_id: int) -> int:
    """Queue the document's parses that waited for its pages to be counted (the reference
    parse has finished, ready or failed), each on its queue now; how many. The sweep queues a
    parse that waited too long anyway, as any parse still queued."""
    waiting = ParseVersion.objects.filter(
        document_id=document_id, status=ParseStatus.QUEUED, diagnostics__waits_for_count=True
    )
    sent = 0
    for parse in waiting.select_related("document").defer("text"):
        if waiting.filter(pk=parse.pk).update(diagnostics={}):  # one sender per parse
            parse.diagnostics = {}
            sent += queue.send("parse_version", parse.pk, kind=parse_kind(parse))
    return sent


def send_parse(parse_id: int) -> None:
    """Queue ``parse_version`` again now (the sweep), on the queue its parse belongs to."""
    parse = ParseVersion.objects.select_related("document").defer("text").filter(pk=parse_id)
    found = parse.first()
    if found is not None:
        queue.send("parse_version", parse_id, kind=parse_kind(found))


def send_range(range_id: int) -> None:
    """Queue ``parse_range`` again now (the sweep), on the queue its parse's ranges go to."""
    found = ParseRange.objects.select_related("parse").defer("text", "parse__text")
    found = found.filter(pk=range_id).first()
    if found is not None:
        queue.send(
            "parse_range", range_id, kind=range_kind(found.parse, found.parse.progress_total)
        )


# -- the parse lease ---------------------------------------------------------------------------


def lease_length() -> timedelta:
    """A parse whose holder has not renewed its lease for this long may be taken over.

    ``GROUNDWORK_LEASE_S``, and at most half the stale limit (``GROUNDWORK_SWEEP_STALE_S``);
    the workers' lease sweep runs every half of it, so work a dead worker held resumes
    within about one and a half leases. The holder renews it from a thread of its own four
    times a lease, however slow its work, so only a holder that stopped is taken over. At
    least a second, so a stale limit of zero (tests) does not hand a live parse to every
    sweep.
    """
    limit = min(settings.GROUNDWORK_LEASE_S, settings.GROUNDWORK_SWEEP_STALE_S / 2)
    return timedelta(seconds=max(limit, 1))


def heartbeat_interval() -> float:
    """How often a parse's holder renews its lease, in seconds: four times per lease."""
    return max(lease_length().total_seconds() / 4, 0.1)


def lease_expired() -> Q:
    """Parses whose holder stopped renewing its lease (or that nobody ever held)."""
    cutoff = timezone.now() - lease_length()
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, updated_at__lt=cutoff)


def abandoned() -> Q:
    """Parses being read whole whose holder stopped renewing the lease. A parse split into
    page ranges is not one of them: its ranges carry leases of their own."""
    return lease_expired() & Q(range_count=0)


def new_token() -> str:
    """Who holds a lease: this host, this process and one run of a task."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


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
    token = new_token()
    now = timezone.now()
    claimed = (
        ParseVersion.objects.filter(pk=parse_id)
        .filter(Q(status=ParseStatus.QUEUED) | (Q(status=ParseStatus.PARSING) & abandoned()))
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


def _run_parser(
    parse: ParseVersion, data: bytes, progress, pages: tuple[int, int] | None, given: Budget
):
    """Run ``parse``'s parser on ``data`` (pages ``[a, b)`` when given) in its isolated
    child, within ``given`` time (in all, and for any one page) and the configured memory
    and page limits."""
    return parsers.parse_isolated(
        parse.parser,
        data,
        timeout_s=given.timeout_s,
        memory_mb=settings.GROUNDWORK_PARSE_MEMORY_MB,
        max_pages=settings.GROUNDWORK_MAX_PAGES,
        progress=progress,
        pages=pages,
        page_timeout_s=given.page_s,
    )


def _failure_notes(error: parsers.ParseError, given: Budget) -> dict:
    """What a failed parse keeps in its ``diagnostics``: for a timeout, which limit it
    reached and the seconds it had (``TIMED_OUT``), for Retry to judge."""
    if error.code != "timeout":
        return {}
    if error.detail == "step":
        return {TIMED_OUT: {"limit": "page", "seconds": given.page_s}}
    return {TIMED_OUT: {"limit": "total", "seconds": given.timeout_s}}


class _Heartbeat:
    """Renews a lease from a thread of its own while the parse runs, however slow a page.

    ``renew()`` renews it and returns how many rows it renewed; none means the lease was
    taken over or the work finished, and the beating stops.
    """

    def __init__(self, renew: Callable[[], int], what: str) -> None:
        self.renew = renew
        self.what = what
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="parse-heartbeat", daemon=True)

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(heartbeat_interval()):
                try:
                    if not self.renew():
                        return  # taken over or finished: nothing left to renew
                except DatabaseError:  # a missed beat only risks a takeover, which is safe
                    log.warning("could not renew the lease on %s", self.what)
                    # A connection the database dropped is replaced at the next beat, so
                    # a database restart does not hand every running task's work on.
                    connection.close_if_unusable_or_obsolete()
        finally:
            connection.close()

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()


def pages_per_range(parser_name: str) -> int | None:
    """How many pages each range of a split parse holds (``GROUNDWORK_PARSE_RANGE_PAGES``,
    else the parser's own ``pages_per_range``), or None when this parser reads every
    document whole (it cannot read a range alone, or splitting is switched off)."""
    parser = parsers.get_parser(parser_name)
    if not parsers.supports_ranges(parser):
        return None
    size = settings.GROUNDWORK_PARSE_RANGE_PAGES
    size = parser.pages_per_range if size is None else size
    return size if size > 0 else None


def _read_file(document: Document) -> bytes | None:
    try:
        with document.file.open("rb") as handle:
            return handle.read()
    except (FileNotFoundError, ValueError):
        return None


MISSING_FILE = "The uploaded file is no longer in storage; upload it again."


def _crashed(parse: ParseVersion) -> str:
    return f"The {parse.parser} parser failed on this file; the other parses are unaffected."


def run_parse(lease: ParseLease) -> ParseVersion:
    """Parse the document's file with the leased parse's parser; record text or a readable
    failure, unless the lease was lost meanwhile (then the row is left to its new holder).

    With a parser that reads page ranges (``pages_per_range``) the child reads only the
    first range. Its first progress report says how many pages the document has; when
    that is more than one range, the parse is split there and then (``_Split``): the other
    ranges are queued for any worker while this one finishes the first, and the task that
    finishes the last range joins them (``_range_finished``). A document of one range is
    read whole here, as before.
    """
    parse = lease.parse
    document = parse.document
    data = _read_file(document)
    if data is None:
        return _fail(lease, "missing", MISSING_FILE)
    given = budget(parse_kind(parse))
    span = pages_per_range(parse.parser)
    split = _Split(lease, span) if span else None
    last_write = [0.0]

    def progress(done: int, total: int) -> None:
        if split is not None and split.needed(total):
            split.start(total)
        now = time.monotonic()
        if now - last_write[0] < PROGRESS_INTERVAL_S and done < total:
            return
        last_write[0] = now
        if split is not None and split.first is not None:
            _range_progress(split.first, done, total)
        else:
            _held(lease).update(progress_done=done, progress_total=total, updated_at=timezone.now())

    def renew() -> int:
        now = timezone.now()
        renewed = _held(lease).update(heartbeat_at=now)
        if split is not None and split.first is not None:
            renewed += _range_held(split.first).update(heartbeat_at=now)
        return renewed

    try:
        with _Heartbeat(renew, f"parse {parse.pk}"):
            result = _run_parser(parse, data, progress, None if span is None else (0, span), given)
        if split is not None and split.needed(int(result.meta.get("document_pages", 0))):
            split.start(int(result.meta["document_pages"]))  # its progress report was lost
        if split is not None and split.first is not None:
            return _range_finished(split.first, result) or _refreshed(parse)
        if span is not None and int(result.meta.get("document_pages", 0)) > span:
            return _refreshed(parse)  # not split (the lease was lost): only part was read
        if span is not None:
            result = parsers.get_parser(parse.parser).join_ranges([result])
    except parsers.ParseError as error:
        notes = _failure_notes(error, given)
        return _record_failure(lease, split, error.code, error.reason, notes)
    except Exception:  # the worker must live and the user must get words, not a trace
        log.exception("parser %s crashed on document %s", parse.parser, document.pk)
        return _record_failure(lease, split, "crashed", _crashed(parse))
    return _store_ready(lease, result)


def _record_failure(
    lease: ParseLease, split: _Split | None, code: str, reason: str, notes: dict | None = None
) -> ParseVersion:
    """Record a failure on the range being read when the parse was split, else on the parse."""
    if split is not None and split.first is not None:
        return _range_failed(split.first, code, reason, notes)
    return _fail(lease, code, reason, notes)


def _store_ready(lease: ParseLease, result: parsers.ParsedText) -> ParseVersion:
    """Store the parse's character boxes, then mark it ready, unless the lease was lost."""
    parse = lease.parse
    # Stored before the row says ready, so a reader never sees a ready parse without them.
    boxes = _store_boxes(parse, result.char_boxes)
    held = _held(lease).update(**_ready(result, boxes, timezone.now()))
    if boxes and not held:  # the lease went to another worker: its run stores its own
        parse.char_boxes.storage.delete(boxes)
    parse.refresh_from_db()
    return parse


def _store_boxes(parse: ParseVersion, data: bytes | None) -> str:
    """Save a parse's character boxes as its one box file; its name ("" without boxes)."""
    if not data:
        return ""
    field = parse.char_boxes
    return field.storage.save(field.field.generate_filename(parse, "boxes"), ContentFile(data))


def _refreshed(parse: ParseVersion) -> ParseVersion:
    parse.refresh_from_db()
    return parse


def _fail(lease: ParseLease, code: str, reason: str, notes: dict | None = None) -> ParseVersion:
    _held(lease).update(
        status=ParseStatus.FAILED,
        error=reason,
        error_code=code,
        diagnostics=notes or {},
        updated_at=timezone.now(),
    )
    lease.parse.refresh_from_db()
    return lease.parse


# -- page ranges: one long PDF read by many workers -------------------------------------------


@dataclass(frozen=True)
class RangeLease:
    """A page range held by one task run: only the holder of ``token`` may write it."""

    range: ParseRange
    token: str


def _range_held(lease: RangeLease):
    return ParseRange.objects.filter(pk=lease.range.pk, claimed_by=lease.token)


def range_bounds(total: int, span: int) -> list[tuple[int, int | None]]:
    """The page ranges ``[start, stop)`` a parse of ``total`` pages is split into: as many
    as ``span`` pages each would make, the first of ``span`` pages (the splitting task is
    already reading it), the others shrinking from about 4/3 to 2/3 of ``span``.

    Workers take ranges in order, so the big ones go first and the last to start are
    small: whoever finishes early waits for a short range, not a long one, however many
    workers share the parse. The last range reads to the end of the page tree (None).
    """
    count = -(-total // span)
    rest, later = total - span, count - 1
    weights = [2 - i / (later - 1) if later > 1 else 1.0 for i in range(later)]  # 2 down to 1
    bounds: list[tuple[int, int | None]] = [(0, span)]
    start, share = span, 0.0
    for i, weight in enumerate(weights):
        share += weight
        stop = span + round(rest * share / sum(weights))
        stop = min(max(stop, start + 1), total - (later - 1 - i))  # never an empty range
        bounds.append((start, stop))
        start = stop
    bounds[-1] = (bounds[-1][0], None)
    return bounds


class _Split:
    """Splits a leased parse into page ranges once its first report says how many pages."""

    def __init__(self, lease: ParseLease, span: int) -> None:
        self.lease = lease
        self.span = span
        self.first: RangeLease | None = None  # the range the splitting task reads itself
        self.tried = False

    def needed(self, total: int) -> bool:
        return not self.tried and total > self.span

    def start(self, total: int) -> None:
        """Record one range per ``span`` pages, the first held by this task and the others
        queued for any worker, unless the parse's lease was lost meanwhile."""
        self.tried = True
        bounds = range_bounds(total, self.span)
        now = timezone.now()
        with transaction.atomic():
            if not (
                _held(self.lease)
                .filter(status=ParseStatus.PARSING, range_count=0)
                .update(range_count=len(bounds), progress_total=total, updated_at=now)
            ):
                return
            ranges = ParseRange.objects.bulk_create(
                ParseRange(
                    parse_id=self.lease.parse.pk,
                    start_page=start,
                    stop_page=stop,
                    **(
                        {
                            "status": ParseStatus.PARSING,
                            "claimed_by": self.lease.token,
                            "heartbeat_at": now,
                            "attempts": 1,
                        }
                        if start == 0
                        else {}
                    ),
                )
                for start, stop in bounds
            )
            ranges = list(ParseRange.objects.filter(parse_id=self.lease.parse.pk))
            kind = range_kind(self.lease.parse, total)
            for queued in ranges[1:]:
                queue.after_commit("parse_range", queued.pk, kind=kind)
        self.first = RangeLease(ranges[0], self.lease.token)


def claim_range(range_id: int) -> RangeLease | None:
    """Take the lease on a queued page range, or on one whose holder stopped renewing it.

    The same conditional update as ``claim_parse``; None when the range is gone or done,
    held by a live worker, or its parse is no longer being read (it failed, or a newer
    upload replaced it).
    """
    token = new_token()
    now = timezone.now()
    claimed = (
        ParseRange.objects.filter(pk=range_id, parse__status=ParseStatus.PARSING)
        .filter(Q(status=ParseStatus.QUEUED) | (Q(status=ParseStatus.PARSING) & lease_expired()))
        .update(
            status=ParseStatus.PARSING,
            claimed_by=token,
            heartbeat_at=now,
            progress_done=0,
            attempts=F("attempts") + 1,
            updated_at=now,
        )
    )
    if not claimed:
        return None
    found = ParseRange.objects.select_related("parse__document").filter(pk=range_id).first()
    return None if found is None else RangeLease(found, token)


def run_range(lease: RangeLease) -> ParseVersion | None:
    """Read the leased range's pages; the parse when this finished it (ready or failed),
    None while other ranges are still being read or when the lease was lost."""
    prange = lease.range
    parse = prange.parse
    data = _read_file(parse.document)
    if data is None:
        return _range_failed(lease, "missing", MISSING_FILE)
    given = budget(range_kind(parse, parse.progress_total))
    last_write = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_INTERVAL_S:
            last_write[0] = now
            _range_progress(lease, done, total)

    def renew() -> int:
        return _range_held(lease).update(heartbeat_at=timezone.now())

    try:
        with _Heartbeat(renew, f"pages {prange.start_page + 1}- of parse {parse.pk}"):
            pages = (prange.start_page, prange.stop_page)
            result = _run_parser(parse, data, progress, pages, given)
    except parsers.ParseError as error:
        return _range_failed(lease, error.code, error.reason, _failure_notes(error, given))
    except Exception:  # the worker must live and the user must get words, not a trace
        log.exception("parser %s crashed on document %s", parse.parser, parse.document_id)
        return _range_failed(lease, "crashed", _crashed(parse))
    return _range_finished(lease, result)


def _pages_read(parse_id: int) -> Coalesce:
    done = (
        ParseRange.objects.filter(parse=parse_id)
        .order_by()
        .values("parse")
        .annotate(n=Sum("progress_done"))
        .values("n")
    )
    return Coalesce(Subquery(done), 0)


def _range_progress(lease: RangeLease, done: int, total: int) -> None:
    """The range has read up to page ``done``: the parse's progress is its ranges' sum."""
    now = timezone.now()
    read = max(0, done - lease.range.start_page)
    if _range_held(lease).update(progress_done=read, updated_at=now):
        ParseVersion.objects.filter(pk=lease.range.parse_id, status=ParseStatus.PARSING).update(
            progress_done=_pages_read(lease.range.parse_id), updated_at=now
        )


def _range_finished(lease: RangeLease, part: parsers.ParsedText) -> ParseVersion | None:
    """Keep the range's part; the task whose range is the last one to finish joins them all
    in page order into the parse's text (and box file), in the same transaction (the parse
    row is locked, so of two ranges finishing together exactly one sees the other's)."""
    parse_id = lease.range.parse_id
    now = timezone.now()
    with transaction.atomic():
        parse = (
            ParseVersion.objects.select_for_update()
            .only("pk", "parser", "parser_version", "status")
            .filter(pk=parse_id, status=ParseStatus.PARSING)
            .first()
        )
        if parse is None:
            return None
        if (
            not _range_held(lease)
            .filter(status=ParseStatus.PARSING)
            .update(
                status=ParseStatus.READY,
                text=part.text,
                page_starts=part.page_starts,
                diagnostics=part.meta,
                char_boxes=part.char_boxes or b"",
                progress_done=part.page_count,
                updated_at=now,
            )
        ):
            return None  # taken over meanwhile: the new holder writes it
        ranges = ParseRange.objects.filter(parse=parse_id)
        if ranges.exclude(status=ParseStatus.READY).exists():  # the parts stay in the database
            ParseVersion.objects.filter(pk=parse_id).update(
                progress_done=_pages_read(parse_id), updated_at=now
            )
            return None
        _join(parse, list(ranges.order_by("start_page")), now)
    return ParseVersion.objects.select_related("document").get(pk=parse_id)


def _ready(result: parsers.ParsedText, boxes: str, now) -> dict:
    """The fields of a parse that is ready with ``result``, whether one task read it all or
    ranges were joined; the failed and empty pages and the encoding are kept, and shown."""
    total = len(result.page_starts)
    return {
        "text": result.text,
        "text_length": len(result.text),
        "page_starts": result.page_starts,
        "diagnostics": result.meta,
        "status": ParseStatus.READY,
        "error": "",
        "error_code": "",
        "progress_done": total,
        "progress_total": total,
        "char_boxes": boxes,
        "updated_at": now,
    }


def _join(parse: ParseVersion, ranges: list[ParseRange], now) -> None:
    """Every range is read: the parse becomes their join, or fails as a whole file would."""
    parts = [
        parsers.ParsedText(
            text=r.text,
            page_starts=r.page_starts,
            parser=parse.parser,
            parser_version=parse.parser_version,
            meta=r.diagnostics,
            char_boxes=bytes(r.char_boxes) or None,
        )
        for r in ranges
    ]
    try:
        whole = parsers.get_parser(parse.parser).join_ranges(parts)
    except parsers.ParseError as error:
        _parse_failed(parse.pk, error.code, error.reason)
        return
    owner = ParseVersion.objects.select_related("document__workspace").get(pk=parse.pk)
    boxes = _store_boxes(owner, whole.char_boxes)
    try:
        ParseVersion.objects.filter(pk=parse.pk).update(**_ready(whole, boxes, now))
        _forget_parts(parse.pk)
    except BaseException:
        if boxes:  # not recorded: no file without its row
            owner.char_boxes.storage.delete(boxes)
        raise


def _range_failed(
    lease: RangeLease, code: str, reason: str, notes: dict | None = None
) -> ParseVersion | None:
    """A range that cannot be read fails its whole parse, as a single reading would have
    (timeout, memory, a crash); the other ranges' tasks then stop at their claim or write
    nothing. Nothing is written when the range was taken over meanwhile."""
    with transaction.atomic():
        if not _range_held(lease).update(status=ParseStatus.FAILED, updated_at=timezone.now()):
            return None
        _parse_failed(lease.range.parse_id, code, reason, notes)
    return ParseVersion.objects.select_related("document").filter(pk=lease.range.parse_id).first()


def _parse_failed(parse_id: int, code: str, reason: str, notes: dict | None = None) -> None:
    ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.PARSING).update(
        status=ParseStatus.FAILED,
        error=reason,
        error_code=code,
        diagnostics=notes or {},
        updated_at=timezone.now(),
    )
    _forget_parts(parse_id)


def _forget_parts(parse_id: int) -> None:
    """The ranges' parts once joined or failed: the parse's row holds what is kept."""
    ParseRange.objects.filter(parse=parse_id).update(text="", page_starts=[], char_boxes=b"")


#: What Retry does with a failed parse (``retry_plan``).
RETRY_AGAIN, RETRY_SLOWER, RETRY_REFUSED = "again", "slower", "refused"


def retry_plan(parse: ParseVersion) -> str:
    """What Retry does with a failed ``parse``: reads it ``again`` as before (a worker that
    ran out of memory, a file stored again since); ``slower`` on the slow parse queue with
    its larger budget, when the parse ran out of time with less than that; or ``refused``
    when it ran out of the slow queue's own time already, since reading it again would
    stop at the same limit."""
    if parse.error_code != "timeout":
        return RETRY_AGAIN
    timed_out = (parse.diagnostics or {}).get(TIMED_OUT)
    if not isinstance(timed_out, dict):  # failed before the limit was noted: the parse queue's
        timed_out = {"limit": "total", "seconds": settings.GROUNDWORK_PARSE_TIMEOUT_S}
    most = budget(queue.PARSE_SLOW)
    limit = most.page_s if timed_out.get("limit") == "page" else most.timeout_s
    return RETRY_REFUSED if float(timed_out.get("seconds") or 0) >= limit else RETRY_SLOWER


def refusal(parse: ParseVersion) -> str:
    """Why Retry leaves ``parse`` failed (``RETRY_REFUSED``), in words for its owner."""
    return (
        f"{parse.parser} ran out of the most time a parse gets "
        "(GROUNDWORK_PARSE_SLOW_TIMEOUT_S, GROUNDWORK_PARSE_SLOW_PAGE_S); reading the file "
        "again would stop at the same point. Split the file, or raise those limits."
    )


@transaction.atomic
def document_reparse(*, document: Document) -> list[ParseVersion]:
    """Queue parsers whose current version has not read this document yet, and retry the
    ones that failed (a worker that ran out of memory, a file stored again since).

    A parse that ran out of time is retried on the slow parse queue with its larger budget,
    never under the limit it already reached; one that ran out of that budget too is left
    failed, its error saying why (``retry_plan``). Old parse versions stay: anchors were
    resolved against them.
    """
    failed = list(
        ParseVersion.objects.select_for_update(of=("self",))
        .filter(document=document, status=ParseStatus.FAILED)
        .select_related("document")
        .defer("text")
    )
    plans = {parse.pk: retry_plan(parse) for parse in failed}
    for parse in failed:
        if plans[parse.pk] == RETRY_REFUSED and refusal(parse) not in parse.error:
            parse.error = f"{parse.error} {refusal(parse)}".strip()
            parse.save(update_fields=["error", "updated_at"])
    retried = [parse for parse in failed if plans[parse.pk] != RETRY_REFUSED]
    for parse in retried:
        slower = plans[parse.pk] == RETRY_SLOWER
        parse.diagnostics = {SLOW_RETRY: True} if slower else {}
        parse.status = ParseStatus.QUEUED
    ParseVersion.objects.bulk_update(retried, ["diagnostics"])
    ParseVersion.objects.filter(pk__in=[p.pk for p in retried]).update(
        status=ParseStatus.QUEUED,
        error="",
        error_code="",
        progress_done=0,
        claimed_by="",
        heartbeat_at=None,
        range_count=0,  # read from the start again, split again if it is long
        updated_at=timezone.now(),
    )
    ParseRange.objects.filter(parse__in=[p.pk for p in retried]).delete()
    for parse in retried:
        queue_parse(parse)
    return retried + queue_parses(document)
