"""The PDF view's API: the document's pages as images and their text layers.

``pdf/`` says which parse backs the view and how big each page is (so the browser can lay out
1,000 empty pages and fetch only those in sight); ``pdf/pages/{n}/image`` is page ``n`` drawn
by pdfium (cached, shared); ``pdf/pages/{n}/text/`` is its text layer, runs of the pdfium
parse's text with their boxes, ``start`` counted in code points of that parse.

A reader may read these (viewer); another workspace's document is a 404 like any other.
"""

from __future__ import annotations

from django.http import FileResponse, Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from evalsets.api.scoping import WorkspaceScoped
from evalsets.documents import pdfview
from evalsets.documents import selectors as documents_selectors
from evalsets.errors import Conflict, GroundworkError, InvalidInput
from evalsets.models import Document, ParseStatus, ParseVersion
from evalsets.pure import pdfdraw


class PageNotDrawn(GroundworkError):
    """The page exists but cannot be drawn, by its own fault or over its budget (HTTP 422);
    the text view still reads it. ``code`` in the body says which."""

    status_code = 422


class PageBusy(GroundworkError):
    """Drawing the page ran out of wall-clock time on a busy machine (HTTP 503): ask again."""

    status_code = 503


def _document(view: WorkspaceScoped, doc: str) -> Document:
    return documents_selectors.document_in(view.workspace, doc)


def _view_parse(document: Document) -> ParseVersion:
    """The ready pdfium parse with its boxes, or a 409 saying why there is none yet."""
    if document.kind != "pdf":
        raise Conflict(
            f"{document.source_id!r} is not a PDF; the PDF view shows PDFs only", field="doc"
        )
    parse = documents_selectors.pdf_view_parse(document, pdfview.VIEW_PARSER)
    if parse is None:
        raise Conflict(
            "this PDF has no pdfium parse to draw its text layer from; "
            "an annotator can queue it with reparse/",
            field="doc",
        )
    if parse.status != ParseStatus.READY:
        reason = f": {parse.error}" if parse.error else "; the view appears when it is"
        raise Conflict(f"the pdfium parse of this PDF is {parse.status}{reason}", field="doc")
    if not parse.char_boxes:
        raise Conflict(
            "the pdfium parse of this PDF has no character boxes (it was uploaded, not "
            "parsed here); reparse the document to get them",
            field="doc",
        )
    return parse


def _page(parse: ParseVersion, page: int) -> int:
    if not 1 <= page <= parse.page_count:
        raise InvalidInput(
            f"page {page} is not in this PDF; its pages are 1 to {parse.page_count}",
            field="page",
        )
    return page


class PdfView(WorkspaceScoped, APIView):
    """Which parse backs the PDF view, its page count and every page's size in points."""

    resource = "pdf"

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, ws: str, doc: str):
        document = _document(self, doc)
        parse = _view_parse(document)
        return Response(
            {
                "parse": str(parse.public_id),
                "parser": parse.parser,
                "parser_version": parse.parser_version,
                "is_reference": parse.is_reference,
                "page_count": parse.page_count,
                "page_starts": parse.page_starts,
                "sizes": pdfview.page_sizes(parse),
                "scales": list(pdfdraw.SCALES),
                "default_scale": pdfdraw.DEFAULT_SCALE,
                "image_type": pdfdraw.IMAGE_TYPE,
                "version": document.sha256[:16],
            }
        )


class PdfPageImageView(WorkspaceScoped, APIView):
    """Page ``n`` drawn by pdfium (JPEG), from the shared cache or drawn now."""

    resource = "pdf-page-image"

    @extend_schema(
        parameters=[
            OpenApiParameter("scale", float, description="1, 1.5 (default) or 2: pixels per point"),
        ],
        responses={(200, pdfdraw.IMAGE_TYPE): OpenApiTypes.BINARY},
    )
    def get(self, request, ws: str, doc: str, page: int):
        document = _document(self, doc)
        parse = _view_parse(document)
        _page(parse, page)
        raw = request.query_params.get("scale", "")
        try:
            scale = float(raw) if raw else pdfdraw.DEFAULT_SCALE
        except ValueError:
            scale = None
        if scale not in pdfdraw.SCALES:
            raise InvalidInput(
                f"'scale' must be one of {', '.join(f'{s:g}' for s in pdfdraw.SCALES)}, "
                f"got {raw!r}",
                field="scale",
            )
        try:
            path = pdfview.page_image(document, page, scale)
            handle = path.open("rb")
        except pdfdraw.PageNotDrawn as exc:
            raise _not_drawn(page, exc) from None
        except FileNotFoundError:  # pruned between drawing and opening: a rare race
            raise Http404("that page image was just dropped from the cache; ask again") from None
        response = FileResponse(handle, content_type=pdfdraw.IMAGE_TYPE)
        # The URL carries the file's hash (?v=), so a re-uploaded file is another URL.
        response["Cache-Control"] = "private, max-age=86400"
        return response


def _not_drawn(page: int, exc: pdfdraw.PageNotDrawn) -> GroundworkError:
    if not exc.lasting:
        return PageBusy(
            f"page {page} could not be drawn just now: {exc}; the server is busy, ask again "
            "in a minute (its text is in the text view)",
            field="page",
            extra={"code": exc.code},
        )
    return PageNotDrawn(
        f"page {page} could not be drawn: {exc}; its text is in the text view",
        field="page",
        extra={"code": exc.code},
    )


class PdfPageTextView(WorkspaceScoped, APIView):
    """Page ``n``'s text layer: runs of the pdfium parse's text with their boxes."""

    resource = "pdf-page-text"

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, ws: str, doc: str, page: int):
        document = _document(self, doc)
        parse = _view_parse(document)
        _page(parse, page)
        try:
            layer = pdfview.text_layer(parse, page)
        except (ValueError, IndexError, OSError) as exc:
            raise PageNotDrawn(
                f"the text layer of page {page} could not be read: {exc}", field="page"
            ) from None
        layer["parse"] = str(parse.public_id)
        return Response(layer)
