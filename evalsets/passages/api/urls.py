"""API routes for workspace search and suggested evidence; included by evalsets.api.urls."""

from django.urls import path

from evalsets.api.routes import item, ws
from evalsets.passages.api.views import ItemSuggestionsView, WorkspaceSearchView

urlpatterns = [
    path(f"{ws}/search/", WorkspaceSearchView.as_view(), name="workspace-search"),
    path(f"{item}/suggestions/", ItemSuggestionsView.as_view(), name="item-suggestions"),
]
