"""API routes for workspaces, their members and invitations, and the API token; included by
evalsets.api.urls."""

from django.urls import path

from evalsets.api.routes import DETAIL, LIST, ws
from evalsets.workspaces.api import views as workspaces_views
from evalsets.workspaces.api.pending_views import PendingView

urlpatterns = [
    path("auth/token/", workspaces_views.TokenView.as_view(), name="api-token"),
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
]
