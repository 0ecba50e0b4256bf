"""A workspace's passages ranked by BM25 (bm25s), the index built on demand and cached.

With the embedding extra on, the index also holds each passage's vector and the ranking
fuses BM25 with the question's cosine to each passage (``Index.fused``).

The index is built from the passages' stored ``terms`` (no raw text is read) the first time
a workspace is searched, and kept in this process under a version key, the count and the
highest id of the workspace's passages: a parse indexed adds rows with higher ids, a parse
removed lowers the count, so either builds the index again at the next search. At most
``GROUNDWORK_SEARCH_INDEXES`` workspaces' indexes are kept (least recently used out), each
of at most ``GROUNDWORK_SEARCH_INDEX_MAX_PASSAGES`` passages. One index is one workspace's
passages only: another workspace's text is never in it.

The same code runs on SQLite and PostgreSQL, so the results are the same on both.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import bm25s
import numpy as np
from django.conf import settings
from django.db.models import Count, Max

from evalsets.models import Passage
from evalsets.passages import vectors
from evalsets.pure import embedding

#: How strongly a passage's share of the query's distinct terms weighs on its BM25 score
#: (score x share ** COVERAGE). On bench/suggest_bench.py's questions 2 was best of 0, 1, 2:
#: hit@1 0.80 -> 0.83 on paraphrased questions, 0.97 -> 0.98 on ones repeating the evidence.
COVERAGE = 2
#: A query's distinct terms scored at most (the first ones): a long question costs one pass
#: over each term's postings, so its cost stays bounded.
MAX_TERMS = 64
#: With the embedding extra on, a passage's score is (1 - DENSE_WEIGHT) x its BM25 score over
#: the best one's + DENSE_WEIGHT x its cosine to the question (below 0 counted as 0). Chosen on
#: the even (tuning) half of bench/suggest_bench.py --embeddings' questions, best MRR@10 of
#: 0.1-0.9: 0.4 (0.882; 0.3 and 0.5 0.881, 0.7 0.859, 0.9 0.504).
DENSE_WEIGHT = 0.4


@dataclass(slots=True)
class Index:
    """One workspace's passages: their ids and documents, and the BM25 scores."""

    key: tuple[int, ...]
    ids: np.ndarray
    documents: np.ndarray
    bm25: bm25s.BM25 | None
    #: True when the workspace had more passages than one index holds.
    partial: bool
    #: With the embedding extra on: each passage's unit vector (zeros while not written yet).
    vectors: np.ndarray | None = None

    def scores(self, terms: list[str]) -> np.ndarray:
        """BM25 of each passage for ``terms``, weighed by the share of the query's distinct
        terms the passage holds: a passage with most of the question's words ranks above one
        repeating a single rare word many times."""
        wanted = set(list(dict.fromkeys(terms))[:MAX_TERMS])
        known = [t for t in wanted if self.bm25 is not None and t in self.bm25.vocab_dict]
        if not known:
            return np.zeros(len(self.ids), dtype=np.float32)
        per_term = [self.bm25.get_scores([t]) for t in known]
        covered = np.count_nonzero(per_term, axis=0) / len(wanted)
        return np.sum(per_term, axis=0) * covered**COVERAGE

    def fused(self, terms: list[str], dense: np.ndarray | None) -> np.ndarray:
        """BM25 alone, or with ``dense`` (the query's unit vector) and the passages' vectors,
        the weighted sum of BM25 scaled to the best passage's and the cosine."""
        sparse = self.scores(terms)
        if dense is None or self.vectors is None:
            return sparse
        best = float(sparse.max()) if len(sparse) else 0.0
        scaled = sparse / best if best > 0 else sparse
        cosine = np.clip(self.vectors @ dense, 0, None)
        return (1 - DENSE_WEIGHT) * scaled + DENSE_WEIGHT * cosine

    def top(
        self,
        terms: list[str],
        k: int,
        document: int | None = None,
        dense: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best passages as ``(passage id, score)``, best first; only those sharing a
        term with the query (or, with ``dense``, near it), only in ``document`` when given."""
        scores = self.fused(terms, dense)
        if document is not None:
            scores = np.where(self.documents == document, scores, 0)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        # Best first; equal scores in reading order (lower ids first), so results are stable.
        order = sorted(hits.tolist(), key=lambda i: (-float(scores[i]), int(self.ids[i])))
        return [(int(self.ids[i]), float(scores[i])) for i in order]


def version_key(workspace_id: int) -> tuple[int, ...]:
    """What changes whenever a workspace's passages do: their count and highest id (and with
    the embedding extra on, how many have their vector)."""
    counts = {"n": Count("id"), "top": Max("id")}
    if vectors.enabled():
        counts["vectors"] = Count("vector")
    found = Passage.objects.filter(workspace_id=workspace_id).aggregate(**counts)
    return found["n"], found["top"] or 0, found.get("vectors", 0)


def _vectors(raw: list[bytes | None]) -> np.ndarray:
    out = np.zeros((len(raw), embedding.DIMENSIONS), dtype=np.float32)
    for i, value in enumerate(raw):
        vector = vectors.from_bytes(value)
        if vector is not None:
            out[i] = vector
    return out


def build(workspace_id: int, key: tuple[int, ...]) -> Index:
    """Index the workspace's passages (the first ``GROUNDWORK_SEARCH_INDEX_MAX_PASSAGES``)."""
    most = settings.GROUNDWORK_SEARCH_INDEX_MAX_PASSAGES
    dense = vectors.enabled()
    columns = ("id", "document_id", "terms", "vector") if dense else ("id", "document_id", "terms")
    rows = list(
        Passage.objects.filter(workspace_id=workspace_id)
        .order_by("id")
        .values_list(*columns)[:most]
    )
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    documents = np.array([r[1] for r in rows], dtype=np.int64)
    bm25 = None
    if rows:
        bm25 = bm25s.BM25()
        bm25.index([r[2].split() for r in rows], show_progress=False)
    return Index(
        key=key,
        ids=ids,
        documents=documents,
        bm25=bm25,
        partial=key[0] > len(rows),
        vectors=_vectors([r[3] for r in rows]) if dense else None,
    )


class IndexCache:
    """The indexes this process holds, by workspace. A workspace's index is built by one
    thread at a time, and only that workspace's searches wait for it: a large workspace's
    build never holds up another workspace's search."""

    def __init__(self) -> None:
        self._held: OrderedDict[int, Index] = OrderedDict()
        self._building: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()  # guards the two dicts, never held while building

    def get(self, workspace_id: int) -> Index:
        key = version_key(workspace_id)
        with self._lock:
            build_lock = self._building.setdefault(workspace_id, threading.Lock())
        with build_lock:
            found = self._current(workspace_id, key)
            if found is None:
                found = build(workspace_id, key)
            self._keep(workspace_id, found)
            return found

    def _current(self, workspace_id: int, key: tuple[int, int]) -> Index | None:
        with self._lock:
            found = self._held.get(workspace_id)
        return found if found is not None and found.key == key else None

    def _keep(self, workspace_id: int, index: Index) -> None:
        with self._lock:
            self._held[workspace_id] = index
            self._held.move_to_end(workspace_id)
            while len(self._held) > 1 and self._too_many():
                dropped, _ = self._held.popitem(last=False)
                self._building.pop(dropped, None)

    def _too_many(self) -> bool:
        held = sum(len(index.ids) for index in self._held.values())
        return (
            len(self._held) > settings.GROUNDWORK_SEARCH_INDEXES
            or held > settings.GROUNDWORK_SEARCH_HELD_PASSAGES
        )

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._building.clear()


indexes = IndexCache()
