"""Background work on passages: indexing a parse, registered as ``evalsets.tasks.index_parse``."""

from __future__ import annotations

from celery import shared_task

from evalsets.passages import services, vectors
from evalsets.worker import GroundworkTask


@shared_task(name="evalsets.tasks.index_parse", base=GroundworkTask)
def index_parse(parse_id: int) -> int:
    """Cut ``parse_id`` into its document's passages (or take its own away, when it is no
    longer the ready reference): the number of passages it has now."""
    return services.parse_index(parse_id)


@shared_task(name="evalsets.tasks.embed_passages", base=GroundworkTask)
def embed_passages(parse_id: int) -> int:
    """Write the sentence vectors of ``parse_id``'s passages (with the embedding extra on):
    the number written in this run."""
    return vectors.embed_parse(parse_id)
