"""Web pages for reviews; included by labelling.urls."""

urlpatterns: list = []
