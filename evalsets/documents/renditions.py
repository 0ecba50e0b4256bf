"""The rendered view of a document: built once by a worker, stored, read a few sections at a time.

Building a view means reading the uploaded file, sanitising it and aligning it to the
reference parse (``evalsets.pure.rendering``): seconds for a 50 MB page. So a worker builds it
(``render_document``, on the parse queue) as soon as the reference parse of an HTML, Markdown
or Word document is ready, and whenever another parse becomes the reference, and stores it
in the storage (``evalsets.storage``: a shared folder or object storage) where every web
process, on any host, reads it:

    renditions/<document id>-<sha256[:16]>/<parse id>-<parse updated, µs>/
        sections-<token>.jsonl   one line per section: the payload the API serves for it
        index.json               section count, each section's HTML size and its byte range
                                 in the sections file (and that file's name)
        read                     touched when read (at most every ``TOUCH_SECONDS``)

The build runs in a limited child process (``parsers.limited``): processor time, wall-clock
time, memory and the size of the stored view are bounded by ``GROUNDWORK_RENDER_*``, and a
Word file's images are inlined up to ``GROUNDWORK_RENDER_IMAGE_MB``. A build that fails, on
its own or at a limit, leaves ``broken.txt`` with the reason, so readers are told at once and
nobody builds it again. A build that takes its worker down with it (the machine's
out-of-memory killer, the task's hard time limit) is counted before it starts
(``.<folder>.attempts``); the delivery after the second such death records that instead of
trying a third time, so the message is acknowledged rather than redelivered forever.

A request reads the index and the byte range of the sections it serves (at most ten, fetched
by range from object storage), so a web process never holds a whole 50 MB view. The index is
stored last, and only if no other worker stored one first, so a reader sees a whole
rendition or none. Reading touches ``read``, and the renditions are kept within
``GROUNDWORK_RENDITIONS_MB``: after each build the least recently read go (``prune``), and a
reader of one gone is answered as before it was built. A file the sanitiser cannot draw
leaves ``broken.txt`` with the reason instead, so readers are told at once.

Until the rendition is stored, ``stored_sections`` raises ``Preparing`` (the API answers 202
and the page polls) and asks a worker for it once a while (``REQUEUE_SECONDS``), which also
covers documents uploaded before renditions were stored.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import defaultdict

from django.conf import settings
from django.core.files.base import ContentFile

from evalsets import queue
from evalsets import storage as stored
from evalsets.errors import Conflict
from evalsets.models import Document, ParseStatus, ParseVersion
from evalsets.pure.diskbudget import evict_least_recent
from evalsets.pure.parsers.limited import JobError, run_limited
from evalsets.pure.rendering import RENDERED_KINDS, render_view_job, unpack_view, view_input

logger = logging.getLogger(__name__)

#: A request for a rendition not yet stored asks a worker again after this long (the first
#: message may have been lost with a worker, or the document predates stored renditions).
REQUEUE_SECONDS = 120
#: A rendition's ``read`` marker is written again when it is older than this: the order in
#: which renditions are pruned needs no finer clock, and a read costs no write most times.
TOUCH_SECONDS = 600

_INDEX, _BROKEN, _READ = "index.json", "broken.txt", "read"
#: The sections' file of a rendition stored before its index named it.
_SECTIONS = "sections.jsonl"
_ASKED, _ATTEMPTS = ".asked", ".attempts"
ROOT = "renditions"

#: A build that took its worker down this many times is not tried again.
MAX_WORKER_DEATHS = 2
#: What a reader is told when the view cannot be drawn, after the reason.
_READ_THE_TEXT = "This document cannot be drawn as it looks; read it in the Text view."
_RENDER_JOB = f"{render_view_job.__module__}:{render_view_job.__name__}"


class Preparing(Exception):
    """The rendition is not stored yet: a worker has been asked for it, or the reference
    parse is still being read (its end queues the build)."""


def has_rendered_view(document: Document) -> bool:
    return document.kind in RENDERED_KINDS


def document_dir(document: Document) -> str:
    """The storage folder of a document's renditions."""
    return f"{ROOT}/{document.pk}-{document.sha256[:16]}"


def parse_dir(document: Document, parse: ParseVersion) -> str:
    """The storage folder of the view aligned to ``parse`` (as it is now: a re-read parse is
    a new folder)."""
    return f"{document_dir(document)}/{parse.pk}-{int(parse.updated_at.timestamp() * 1e6)}"


def _marker(folder: str, suffix: str) -> str:
    """A marker beside ``folder`` (not in it: it outlives a folder that is never stored)."""
    parent, _, name = folder.rpartition("/")
    return f"{parent}/.{name}{suffix}"


def is_stored(folder: str) -> bool:
    """Whether the rendition in ``folder`` is stored (its index, or why it cannot be)."""
    store = stored.storage()
    return store.exists(f"{folder}/{_INDEX}") or store.exists(f"{folder}/{_BROKEN}")


def _check(document: Document, parse: ParseVersion) -> None:
    if not has_rendered_view(document):
        raise Conflict(
            f"{document.kind or 'this'} documents have no rendered view; read their text",
            field="document",
        )
    if parse.status in (ParseStatus.QUEUED, ParseStatus.PARSING):
        raise Preparing(
            f"the reference parse is {parse.status}; the view is built when it is ready"
        )
    if parse.status != ParseStatus.READY:
        raise Conflict(
            f"the reference parse is {parse.status}, not ready; the view appears when it is",
            field="parse",
        )


# -- asking for a rendition --------------------------------------------------------------------


def rendition_request(*, parse: ParseVersion) -> None:
    """Queue the build of ``parse``'s rendition (after commit) if it is a ready reference parse
    of a document with a rendered view: when it becomes ready, and when it becomes the
    reference."""
    ready = parse.is_reference and parse.status == ParseStatus.READY
    if ready and parse.document.kind in RENDERED_KINDS:
        queue.after_commit("render_document", parse.pk)


def _age(name: str) -> float | None:
    """Seconds since ``name`` was stored, or None when it is not."""
    modified = stored.modified_at(name)
    return None if modified is None else time.time() - modified


def _ask(folder: str, parse: ParseVersion) -> None:
    """Ask a worker for the rendition, unless someone asked within ``REQUEUE_SECONDS``."""
    marker = _marker(folder, _ASKED)
    age = _age(marker)
    if age is not None and age < REQUEUE_SECONDS:
        return
    stored.replace(marker, b"")
    queue.after_commit("render_document", parse.pk)


# -- building (in a worker) --------------------------------------------------------------------


def rendition_build(*, parse: ParseVersion) -> int:
    """Build and store the rendered view of ``parse``'s document aligned to ``parse``.

    Returns the number of sections stored (0 when it was stored already, or the document
    cannot be drawn: ``broken.txt`` then says so). Older renditions of the document (another
    reference parse, an earlier read of this one) are removed.
    """
    document = parse.document
    _check(document, parse)
    folder = parse_dir(document, parse)
    if is_stored(folder):
        return 0
    attempts = _marker(folder, _ATTEMPTS)
    deaths = _count_attempt(attempts)
    try:
        if deaths >= MAX_WORKER_DEATHS:
            logger.warning(
                "the view of document %s killed its worker %d times", document.pk, deaths
            )
            count = _store(folder, None, _worker_deaths_reason(deaths))
        else:
            text = ParseVersion.objects.filter(pk=parse.pk).values_list("text", flat=True).get()
            packed, reason = _render(document, text)
            count = _store(folder, packed, reason)
    finally:
        stored.storage().delete(attempts)  # not reached when the worker itself is killed
    if count is None:
        return 0
    _drop_others(folder)
    prune(keep=folder)
    return count


def _count_attempt(attempts: str) -> int:
    """How many builds before this one started and never finished (their worker died); this
    one is counted too, before it starts."""
    try:
        before = int(stored.read_bytes(attempts).decode("ascii") or 0)
    except (FileNotFoundError, ValueError):
        before = 0
    stored.replace(attempts, str(before + 1).encode("ascii"))
    return before


def _worker_deaths_reason(deaths: int) -> str:
    return (
        f"Drawing this document as it looks stopped the worker drawing it {deaths} times, "
        f"so it is not tried again. {_READ_THE_TEXT}"
    )


def _render(document: Document, text: str) -> tuple[bytes | None, str]:
    """The packed view (``rendering.pack_view``) built in a limited child, or (None, why it
    cannot be)."""
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ValueError):
        return None, "the uploaded file is no longer in storage; upload it again"
    try:
        packed = run_limited(
            _RENDER_JOB,
            view_input(data, text),
            args={
                "kind": document.kind,
                "max_image_bytes": settings.GROUNDWORK_RENDER_IMAGE_MB * 1024 * 1024,
            },
            timeout_s=settings.GROUNDWORK_RENDER_TIMEOUT_S,
            cpu_s=settings.GROUNDWORK_RENDER_CPU_S,
            memory_mb=settings.GROUNDWORK_RENDER_MEMORY_MB,
            max_output_bytes=settings.GROUNDWORK_RENDER_OUTPUT_MB * 1024 * 1024,
            what="Drawing this document as it looks",
        )
    except JobError as exc:
        logger.warning("no rendered view of document %s: %s (%s)", document.pk, exc, exc.detail)
        return None, _failure_reason(exc)
    return packed, ""


def _failure_reason(exc: JobError) -> str:
    """What readers are told: a limit's or the file's own reason, or (a library that could
    not read a file its parser read) only that it cannot be drawn."""
    if exc.code == "failed":
        return "this document cannot be drawn as it looks; read it in the Text view"
    return f"{exc.reason} {_READ_THE_TEXT}"


def _store(folder: str, packed: bytes | None, reason: str) -> int | None:
    """Store the view (or ``broken.txt`` with ``reason``): the sections under a name of this
    build's own, then the index naming them, only if no index is stored yet. The sections
    stored, or None when another worker stored the view first (theirs stands)."""
    if packed is None:
        return 0 if stored.save_new(f"{folder}/{_BROKEN}", reason.encode("utf-8")) else None
    index, sections = unpack_view(packed)
    index["sections"] = f"sections-{uuid.uuid4().hex[:12]}.jsonl"
    sections_name = f"{folder}/{index['sections']}"
    stored.storage().save(sections_name, ContentFile(sections))
    try:
        won = stored.save_new(f"{folder}/{_INDEX}", json.dumps(index).encode("utf-8"))
    except BaseException:
        stored.storage().delete(sections_name)
        raise
    if not won:
        stored.storage().delete(sections_name)
        return None
    return index["section_count"]


#: A marker untouched this long was left by a build whose worker died.
_ABANDONED_SECONDS = 3600


def _drop_others(keep: str) -> None:
    """Remove the document's other renditions and their markers (a build in progress has
    no folder yet, only its ``.attempts`` marker, which stays unless abandoned)."""
    store = stored.storage()
    parent = keep.rpartition("/")[0]
    for name in stored.stored_names(parent):
        if name.startswith(f"{keep}/") or name == _marker(keep, _ATTEMPTS):
            continue
        if name.endswith(_ATTEMPTS) and not _abandoned(name):
            continue
        store.delete(name)


def _abandoned(name: str) -> bool:
    age = _age(name)
    return age is not None and age > _ABANDONED_SECONDS


def _stored_renditions() -> dict[str, dict]:
    """Each stored rendition folder: its bytes, when it was last read, whether it is whole."""
    found: dict[str, dict] = defaultdict(lambda: {"size": 0, "read": 0.0, "index": False})
    for name, size, modified in stored.listing(ROOT):
        folder, _, leaf = name.rpartition("/")
        if folder.count("/") != 2 or leaf.startswith("."):
            continue  # a marker beside the folders
        entry = found[folder]
        entry["size"] += size
        if leaf in (_INDEX, _READ):
            entry["read"] = max(entry["read"], modified)
            entry["index"] = entry["index"] or leaf == _INDEX
    return found


def prune(budget_bytes: int | None = None, keep: str | None = None) -> int:
    """Delete the least recently read renditions (their ``read`` marker, else their index)
    until they are within their budget (``GROUNDWORK_RENDITIONS_MB``), never ``keep``;
    bytes freed."""
    if budget_bytes is None:
        budget_bytes = settings.GROUNDWORK_RENDITIONS_MB * 1024 * 1024
    found = _stored_renditions()
    total = sum(entry["size"] for entry in found.values())
    entries = [
        (entry["read"], entry["size"], folder)
        for folder, entry in found.items()
        if folder != keep and entry["index"]  # a broken one is a few bytes: it stays
    ]
    return evict_least_recent(entries, total, budget_bytes, _remove)


def _remove(folder: str) -> bool:
    return stored.delete_folder(folder) > 0  # 0: another process pruned it first


def _touch(folder: str) -> None:
    """Note that the rendition was read now (at most every ``TOUCH_SECONDS``)."""
    marker = f"{folder}/{_READ}"
    age = _age(marker)
    if age is None or age > TOUCH_SECONDS:
        stored.replace(marker, b"")


# -- serving (in a web process) ----------------------------------------------------------------


def _stored_index(folder: str, parse: ParseVersion) -> dict:
    """The rendition's index; ``Preparing`` (after asking a worker) while it is not stored,
    ``Conflict`` with the reason when it cannot be drawn."""
    try:
        index = json.loads(stored.read_bytes(f"{folder}/{_INDEX}"))
    except FileNotFoundError:
        try:
            reason = stored.read_bytes(f"{folder}/{_BROKEN}").decode("utf-8")
        except FileNotFoundError:
            _ask(folder, parse)
            raise Preparing("the document as it looks is being prepared by a worker") from None
        raise Conflict(reason, field="document") from None
    except ValueError:  # a file-system storage shows a file while it is written
        raise Preparing("the document as it looks is being stored by a worker") from None
    _touch(folder)  # read now: the last to go when the renditions are pruned
    return index


def _read_range(name: str, start: int, end: int) -> bytes:
    with stored.open_ranged(name) as handle:
        handle.seek(start)
        return handle.read(end - start)


def stored_sections(document: Document, parse: ParseVersion, first: int, last: int) -> dict:
    """Sections ``first``..``last`` (1-based, inclusive; ``last`` is capped at the count) of
    the stored view, with the count and every section's size.

    Raises ``Preparing`` (after asking a worker) while it is not stored yet, ``Conflict`` for
    a document that has no view or cannot be drawn, and ``IndexError`` when ``first`` is past
    the last section (the message names the count).
    """
    _check(document, parse)
    folder = parse_dir(document, parse)
    index = _stored_index(folder, parse)
    count = index["section_count"]
    if first > count:
        raise IndexError(count)
    last = min(last, count)
    start, end = index["ranges"][first - 1][0], index["ranges"][last - 1][1]
    try:
        chunk = _read_range(f"{folder}/{index.get('sections', _SECTIONS)}", start, end)
    except FileNotFoundError:  # removed since the index was read: a new reference's is coming
        raise Preparing("the document as it looks is being prepared by a worker") from None
    return {
        "section_count": count,
        "section_sizes": index["section_sizes"],
        # absent from a view stored before search used it: the client then reads section 1
        "section_parse_starts": index.get("section_parse_starts", []),
        "from": first,
        "to": last,
        "sections": [json.loads(line) for line in chunk.splitlines()],
    }


def forget(folder: str) -> None:
    """Drop stored renditions (``document_dir`` or ``parse_dir``, taken before the delete),
    with the markers beside a parse's folder."""
    stored.delete_folder(folder)
    store = stored.storage()
    for suffix in (_ASKED, _ATTEMPTS):
        store.delete(_marker(folder, suffix))
