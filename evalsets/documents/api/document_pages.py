"""A range of pages of one parse, and a search over all of it: what the document view
fetches as the reader scrolls and searches.

A parse of a 1,000-page document is megabytes of text; the browser asks for the few pages
near the viewport instead, and so cannot search the rest itself: the server does. Offsets are
code points (Python's ``len``), as everywhere in the API, so ``start`` of each page (and of
each hit) is exactly what a highlight's ``start`` is measured against.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets.api.scoping import WorkspaceScoped
from evalsets.api.throttles import SearchThrottle
from evalsets.documents import search
from evalsets.documents import selectors as documents_selectors
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import ParseStatus, ParseVersion
from evalsets.pure import textsearch

#: At most this many pages per request; a client asks again for the rest.
MAX_PAGES = 50
#: Hits per search request: the default and the most a client may ask for.
HITS = 50
MAX_HITS = 200


def _number(params, name: str, default: int, *, least: int, what: str, too_small: str = "") -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name!r} must be {what}, got {raw!r}", field=name) from None
    if value < least:
        raise InvalidInput(too_small or f"{name!r} must be {what}, got {value}", field=name)
    return value


def _page_number(params, name: str, default: int) -> int:
    value = params.get(name)
    return _number(
        params,
        name,
        default,
        least=1,
        what="a page number (1 or more)",
        too_small=f"{name!r} counts pages from 1, got {value}",
    )


def _ready_parse(workspace, doc: str, parse) -> ParseVersion:
    """The parse ``parse`` of document ``doc``, ready, without its text; 404 or 409 if not."""
    found = (
        ParseVersion.objects.filter(
            document__workspace=workspace, document__source_id=doc, public_id=parse
        )
        .only("pk", "status", "page_starts", "text_length", "updated_at")
        .first()
    )
    if found is None:
        # Say which of the two is missing; both are 404s, as for another workspace's.
        get_object_or_404(documents_selectors.documents(workspace).only("pk"), source_id=doc)
        raise Http404("no such parse of this document")
    if found.status != ParseStatus.READY:
        raise Conflict(
            f"this parse is {found.status}, not ready; its pages appear when it is",
            field="parse",
        )
    return found


class DocumentPagesView(WorkspaceScoped, APIView):
    """Pages ``from``..``to`` (1-based, inclusive, at most 50) of one parse of a document."""

    resource = "parse-pages"

    @extend_schema(
        parameters=[
            OpenApiParameter("from", int, description="first page, from 1 (default 1)"),
            OpenApiParameter("to", int, description="last page, inclusive (capped at from+49)"),
        ],
        responses={200: dict},
    )
    def get(self, request, ws: str, doc: str, parse):
        found = _ready_parse(self.workspace, doc, parse)
        length = found.text_length
        starts = found.page_begins
        page_count = len(starts)
        first = _page_number(request.query_params, "from", 1)
        last = _page_number(request.query_params, "to", first + MAX_PAGES - 1)
        if first > page_count:
            raise InvalidInput(
                f"'from' is page {first} but this parse has {page_count} pages", field="from"
            )
        if last < first:
            raise InvalidInput(f"'to' ({last}) must not be before 'from' ({first})", field="to")
        last = min(last, page_count, first + MAX_PAGES - 1)
        # Only the pages asked for leave the database, not the whole (megabytes of) text.
        offset = starts[first - 1]
        end = starts[last] if last < page_count else length
        text = found.text_between(offset, end)
        pages = []
        for number in range(first, last + 1):
            start = starts[number - 1]
            stop = starts[number] if number < page_count else end
            pages.append(
                {"number": number, "start": start, "text": text[start - offset : stop - offset]}
            )
        return Response(
            {
                "parse": str(parse),
                "from": first,
                "to": last,
                "page_count": page_count,
                "length": length,
                "pages": pages,
            }
        )


class DocumentSearchView(WorkspaceScoped, APIView):
    """Where a word or phrase occurs in one parse's whole text: any case, any whitespace.

    Each search examines at most ``GROUNDWORK_SEARCH_MAX_CHARS`` positions a scan: past them
    the answer has ``"complete": false`` and ``searched_to`` (a code point, and its page), and
    ``next_after`` goes on from there. Each user may search ``GROUNDWORK_RATE_SEARCH`` times
    (a 429 names the limit).
    """

    resource = "parse-search"
    throttle_classes = [SearchThrottle]

    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, description="the word or phrase (1-200 characters)"),
            OpenApiParameter("after", int, description="hits from this code point on (0)"),
            OpenApiParameter("limit", int, description=f"hits at most ({HITS}, up to {MAX_HITS})"),
        ],
        responses={200: dict},
    )
    def get(self, request, ws: str, doc: str, parse):
        parse_found = _ready_parse(self.workspace, doc, parse)  # 404 before any 400
        params = request.query_params
        query = params.get("q", "")
        try:
            query = textsearch.check_query(query)
        except textsearch.QueryError as err:
            raise InvalidInput(str(err), field="q") from None
        # Past the end there is nothing to find (and a huge number must not reach the C code).
        after = min(
            _number(params, "after", 0, least=0, what="an offset (0 or more)"),
            parse_found.text_length,
        )
        limit = _number(params, "limit", HITS, least=1, what=f"a count from 1 to {MAX_HITS}")
        if limit > MAX_HITS:
            raise InvalidInput(
                f"'limit' must be a count from 1 to {MAX_HITS}, got {limit}", field="limit"
            )
        found = search.parse_search(parse_found, query, after=after, limit=limit)
        return Response(
            {
                "parse": str(parse),
                "query": query,
                "total": found.total,
                "total_is_lower_bound": found.total_is_lower_bound,
                "index": found.index,
                "next_after": found.next_after,
                "complete": found.complete,
                "searched_to": found.searched_to,
                "searched_to_page": found.searched_to_page,
                "hits": [hit.to_dict() for hit in found.hits],
            }
        )
