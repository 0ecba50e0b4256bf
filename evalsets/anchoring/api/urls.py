"""API routes for eval sets, their items and the items' anchors; included by
evalsets.api.urls."""

from django.urls import path

from evalsets.anchoring.api import views as anchoring_views
from evalsets.api.routes import DETAIL, ITEM_DETAIL, LIST, evalset, item, ws

urlpatterns = [
    path(f"{ws}/evalsets/", anchoring_views.EvalSetViewSet.as_view(LIST), name="evalset-list"),
    path(f"{evalset}/", anchoring_views.EvalSetViewSet.as_view(DETAIL), name="evalset-detail"),
    path(f"{evalset}/items/", anchoring_views.ItemViewSet.as_view(LIST), name="item-list"),
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
]
