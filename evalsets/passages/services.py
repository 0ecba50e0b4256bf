"""Keeping each document's passages in step with its reference parse.

A parse that becomes ready as the reference, a parse made the reference, or one uploaded
ready, queues ``index_parse`` (through ``evalsets.queue``); the task cuts the parse into
passages (``pure/passages.py``) and puts them in place of the document's previous ones, in
one transaction, so a search sees the old passages or the new, never a mix. A parse that is
no longer the reference loses its passages the same way; a deleted parse or document takes
its passages with it (the foreign keys cascade).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from evalsets import queue
from evalsets.models import ParseStatus, ParseVersion, Passage
from evalsets.passages import vectors
from evalsets.pure import passages as cutting

#: Rows written per INSERT.
BATCH = 500


def index_request(*, parse: ParseVersion) -> None:
    """Queue the indexing of ``parse`` once the current transaction commits."""
    queue.after_commit("index_parse", parse.pk)


def _rows(parse: ParseVersion, text: str) -> list[Passage]:
    workspace_id = parse.document.workspace_id
    return [
        Passage(
            workspace_id=workspace_id,
            document_id=parse.document_id,
            parse_id=parse.pk,
            page=cut.page,
            start=cut.start,
            end=cut.end,
            text=text[cut.start : cut.end],
            terms=" ".join(cutting.terms(text[cut.start : cut.end])),
        )
        for cut in cutting.cut_passages(text, parse.page_begins, settings.GROUNDWORK_PASSAGE_CHARS)
    ]


def parse_index(parse_id: int) -> int:
    """Make the passages of ``parse_id``'s document follow it: its own when it is the ready
    reference parse, none of its own otherwise. The number of passages it now has."""
    parse = (
        ParseVersion.objects.filter(pk=parse_id).select_related("document").defer("text").first()
    )
    if parse is None:
        return 0  # deleted: its passages went with it
    if not (parse.is_reference and parse.status == ParseStatus.READY):
        Passage.objects.filter(parse=parse).delete()
        return 0
    # Cut outside the transaction: a long parse must not hold SQLite's one write lock.
    text = ParseVersion.objects.filter(pk=parse.pk).values_list("text", flat=True).get()
    rows = _rows(parse, text)
    with transaction.atomic():
        still = ParseVersion.objects.filter(
            pk=parse.pk, is_reference=True, status=ParseStatus.READY
        ).exists()
        Passage.objects.filter(document=parse.document_id).delete()
        if not still:
            return 0
        Passage.objects.bulk_create(rows, batch_size=BATCH)
        vectors.embed_request(parse.pk)
    return len(rows)
