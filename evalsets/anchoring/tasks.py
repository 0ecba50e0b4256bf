"""Background resolution of anchors in parses, registered under ``evalsets.tasks.<name>``."""

from __future__ import annotations

from celery import shared_task

from evalsets import queue
from evalsets.anchoring import resolution
from evalsets.models import Document, ParseStatus, ParseVersion, Workspace
from evalsets.worker import GroundworkTask


@shared_task(name="evalsets.tasks.resolve_parse", base=GroundworkTask)
def resolve_parse(parse_id: int) -> int:
    parse = ParseVersion.objects.filter(pk=parse_id, status=ParseStatus.READY).first()
    if parse is None:
        return 0
    return resolution.resolve_parse(parse)


@shared_task(name="evalsets.tasks.resolve_document", base=GroundworkTask, bind=True)
def resolve_document(self, document_id: int) -> int:
    """Resolve the document's anchors that some ready parse has no row for: a burst of new
    anchors in one task (queued once per burst by ``resolution.resolution_request``). The
    task's id names the lease holder, so a retry takes back what its failed attempt held."""
    if not Document.objects.filter(pk=document_id).exists():
        return 0
    return resolution.resolve_pending(document_id, holder=self.request.id or "")


@shared_task(name="evalsets.tasks.resolve_workspace", base=GroundworkTask)
def resolve_workspace(workspace_id: int) -> int:
    """Queue a re-resolution of every ready parse in a workspace (after a resolver upgrade)."""
    if not Workspace.objects.filter(pk=workspace_id).exists():
        return 0
    ids = list(
        ParseVersion.objects.filter(
            document__workspace=workspace_id, status=ParseStatus.READY
        ).values_list("pk", flat=True)
    )
    for pk in ids:
        queue.send("resolve_parse", pk)
    return len(ids)
