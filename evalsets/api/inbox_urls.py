"""API routes for the inbox and the changes feed; included by evalsets.api.urls."""

from django.urls import path

from evalsets.api import inbox_views as iv

urlpatterns = [
    path("inbox/", iv.InboxView.as_view(), name="inbox"),
    path("inbox/read/", iv.InboxReadView.as_view(), name="inbox-read"),
    path("workspaces/<slug:ws>/changes/", iv.ChangesView.as_view(), name="workspace-changes"),
]
