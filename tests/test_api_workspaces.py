"""Workspaces, members and tokens through the API."""

from __future__ import annotations

import pytest

from evalsets.models import Membership

pytestmark = pytest.mark.django_db


def test_a_user_gets_a_token_for_their_username_and_password(client_for, owner):
    from tests.conftest import PASSWORD

    response = client_for(None).post(
        "/api/auth/token/", {"username": "olive", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    listed = client_for(None)
    listed.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert listed.get("/api/workspaces/").status_code == 200


def test_a_wrong_password_gets_a_clear_400(client_for, owner):
    response = client_for(None).post(
        "/api/auth/token/", {"username": "olive", "password": "nope"}, format="json"
    )
    assert response.status_code == 400
    assert "Unable to log in" in response.json()["detail"]


def test_anonymous_requests_are_refused(client_for, workspace):
    response = client_for(None).get("/api/workspaces/acme/")
    assert response.status_code in (401, 403)


def test_creating_a_workspace_makes_the_creator_its_owner(client_for, make_user):
    user = make_user("new")
    response = client_for(user).post(
        "/api/workspaces/", {"slug": "team", "name": "Team"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["role"] == "owner"
    assert Membership.objects.get(workspace__slug="team").user == user


def test_a_taken_workspace_slug_is_a_409_that_says_so(client_for, workspace, annotator):
    response = client_for(annotator).post("/api/workspaces/", {"slug": "acme"}, format="json")
    assert response.status_code == 409
    assert (
        response.json()["detail"] == "a workspace called 'acme' already exists; pick another slug"
    )


def test_a_bad_slug_is_a_400_naming_the_field(client_for, owner):
    response = client_for(owner).post("/api/workspaces/", {"slug": "no spaces"}, format="json")
    assert response.status_code == 400
    assert "slug" in response.json()["errors"]
    assert response.json()["detail"].startswith("slug:")


def test_the_list_shows_only_my_workspaces_with_my_role(client_for, workspace, outsider, viewer):
    response = client_for(viewer).get("/api/workspaces/")
    slugs = [(w["slug"], w["role"]) for w in response.json()["results"]]
    assert slugs == [("acme", "viewer")]


def test_another_workspace_is_a_404(client_for, workspace, outsider):
    assert client_for(outsider).get("/api/workspaces/acme/").status_code == 404
    assert client_for(outsider).get("/api/workspaces/acme/members/").status_code == 404


def test_an_owner_adds_a_member_with_a_role(client_for, workspace, owner, make_user):
    make_user("newbie")
    response = client_for(owner).post(
        "/api/workspaces/acme/members/", {"username": "newbie", "role": "annotator"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["role"] == "annotator"


def test_adding_an_unknown_user_says_who_is_unknown(client_for, workspace, owner):
    response = client_for(owner).post(
        "/api/workspaces/acme/members/", {"username": "ghost", "role": "viewer"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "there is no user called 'ghost'"
    assert response.json()["errors"] == {"username": ["there is no user called 'ghost'"]}


def test_an_unknown_role_is_refused(client_for, workspace, owner, make_user):
    make_user("newbie")
    response = client_for(owner).post(
        "/api/workspaces/acme/members/", {"username": "newbie", "role": "boss"}, format="json"
    )
    assert response.status_code == 400
    assert "role" in response.json()["errors"]


def test_an_annotator_cannot_add_members(client_for, workspace, annotator, make_user):
    make_user("newbie")
    response = client_for(annotator).post(
        "/api/workspaces/acme/members/", {"username": "newbie", "role": "owner"}, format="json"
    )
    assert response.status_code == 403
    assert "owner role" in response.json()["detail"]


def test_an_owner_changes_a_role_and_removes_a_member(client_for, workspace, owner):
    client = client_for(owner)
    changed = client.patch("/api/workspaces/acme/members/ann/", {"role": "reviewer"}, format="json")
    assert changed.status_code == 200 and changed.json()["role"] == "reviewer"
    assert client.delete("/api/workspaces/acme/members/ann/").status_code == 204
    assert client.get("/api/workspaces/acme/members/ann/").status_code == 404


def test_the_last_owner_cannot_be_removed_or_demoted(client_for, workspace, owner):
    client = client_for(owner)
    demoted = client.patch("/api/workspaces/acme/members/olive/", {"role": "viewer"}, format="json")
    assert demoted.status_code == 409
    assert "last owner" in demoted.json()["detail"]
    assert client.delete("/api/workspaces/acme/members/olive/").status_code == 409


def test_an_owner_chooses_parsers_and_the_reference_parser(client_for, workspace, owner):
    settings = {"parsers": {"pdf": ["pdfminer"]}, "reference": {"pdf": "pdfminer"}}
    response = client_for(owner).patch(
        "/api/workspaces/acme/", {"parser_settings": settings}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["parser_settings"] == settings


def test_an_unknown_parser_is_refused_with_the_choices(client_for, workspace, owner):
    response = client_for(owner).patch(
        "/api/workspaces/acme/", {"parser_settings": {"parsers": {"pdf": ["magic"]}}}, format="json"
    )
    assert response.status_code == 400
    assert "'magic' does not parse pdf files" in response.json()["detail"]
