"""Passage vectors for dense retrieval, with the embedding extra (GROUNDWORK_SEARCH_EMBEDDINGS) on.

After ``index_parse`` writes a parse's passages it queues ``embed_passages``, which encodes
those without a vector, a batch at a time, each batch saved as it is done; past
``GROUNDWORK_EMBEDDING_CPU_S`` of CPU it queues itself for the rest, so one long document
never holds a worker for long. The model is loaded once per process, on first use.
"""

from __future__ import annotations

import functools
import time

import numpy as np
from django.conf import settings

from evalsets import queue
from evalsets.models import Passage
from evalsets.pure import embedding


def enabled() -> bool:
    return settings.GROUNDWORK_SEARCH_EMBEDDINGS


@functools.lru_cache(maxsize=1)
def model() -> embedding.Model:
    return embedding.load(settings.GROUNDWORK_EMBEDDING_MAX_TOKENS)


def encode(texts: list[str]) -> np.ndarray:
    """Unit vectors for ``texts``, ``(len(texts), 384)`` float32."""
    return embedding.encode(model(), texts, settings.GROUNDWORK_EMBEDDING_BATCH)


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(raw: bytes | memoryview | None) -> np.ndarray | None:
    """The stored vector, or None when there is none (or it is not one of this model's)."""
    if raw is None or len(raw) != embedding.DIMENSIONS * 4:
        return None
    return np.frombuffer(bytes(raw), dtype="<f4")


def embed_request(parse_id: int) -> None:
    """Queue the vectors of ``parse_id``'s passages after the current transaction commits."""
    if enabled():
        queue.after_commit("embed_passages", parse_id)


def embed_parse(parse_id: int) -> int:
    """Encode ``parse_id``'s passages that have no vector yet, within the CPU budget; the rest
    is queued again. The number of vectors written."""
    if not enabled():
        return 0
    waiting = Passage.objects.filter(parse_id=parse_id, vector__isnull=True).order_by("id")
    batch = max(1, settings.GROUNDWORK_EMBEDDING_BATCH)
    written, began = 0, time.process_time()
    while rows := list(waiting.only("id", "text")[:batch]):
        for row, vector in zip(rows, encode([r.text for r in rows]), strict=True):
            row.vector = to_bytes(vector)
        # Rows gone since (a re-parse replaced them) are simply not updated.
        Passage.objects.bulk_update(rows, ["vector"])
        written += len(rows)
        # At least one batch a run, so a budget too small for one still makes progress.
        if time.process_time() - began > settings.GROUNDWORK_EMBEDDING_CPU_S:
            if waiting.exists():
                queue.send("embed_passages", parse_id)
            break
    return written
