"""Web pages for reviews; included by labelling.urls."""

from django.urls import path

from labelling import review_views

evalset = "w/<slug:ws>/sets/<slug:set_slug>"

urlpatterns = [
    path(f"{evalset}/review/", review_views.review_page, name="review-page"),
    path(
        f"{evalset}/items/<str:item_id>/adjudicate/",
        review_views.adjudication_page,
        name="adjudication-page",
    ),
    path(f"{evalset}/dashboard/", review_views.dashboard_page, name="dashboard-page"),
]
