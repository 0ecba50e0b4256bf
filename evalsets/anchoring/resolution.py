"""Resolve anchors into parse versions and keep one row per anchor x parse.

The matching itself is ``evalsets.pure.resolver`` (pure Python); this module feeds it from the
database and stores what it says. Writes are upserts on the ``(anchor, parse)`` pair, so a
task that runs twice (a redelivery after a worker died, two workers racing) leaves exactly
one row per pair, holding the latest answer.

New anchors are resolved in bursts: creating one only claims its document's
"resolve what is pending" flag (``Document.resolve_queued_at``, a conditional update) and
queues ``resolve_document`` if no such task is waiting yet. That task clears the flag first,
then takes every anchor of the document with no row yet in each ready parse: one prepared
text per parse, a few bulk upserts, however many anchors arrived meanwhile. An anchor
committed after the task read its list finds the flag clear and queues the next task. One
such task at a time works on a document: it holds the document's resolving lease
(``resolve_pending``), so tasks the sweeps queued beside it leave the work to it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from itertools import islice
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from evalsets import queue
from evalsets.anchoring.portability import tally
from evalsets.documents import ingest
from evalsets.models import (
    AnchorResolution,
    Document,
    GoldAnchor,
    ParseStatus,
    ParseVersion,
    ResolutionStatus,
)
from evalsets.pure import resolver
from evalsets.review import blind

log = logging.getLogger(__name__)

BATCH = 500
UPDATE_FIELDS = ["status", "start", "end", "score", "candidates", "detail", "resolver_version"]
#: What the resolver reads of an anchor.
ANCHOR_FIELDS = ("pk", "quote", "occurrence", "page_hint", "prefix", "suffix")


def _row(anchor: GoldAnchor, parse: ParseVersion, found: resolver.Resolution) -> AnchorResolution:
    detail = found.to_dict()
    for key in ("status", "start", "end", "score", "candidates"):
        detail.pop(key, None)
    return AnchorResolution(
        anchor=anchor,
        parse=parse,
        status=found.status,
        start=found.start,
        end=found.end,
        score=max(0.0, min(1.0, float(found.score))),
        candidates=found.candidates,
        detail=detail,
        resolver_version=resolver.RESOLVER_VERSION,
    )


def _upsert(rows: list[AnchorResolution]) -> None:
    """Write the rows, except over a resolution a person confirmed (one query to find those):
    a re-run never overwrites the ``confirmed`` tier."""
    confirmed = set(
        AnchorResolution.objects.filter(
            status=ResolutionStatus.CONFIRMED,
            parse__in={row.parse_id for row in rows},
            anchor__in={row.anchor_id for row in rows},
        ).values_list("anchor_id", "parse_id")
    )
    if confirmed:
        rows = [row for row in rows if (row.anchor_id, row.parse_id) not in confirmed]
    AnchorResolution.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["anchor", "parse"],
        update_fields=UPDATE_FIELDS,
        batch_size=BATCH,
    )


class PreparedCache:
    """The parses this process resolved against most recently, folded and indexed.

    Folding a parse costs far more than finding one quote in it (20 ms against 0.2 ms for
    a 30-page document, 0.7 s against 1 ms for 1,000 pages), and annotators add anchors to
    the same few documents one at a time. Entries are keyed by the parse's id, length and
    last update, so a parse written again is folded again; least recently used ones go
    first once what they hold passes the ``budget`` setting (times ``unit``: ``size`` of an
    entry is in units of one).

    An entry may grow after it is stored (a prepared parse builds its indexes as quotes need
    them), so what is held is weighed again each time an entry is asked for or stored, not
    only counted as it was when stored.

    The search box keeps its own (``evalsets.documents.search``), and the highlight check its
    texts: another ``budget`` setting each, and ``size`` says what an entry counts for.
    """

    def __init__(
        self,
        budget: str = "GROUNDWORK_RESOLVER_CACHE_MB",
        size: Callable[[Any], int] = lambda prepared: prepared.nbytes(),
        unit: int = 2**20,
    ) -> None:
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._budget = budget
        self._size = size
        self._unit = unit

    @staticmethod
    def key(parse: ParseVersion) -> tuple:
        return (parse.pk, parse.text_length, parse.updated_at)

    def budget(self) -> int:
        return getattr(settings, self._budget) * self._unit

    def get(self, parse: ParseVersion) -> Any:
        with self._lock:
            prepared = self._entries.get(self.key(parse))
            if prepared is not None:
                self._entries.move_to_end(self.key(parse))
                self._trim()
            return prepared

    def holds(self, parse: ParseVersion) -> bool:
        """Whether ``parse`` is here, without counting as a use."""
        with self._lock:
            return self.key(parse) in self._entries

    def put(self, parse: ParseVersion, prepared: Any) -> None:
        if self._size(prepared) > self.budget():
            return
        with self._lock:
            for old in [k for k in self._entries if k[0] == parse.pk]:
                del self._entries[old]
            self._entries[self.key(parse)] = prepared
            self._trim()

    def _trim(self) -> None:
        """Let the least recently used entries go until the rest fit (the newest stays: it
        is in use)."""
        held = sum(map(self._size, self._entries.values()))
        budget = self.budget()
        while held > budget and len(self._entries) > 1:
            _, dropped = self._entries.popitem(last=False)
            held -= self._size(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


prepared_parses = PreparedCache()


def prepared(parse: ParseVersion) -> resolver.PreparedText:
    """``parse`` ready for the resolver, from this process's cache when it is there."""
    found = prepared_parses.get(parse)
    if found is None:
        text = parse.text  # loads it now if the caller deferred it
        found = resolver.prepare(text, page_starts=parse.page_begins)
        prepared_parses.put(parse, found)
    return found


def _batches(anchors: Iterable[GoldAnchor]) -> Iterator[list[GoldAnchor]]:
    it = iter(anchors)
    while batch := list(islice(it, BATCH)):
        yield batch


def in_pages(anchors: QuerySet[GoldAnchor]) -> Iterator[GoldAnchor]:
    """``anchors`` (ordered by pk), read ``BATCH`` at a time, each page whole by its own
    query (after the last pk seen), never through one cursor left open.

    On SQLite an open cursor is an open read transaction: the writes made between its
    fetches could not commit once anyone else had written since it began ("database is
    locked" at once: an old snapshot cannot become the writer, however long it waits), so a
    document of more than one batch never resolved while others wrote. With whole pages
    the connection holds nothing between a batch's short write transactions.
    """
    last = 0
    while page := list(anchors.filter(pk__gt=last)[:BATCH]):
        yield from page
        last = page[-1].pk


def resolve_in_parse(
    parse: ParseVersion, anchors: Iterable[GoldAnchor], renew: Callable[[], bool] | None = None
) -> int:
    """Resolve ``anchors`` in one parse (prepared once) and upsert their rows, a batch at a
    time, so a worker killed part-way keeps the batches it wrote. ``renew``, called after
    each batch, renews the caller's lease; when it says the lease is lost, the rest is left
    to the task that took it over."""
    prepared_text = prepared(parse)
    count = 0
    for batch in _batches(anchors):
        found = resolver.resolve_many(prepared_text, batch)
        _upsert([_row(anchor, parse, f) for anchor, f in zip(batch, found, strict=True)])
        count += len(batch)
        if renew is not None and not renew():
            break
    return count


def resolve_parse(parse: ParseVersion) -> int:
    """Every anchor on the parse's document, resolved in this parse."""
    anchors = GoldAnchor.objects.filter(document=parse.document_id).only(*ANCHOR_FIELDS)
    return resolve_in_parse(parse, in_pages(anchors.order_by("pk")))


def unresolved_in(parse: ParseVersion):
    """The anchors of the parse's document that have no row in it yet, oldest first."""
    resolved = AnchorResolution.objects.filter(anchor=OuterRef("pk"), parse=parse.pk)
    return (
        GoldAnchor.objects.filter(document=parse.document_id)
        .exclude(Exists(resolved))
        .only(*ANCHOR_FIELDS)
        .order_by("pk")
    )


def resolve_pending(document_id: int, holder: str = "") -> int:
    """Resolve every anchor of the document that some ready parse has no row for yet.

    One task at a time per document: the task takes the document's resolving lease (a
    conditional update, renewed from a thread of its own while it works and checked after
    each batch, taken over once its holder stops renewing it, as a parse's is), and a task
    that finds it held leaves at once. Sweeps queue a document's task without its flag, so
    without the lease every worker starting at once would resolve the same anchors side by
    side.

    The holder clears the flag before it reads anything: an anchor committed after that
    either is read here, or its writer sets the flag again (queueing a task only if the
    lease is not live, ``_claim_resolution``). So the holder, having let the lease go, goes
    round again if the flag is set (unless another task took the lease first). Rows are
    upserts, so a lease taken over from a dead holder still leaves one row per anchor and
    parse.

    ``holder`` names the task run (its Celery id, which its retries keep): a retry takes
    back a lease its own failed attempt could not let go, instead of waiting for it to
    expire.
    """
    token = _token(holder)
    done = 0
    while _take_resolving(document_id, token):
        try:
            with ingest._Heartbeat(
                lambda: _renew_resolving(document_id, token), f"resolving document {document_id}"
            ):
                done += _resolve_pass(document_id, token)
        finally:
            _let_go(document_id, token)
        if not Document.objects.filter(pk=document_id, resolve_queued_at__isnull=False).exists():
            break
    return done


def _resolve_pass(document_id: int, token: str) -> int:
    """One holder's pass: clear the flag, then resolve what each ready parse lacks."""
    _release(document_id)
    done = 0
    parses = list(
        ParseVersion.objects.filter(document=document_id, status=ParseStatus.READY).defer("text")
    )
    # The parses this process holds prepared go first. When a document's parses do not all
    # fit the cache, a pass in a fixed order evicts each one just before it is needed again
    # and every anchor folds them all; with the held ones first, only the missing one is.
    parses.sort(key=lambda parse: not prepared_parses.holds(parse))
    for parse in parses:
        if not _renew_resolving(document_id, token):
            break  # taken over: the new holder does the rest
        done += resolve_in_parse(
            parse,
            in_pages(unresolved_in(parse)),
            renew=lambda: _renew_resolving(document_id, token),
        )
    return done


#: Seconds between the attempts to let a resolving lease go when the database refuses
#: (SQLite's "database is locked", a dropped connection): a lease left set would make the
#: task's retry and every later task leave the work until the lease expired.
LET_GO_PAUSES = (0.2, 1.0, 3.0)


def _let_go(document_id: int, token: str) -> None:
    """Let the lease go, trying again on a database error (on a fresh connection if the
    old one broke); the last failure is logged, not raised, so the error that ended the
    work is the one the task retries on, and that retry takes the lease back."""
    for pause in (*LET_GO_PAUSES, None):
        try:
            _held_by(document_id, token).update(resolving_by="", resolving_heartbeat_at=None)
            return
        except DatabaseError as exc:
            if pause is None:
                log.warning(
                    "could not let go of document %s's resolving lease: %s", document_id, exc
                )
                return
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
            time.sleep(pause)


def _token(holder: str) -> str:
    """The lease's holder: ``<task id>/<run>`` for a task, so its retries know it (a host
    name, the start of ``ingest.new_token``, has no slash)."""
    return f"{holder}/{uuid.uuid4().hex}" if holder else ingest.new_token()


def being_resolved(now=None) -> Q:
    """Documents whose resolving lease is live: a holder renewed it within the lease."""
    now = now or timezone.now()
    return Q(resolving_heartbeat_at__gte=now - ingest.lease_length())


def _take_resolving(document_id: int, token: str) -> bool:
    """Take the document's resolving lease if nobody holds it (no heartbeat), its holder
    stopped renewing it (``ingest.lease_length``), or its holder was an earlier attempt of
    the task ``token`` names (``_token``). True when this call took it."""
    free = ~being_resolved() | Q(resolving_heartbeat_at__isnull=True)
    holder, mark, _run = token.partition("/")
    if mark:
        free |= Q(resolving_by__startswith=f"{holder}/")
    taken = Document.objects.filter(free, pk=document_id).update(
        resolving_by=token, resolving_heartbeat_at=timezone.now()
    )
    return taken == 1


def _held_by(document_id: int, token: str):
    return Document.objects.filter(pk=document_id, resolving_by=token)


def _renew_resolving(document_id: int, token: str) -> bool:
    """Renew the lease; False when another task has taken it over meanwhile."""
    return _held_by(document_id, token).update(resolving_heartbeat_at=timezone.now()) == 1


def _release(document_id: int) -> None:
    Document.objects.filter(pk=document_id).update(resolve_queued_at=None)


@functools.cache
def _waiting_sql() -> str:
    """Whether a document's resolution is marked as queued since a given time."""
    q = connection.ops.quote_name
    return (
        f"SELECT 1 FROM {q(Document._meta.db_table)} WHERE {q('id')} = %s "
        f"AND {q('resolve_queued_at')} >= %s"
    )


def _claim_resolution(document_id: int) -> bool:
    """Mark the document as having work waiting; True when a ``resolve_document`` task
    must be queued for it, False when one waits already (a mark older than the stale limit
    counts as lost) or a live holder of its resolving lease will go round again for the
    mark: a task queued then would find the lease held and do nothing, and a burst on one
    document would fill the queue with such messages ahead of every other document's."""
    now = timezone.now()
    lost = now - timedelta(seconds=settings.GROUNDWORK_SWEEP_STALE_S)
    # A read first: on SQLite it takes no write lock, and in a burst the flag is mostly set.
    # Written out: it follows every anchor create, and the ORM's build of it cost more CPU
    # than the database's answer (so the writes' queries are built only when needed).
    with connection.cursor() as cursor:
        cursor.execute(
            _waiting_sql(), [document_id, connection.ops.adapt_datetimefield_value(lost)]
        )
        if cursor.fetchone() is not None:
            return False
    waiting = Q(resolve_queued_at__isnull=False, resolve_queued_at__gte=lost)
    documents = Document.objects.filter(pk=document_id)
    if documents.filter(being_resolved(now)).exclude(waiting).update(resolve_queued_at=now):
        return False
    return documents.exclude(waiting).update(resolve_queued_at=now) == 1


def resolution_request(*, anchor: GoldAnchor) -> None:
    """Have ``anchor`` resolved in every ready parse of its document once this commits."""
    if anchor.document_id is None:
        return
    document_id = anchor.document_id
    queue.after_commit_once(
        "resolve_document",
        document_id,
        claim=lambda: _claim_resolution(document_id),
        release=lambda: _release(document_id),
    )


def parse_health(parse: ParseVersion, reader=None) -> dict:
    """How many anchors this parse found by each tier, and which it could not place (lost,
    or ambiguous: seen more than once with nothing to tell the copies apart), counting only
    the anchors ``reader`` (a membership; ``None``: the system) may see (``blind``)."""
    anchors = blind.visible_anchors(GoldAnchor.objects.filter(document=parse.document_id), reader)
    resolutions = parse.resolutions.filter(anchor__in=anchors.values("pk"))
    counts = dict(
        resolutions.values_list("status").annotate(n=Count("pk")).values_list("status", "n")
    )
    counted = tally(counts, anchors=anchors.count())
    unplaced = list(
        resolutions.filter(
            status__in=[ResolutionStatus.NOT_FOUND, ResolutionStatus.AMBIGUOUS]
        ).values_list("anchor__public_id", flat=True)[:200]
    )
    return {
        "anchors": counted["anchors"],
        "pending": counted["pending"],
        "by_status": counted["by_status"],
        "found": counted["found"],
        "found_rate": counted["found_rate"],
        "lost_anchors": [str(pk) for pk in unplaced],
    }
