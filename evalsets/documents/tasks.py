"""Background work on documents: parsing (whole or by range) and pre-rendering pages. Each
task is a thin shell over a service, registered under ``evalsets.tasks.<name>``.
"""

from __future__ import annotations

from celery import shared_task

from evalsets import queue
from evalsets.anchoring import resolution
from evalsets.documents import ingest, pdfview, renditions
from evalsets.models import ParseStatus, ParseVersion
from evalsets.passages import services as passages_services
from evalsets.releases import imports
from evalsets.worker import GroundworkTask


@shared_task(name="evalsets.tasks.parse_version", base=GroundworkTask)
def parse_version(parse_id: int) -> str:
    """Read a parse whole, or its first page range after queueing the others."""
    lease = ingest.claim_parse(parse_id)
    if lease is None:
        return "gone, done or held by another worker"
    return _parsed(ingest.run_parse(lease))


@shared_task(name="evalsets.tasks.parse_range", base=GroundworkTask)
def parse_range(range_id: int) -> str:
    """Read one page range of a split parse; the last range to finish joins them."""
    lease = ingest.claim_range(range_id)
    if lease is None:
        return "gone, done or held by another worker"
    parse = ingest.run_range(lease)
    return "range read" if parse is None else _parsed(parse)


def _parsed(parse: ParseVersion) -> str:
    """A parse that became ready gets its anchors placed and waiting labels attached; once
    the reference parse is done, parses that waited for its page count are queued."""
    if parse.is_reference and parse.status in (ParseStatus.READY, ParseStatus.FAILED):
        ingest.send_waiting(parse.document_id)
    if parse.status == ParseStatus.READY:
        if parse.char_boxes:  # the PDF view's parse: another worker draws its first pages
            queue.send("prerender_pdf_pages", parse.pk)
        resolution.resolve_parse(parse)
        if parse.is_reference:
            renditions.rendition_request(parse=parse)  # the view as it looks, built apart
            passages_services.index_request(parse=parse)  # workspace search and suggestions
            imports.pending_labels_attach(document=parse.document)
    return parse.status


@shared_task(name="evalsets.tasks.prerender_pdf_pages", base=GroundworkTask)
def prerender_pdf_pages(parse_id: int) -> int:
    parse = (
        ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY)
        .select_related("document")
        .defer("text")
        .first()
    )
    if parse is None or not parse.document.file:
        return 0
    return pdfview.prerender(parse)


@shared_task(name="evalsets.tasks.render_document", base=GroundworkTask)
def render_document(parse_id: int) -> int:
    """Build and store the rendered view of a document aligned to its reference parse.

    The build runs in a limited child and records its failure; a build that took its worker
    down twice (redelivered each time, as a lost worker's message is) is recorded as such by
    the next delivery, which then acknowledges the message (``renditions.MAX_WORKER_DEATHS``).
    """
    parse = (
        ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY, is_reference=True)
        .select_related("document")
        .defer("text")
        .first()
    )
    if parse is None or not renditions.has_rendered_view(parse.document):
        return 0
    return renditions.rendition_build(parse=parse)
