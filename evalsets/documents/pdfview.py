"""The PDF view's page images and text layers: drawn once, stored, shared by everyone.

A page image is keyed by the document (its id and the hash of its bytes), the page and the
scale, so every reader of page 7 at 1.5 gets the same file, and a re-uploaded file is a new
key. The shared copy is in the storage (``page-images/<key>/<page>@<scale>.jpg``), which every
host reads; each host keeps its own disk cache in front of it (``GROUNDWORK_PAGE_CACHE_DIR``,
never shared), with a local copy of the PDFs it draws from, bounded by
``GROUNDWORK_PAGE_CACHE_MB``: reading a page touches its file, and when a write takes the
folder over its budget the least recently read files go. Local files are written to a
temporary name and renamed, so two processes drawing the same page at once both leave one
whole file; the storage keeps the first one stored.

Pages are drawn in a limited child process (``pdfdraw.draw_page``) within the budget the
``GROUNDWORK_PAGE_*`` settings give: pixels, processor time, wall-clock time and memory. A page
that cannot be drawn, by its own fault or because it asks for more than that budget, is
remembered as a small ``.broken`` file holding the code and the reason (stored, and cached on
the host), so the next reader is told at once instead of drawing it again. Only a wall-clock
timeout is not remembered: that may be a busy machine rather than the page.

The text layer of a page comes from the ``pdfium`` parse: its page text (from the database,
that page only) and that page's character boxes (from the parse's box file, that page only,
fetched by byte range from object storage).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from django.conf import settings

from evalsets import storage as stored
from evalsets.models import Document, ParseVersion
from evalsets.pure import pdfdraw
from evalsets.pure.diskbudget import evict_least_recent
from evalsets.pure.parsers import charboxes
from evalsets.pure.parsers.base import page_span

log = logging.getLogger(__name__)

#: The parser whose parse backs the PDF view (it carries character boxes).
VIEW_PARSER = "pdfium"
#: The storage folder of the shared page images.
ROOT = "page-images"
#: The host's local copies of the PDFs it draws from, under its cache folder.
_SOURCES = "sources"

_writes = 0
_writes_lock = threading.Lock()
#: Prune the folder every this many writes (and whenever a worker pre-draws pages).
PRUNE_EVERY = 25


def cache_root() -> Path:
    """This host's page cache (a folder of its own, never shared)."""
    return Path(settings.GROUNDWORK_PAGE_CACHE_DIR)


def document_key(document: Document) -> str:
    return f"{document.pk}-{document.sha256[:16]}"


def document_dir(document: Document) -> Path:
    """This host's cached images of ``document``."""
    return cache_root() / document_key(document)


def image_path(document: Document, page: int, scale: float) -> Path:
    """Where this host keeps page ``page`` (from 1) at ``scale``."""
    return document_dir(document) / _image_name(page, scale)


def _image_name(page: int, scale: float) -> str:
    return f"{page}@{scale:g}{pdfdraw.IMAGE_SUFFIX}"


def _stored_name(document: Document, leaf: str) -> str:
    return f"{ROOT}/{document_key(document)}/{leaf}"


def _broken_leaf(page: int) -> str:
    return f"{page}.broken"


def draw_budget() -> pdfdraw.DrawBudget:
    """What one page drawing may cost, from the settings."""
    return pdfdraw.DrawBudget(
        max_pixels=settings.GROUNDWORK_PAGE_MAX_PIXELS,
        timeout_s=settings.GROUNDWORK_PAGE_DRAW_TIMEOUT_S,
        cpu_s=settings.GROUNDWORK_PAGE_DRAW_CPU_S,
        memory_mb=settings.GROUNDWORK_PAGE_DRAW_MEMORY_MB,
    )


def _source(document: Document) -> str:
    """A local copy of the PDF for the drawing child to read lazily (pdfium opens a path):
    kept in this host's cache, fetched from the storage once."""
    path = cache_root() / _SOURCES / f"{document_key(document)}.pdf"
    try:
        os.utime(path)  # read now: the last to go when the cache is pruned
        return str(path)
    except FileNotFoundError:
        pass
    try:
        return str(stored.copy_to_disk(document.file.name, path, document.file.storage))
    except (FileNotFoundError, ValueError):
        raise pdfdraw.PageNotDrawn(
            "the uploaded file is no longer in storage; upload it again", code="missing"
        ) from None


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".draw-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _remember(document: Document, page: int, failure: pdfdraw.PageNotDrawn) -> None:
    """Keep a lasting failure as ``code``, a line break and the reason: stored, so no host
    draws it again, and on this host's disk."""
    if failure.lasting:
        data = f"{failure.code}\n{failure}".encode()
        stored.save_new(_stored_name(document, _broken_leaf(page)), data)
        _write(document_dir(document) / _broken_leaf(page), data)


def _broken_text(document: Document, page: int) -> str | None:
    """The failure remembered for a page, on this host or else in the storage."""
    leaf = _broken_leaf(page)
    try:
        return (document_dir(document) / leaf).read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    try:
        text = stored.read_bytes(_stored_name(document, leaf)).decode("utf-8")
    except FileNotFoundError:
        return None
    _write(document_dir(document) / leaf, text.encode("utf-8"))
    return text


def _recalled(document: Document, page: int) -> pdfdraw.PageNotDrawn | None:
    """The failure remembered for a page, if one is (a file of one line: an older reason)."""
    text = _broken_text(document, page)
    if text is None:
        return None
    code, newline, reason = text.partition("\n")
    return pdfdraw.PageNotDrawn(reason, code=code) if newline else pdfdraw.PageNotDrawn(text)


def _cached(document: Document, page: int, scale: float) -> Path | None:
    """The image on this host's disk, else copied there from the storage; None when no host
    has drawn it."""
    path = image_path(document, page, scale)
    try:
        os.utime(path)  # read now: the last to go when the cache is pruned
        return path
    except FileNotFoundError:
        pass
    try:
        stored.copy_to_disk(_stored_name(document, _image_name(page, scale)), path)
    except FileNotFoundError:
        return None
    _count_write()
    return path


def page_image(document: Document, page: int, scale: float) -> Path:
    """The image of ``page`` at ``scale`` on this host's disk: from its cache, else from the
    storage, else drawn now (in a limited child process) and stored.

    Raises ``pdfdraw.PageNotDrawn`` (with the reason) for a page that cannot be drawn within
    its budget, at once when an earlier try found so.
    """
    path = _cached(document, page, scale)
    if path is not None:
        return path
    failure = _recalled(document, page)
    if failure is not None:
        raise failure
    source = _source(document)
    try:
        data = pdfdraw.draw_page(source, page - 1, scale, draw_budget())
    except pdfdraw.PageNotDrawn as exc:
        _remember(document, page, exc)
        raise
    stored.save_new(_stored_name(document, _image_name(page, scale)), data)
    path = image_path(document, page, scale)
    _write(path, data)
    _count_write()
    return path


def _count_write() -> None:
    global _writes
    with _writes_lock:
        _writes += 1
        due = _writes % PRUNE_EVERY == 0
    if due:
        prune()


def prune(budget_bytes: int | None = None) -> int:
    """Delete the least recently read images and PDF copies until this host's cache fits its
    budget; bytes freed (the stored copies stay)."""
    if budget_bytes is None:
        budget_bytes = settings.GROUNDWORK_PAGE_CACHE_MB * 1024 * 1024
    root = cache_root()
    if not root.exists():
        return 0
    files = []
    total = 0
    for folder in root.iterdir():
        if not folder.is_dir():
            continue
        for entry in os.scandir(folder):
            if entry.is_file() and entry.name.endswith((pdfdraw.IMAGE_SUFFIX, ".pdf")):
                stat = entry.stat()
                files.append((stat.st_mtime, stat.st_size, entry.path))
                total += stat.st_size
    if total <= budget_bytes:
        return 0
    # down to 90%: room for a while, not one file's worth
    return evict_least_recent(files, total, int(budget_bytes * 0.9), _unlink)


def _unlink(name: str) -> bool:
    try:
        os.unlink(name)
    except FileNotFoundError:  # another process pruned it first
        return False
    return True


def forget(key: str) -> None:
    """Drop a deleted document's images (``document_key`` of it, taken before the delete):
    the stored ones, and this host's (other hosts' go as their caches are pruned)."""
    stored.delete_folder(f"{ROOT}/{key}")
    shutil.rmtree(cache_root() / key, ignore_errors=True)
    (cache_root() / _SOURCES / f"{key}.pdf").unlink(missing_ok=True)


#: Failures that say a page asks for more than its budget: the next pages of such a file
#: likely do too, so a worker pre-drawing pages stops rather than spend the budget again.
_OVER_BUDGET = frozenset({"timeout", "out_of_memory", "too_large"})


def prerender(parse: ParseVersion, pages: int | None = None) -> int:
    """Draw the first ``pages`` pages at the default scale, so the first reader waits for none.

    Stops at the first page over its budget (a reader asking for a later page still gets it
    drawn, or told why not).
    """
    count = min(parse.page_count, settings.GROUNDWORK_PRERENDER_PAGES if pages is None else pages)
    drawn = 0
    for page in range(1, count + 1):
        try:
            page_image(parse.document, page, pdfdraw.DEFAULT_SCALE)
            drawn += 1
        except pdfdraw.PageNotDrawn as exc:
            log.info("page %s of document %s cannot be drawn: %s", page, parse.document_id, exc)
            if exc.code in _OVER_BUDGET:
                break
    prune()
    return drawn


def text_layer(parse: ParseVersion, page: int) -> dict[str, Any]:
    """Page ``page`` (from 1) of the pdfium parse as runs of text with their boxes."""
    start, end = page_span(parse.page_begins, page - 1, parse.text_length)
    text = parse.text_between(start, end)
    with stored.open_ranged(parse.char_boxes.name, parse.char_boxes.storage) as handle:
        boxes = charboxes.read_page(handle, page - 1)
    return {
        "page": page,
        "start": start,
        "end": end,
        "width": round(boxes.width, 2),
        "height": round(boxes.height, 2),
        "scale": charboxes.SCALE,
        "text": text,
        "runs": pdfdraw.text_runs(text, boxes),
    }


def page_sizes(parse: ParseVersion) -> list[list[float]]:
    """Every page's size in points, read from the box file's index (no page is read)."""
    with stored.open_ranged(parse.char_boxes.name, parse.char_boxes.storage) as handle:
        return [[round(w, 2), round(h, 2)] for w, h in charboxes.page_sizes(handle)]
