"""API routes for experiments and uploaded runs; included by evalsets.api.urls."""

from django.urls import path

from evalsets.api.routes import evalset
from evalsets.experiments.api import views as v

experiments = f"{evalset}/experiments"
experiment = f"{experiments}/<uuid:experiment>"

urlpatterns = [
    path(f"{experiments}/", v.ExperimentListView.as_view(), name="experiment-list"),
    path(f"{experiments}/runs/preview/", v.RunPreviewView.as_view(), name="run-preview"),
    path(f"{experiments}/runs/", v.RunCommitView.as_view(), name="run-commit"),
    path(f"{experiment}/", v.ExperimentDetailView.as_view(), name="experiment-detail"),
    path(f"{experiment}/cancel/", v.ExperimentCancelView.as_view(), name="experiment-cancel"),
    path(f"{experiment}/rerun/", v.ExperimentRerunView.as_view(), name="experiment-rerun"),
    path(f"{experiment}/misses/", v.ExperimentMissesView.as_view(), name="experiment-misses"),
    path(f"{experiment}/compare/", v.ExperimentCompareView.as_view(), name="experiment-compare"),
    path(f"{experiment}/gate/", v.ExperimentGateView.as_view(), name="experiment-gate"),
    path(
        f"{experiment}/results/<slug:fmt>",
        v.ExperimentResultsView.as_view(),
        name="experiment-results",
    ),
]
