"""API routes for documents, their parses, pages and PDF; included by evalsets.api.urls."""

from django.urls import path

from evalsets.api.routes import LIST, doc, ws
from evalsets.documents.api import views as documents_views
from evalsets.documents.api.document_pages import DocumentPagesView, DocumentSearchView
from evalsets.documents.api.document_rendered import DocumentRenderedView
from evalsets.documents.api.pdf_pages import PdfPageImageView, PdfPageTextView, PdfView

urlpatterns = [
    path(f"{ws}/documents/", documents_views.DocumentViewSet.as_view(LIST), name="document-list"),
    # Specific document routes before the catch-all one: a source id may contain '/'.
    path(
        f"{doc}/parses/<uuid:parse>/reference/",
        documents_views.ParseViewSet.as_view({"post": "reference"}),
        name="parse-reference",
    ),
    path(
        f"{doc}/parses/<uuid:parse>/",
        documents_views.ParseViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="parse-detail",
    ),
    path(f"{doc}/parses/", documents_views.ParseViewSet.as_view(LIST), name="parse-list"),
    path(f"{doc}/parses/<uuid:parse>/pages/", DocumentPagesView.as_view(), name="parse-pages"),
    # The PDF view: page sizes, page images, text layers (evalsets/documents/api/pdf_pages.py).
    path(f"{doc}/pdf/", PdfView.as_view(), name="document-pdf"),
    path(f"{doc}/pdf/pages/<int:page>/image", PdfPageImageView.as_view(), name="pdf-page-image"),
    path(f"{doc}/pdf/pages/<int:page>/text/", PdfPageTextView.as_view(), name="pdf-page-text"),
    path(f"{doc}/parses/<uuid:parse>/search/", DocumentSearchView.as_view(), name="parse-search"),
    path(f"{doc}/rendered/", DocumentRenderedView.as_view(), name="document-rendered"),
    path(
        f"{doc}/anchors/",
        documents_views.DocumentViewSet.as_view({"get": "anchors"}),
        name="document-anchors",
    ),
    path(
        f"{doc}/reparse/",
        # Answers the queued parses as a plain list, not a page of them.
        documents_views.DocumentViewSet.as_view({"post": "reparse"}, pagination_class=None),
        name="document-reparse",
    ),
    path(
        f"{doc}/",
        documents_views.DocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="document-detail",
    ),
]
