"""Sections of a document's rendered view: sanitised HTML tied to the reference parse.

The document page draws HTML, Markdown and Word documents as they look, a few sections at a
time as the reader scrolls. Each section comes with the reference parse's text it shows and
the runs that align the two (``evalsets.pure.rendering``), so the page turns a selection into
offsets in the reference parse, and an anchor's span in that parse into marks in the view.
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets.api.scoping import WorkspaceScoped
from evalsets.documents import renditions
from evalsets.documents import selectors as documents_selectors
from evalsets.documents.api.document_pages import _page_number
from evalsets.errors import InvalidInput

#: At most this many sections per request.
MAX_SECTIONS = 10


class DocumentRenderedView(WorkspaceScoped, APIView):
    """Sections ``from``..``to`` (1-based, inclusive, at most 10) of the rendered view.

    Read from the rendition a worker stored; 202 with ``preparing`` while it is being built.
    """

    resource = "document-rendered"

    @extend_schema(
        parameters=[
            OpenApiParameter("from", int, description="first section, from 1 (default 1)"),
            OpenApiParameter("to", int, description="last section, inclusive (capped at from+9)"),
        ],
        responses={200: dict, 202: dict},
    )
    def get(self, request, ws: str, doc: str):
        document = documents_selectors.document_in(self.workspace, doc)
        reference = next((p for p in document.parses.all() if p.is_reference), None)
        if reference is None:
            raise Http404("this document has no reference parse")
        first = _page_number(request.query_params, "from", 1)
        last = _page_number(request.query_params, "to", first + MAX_SECTIONS - 1)
        if last < first:
            raise InvalidInput(f"'to' ({last}) must not be before 'from' ({first})", field="to")
        try:
            stored = renditions.stored_sections(
                document, reference, first, min(last, first + MAX_SECTIONS - 1)
            )
        except renditions.Preparing as exc:
            return Response(
                {"preparing": True, "detail": f"{exc}; ask again in a few seconds"},
                status=202,
                headers={"Retry-After": "2"},
            )
        except IndexError as exc:
            raise InvalidInput(
                f"'from' is section {first} but this view has {exc.args[0]} sections",
                field="from",
            ) from None
        return Response({"parse": str(reference.public_id), "kind": document.kind, **stored})
