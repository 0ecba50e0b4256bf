from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from labelling import labels, login_limit, probes, views

ws = "w/<slug:ws>"
evalset = f"{ws}/sets/<slug:set_slug>"

# Unexpected errors, and URLs that name no endpoint, under /api/ answer in the API's JSON
# error shape (evalsets.api.errors).
handler500 = "evalsets.api.errors.server_error"
handler404 = "evalsets.api.errors.not_found"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", login_limit.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz/", views.healthz, name="healthz"),
    path("readyz/", probes.readyz, name="readyz"),
    path("metrics", probes.metrics, name="metrics"),
    path("labels.css", labels.stylesheet, name="labels-css"),
    path("document-frame/", views.document_frame, name="document-frame"),
    path(f"{ws}/", views.workspace_page, name="workspace"),
    # A source id may contain '/', so the document path comes last in its URL.
    path(f"{ws}/documents/<path:doc>", views.document_page, name="document"),
    path(f"{evalset}/", views.evalset_page, name="evalset"),
    path(f"{evalset}/items/<str:item_id>/", views.item_page, name="item"),
    path(f"{evalset}/next/", views.queue_next, name="queue-next"),
    path("", include("labelling.review_urls")),
    path("", include("labelling.release_urls")),
    path("", include("labelling.experiment_urls")),
    path("", include("labelling.owner_urls")),
    path("api/", include("evalsets.api.urls")),
    path("admin/", admin.site.urls),
]
# Uploaded documents and release files are never served from MEDIA_URL, not even in dev
# mode: anyone could fetch them there. They leave only through views that check membership.
