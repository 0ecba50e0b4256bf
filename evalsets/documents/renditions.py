"""The rendered view of a document: built once by a worker, stored, read a few sections at a time.

Building a view means reading the uploaded file, sanitising it and aligning it to the
reference parse (``evalsets.pure.rendering``): seconds for a 50 MB page. So a worker builds it
(``render_document``, on the parse queue) as soon as the reference parse of an HTML, Markdown
or Word document is ready, and whenever another parse becomes the reference, and stores it
on disk where every web process reads it:

    MEDIA_ROOT/renditions/<document id>-<sha256[:16]>/<parse id>-<parse updated, µs>/
        sections.jsonl   one line per section: the payload the API serves for it
        index.json       section count, each section's HTML size and its byte range above

The build runs in a limited child process (``parsers.limited``): processor time, wall-clock
time, memory and the size of the stored view are bounded by ``GROUNDWORK_RENDER_*``, and a
Word file's images are inlined up to ``GROUNDWORK_RENDER_IMAGE_MB``. A build that fails, on
its own or at a limit, leaves ``broken.txt`` with the reason, so readers are told at once and
nobody builds it again. A build that takes its worker down with it (the machine's
out-of-memory killer, the task's hard time limit) is counted before it starts
(``.<folder>.attempts``); the delivery after the second such death records that instead of
trying a third time, so the message is acknowledged rather than redelivered forever.

A request reads the index and the byte range of the sections it serves (at most ten), so a
web process never holds a whole 50 MB view. A folder is written under a temporary name and
renamed, so a reader sees a whole rendition or none. Reading touches the index, and the
folder is kept within ``GROUNDWORK_RENDITIONS_MB``: after each build the least recently read
renditions go (``prune``), and a reader of one gone is answered as before it was built. A
file the sanitiser cannot draw leaves ``broken.txt`` with the reason instead, so readers are
told at once.

Until the rendition is stored, ``stored_sections`` raises ``Preparing`` (the API answers 202
and the page polls) and asks a worker for it once a while (``REQUEUE_SECONDS``), which also
covers documents uploaded before renditions were stored.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings

from evalsets import queue
from evalsets.errors import Conflict
from evalsets.models import Document, ParseStatus, ParseVersion
from evalsets.pure.diskbudget import evict_least_recent
from evalsets.pure.parsers.limited import JobError, run_limited
from evalsets.pure.rendering import RENDERED_KINDS, render_view_job, unpack_view, view_input

logger = logging.getLogger(__name__)

#: A request for a rendition not yet stored asks a worker again after this long (the first
#: message may have been lost with a worker, or the document predates stored renditions).
REQUEUE_SECONDS = 120

_INDEX, _SECTIONS, _BROKEN, _ASKED = "index.json", "sections.jsonl", "broken.txt", ".asked"
_ATTEMPTS = ".attempts"

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


def rendition_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "renditions"


def document_dir(document: Document) -> Path:
    return rendition_root() / f"{document.pk}-{document.sha256[:16]}"


def parse_dir(document: Document, parse: ParseVersion) -> Path:
    """Where the view aligned to ``parse`` (as it is now: a re-read parse is a new folder)."""
    return document_dir(document) / f"{parse.pk}-{int(parse.updated_at.timestamp() * 1e6)}"


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


def _ask(folder: Path, parse: ParseVersion) -> None:
    """Ask a worker for the rendition, unless someone asked within ``REQUEUE_SECONDS``."""
    marker = folder.parent / f".{folder.name}{_ASKED}"
    try:
        if time.time() - marker.stat().st_mtime < REQUEUE_SECONDS:
            return
    except FileNotFoundError:
        pass
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
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
    if (folder / _INDEX).exists() or (folder / _BROKEN).exists():
        return 0
    folder.parent.mkdir(parents=True, exist_ok=True)
    attempts = folder.parent / f".{folder.name}{_ATTEMPTS}"
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
        attempts.unlink(missing_ok=True)  # not reached when the worker itself is killed
    if count is None:
        return 0
    _drop_others(folder)
    prune(keep=folder)
    return count


def _count_attempt(attempts: Path) -> int:
    """How many builds before this one started and never finished (their worker died); this
    one is counted too, before it starts."""
    try:
        before = int(attempts.read_text(encoding="ascii") or 0)
    except (FileNotFoundError, ValueError):
        before = 0
    attempts.write_text(str(before + 1), encoding="ascii")
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


def _store(folder: Path, packed: bytes | None, reason: str) -> int | None:
    """Write the view (or ``broken.txt`` with ``reason``) under a temporary name and rename it
    into place; the sections stored, or None when another worker stored it first."""
    staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".build-"))
    try:
        count = 0
        if packed is None:
            (staging / _BROKEN).write_text(reason, encoding="utf-8")
        else:
            count = _write(staging, packed)
        try:
            os.rename(staging, folder)
        except OSError:  # another worker stored it first: theirs stands
            shutil.rmtree(staging, ignore_errors=True)
            return None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return count


def _write(staging: Path, packed: bytes) -> int:
    index, sections = unpack_view(packed)
    (staging / _SECTIONS).write_bytes(sections)
    (staging / _INDEX).write_text(json.dumps(index), encoding="utf-8")
    return index["section_count"]


#: A build folder untouched this long was left by a worker that died while building.
_ABANDONED_SECONDS = 3600


def _drop_others(keep: Path) -> None:
    """Remove the document's other renditions, the requests for them, and abandoned builds
    (another worker's build in progress stays)."""
    for entry in keep.parent.iterdir():
        if entry == keep:
            continue
        if entry.name.endswith((_ASKED, _ATTEMPTS)):
            entry.unlink(missing_ok=True)
        elif not entry.name.startswith(".build-") or _abandoned(entry):
            shutil.rmtree(entry, ignore_errors=True)


def prune(budget_bytes: int | None = None, keep: Path | None = None) -> int:
    """Delete the least recently read renditions (their index read last) until the folder
    is within its budget (``GROUNDWORK_RENDITIONS_MB``), never ``keep``; bytes freed."""
    if budget_bytes is None:
        budget_bytes = settings.GROUNDWORK_RENDITIONS_MB * 1024 * 1024
    stored = []
    total = 0
    for folder in rendition_root().glob("*/*/"):
        if folder.name.startswith(".") or folder == keep:
            continue
        try:
            read, size = (folder / _INDEX).stat().st_mtime, _size(folder)
        except FileNotFoundError:  # a broken one (no index), or removed meanwhile
            continue
        stored.append((read, size, folder))
        total += size
    if keep is not None:
        total += _size(keep)
    return evict_least_recent(stored, total, budget_bytes, _remove)


def _remove(folder: Path) -> bool:
    if not folder.is_dir():  # another process pruned it first
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def _size(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in os.scandir(folder) if entry.is_file())


def _abandoned(build: Path) -> bool:
    try:
        return time.time() - build.stat().st_mtime > _ABANDONED_SECONDS
    except FileNotFoundError:
        return False


# -- serving (in a web process) ----------------------------------------------------------------


def stored_sections(document: Document, parse: ParseVersion, first: int, last: int) -> dict:
    """Sections ``first``..``last`` (1-based, inclusive; ``last`` is capped at the count) of
    the stored view, with the count and every section's size.

    Raises ``Preparing`` (after asking a worker) while it is not stored yet, ``Conflict`` for
    a document that has no view or cannot be drawn, and ``IndexError`` when ``first`` is past
    the last section (the message names the count).
    """
    _check(document, parse)
    folder = parse_dir(document, parse)
    try:
        index = json.loads((folder / _INDEX).read_text(encoding="utf-8"))
        os.utime(folder / _INDEX)  # read now: the last to go when the folder is pruned
    except FileNotFoundError:
        try:
            reason = (folder / _BROKEN).read_text(encoding="utf-8")
        except FileNotFoundError:
            _ask(folder, parse)
            raise Preparing("the document as it looks is being prepared by a worker") from None
        raise Conflict(reason, field="document") from None
    count = index["section_count"]
    if first > count:
        raise IndexError(count)
    last = min(last, count)
    start, end = index["ranges"][first - 1][0], index["ranges"][last - 1][1]
    try:
        with open(folder / _SECTIONS, "rb") as handle:
            handle.seek(start)
            chunk = handle.read(end - start)
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


def forget(folder: Path) -> None:
    """Drop stored renditions (``document_dir`` or ``parse_dir``, taken before the delete)."""
    shutil.rmtree(folder, ignore_errors=True)
