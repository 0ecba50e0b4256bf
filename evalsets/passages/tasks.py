"""Background work on passages: indexing a parse, registered as ``evalsets.tasks.index_parse``."""

from __future__ import annotations

from celery import shared_task

from evalsets.passages import services
from evalsets.worker import GroundworkTask


@shared_task(name="evalsets.tasks.index_parse", base=GroundworkTask)
def index_parse(parse_id: int) -> int:
    """Cut ``parse_id`` into its document's passages (or take its own away, when it is no
    longer the ready reference): the number of passages it has now."""
    return services.parse_index(parse_id)
