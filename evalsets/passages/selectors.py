"""Workspace search, suggested evidence for a question, and evidence a highlight repeats.

Every read is scoped to one workspace: the ranking index holds that workspace's passages
only (``ranking``), and the passages are read back by id within it.
"""

from __future__ import annotations

import functools

from django.db import connection

from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    EvalItem,
    EvalSet,
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
    sees_all = reader is None or blind.sees_all(reader.role)
    sql, blind_params = _overlaps_sql(sees_all)
    params = [
        anchor.item.evalset.workspace_id,
        anchor.item_id,
        *(() if sees_all else (*blind_params, reader.user_id)),
        *(parse_id, end, start),
        *(parse_id, *FOUND_STATUSES, end, start),
        MAX_OVERLAPS,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    to_uuid = GoldAnchor._meta.get_field("public_id").to_python  # SQLite gives hex text
    return [
        {
            "set": slug,
            "item": item_id,
            "question": question,
            "anchor": str(to_uuid(public_id)),
            "quote": quote[:SNIPPET_CHARS],
        }
        for slug, item_id, question, public_id, quote in found
    ]


@functools.cache
def _overlaps_sql(sees_all: bool) -> tuple[str, list]:
    """The query of ``overlapping_evidence``, written out: every anchor create asks it, and
    building it through the ORM cost more CPU than the rest of the request's reads. The
    candidates come from the parse's own rows (its highlights, its placements), so the
    database reads those by the parse's index instead of every anchor of the workspace.
    Unless the reader ``sees_all``, the anchors hidden from them are left out (the blind
    rule's condition, whose parameters come back with the query, then the reader's id)."""
    q = connection.ops.quote_name
    anchors, items = q(GoldAnchor._meta.db_table), q(EvalItem._meta.db_table)
    sets, placed = q(EvalSet._meta.db_table), q(AnchorResolution._meta.db_table)
    statuses = ", ".join(["%s"] * len(FOUND_STATUSES))
    hidden, params = ("", []) if sees_all else blind.hidden_anchor_sql("a", "i")
    return (
        f"SELECT s.{q('slug')}, i.{q('item_id')}, i.{q('question')}, a.{q('public_id')}, "
        f"a.{q('quote')} FROM {anchors} a "
        f"JOIN {items} i ON a.{q('item_id')} = i.{q('id')} "
        f"JOIN {sets} s ON i.{q('evalset_id')} = s.{q('id')} "
        f"WHERE s.{q('workspace_id')} = %s AND a.{q('item_id')} <> %s "
        + (f"AND NOT {hidden} " if hidden else "")
        + f"AND a.{q('id')} IN ("
        f"SELECT {q('id')} FROM {anchors} WHERE {q('reference_parse_id')} = %s "
        f"AND {q('ref_start')} < %s AND {q('ref_end')} > %s "
        f"UNION SELECT {q('anchor_id')} FROM {placed} WHERE {q('parse_id')} = %s "
        f"AND {q('status')} IN ({statuses}) AND {q('start')} < %s AND {q('end')} > %s) "
        f"ORDER BY a.{q('created_at')}, a.{q('id')} LIMIT %s",
        params,
    )
