"""API routes for reviews; included by evalsets.api.urls."""

from django.urls import path

from evalsets.api.routes import evalset, item
from evalsets.review.api import views as rv

urlpatterns = [
    path(f"{item}/submit/", rv.WorkflowViewSet.as_view({"post": "submit"}), name="item-submit"),
    path(f"{item}/approve/", rv.WorkflowViewSet.as_view({"post": "approve"}), name="item-approve"),
    path(
        f"{item}/request-changes/",
        rv.WorkflowViewSet.as_view({"post": "request_changes"}),
        name="item-request-changes",
    ),
    path(
        f"{item}/adjudication/",
        rv.AdjudicationViewSet.as_view({"get": "retrieve", "post": "create"}),
        name="item-adjudication",
    ),
    path(f"{item}/reopen/", rv.WorkflowViewSet.as_view({"post": "reopen"}), name="item-reopen"),
    path(
        f"{item}/comments/",
        rv.CommentViewSet.as_view({"get": "list", "post": "create"}),
        name="item-comments",
    ),
    path(f"{item}/history/", rv.HistoryViewSet.as_view({"get": "list"}), name="item-history"),
    path(
        f"{evalset}/assignments/",
        rv.AssignmentViewSet.as_view({"get": "list", "post": "create"}),
        name="assignment-list",
    ),
    path(
        f"{evalset}/assignments/<uuid:assignment>/",
        rv.AssignmentViewSet.as_view({"delete": "destroy"}),
        name="assignment-detail",
    ),
    path(f"{evalset}/next/", rv.NextItemViewSet.as_view({"get": "retrieve"}), name="next-item"),
    path(
        f"{evalset}/dashboard/",
        rv.DashboardViewSet.as_view({"get": "retrieve"}),
        name="evalset-dashboard",
    ),
]
