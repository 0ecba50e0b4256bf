"""Releases: freeze an eval set at a version number and build its files, byte-stable forever.

``release_create`` checks the request, numbers the release and snapshots the chosen items as
context-grid dicts (``ReleaseItem``, with where each anchor lies and which parse each
document's text comes from) inside one transaction with the eval set's row locked, then
queues the build. The build (``release_build``, run by a Celery task) only writes files:
it streams each format's writer from that snapshot into a temporary file and from there into
storage, so memory stays flat however large the set is, and the same snapshot always gives
the same bytes. After that nothing about a release changes: downloads are the stored bytes,
whatever happens to the set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import tempfile
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import contextgrid as cg
from django.conf import settings
from django.core.files import File
from django.db import OperationalError, transaction
from django.db.models import Count, F, OuterRef, Prefetch, Q, Subquery
from django.utils import timezone

from evalsets import dberrors, queue
from evalsets.documents import ingest
from evalsets.errors import InvalidInput
from evalsets.models import (
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemState,
    ParseStatus,
    ParseVersion,
    Release,
    ReleaseFile,
    ReleaseItem,
    ReleaseStatus,
)
from evalsets.models.releases import release_folder
from evalsets.models.review import EventKind, ItemEvent
from evalsets.pure import resolver
from evalsets.pure.formats import FORMATS, EvalSetHeader, ExportRefused, beir, landing
from evalsets.releases import bridge
from evalsets.workspaces import quotas

log = logging.getLogger(__name__)

BATCH = 500
#: A build found abandoned this many times fails rather than kill another worker: a build
#: that is killed each time it runs (out of memory, say) must not be handed on for ever.
MAX_BUILD_INTERRUPTIONS = 2
#: Item fields compared between releases, in context-grid's order.
ITEM_FIELDS = ("question", "gold", "anchors", "qtype", "answer", "meta")


def exportable_formats() -> list[str]:
    return [slug for slug, fmt in FORMATS.items() if fmt.writer is not None]


# -- which parse stands for each document ----------------------------------------------------


#: In ``gold_parsers``: each document of that kind takes gold spans from its reference parse.
REFERENCE = "reference"


def _gold_name(kind: str, gold_parser: str, gold_parsers: dict | None) -> str:
    """The parser whose spans are gold for documents of ``kind`` ("" for none)."""
    if gold_parsers:
        return gold_parsers.get(kind, "")
    return gold_parser


def chosen_parses(
    workspace, gold_parser: str = "", gold_parsers: dict | None = None
) -> dict[int, ParseVersion]:
    """Per document id, the parse whose text and spans a release uses (text deferred).

    A document whose kind has a gold parser (``gold_parsers`` per kind, or one
    ``gold_parser`` for all) takes the newest ready parse by it; documents without one fall
    back to their ready reference parse for texts (and carry no gold). Otherwise, and for
    ``REFERENCE``, the reference parse.
    """
    ready = ParseVersion.objects.filter(
        document__workspace=workspace, status=ParseStatus.READY
    ).defer("text", "page_starts")
    chosen: dict[int, ParseVersion] = {}
    for parse in ready.filter(is_reference=True):
        chosen[parse.document_id] = parse
    wanted = ({gold_parser} | set((gold_parsers or {}).values())) - {"", REFERENCE}
    if wanted:
        kinds = _kinds(workspace) if gold_parsers else {}
        for parse in ready.filter(parser__in=wanted).order_by("created_at", "id"):
            if parse.parser == _gold_name(
                kinds.get(parse.document_id, ""), gold_parser, gold_parsers
            ):
                chosen[parse.document_id] = parse
    return chosen


def _kinds(workspace) -> dict[int, str]:
    return dict(Document.objects.filter(workspace=workspace).values_list("pk", "kind"))


def gold_parses(
    workspace, parses: dict[int, ParseVersion], gold_parser: str, gold_parsers: dict | None
) -> dict[int, ParseVersion] | None:
    """Of the chosen ``parses``, those whose spans are written as gold (None: no gold at all)."""
    if not gold_parser and not gold_parsers:
        return None
    kinds = _kinds(workspace)
    out = {}
    for doc, parse in parses.items():
        name = _gold_name(kinds.get(doc, ""), gold_parser, gold_parsers)
        if (name == REFERENCE and parse.is_reference) or (name and parse.parser == name):
            out[doc] = parse
    return out


class ParseTexts(Mapping):
    """``source_id -> text`` of chosen parses, fetched one at a time and only a few kept.

    The format writers take a ``Mapping``; this one never holds the whole corpus in memory.
    """

    KEEP = 4

    def __init__(self, parses: Mapping[str, int]) -> None:
        self._parses = dict(parses)  # source_id -> parse pk
        self._cache: OrderedDict[str, str] = OrderedDict()

    def __getitem__(self, source_id: str) -> str:
        if source_id in self._cache:
            self._cache.move_to_end(source_id)
            return self._cache[source_id]
        pk = self._parses[source_id]
        text = ParseVersion.objects.filter(pk=pk).values_list("text", flat=True).first()
        if text is None:
            raise KeyError(source_id)
        self._cache[source_id] = text
        if len(self._cache) > self.KEEP:
            self._cache.popitem(last=False)
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._parses))

    def __len__(self) -> int:
        return len(self._parses)


# -- creating ----------------------------------------------------------------------------------


def _check_formats(formats: Any) -> list[str]:
    known = exportable_formats()
    if not isinstance(formats, list | tuple) or not formats:
        raise InvalidInput(
            f"choose at least one format to build: {', '.join(known)}", field="formats"
        )
    chosen: list[str] = []
    for slug in formats:
        if slug not in known:
            hint = " (it is import only)" if slug in FORMATS else ""
            raise InvalidInput(
                f"cannot build format {slug!r}{hint}; choose from {', '.join(known)}",
                field="formats",
            )
        if slug not in chosen:
            chosen.append(slug)
    return chosen


def _check_states(states: Any) -> list[str]:
    if states is None or states == []:
        return [ItemState.APPROVED.value]
    if not isinstance(states, list | tuple):
        raise InvalidInput(
            f"include_states must be a list of item states: {', '.join(ItemState.values)}",
            field="include_states",
        )
    for state in states:
        if state not in ItemState.values:
            raise InvalidInput(
                f"{state!r} is not an item state; choose from {', '.join(ItemState.values)}",
                field="include_states",
            )
    return [s for s in ItemState.values if s in states]


def _check_gold_parser(workspace, gold_parser: str | None) -> str:
    gold_parser = (gold_parser or "").strip()
    if not gold_parser:
        return ""
    ready = ParseVersion.objects.filter(document__workspace=workspace, status=ParseStatus.READY)
    if not ready.filter(parser=gold_parser).exists():
        names = sorted(set(ready.values_list("parser", flat=True)))
        raise InvalidInput(
            f"no document in {workspace.slug!r} has a ready parse by {gold_parser!r}; "
            f"parsers with ready parses: {', '.join(names) or 'none'}",
            field="gold_parser",
        )
    return gold_parser


def _check_gold_parsers(workspace, gold_parsers: Any, gold_parser: str) -> dict[str, str]:
    """Per document kind, the parser whose spans become gold, or ``REFERENCE``."""
    if gold_parsers is None or gold_parsers == {}:
        return {}
    if gold_parser:
        raise InvalidInput(
            "give gold_parser (one parser for every document) or gold_parsers (one per kind), "
            "not both",
            field="gold_parsers",
        )
    if not isinstance(gold_parsers, dict):
        raise InvalidInput(
            'gold_parsers maps a document kind to a parser or "reference", like '
            '{"pdf": "pdfminer", "text": "reference"}',
            field="gold_parsers",
        )
    ready = ParseVersion.objects.filter(document__workspace=workspace, status=ParseStatus.READY)
    out: dict[str, str] = {}
    for kind, name in gold_parsers.items():
        name = (name or "").strip() if isinstance(name, str) else name
        if not isinstance(name, str):
            raise InvalidInput(f"gold_parsers.{kind} must be a parser name", field="gold_parsers")
        if not name:
            continue
        by_kind = ready.filter(document__kind=kind)
        if not by_kind.exists():
            raise InvalidInput(
                f"no {kind!r} document in {workspace.slug!r} has a ready parse",
                field="gold_parsers",
            )
        if name != REFERENCE and not by_kind.filter(parser=name).exists():
            names = sorted(set(by_kind.order_by().values_list("parser", flat=True)))
            raise InvalidInput(
                f"no {kind} document in {workspace.slug!r} has a ready parse by {name!r}; "
                f"choose {REFERENCE!r} or one of {', '.join(names)}",
                field="gold_parsers",
            )
        out[kind] = name
    return out


def _check_beir_ids(evalset: EvalSet, states: list[str]) -> None:
    """Refuse a BEIR release whose qrels would name an id BEIR reads back differently."""
    items = EvalItem.objects.filter(evalset=evalset, state__in=states)
    named = [("eval item id", v) for v in items.values_list("item_id", flat=True)]
    named += [
        ("document id", v)
        for v in GoldAnchor.objects.filter(item__in=items)
        .values_list("source_id", flat=True)
        .distinct()
    ]
    for kind, value in named:
        try:
            beir.check_ids(kind, value)
        except ExportRefused as exc:
            raise InvalidInput(str(exc), field="formats") from exc


def nothing_to_release(slug: str, states: list[str]) -> str:
    """Why a release of no items is refused (the API's 400, the form's disabled button)."""
    return (
        f"eval set {slug!r} has no {' or '.join(states)} items to release; approve some "
        "items first, or include other states explicitly"
    )


def release_create(
    *,
    evalset: EvalSet,
    user,
    formats: list[str],
    include_states: list[str] | None = None,
    gold_parser: str | None = None,
    gold_parsers: dict | None = None,
) -> Release:
    """Number a new release of ``evalset``, freeze what it holds, and queue its files' build.

    The release is version ``N`` (the set's current version, or one past the last release)
    and the set becomes version ``N + 1``, the one now being worked on. Gold spans come from
    one ``gold_parser`` for every document, or per document kind (``gold_parsers``, where
    ``REFERENCE`` takes each document's reference parse); neither: anchors only.

    The snapshot (every chosen item as it is now, where its anchors lie, which parse each
    document's text comes from) is written in the same transaction as the release, under
    the set's lock: the release holds what was chosen when it was made, however long its
    build waits for a worker and however often it is redelivered.
    """
    formats = _check_formats(formats)
    states = _check_states(include_states)
    gold_parser = _check_gold_parser(evalset.workspace, gold_parser)
    gold_parsers = _check_gold_parsers(evalset.workspace, gold_parsers, gold_parser)
    if "beir" in formats:
        _check_beir_ids(evalset, states)
    with transaction.atomic():
        quotas.lock_workspace(evalset.workspace)  # before the set: one order for both locks
        quotas.check_releases_today(evalset.workspace)
        quotas.check_room(evalset.workspace, 0, f"a release of {evalset.slug!r}")
        locked = EvalSet.objects.select_for_update().get(pk=evalset.pk)
        if not EvalItem.objects.filter(evalset=locked, state__in=states).exists():
            raise InvalidInput(nothing_to_release(locked.slug, states), field="include_states")
        last = locked.releases.order_by("-version").values_list("version", flat=True).first()
        version = max(locked.version, (last or 0) + 1)
        release = Release.objects.create(
            evalset=locked,
            version=version,
            created_by=user,
            resolver_version=resolver.RESOLVER_VERSION,
            include_states=states,
            includes_unapproved=states != [ItemState.APPROVED],
            formats=formats,
            gold_parser=gold_parser,
            gold_parsers=gold_parsers,
        )
        _snapshot(release)
        EvalSet.objects.filter(pk=locked.pk).update(version=version + 1)
        queue.after_commit("build_release", release.pk)
    evalset.version = version + 1
    return release


# -- freezing ----------------------------------------------------------------------------------


def _items_for(release: Release):
    anchors = GoldAnchor.objects.order_by("created_at", "id").prefetch_related("resolutions")
    approved = ItemEvent.objects.filter(item=OuterRef("pk"), kind=EventKind.APPROVED).order_by(
        "-at", "-id"
    )
    return (
        EvalItem.objects.filter(evalset=release.evalset_id, state__in=release.include_states)
        .annotate(
            approved_by=Subquery(approved.values("actor_name")[:1]),
            approved_at=Subquery(approved.values("at")[:1]),
            approved_data=Subquery(approved.values("data")[:1]),
        )
        .order_by("created_at", "id")
        .prefetch_related(Prefetch("anchors", queryset=anchors))
    )


def _approval(item: EvalItem) -> bridge.Approval | None:
    """Who approved the item and when. An approval restored by importing a file keeps the
    review the file recorded (its ``reviewed_by`` and ``reviewed_at``), not the importer
    and the moment of the import: the import carried a review, it did not make one."""
    if item.state != ItemState.APPROVED or item.approved_at is None:
        return None
    by, at = item.approved_by or "", item.approved_at
    data = getattr(item, "approved_data", None)
    data = data if isinstance(data, dict) else {}
    if "import" in data:
        by = str(data.get("reviewed_by") or "") or by
        at = _when(data.get("reviewed_at")) or at
    return bridge.Approval(by=by, at=at)


def _when(value: Any) -> datetime | None:
    """An ISO 8601 time as a file wrote it, read as UTC when it names no zone."""
    try:
        found = datetime.fromisoformat(str(value or ""))
    except ValueError:
        return None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


class _Unplaced:
    """Anchors the chosen parse does not contain, kept bounded: a count and the first few."""

    SHOWN = 10

    def __init__(self) -> None:
        self.count = 0
        self.lines: list[str] = []

    def add(self, item_id: str, number: int, anchor: GoldAnchor, where: str) -> None:
        self.count += 1
        if len(self.lines) < self.SHOWN:
            quote = anchor.quote if len(anchor.quote) <= 60 else anchor.quote[:57] + "..."
            self.lines.append(f"item {item_id!r} anchor {number} ({quote!r}) {where}")

    def note(self) -> str | None:
        if not self.count:
            return None
        more = f"; and {self.count - self.SHOWN} more" if self.count > self.SHOWN else ""
        return (
            f"{self.count} anchor(s) are not found in the parse this release's files use, so "
            "formats that place evidence in a document (deepset) write the quote alone as "
            f"its context, and no gold span is written: {'; '.join(self.lines)}{more}."
        )


def _where_missing(anchor: GoldAnchor, parse: ParseVersion | None) -> str:
    if parse is None:
        return f"has no ready parse of {anchor.source_id!r}"
    return (
        f"is not in {anchor.source_id!r} as parsed by {parse.parser} {parse.parser_version} "
        f"(parse {parse.public_id})"
    )


class _Freezer:
    """Turns items into release rows, counting what the release notes need to say."""

    #: Parse texts kept while freezing: anchors of one document tend to come together.
    KEEP_TEXTS = 4

    def __init__(
        self, release: Release, parses: dict, gold: dict | None, kinds: dict[int, str]
    ) -> None:
        self.release = release
        self.parses = parses
        self.gold = gold
        self.kinds = kinds
        self.states: dict[str, int] = {}
        self.unanswerable = 0
        #: Drafts nobody has given evidence yet: not started, which is not unanswerable.
        self.not_started = 0
        self.used_docs: set[int] = set()
        self.unplaced = _Unplaced()
        self._texts: OrderedDict[int, str] = OrderedDict()

    def _text(self, parse: ParseVersion) -> str:
        if parse.pk not in self._texts:
            if len(self._texts) >= self.KEEP_TEXTS:
                self._texts.popitem(last=False)
            text = ParseVersion.objects.filter(pk=parse.pk).values_list("text", flat=True)
            self._texts[parse.pk] = text.first() or ""
        return self._texts[parse.pk]

    def _for_reader(
        self, anchor: GoldAnchor, written: cg.GoldAnchor, parse: ParseVersion | None, span
    ) -> cg.GoldAnchor:
        """The anchor as the file's reader must see it to take the copy highlighted (see
        `landing.anchor_for_reader`): only an anchor with a page hint in a document that
        context-grid reads without pages changes, so only those need the parse's text."""
        kind = self.kinds.get(anchor.document_id, "")
        if written.page_hint in (None, 1) or kind in landing.PAGED_KINDS:
            return landing.anchor_for_reader(written, kind=kind, text=None, span=None)
        if span is None and anchor.reference_parse_id and anchor.ref_start is not None:
            parse = ParseVersion(pk=anchor.reference_parse_id)
            span = (anchor.ref_start, anchor.ref_end)
        text = self._text(parse) if parse is not None and span is not None else None
        return landing.anchor_for_reader(written, kind=kind, text=text, span=span)

    def row(self, position: int, item: EvalItem) -> ReleaseItem:
        anchors = list(item.anchors.all())
        cg_item = bridge.item_to_cg(
            item, anchors=anchors, gold_parses=self.gold, approval=_approval(item)
        )
        self.used_docs.update(a.document_id for a in anchors if a.document_id)
        spans = []
        written = []
        for number, anchor in enumerate(anchors, start=1):
            parse = self.parses.get(anchor.document_id) if anchor.document_id else None
            span = bridge.anchor_span(anchor, parse)
            if span is None:
                self.unplaced.add(item.item_id, number, anchor, _where_missing(anchor, parse))
            spans.append(list(span) if span is not None else None)
            written.append(self._for_reader(anchor, cg_item.anchors[number - 1], parse, span))
        cg_item = dataclasses.replace(cg_item, anchors=tuple(written))
        self.states[item.state] = self.states.get(item.state, 0) + 1
        if not cg_item.is_answerable:
            if item.state == ItemState.DRAFT and item.qtype != "unanswerable":
                self.not_started += 1
            else:
                self.unanswerable += 1
        return ReleaseItem(
            release=self.release,
            position=position,
            item_id=item.item_id,
            state=item.state,
            data=cg_item.to_dict(),
            positions=spans,
        )


def _snapshot(release: Release) -> None:
    """Freeze the chosen items as context-grid dicts, in the set's order, written in batches
    (memory stays flat however large the set), with the header, the parse each document's
    text is read from, and the notes. Runs inside the caller's transaction."""
    evalset = release.evalset
    parses = chosen_parses(evalset.workspace, release.gold_parser, release.gold_parsers)
    gold = gold_parses(evalset.workspace, parses, release.gold_parser, release.gold_parsers)
    names = dict(Document.objects.filter(pk__in=list(parses)).values_list("pk", "source_id"))
    freezer = _Freezer(release, parses, gold, _kinds(evalset.workspace))
    position = 0
    batch: list[ReleaseItem] = []
    for item in _items_for(release).iterator(chunk_size=BATCH):
        batch.append(freezer.row(position, item))
        position += 1
        if len(batch) >= BATCH:
            ReleaseItem.objects.bulk_create(batch)
            batch = []
    ReleaseItem.objects.bulk_create(batch)

    release.item_count = position
    release.progress_total = position * len(release.formats)
    release.frozen_at = timezone.now()
    release.header = {
        "id": evalset.slug,
        "version": release.version,
        "source": evalset.source,
        "meta": dict(evalset.meta or {}),
    }
    release.texts = {names[doc]: parse.pk for doc, parse in parses.items()}
    release.parses_used = _parses_used(parses, names, freezer.used_docs, gold)
    release.notes = _release_notes(release, freezer, gold)
    if freezer.unplaced.note():
        release.notes.append(freezer.unplaced.note())
    release.save(
        update_fields=[
            "item_count",
            "progress_total",
            "frozen_at",
            "header",
            "texts",
            "parses_used",
            "notes",
            "updated_at",
        ]
    )


def _parses_used(
    parses: dict[int, ParseVersion],
    names: dict[int, str],
    used_docs: set[int],
    gold: dict[int, ParseVersion] | None,
) -> dict:
    return {
        names[doc]: {
            "parse": str(parse.public_id),
            "parser": parse.parser,
            "parser_version": parse.parser_version,
            "gold": gold is not None and doc in gold,
        }
        for doc, parse in sorted(parses.items(), key=lambda kv: names[kv[0]])
        if doc in used_docs
    }


def _release_notes(
    release: Release, freezer: _Freezer, gold: dict[int, ParseVersion] | None
) -> list[str]:
    notes: list[str] = []
    if release.includes_unapproved:
        others = {s: n for s, n in freezer.states.items() if s != ItemState.APPROVED}
        if others:
            listed = ", ".join(f"{n} {s}" for s, n in sorted(others.items()))
            who = release.created_by.username if release.created_by else "the owner"
            notes.append(
                f"Includes items that are not approved ({listed}), explicitly chosen by {who}."
            )
    if freezer.unanswerable:
        noun = "item has" if freezer.unanswerable == 1 else "items have"
        notes.append(f"{freezer.unanswerable} {noun} no evidence and count as unanswerable.")
    if freezer.not_started:
        noun = "draft has" if freezer.not_started == 1 else "drafts have"
        notes.append(
            f"{freezer.not_started} {noun} no evidence yet (not annotated, so not counted as "
            "unanswerable); the file holds them without evidence, which a scorer reads as "
            "unanswerable."
        )
    if gold is not None:
        missing = sorted(
            Document.objects.filter(pk__in=freezer.used_docs)
            .exclude(pk__in=list(gold))
            .values_list("source_id", flat=True)
        )
        if missing:
            shown = ", ".join(missing[:5]) + (
                f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            )
            chosen = (
                repr(release.gold_parser)
                if release.gold_parser
                else "the parser chosen for their kind"
            )
            notes.append(
                f"No ready parse by {chosen} for {len(missing)} document(s), so "
                f"their evidence has anchors but no gold spans: {shown}."
            )
    return notes


# -- building ----------------------------------------------------------------------------------


def release_claim(release_id: int) -> Release | None:
    """The release, claimed for building by this worker; ``None`` if gone, built or busy.

    A queued release is claimed; so is one left ``building`` by a worker that stopped
    renewing it (``release_build`` renews it from a thread while it runs), unless it was
    abandoned ``MAX_BUILD_INTERRUPTIONS`` times already: then it fails with that reason.
    A ready or failed release is never claimed, so a redelivered message for it does nothing.
    """
    now = timezone.now()
    claimed = Release.objects.filter(pk=release_id, status=ReleaseStatus.QUEUED).update(
        status=ReleaseStatus.BUILDING, progress_done=0, error="", updated_at=now
    )
    if not claimed and not _take_over_abandoned(release_id, now):
        return None
    return Release.objects.select_related("evalset__workspace", "created_by").get(pk=release_id)


def abandoned_builds(now=None) -> Q:
    """Releases being built whose builder stopped renewing them (``ingest.lease_length``)."""
    now = now or timezone.now()
    return Q(status=ReleaseStatus.BUILDING, updated_at__lt=now - ingest.lease_length())


INTERRUPTED = (
    "the build was interrupted {n} times (its worker stopped while building it, as one "
    "killed for memory or time does), so it was not started again; try a release with "
    "fewer formats or items, or ask an administrator to look at the workers' logs"
)


def _take_over_abandoned(release_id: int, now) -> bool:
    """Resume an abandoned build (True), or fail it once it was abandoned too often.

    Each takeover counts one more interruption, which is also what tells the builder that
    was taken over (should it still be running) that it no longer holds the release."""
    abandoned = Release.objects.filter(abandoned_builds(now), pk=release_id)
    given_up = abandoned.filter(interruptions__gte=MAX_BUILD_INTERRUPTIONS).update(
        status=ReleaseStatus.FAILED,
        error=INTERRUPTED.format(n=MAX_BUILD_INTERRUPTIONS + 1),
        interruptions=F("interruptions") + 1,
        finished_at=now,
        updated_at=now,
    )
    if given_up:
        log.warning("release %s failed: its build was interrupted too often", release_id)
        _remove_files(Release.objects.get(pk=release_id))
        return False
    return (
        abandoned.update(interruptions=F("interruptions") + 1, progress_done=0, updated_at=now) == 1
    )


def _holding(release: Release):
    """The release, while this builder still holds it: building, and not taken over since
    it was claimed. Every write of a build goes through it, so a builder that was taken for
    dead but still runs (a stalled host) changes nothing of what its successor does."""
    return Release.objects.filter(
        pk=release.pk, status=ReleaseStatus.BUILDING, interruptions=release.interruptions
    )


class _Superseded(Exception):
    """This builder was taken over while it ran: another one builds the release now."""


class _Progress:
    def __init__(self, release: Release, every: int = 250) -> None:
        self.release = release
        self.every = every
        self.done = 0

    def step(self, n: int = 1) -> None:
        before = self.done
        self.done += n
        if self.done // self.every != before // self.every:
            self.flush()

    def flush(self) -> None:
        _holding(self.release).update(progress_done=self.done, updated_at=timezone.now())


class _Frozen:
    """The frozen items, streamed once in order, and where each one's anchors lie.

    A writer iterates it and asks ``positions(item)`` about the item it was just handed;
    only that item's positions are held, so memory stays flat however large the set is.
    Rows are read a batch at a time, with no cursor left open while the build writes its
    progress: on SQLite a read left open across another connection's commit would make
    this connection's next write fail at once ("database is locked").
    """

    def __init__(self, release: Release, progress: _Progress | None) -> None:
        self.release = release
        self.progress = progress
        self._current: tuple[str, list] = ("", [])

    def __iter__(self) -> Iterator[cg.EvalItem]:
        rows = ReleaseItem.objects.filter(release=self.release).order_by("position")
        start = 0
        while batch := list(
            rows.filter(position__gte=start).values_list("position", "data", "positions")[:BATCH]
        ):
            for position, data, positions in batch:
                item = cg.EvalItem.from_dict(data)
                self._current = (item.id, positions)
                yield item
                if self.progress is not None:
                    self.progress.step()
                start = position + 1

    def positions(self, item: cg.EvalItem) -> list[tuple[int, int] | None]:
        item_id, positions = self._current
        if item.id != item_id:
            raise LookupError(f"positions asked for {item.id!r} while writing {item_id!r}")
        return [tuple(p) if p is not None else None for p in positions]


def frozen_texts(release: Release) -> ParseTexts:
    """The texts the release's files read, from the parses chosen when it was made (those
    deleted since, with their document, are left out)."""
    chosen = release.texts or {}
    there = set(ParseVersion.objects.filter(pk__in=chosen.values()).values_list("pk", flat=True))
    return ParseTexts({source: pk for source, pk in chosen.items() if pk in there})


def write_format(
    release: Release, slug: str, out, texts: ParseTexts, progress: _Progress | None = None
):
    """Write the release's ``slug`` file into ``out`` from its snapshot alone; returns the
    writer's notes. Nothing in it depends on when or where it is written, so a build that
    is resumed or redone writes the same bytes."""
    frozen = _Frozen(release, progress)
    return FORMATS[slug].writer(
        EvalSetHeader(**release.header),
        iter(frozen),
        out,
        documents=texts,
        positions=frozen.positions,
    )


def _sha256_and_size(handle) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    handle.seek(0)
    for chunk in iter(lambda: handle.read(1 << 16), b""):
        digest.update(chunk)
        size += len(chunk)
    handle.seek(0)
    return digest.hexdigest(), size


def release_filename(release: Release, slug: str) -> str:
    name = (release.header or {}).get("id") or release.evalset.slug
    return FORMATS[slug].filename(f"{name}-v{release.version}-{slug}")


def _build_file(release: Release, slug: str, texts: ParseTexts, progress: _Progress) -> None:
    fmt = FORMATS[slug]
    with tempfile.TemporaryFile() as handle:
        notes = write_format(release, slug, handle, texts, progress)
        sha256, size = _sha256_and_size(handle)
        stored = ReleaseFile(
            release=release,
            format=slug,
            filename=release_filename(release, slug),
            media_type=fmt.media_type,
            sha256=sha256,
            size=size,
            notes=list(notes.notes),
            counts=dict(notes.counts),
            rows=notes.rows,
        )
        stored.file.save(stored.filename, File(handle), save=False)
    _record_file(release, stored)


def _record_file(release: Release, stored: ReleaseFile) -> None:
    """Keep the stored file as the release's, if this builder still holds the release."""
    with transaction.atomic():
        if list(_holding(release).select_for_update().values_list("pk", flat=True)):
            stored.save()
            return
    if not ReleaseFile.objects.filter(release=release, file=stored.file.name).exists():
        stored.file.storage.delete(stored.file.name)
    raise _Superseded


def _remove_files(release: Release) -> None:
    for stored in ReleaseFile.objects.filter(release=release):
        if stored.file:
            stored.file.storage.delete(stored.file.name)
        stored.delete()
    _remove_unrecorded(release)


def _remove_unrecorded(release: Release) -> None:
    """Delete what lies in the release's folder with no file row naming it: what a build
    killed mid-write, or stopped by a full disk, left there (a partial or empty file)."""
    storage = ReleaseFile._meta.get_field("file").storage
    folder = release_folder(release)
    try:
        _folders, names = storage.listdir(folder)
    except (FileNotFoundError, NotImplementedError):
        return
    recorded = set(ReleaseFile.objects.filter(release=release).values_list("file", flat=True))
    for name in names:
        path = f"{folder}/{name}"
        if path not in recorded:
            storage.delete(path)


def _renew_build(release: Release) -> int:
    """Say the build is alive; 0 once it is no longer this builder's (done, failed, taken)."""
    return _holding(release).update(updated_at=timezone.now())


def _build(release: Release, progress: _Progress) -> None:
    if not _holding(release).exists():
        raise _Superseded  # taken over before this builder even began
    if release.frozen_at is None:
        # Queued before releases were frozen when made: freeze it now, once.
        with transaction.atomic():
            ReleaseItem.objects.filter(release=release).delete()
            _snapshot(release)
    _remove_unrecorded(release)
    done = set(ReleaseFile.objects.filter(release=release).values_list("format", flat=True))
    texts = frozen_texts(release)
    for slug in release.formats:
        if slug in done:  # written whole by an earlier attempt, from the same snapshot
            progress.step(release.item_count)
            continue
        _build_file(release, slug, texts, progress)


STORAGE_WAITING = (
    "storage refused the release's files ({reason}), so nothing of them was kept; the "
    "build is tried again in about {seconds} s (attempt {tries} of {limit})"
)
STORAGE_GAVE_UP = (
    "storage refused the release's files each of the {limit} times they were written "
    "({reason}), so nothing of them was kept; free space on the server's storage and make "
    "the release again"
)


def _storage_refused(release: Release, exc: OSError) -> None:
    """Clean up after a write storage refused, and queue the build again (the sweep sends
    it once the stale limit has passed) or, past the tries allowed, fail it saying why."""
    now = timezone.now()
    holding = _holding(release)
    if not holding.exists():
        return
    _remove_unrecorded(release)
    tries = release.storage_failures + 1
    limit = max(1, settings.GROUNDWORK_RELEASE_STORAGE_TRIES)
    reason = exc.strerror or str(exc) or type(exc).__name__
    log.warning("release %s: storage refused its files (%s), try %s", release.pk, reason, tries)
    if tries < limit:
        seconds = int(settings.GROUNDWORK_SWEEP_STALE_S)
        error = STORAGE_WAITING.format(reason=reason, seconds=seconds, tries=tries, limit=limit)
        holding.update(
            status=ReleaseStatus.QUEUED, error=error, storage_failures=tries, updated_at=now
        )
        return
    error = STORAGE_GAVE_UP.format(limit=limit, reason=reason)
    if holding.update(
        status=ReleaseStatus.FAILED, error=error, storage_failures=tries, finished_at=now
    ):
        _remove_files(release)


def _failed(release: Release, exc: Exception) -> None:
    log.exception("release %s failed to build", release.pk)
    if _holding(release).update(
        status=ReleaseStatus.FAILED,
        error=f"the build failed: {type(exc).__name__}: {exc}",
        finished_at=timezone.now(),
    ):
        _remove_files(release)


def release_build(release: Release) -> Release:
    """Write every chosen format from the frozen snapshot; on failure the release says why.

    The build renews the release from a thread while it runs, so a worker killed mid-build
    leaves it to be taken over (``release_claim``, queued again by the sweep) once it stops
    renewing; the next build keeps the files written whole, removes what was left half
    written, and writes the rest. Storage that refuses a file (a full disk) queues the
    build again, up to ``GROUNDWORK_RELEASE_STORAGE_TRIES`` times. Nothing of a release is
    served before it is ready, and a ready release is never built again.
    """
    progress = _Progress(release)
    try:
        with ingest._Heartbeat(lambda: _renew_build(release), f"release {release.pk}"):
            _build(release, progress)
    except OperationalError as exc:
        if not dberrors.transient(exc):
            _failed(release, exc)  # a bug (a missing column, say): a retry fails the same way
        else:
            # A lock or a lost connection: give the release back to the queue and let the
            # task retry.
            _holding(release).update(status=ReleaseStatus.QUEUED)
            raise
    except _Superseded:
        log.info("release %s: taken over by another builder; this one stops", release.pk)
    except OSError as exc:
        _storage_refused(release, exc)
    except Exception as exc:
        _failed(release, exc)
    else:
        _holding(release).update(
            status=ReleaseStatus.READY,
            progress_done=release.progress_total,
            finished_at=timezone.now(),
        )
    release.refresh_from_db()
    return release


# -- comparing --------------------------------------------------------------------------------


def release_compare(older: Release, newer: Release) -> dict[str, Any]:
    """Items added, removed and changed (field by field) from ``older`` to ``newer``."""
    before = dict(older.items.order_by("position").values_list("item_id", "data"))
    after = dict(newer.items.order_by("position").values_list("item_id", "data"))
    added = [i for i in after if i not in before]
    removed = [i for i in before if i not in after]
    changed = []
    for item_id, data in after.items():
        old = before.get(item_id)
        if old is None or old == data:
            continue
        fields = {
            name: {"before": old.get(name), "after": data.get(name)}
            for name in ITEM_FIELDS
            if old.get(name) != data.get(name)
        }
        changed.append({"id": item_id, "fields": fields})
    return {
        "from": older.version,
        "to": newer.version,
        "added": added,
        "removed": removed,
        "changed": changed,
        "unchanged": len(after) - len(added) - len(changed),
    }


def release_states(evalset: EvalSet) -> dict[str, int]:
    """How many items the set holds in each state (for the create form)."""
    counts = dict(
        EvalItem.objects.filter(evalset=evalset)
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    return {state: counts.get(state, 0) for state in ItemState.values}
