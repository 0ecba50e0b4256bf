"""Web pages for releases; included by labelling.urls."""

urlpatterns: list = []
