"""Web pages for owners (members, assignments, parser settings, an eval set's
guidelines and question types); included by labelling.urls."""

from django.urls import path

from labelling import owner_views as v

ws = "w/<slug:ws>"

urlpatterns = [
    path(f"{ws}/members/", v.members_page, name="members-page"),
    path(f"{ws}/settings/", v.settings_page, name="settings-page"),
    path(f"{ws}/sets/<slug:set_slug>/assignments/", v.assignments_page, name="assignments-page"),
    path(f"{ws}/sets/<slug:set_slug>/settings/", v.evalset_settings_page, name="evalset-settings"),
]
