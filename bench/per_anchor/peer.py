"""One resolution task per new anchor, queued after the anchor's write commits."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from evalsets import queue
from evalsets.anchoring import resolution
from evalsets.models import GoldAnchor, ParseStatus, ParseVersion
from evalsets.worker import GroundworkTask


def resolve_anchor(anchor: GoldAnchor) -> int:
    """One anchor, resolved in every ready parse of its document."""
    if anchor.document_id is None:
        return 0
    parses = ParseVersion.objects.filter(
        document=anchor.document_id, status=ParseStatus.READY
    ).defer("text")
    return sum(resolution.resolve_in_parse(parse, [anchor]) for parse in parses)


@shared_task(name="bench.per_anchor.resolve_anchor", base=GroundworkTask)
def resolve_anchor_task(anchor_id: int) -> int:
    anchor = GoldAnchor.objects.filter(pk=anchor_id).first()
    return 0 if anchor is None else resolve_anchor(anchor)


def resolution_request(*, anchor: GoldAnchor) -> None:
    """The per-anchor peer of ``resolution.resolution_request``: a task for this anchor
    alone, on the queue the product's resolution tasks use."""
    if anchor.document_id is None:
        return
    anchor_id = anchor.pk
    transaction.on_commit(
        lambda: resolve_anchor_task.apply_async((anchor_id,), queue=queue.queue_name(queue.RESOLVE))
    )


def install() -> None:
    """Every anchor created in this process from now on is queued by the per-anchor path
    (the anchor services call ``resolution.resolution_request`` through the module)."""
    resolution.resolution_request = resolution_request
