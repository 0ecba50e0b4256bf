"""API routes for releases; included by evalsets.api.urls."""

urlpatterns: list = []
