"""Workspace search, suggested evidence for a question, and evidence a highlight repeats.

Every read is scoped to one workspace: the ranking index holds that workspace's passages
only (``ranking``), and the passages are read back by id within it.
"""

from __future__ import annotations

from django.db.models import Q

from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    EvalItem,
    GoldAnchor,
    Passage,
    Workspace,
)
from evalsets.passages import ranking, vectors
from evalsets.pure import passages as cutting
from evalsets.review import blind

#: Code points of a passage shown around its first matched word.
SNIPPET_CHARS = 240
#: Results per request: the default and the most a client may ask for.
RESULTS = 10
MAX_RESULTS = 50
#: Evidence given to other questions named at most, for one highlight.
MAX_OVERLAPS = 10


def _hit(passage: Passage, score: float, rank: int, wanted: set[str]) -> dict:
    begin, text, marks = cutting.snippet(passage.text, wanted, SNIPPET_CHARS)
    return {
        "rank": rank,
        "score": round(score, 4),
        "document": passage.document.source_id,
        "parse": str(passage.parse.public_id),
        "page": passage.page,
        "start": passage.start,
        "end": passage.end,
        "snippet": text,
        "snippet_start": passage.start + begin,
        "snippet_truncated": begin > 0 or begin + len(text) < len(passage.text),
        "marks": [list(m) for m in marks],
    }


def search(
    workspace: Workspace, query: str, *, limit: int = RESULTS, document: int | None = None
) -> dict:
    """The passages of ``workspace`` (of ``document`` alone, when given) that best answer
    ``query``, best first, each with a snippet and its matched words' offsets in it."""
    terms = cutting.terms(query)
    index = ranking.indexes.get(workspace.pk)
    dense = vectors.encode([query])[0] if terms and index.vectors is not None else None
    top = index.top(terms, limit, document=document, dense=dense) if terms else []
    rows = (
        Passage.objects.filter(workspace=workspace, pk__in=[pk for pk, _ in top])
        .select_related("document", "parse")
        .only("pk", "page", "start", "end", "text", "document__source_id", "parse__public_id")
    )
    by_id = {row.pk: row for row in rows}
    wanted = set(terms)
    results = [
        _hit(by_id[pk], score, rank, wanted)
        for rank, (pk, score) in enumerate(top, start=1)
        if pk in by_id  # removed since the index was built: left out
    ]
    return {
        "query": query,
        "terms": sorted(wanted),
        "passages": len(index.ids),
        "partial": index.partial,
        "results": results,
    }


def suggestions(item: EvalItem, *, limit: int = RESULTS, document: int | None = None) -> dict:
    """Passages that may answer ``item``'s question, across its workspace's documents (or
    in ``document``): the workspace search for the question's words."""
    return search(item.evalset.workspace, item.question, limit=limit, document=document)


def overlapping_evidence(anchor: GoldAnchor, *, reader) -> list[dict]:
    """Evidence already given to another question that ``anchor``'s highlight overlaps, in
    the parse it was highlighted in: other anchors highlighted there, or placed there; only
    those ``reader`` (a membership) may see (``blind``: not another annotator's evidence on
    an item worked blind)."""
    parse_id, start, end = anchor.reference_parse_id, anchor.ref_start, anchor.ref_end
    if parse_id is None or start is None:
        return []
    others = GoldAnchor.objects.filter(item__evalset__workspace=anchor.item.evalset.workspace_id)
    others = blind.visible_anchors(others.exclude(item=anchor.item_id), reader)
    placed = AnchorResolution.objects.filter(
        parse_id=parse_id, status__in=FOUND_STATUSES, start__lt=end, end__gt=start
    ).values("anchor_id")
    found = (
        others.filter(
            Q(reference_parse_id=parse_id, ref_start__lt=end, ref_end__gt=start) | Q(pk__in=placed)
        )
        .select_related("item__evalset")
        .order_by("created_at", "id")[:MAX_OVERLAPS]
    )
    return [
        {
            "set": other.item.evalset.slug,
            "item": other.item.item_id,
            "question": other.item.question,
            "anchor": str(other.public_id),
            "quote": other.quote[:SNIPPET_CHARS],
        }
        for other in found
    ]
