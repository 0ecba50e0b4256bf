"""The PDF view's page images and text layers: drawn once, cached on disk, shared by everyone.

A page image is keyed by the document (its id and the hash of its bytes), the page and the
scale, so every reader of page 7 at 1.5 gets the same file, and a re-uploaded file is a new
key. The cache is a folder (``GROUNDWORK_PAGE_CACHE_DIR``) bounded by
``GROUNDWORK_PAGE_CACHE_MB``: reading a page touches its file, and when a write takes the
folder over its budget the least recently read files go. Files are written to a temporary
name and renamed, so two processes drawing the same page at once both leave one whole file.

Pages are drawn in a limited child process (``pdfdraw.draw_page``) within the budget the
``GROUNDWORK_PAGE_*`` settings give: pixels, processor time, wall-clock time and memory. A page
that cannot be drawn, by its own fault or because it asks for more than that budget, is
remembered as a small ``.broken`` file holding the code and the reason, so the next reader is
told at once instead of drawing it again. Only a wall-clock timeout is not remembered: that may
be a busy machine rather than the page.

The text layer of a page comes from the ``pdfium`` parse: its page text (from the database,
that page only) and that page's character boxes (from the parse's box file, that page only).
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

from evalsets.models import Document, ParseVersion
from evalsets.pure import pdfdraw
from evalsets.pure.diskbudget import evict_least_recent
from evalsets.pure.parsers import charboxes
from evalsets.pure.parsers.base import page_span

log = logging.getLogger(__name__)

#: The parser whose parse backs the PDF view (it carries character boxes).
VIEW_PARSER = "pdfium"

_writes = 0
_writes_lock = threading.Lock()
#: Prune the folder every this many writes (and whenever a worker pre-draws pages).
PRUNE_EVERY = 25


def cache_root() -> Path:
    configured = settings.GROUNDWORK_PAGE_CACHE_DIR
    return Path(configured) if configured else Path(settings.MEDIA_ROOT) / "page-cache"


def document_dir(document: Document) -> Path:
    return cache_root() / f"{document.pk}-{document.sha256[:16]}"


def image_path(document: Document, page: int, scale: float) -> Path:
    """Where page ``page`` (from 1) at ``scale`` is kept."""
    return document_dir(document) / f"{page}@{scale:g}{pdfdraw.IMAGE_SUFFIX}"


def _broken_path(document: Document, page: int) -> Path:
    return document_dir(document) / f"{page}.broken"


def draw_budget() -> pdfdraw.DrawBudget:
    """What one page drawing may cost, from the settings."""
    return pdfdraw.DrawBudget(
        max_pixels=settings.GROUNDWORK_PAGE_MAX_PIXELS,
        timeout_s=settings.GROUNDWORK_PAGE_DRAW_TIMEOUT_S,
        cpu_s=settings.GROUNDWORK_PAGE_DRAW_CPU_S,
        memory_mb=settings.GROUNDWORK_PAGE_DRAW_MEMORY_MB,
    )


def _source(document: Document) -> str | bytes:
    """A path the drawing child reads lazily when the storage has one; otherwise the bytes."""
    try:
        return document.file.path
    except (NotImplementedError, ValueError):
        with document.file.open("rb") as handle:
            return handle.read()


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


def _remember(broken: Path, failure: pdfdraw.PageNotDrawn) -> None:
    """Keep a lasting failure as ``code``, a line break and the reason."""
    if failure.lasting:
        _write(broken, f"{failure.code}\n{failure}".encode())


def _recalled(broken: Path) -> pdfdraw.PageNotDrawn | None:
    """The failure remembered for a page, if one is (a file of one line: an older reason)."""
    try:
        text = broken.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    code, newline, reason = text.partition("\n")
    return pdfdraw.PageNotDrawn(reason, code=code) if newline else pdfdraw.PageNotDrawn(text)


def page_image(document: Document, page: int, scale: float) -> Path:
    """The image of ``page`` at ``scale``: from the cache, else drawn now (in a limited child
    process) and kept.

    Raises ``pdfdraw.PageNotDrawn`` (with the reason) for a page that cannot be drawn within
    its budget, at once when an earlier try found so.
    """
    path = image_path(document, page, scale)
    try:
        os.utime(path)  # read now: the last to go when the cache is pruned
        return path
    except FileNotFoundError:
        pass
    broken = _broken_path(document, page)
    failure = _recalled(broken)
    if failure is not None:
        raise failure
    try:
        data = pdfdraw.draw_page(_source(document), page - 1, scale, draw_budget())
    except pdfdraw.PageNotDrawn as exc:
        _remember(broken, exc)
        raise
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
    """Delete the least recently read images until the cache fits its budget; bytes freed."""
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
            if entry.is_file() and entry.name.endswith(pdfdraw.IMAGE_SUFFIX):
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


def forget(folder: Path) -> None:
    """Drop a deleted document's images (``document_dir`` of it, taken before the delete)."""
    shutil.rmtree(folder, ignore_errors=True)


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
    with parse.char_boxes.open("rb") as handle:
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
    with parse.char_boxes.open("rb") as handle:
        return [[round(w, 2), round(h, 2)] for w, h in charboxes.page_sizes(handle)]
