"""A range of pages of one parse: what the document view fetches as the reader scrolls.

A parse of a 1,000-page document is megabytes of text; the browser asks for the few pages
near the viewport instead. Offsets are code points (Python's ``len``), as everywhere in the
API, so ``start`` of each page is exactly what a highlight's ``start`` is measured against.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets import selectors
from evalsets.api.views import WorkspaceScoped
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import ParseStatus, ParseVersion, Role

#: At most this many pages per request; a client asks again for the rest.
MAX_PAGES = 50


def _page_number(params, name: str, default: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(
            f"{name!r} must be a page number (1 or more), got {raw!r}", field=name
        ) from None
    if value < 1:
        raise InvalidInput(f"{name!r} counts pages from 1, got {value}", field=name)
    return value


class DocumentPagesView(WorkspaceScoped, APIView):
    """Pages ``from``..``to`` (1-based, inclusive, at most 50) of one parse of a document."""

    required_roles = {"get": Role.VIEWER}

    @extend_schema(
        parameters=[
            OpenApiParameter("from", int, description="first page, from 1 (default 1)"),
            OpenApiParameter("to", int, description="last page, inclusive (capped at from+49)"),
        ],
        responses={200: dict},
    )
    def get(self, request, ws: str, doc: str, parse):
        found = (
            ParseVersion.objects.filter(
                document__workspace=self.workspace, document__source_id=doc, public_id=parse
            )
            .only("pk", "status", "page_starts", "text_length")
            .first()
        )
        if found is None:
            # Say which of the two is missing; both are 404s, as for another workspace's.
            get_object_or_404(selectors.documents(self.workspace).only("pk"), source_id=doc)
            raise Http404("no such parse of this document")
        if found.status != ParseStatus.READY:
            raise Conflict(
                f"this parse is {found.status}, not ready; its pages appear when it is",
                field="parse",
            )
        length = found.text_length
        starts = found.page_starts or [0]
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
