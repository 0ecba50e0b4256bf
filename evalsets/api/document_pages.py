"""A range of pages of one parse: what the document view fetches as the reader scrolls.

A parse of a 1,000-page document is megabytes of text; the browser asks for the few pages
near the viewport instead. Offsets are code points (Python's ``len``), as everywhere in the
API, so ``start`` of each page is exactly what a highlight's ``start`` is measured against.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets import selectors
from evalsets.api.permissions import IsViewer
from evalsets.api.views import WorkspaceScoped
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import ParseStatus, ParseVersion

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

    permission_classes = [IsAuthenticated, IsViewer]

    @extend_schema(
        parameters=[
            OpenApiParameter("from", int, description="first page, from 1 (default 1)"),
            OpenApiParameter("to", int, description="last page, inclusive (capped at from+49)"),
        ],
        responses={200: dict},
    )
    def get(self, request, ws: str, doc: str, parse):
        document = get_object_or_404(
            selectors.documents(self.workspace).only("pk", "source_id", "workspace"),
            source_id=doc,
        )
        version = get_object_or_404(
            ParseVersion.objects.filter(document=document).only(
                "pk", "public_id", "status", "text", "page_starts"
            ),
            public_id=parse,
        )
        if version.status != ParseStatus.READY:
            raise Conflict(
                f"this parse is {version.status}, not ready; its pages appear when it is",
                field="parse",
            )
        text = version.text
        starts = version.page_starts or [0]
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
        pages = []
        for number in range(first, last + 1):
            start = starts[number - 1]
            end = starts[number] if number < page_count else len(text)
            pages.append({"number": number, "start": start, "text": text[start:end]})
        return Response(
            {
                "parse": str(version.public_id),
                "from": first,
                "to": last,
                "page_count": page_count,
                "length": len(text),
                "pages": pages,
            }
        )
