"""Building releases and attaching imported labels to documents uploaded later,
registered under ``evalsets.tasks.<name>``.
"""

from __future__ import annotations

from celery import shared_task

from evalsets.models import Document
from evalsets.releases import imports
from evalsets.releases import services as releases_services
from evalsets.worker import GroundworkTask

#: How long ``attach_pending_labels`` keeps waiting for a reference parse to finish.
ATTACH_RETRY_SECONDS = 10
ATTACH_MAX_RETRIES = 90


@shared_task(name="evalsets.tasks.build_release", base=GroundworkTask)
def build_release(release_id: int) -> str:
    release = releases_services.release_claim(release_id)
    if release is None:
        return "gone or already built"
    return releases_services.release_build(release).status


@shared_task(
    name="evalsets.tasks.attach_pending_labels",
    base=GroundworkTask,
    bind=True,
    max_retries=ATTACH_MAX_RETRIES,
)
def attach_pending_labels(self, document_id: int) -> int:
    """Turn the document's waiting imported spans into anchors once its text is ready.

    Queued when a document is uploaded or imported spans name it; the reference parse
    usually is not ready then, so this waits for it (retrying) while a parse is still
    running. The parse task also calls ``imports.pending_labels_attach`` when the reference
    parse becomes ready; both are idempotent.
    """
    document = Document.objects.filter(pk=document_id).first()
    if document is None:
        return 0
    attached = imports.pending_labels_attach(document=document)
    if attached is None and imports.reference_parse_running(document) and not self.request.is_eager:
        raise self.retry(countdown=ATTACH_RETRY_SECONDS)
    return attached or 0
