"""Web pages for releases and imports; included by labelling.urls."""

from django.urls import path

from labelling import release_views as v

urlpatterns = [
    path("w/<slug:ws>/sets/<slug:set_slug>/releases/", v.releases_page, name="evalset-releases"),
    path("w/<slug:ws>/sets/<slug:set_slug>/import/", v.import_page, name="evalset-import"),
]
