"""The API's root routes: the schema and its two docs pages, then each domain's own routes."""

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI's init script comes from the same URL (?script), so the page has none inline.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="api-schema", template_name="api_docs/swagger_ui.html"
        ),
        name="api-docs",
    ),
    # Redoc styles itself with <style> elements it writes at run time (styled-components) and
    # searches in a worker it makes from a blob: so its page alone allows inline style and blob:
    # workers; its script stays this origin's only.
    path(
        "redoc/",
        csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
            SpectacularRedocView.as_view(url_name="api-schema", template_name="api_docs/redoc.html")
        ),
        name="api-redoc",
    ),
    # Each domain's routes, in the order Django tried them when they were all listed here. No two
    # domains' routes match the same path today; within a domain's file the order does matter.
    path("", include("evalsets.workspaces.api.urls")),
    path("", include("evalsets.documents.api.urls")),
    path("", include("evalsets.anchoring.api.urls")),
    path("", include("evalsets.review.api.urls")),
    path("", include("evalsets.review.api.inbox_urls")),
    path("", include("evalsets.releases.api.urls")),
    path("", include("evalsets.experiments.api.urls")),
    path("", include("evalsets.passages.api.urls")),
]
