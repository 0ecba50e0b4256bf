"""API routes for the inbox, the changes feed and the checks before saving; included by
evalsets.api.urls."""

from django.urls import path

from evalsets.anchoring.api import check_views as cv
from evalsets.api.routes import evalset, ws
from evalsets.review.api import inbox_views as iv

urlpatterns = [
    path("inbox/", iv.InboxView.as_view(), name="inbox"),
    path("inbox/read/", iv.InboxReadView.as_view(), name="inbox-read"),
    path(f"{ws}/changes/", iv.ChangesView.as_view(), name="workspace-changes"),
    path(f"{evalset}/similar/", cv.SimilarQuestionsView.as_view(), name="similar-questions"),
]
