"""API routes for reviews; included by evalsets.api.urls."""

urlpatterns: list = []
