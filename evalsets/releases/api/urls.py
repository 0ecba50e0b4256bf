"""API routes for releases and imports; included by evalsets.api.urls."""

from django.urls import path

from evalsets.api.routes import evalset, ws
from evalsets.releases.api import views as v

release = f"{evalset}/releases/<int:version>"

urlpatterns = [
    path(f"{evalset}/releases/", v.ReleaseListView.as_view(), name="release-list"),
    path(f"{release}/", v.ReleaseDetailView.as_view(), name="release-detail"),
    path(f"{release}/files/<slug:fmt>", v.ReleaseFileView.as_view(), name="release-file"),
    path(
        f"{release}/compare/<int:other>/",
        v.ReleaseCompareView.as_view(),
        name="release-compare",
    ),
    path(f"{evalset}/imports/preview/", v.ImportPreviewView.as_view(), name="import-preview"),
    path(f"{evalset}/imports/", v.ImportCommitView.as_view(), name="import-commit"),
    path(f"{ws}/imports/preview/", v.NewSetImportPreviewView.as_view(), name="new-import-preview"),
    path(f"{ws}/imports/", v.NewSetImportCommitView.as_view(), name="new-import-commit"),
]
