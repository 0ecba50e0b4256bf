"""Celery tasks for releases and imports: thin shells that take ids and call a service.

Imported from ``evalsets.models_release`` so every process that loads the models (web and
worker alike) registers them; everything else is imported inside the task, because this
module loads while the models are still being defined.
"""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

RETRY = {
    "autoretry_for": (OperationalError, ConnectionError),
    "retry_backoff": True,
    "retry_backoff_max": 60,
    "max_retries": 5,
    "acks_late": True,
}

#: How long ``attach_pending_labels`` keeps waiting for a reference parse to finish.
ATTACH_RETRY_SECONDS = 10
ATTACH_MAX_RETRIES = 90


@shared_task(**RETRY)
def build_release(release_id: int) -> str:
    from evalsets import releases

    release = releases.release_claim(release_id)
    if release is None:
        return "gone or already built"
    return releases.release_build(release).status


@shared_task(bind=True, acks_late=True, max_retries=ATTACH_MAX_RETRIES)
def attach_pending_labels(self, document_id: int) -> int:
    """Turn the document's waiting imported spans into anchors once its text is ready.

    Queued when a document is uploaded; the reference parse usually is not ready then, so
    this waits for it (retrying) while a parse is still running. The parse task may also call
    ``imports.pending_labels_attach`` directly when the reference parse becomes ready; both
    are idempotent.
    """
    from evalsets import imports
    from evalsets.models import Document

    document = Document.objects.filter(pk=document_id).first()
    if document is None:
        return 0
    attached = imports.pending_labels_attach(document=document)
    if attached is None and imports.reference_parse_running(document) and not self.request.is_eager:
        raise self.retry(countdown=ATTACH_RETRY_SECONDS)
    return attached or 0
