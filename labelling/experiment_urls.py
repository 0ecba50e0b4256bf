"""Web pages for experiments; included by labelling.urls."""

from django.urls import path

from labelling import experiment_views as v

experiments = "w/<slug:ws>/sets/<slug:set_slug>/experiments"

urlpatterns = [
    path(f"{experiments}/", v.experiments_page, name="evalset-experiments"),
    path(f"{experiments}/<uuid:experiment>/", v.experiment_page, name="experiment"),
]
