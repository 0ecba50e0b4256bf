"""Workspace search and suggested evidence: ranked passages of a workspace's documents.

``GET .../search/?q=`` ranks the passages of every document of the workspace (or of one,
``document=<source id>``) for the query; ``GET .../items/<id>/suggestions/`` does the same
for the item's question. Each result names the document, parse, page and the passage's
offsets (what the document page opens and pre-selects), with a snippet and its matched
words' offsets in the snippet (``marks``), so the page marks them as text, never as HTML.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.api.scoping import WorkspaceScoped
from evalsets.api.throttles import SearchThrottle
from evalsets.documents import selectors as documents_selectors
from evalsets.documents.api.document_pages import _number
from evalsets.errors import InvalidInput
from evalsets.passages import selectors
from evalsets.pure import textsearch

LIMIT = OpenApiParameter(
    "limit",
    int,
    description=f"results at most ({selectors.RESULTS}, up to {selectors.MAX_RESULTS})",
)
DOCUMENT = OpenApiParameter("document", str, description="only this document (its source id)")


def _limit(params) -> int:
    limit = _number(
        params,
        "limit",
        selectors.RESULTS,
        least=1,
        what=f"a count from 1 to {selectors.MAX_RESULTS}",
    )
    if limit > selectors.MAX_RESULTS:
        raise InvalidInput(
            f"'limit' must be a count from 1 to {selectors.MAX_RESULTS}, got {limit}", field="limit"
        )
    return limit


def _document(workspace, params) -> int | None:
    """The id of the ``document`` asked for, in this workspace (404 otherwise)."""
    source_id = params.get("document")
    if not source_id:
        return None
    return get_object_or_404(
        documents_selectors.documents(workspace).only("pk"), source_id=source_id
    ).pk


class WorkspaceSearchView(WorkspaceScoped, APIView):
    """The workspace's passages that best answer ``q`` (BM25), best first."""

    resource = "workspace-search"
    throttle_classes = [SearchThrottle]

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="words to look for (1-200 characters)"),
            LIMIT,
            DOCUMENT,
        ],
        responses={200: dict},
    )
    def get(self, request, ws: str):
        params = request.query_params
        document = _document(self.workspace, params)
        try:
            query = textsearch.check_query(params.get("q", ""))
        except textsearch.QueryError as err:
            raise InvalidInput(str(err), field="q") from None
        found = selectors.search(self.workspace, query, limit=_limit(params), document=document)
        return Response(found)


class ItemSuggestionsView(WorkspaceScoped, APIView):
    """Passages that may answer the item's question: a person still chooses and highlights."""

    resource = "item-suggestions"
    throttle_classes = [SearchThrottle]

    @extend_schema(parameters=[LIMIT, DOCUMENT], responses={200: dict})
    def get(self, request, ws: str, set_slug: str, item: str):
        evalset = anchoring_selectors.evalset_in(self.workspace, set_slug)
        found_item = get_object_or_404(evalset.items.all(), item_id=item)
        params = request.query_params
        found = selectors.suggestions(
            found_item, limit=_limit(params), document=_document(self.workspace, params)
        )
        found["item"] = found_item.item_id
        return Response(found)
