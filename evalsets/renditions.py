"""The rendered view of a document, built once and kept for the next reader (bounded).

Building a view means reading the uploaded file, sanitising it and aligning it to the
reference parse (``evalsets.rendering``): a second or more for a 50 MB page. The view asks for
it a few sections at a time as the reader scrolls, so the result is kept in this process,
keyed by the file's hash and the parse (a new reference parse is a new key). At most
``KEEP`` renditions are kept, oldest used dropped first, so memory stays bounded.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

from evalsets.errors import Conflict
from evalsets.models import Document, ParseStatus, ParseVersion
from evalsets.rendering import RENDERED_KINDS, Rendition, render_html

logger = logging.getLogger(__name__)

#: How many renditions one process keeps.
KEEP = 4

_cache: OrderedDict[tuple, Rendition] = OrderedDict()
_lock = threading.Lock()


def has_rendered_view(document: Document) -> bool:
    return document.kind in RENDERED_KINDS


def rendition_for(document: Document, parse: ParseVersion) -> Rendition:
    """The document's rendered view aligned to ``parse`` (a ready parse of it)."""
    if not has_rendered_view(document):
        raise Conflict(
            f"{document.kind or 'this'} documents have no rendered view; read their text",
            field="document",
        )
    if parse.status != ParseStatus.READY:
        raise Conflict(
            f"the reference parse is {parse.status}, not ready; the view appears when it is",
            field="parse",
        )
    key = (document.sha256, parse.pk, parse.updated_at)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ValueError):
        raise Conflict(
            "the uploaded file is no longer in storage; upload it again", field="document"
        ) from None
    text = ParseVersion.objects.filter(pk=parse.pk).values_list("text", flat=True).get()
    try:
        built = Rendition.build(render_html(document.kind, data), text)
    except Exception:  # a file its parser read but mammoth or the sanitiser cannot: say so
        logger.warning("no rendered view of document %s", document.pk, exc_info=True)
        raise Conflict(
            "this document cannot be drawn as it looks; read it in the Text view",
            field="document",
        ) from None
    with _lock:
        _cache[key] = built
        while len(_cache) > KEEP:
            _cache.popitem(last=False)
    return built


def forget_all() -> None:
    """Drop every kept rendition (tests, and a worker told to free memory)."""
    with _lock:
        _cache.clear()
