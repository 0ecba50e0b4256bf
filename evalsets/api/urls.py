from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from evalsets.anchoring.api import views as anchoring_views
from evalsets.api.ops_views import PendingView
from evalsets.documents.api import views as documents_views
from evalsets.documents.api.document_pages import DocumentPagesView, DocumentSearchView
from evalsets.documents.api.document_rendered import DocumentRenderedView
from evalsets.documents.api.pdf_pages import PdfPageImageView, PdfPageTextView, PdfView
from evalsets.workspaces.api import views as workspaces_views

LIST = {"get": "list", "post": "create"}
DETAIL = {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
ITEM_DETAIL = {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}

ws = "workspaces/<slug:ws>"
doc = f"{ws}/documents/<path:doc>"
item = f"{ws}/evalsets/<slug:set_slug>/items/<str:item>"

urlpatterns = [
    path("auth/token/", workspaces_views.TokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI's init script comes from the same URL (?script), so the page has none inline.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", template_name="api_docs/swagger_ui.html"
        ),
        name="api-docs",
    ),
    # Redoc styles itself with <style> elements it writes at run time (styled-components) and
    # searches in a worker it makes from a blob: so its page alone allows inline style and blob:
    # workers; its script stays this origin's only.
    path(
        "redoc/",
        csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
            SpectacularRedocView.as_view(url_name="api-schema", template_name="api_docs/redoc.html")
        ),
        name="api-redoc",
    ),
    path("workspaces/", workspaces_views.WorkspaceViewSet.as_view(LIST), name="workspace-list"),
    path(
        f"{ws}/",
        workspaces_views.WorkspaceViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="workspace-detail",
    ),
    path(
        f"{ws}/resolve/",
        workspaces_views.WorkspaceViewSet.as_view({"post": "resolve"}),
        name="workspace-resolve",
    ),
    path(f"{ws}/pending/", PendingView.as_view(), name="workspace-pending"),
    path(f"{ws}/members/", workspaces_views.MemberViewSet.as_view(LIST), name="member-list"),
    path(
        f"{ws}/members/<str:username>/",
        workspaces_views.MemberViewSet.as_view(DETAIL),
        name="member-detail",
    ),
    path(
        f"{ws}/invitations/",
        workspaces_views.WorkspaceInvitationViewSet.as_view({"get": "list"}),
        name="workspace-invitation-list",
    ),
    path(
        f"{ws}/invitations/<str:username>/",
        workspaces_views.WorkspaceInvitationViewSet.as_view({"delete": "destroy"}),
        name="workspace-invitation-detail",
    ),
    path(
        "invitations/",
        workspaces_views.InvitationViewSet.as_view({"get": "list"}),
        name="invitation-list",
    ),
    path(
        "invitations/<slug:workspace>/accept/",
        workspaces_views.InvitationViewSet.as_view({"post": "accept"}),
        name="invitation-accept",
    ),
    path(
        "invitations/<slug:workspace>/decline/",
        workspaces_views.InvitationViewSet.as_view({"post": "decline"}),
        name="invitation-decline",
    ),
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
    path(f"{ws}/evalsets/", anchoring_views.EvalSetViewSet.as_view(LIST), name="evalset-list"),
    path(
        f"{ws}/evalsets/<slug:set_slug>/",
        anchoring_views.EvalSetViewSet.as_view(DETAIL),
        name="evalset-detail",
    ),
    path(
        f"{ws}/evalsets/<slug:set_slug>/items/",
        anchoring_views.ItemViewSet.as_view(LIST),
        name="item-list",
    ),
    path(f"{item}/", anchoring_views.ItemViewSet.as_view(ITEM_DETAIL), name="item-detail"),
    path(f"{item}/anchors/", anchoring_views.AnchorViewSet.as_view(LIST), name="anchor-list"),
    path(
        f"{item}/anchors/<uuid:anchor>/",
        anchoring_views.AnchorViewSet.as_view(DETAIL),
        name="anchor-detail",
    ),
    path(
        f"{item}/anchors/<uuid:anchor>/confirm/",
        anchoring_views.AnchorViewSet.as_view({"post": "confirm"}),
        name="anchor-confirm",
    ),
    path(
        f"{item}/anchors/<uuid:anchor>/compare/",
        anchoring_views.AnchorViewSet.as_view({"get": "compare"}),
        name="anchor-compare",
    ),
    path("", include("evalsets.review.api.urls")),
    path("", include("evalsets.review.api.inbox_urls")),
    path("", include("evalsets.releases.api.urls")),
]
