from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from evalsets.api import views as v
from evalsets.api.document_pages import DocumentPagesView
from evalsets.api.ops_views import PendingView

LIST = {"get": "list", "post": "create"}
DETAIL = {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
ITEM_DETAIL = {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}

ws = "workspaces/<slug:ws>"
doc = f"{ws}/documents/<path:doc>"
item = f"{ws}/evalsets/<slug:set>/items/<str:item>"

urlpatterns = [
    path("auth/token/", v.TokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("workspaces/", v.WorkspaceViewSet.as_view(LIST), name="workspace-list"),
    path(
        f"{ws}/",
        v.WorkspaceViewSet.as_view({"get": "retrieve", "patch": "partial_update"}),
        name="workspace-detail",
    ),
    path(
        f"{ws}/resolve/",
        v.WorkspaceViewSet.as_view({"post": "resolve"}),
        name="workspace-resolve",
    ),
    path(f"{ws}/pending/", PendingView.as_view(), name="workspace-pending"),
    path(f"{ws}/members/", v.MemberViewSet.as_view(LIST), name="member-list"),
    path(
        f"{ws}/members/<str:username>/",
        v.MemberViewSet.as_view(DETAIL),
        name="member-detail",
    ),
    path(f"{ws}/documents/", v.DocumentViewSet.as_view(LIST), name="document-list"),
    # Specific document routes before the catch-all one: a source id may contain '/'.
    path(
        f"{doc}/parses/<uuid:parse>/reference/",
        v.ParseViewSet.as_view({"post": "reference"}),
        name="parse-reference",
    ),
    path(
        f"{doc}/parses/<uuid:parse>/",
        v.ParseViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="parse-detail",
    ),
    path(f"{doc}/parses/", v.ParseViewSet.as_view(LIST), name="parse-list"),
    path(f"{doc}/parses/<uuid:parse>/pages/", DocumentPagesView.as_view(), name="parse-pages"),
    path(f"{doc}/anchors/", v.DocumentViewSet.as_view({"get": "anchors"}), name="document-anchors"),
    path(
        f"{doc}/reparse/",
        # Answers the queued parses as a plain list, not a page of them.
        v.DocumentViewSet.as_view({"post": "reparse"}, pagination_class=None),
        name="document-reparse",
    ),
    path(
        f"{doc}/",
        v.DocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="document-detail",
    ),
    path(f"{ws}/evalsets/", v.EvalSetViewSet.as_view(LIST), name="evalset-list"),
    path(f"{ws}/evalsets/<slug:set>/", v.EvalSetViewSet.as_view(DETAIL), name="evalset-detail"),
    path(f"{ws}/evalsets/<slug:set>/items/", v.ItemViewSet.as_view(LIST), name="item-list"),
    path(f"{item}/", v.ItemViewSet.as_view(ITEM_DETAIL), name="item-detail"),
    path(f"{item}/anchors/", v.AnchorViewSet.as_view(LIST), name="anchor-list"),
    path(
        f"{item}/anchors/<uuid:anchor>/",
        v.AnchorViewSet.as_view(DETAIL),
        name="anchor-detail",
    ),
    path("", include("evalsets.api.review_urls")),
    path("", include("evalsets.api.release_urls")),
]
