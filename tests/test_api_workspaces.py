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


def _invite(client, username: str, role: str = "annotator"):
    return client.post(
        "/api/workspaces/acme/members/", {"username": username, "role": role}, format="json"
    )


def test_adding_a_member_invites_them_and_gives_no_access_until_they_accept(
    client_for, workspace, owner, make_user
):
    newbie = make_user("newbie")

    response = _invite(client_for(owner), "newbie")

    assert response.status_code == 201
    assert response.json() == {"username": "newbie", "role": "annotator", "status": "invited"}
    assert not Membership.objects.filter(user=newbie).exists()
    assert client_for(newbie).get("/api/workspaces/acme/").status_code == 404
    members = client_for(owner).get("/api/workspaces/acme/members/").json()["results"]
    assert "newbie" not in [m["username"] for m in members]
    pending = client_for(owner).get("/api/workspaces/acme/invitations/").json()["results"]
    assert [(i["username"], i["role"], i["invited_by"]) for i in pending] == [
        ("newbie", "annotator", "olive")
    ]


def test_the_invitee_sees_the_invitation_and_accepting_makes_them_a_member(
    client_for, workspace, owner, make_user
):
    newbie = make_user("newbie")
    _invite(client_for(owner), "newbie", role="reviewer")
    client = client_for(newbie)

    mine = client.get("/api/invitations/").json()["results"]
    accepted = client.post("/api/invitations/acme/accept/")

    assert [(i["workspace"], i["role"], i["invited_by"]) for i in mine] == [
        ("acme", "reviewer", "olive")
    ]
    assert accepted.status_code == 200
    assert accepted.json()["username"] == "newbie" and accepted.json()["role"] == "reviewer"
    assert Membership.objects.get(user=newbie, workspace__slug="acme").role == "reviewer"
    assert client.get("/api/workspaces/acme/").json()["role"] == "reviewer"
    assert client.get("/api/invitations/").json()["results"] == []
    assert client.post("/api/invitations/acme/accept/").status_code == 404  # used up


def test_declining_removes_the_invitation_and_gives_no_access(
    client_for, workspace, owner, make_user
):
    newbie = make_user("newbie")
    _invite(client_for(owner), "newbie")
    client = client_for(newbie)

    assert client.post("/api/invitations/acme/decline/").status_code == 204
    assert client.get("/api/invitations/").json()["results"] == []
    assert client.post("/api/invitations/acme/accept/").status_code == 404
    assert not Membership.objects.filter(user=newbie).exists()


def test_nobody_else_can_accept_someone_elses_invitation(
    client_for, workspace, owner, outsider, make_user
):
    make_user("newbie")
    _invite(client_for(owner), "newbie")

    response = client_for(outsider).post("/api/invitations/acme/accept/")

    assert response.status_code == 404
    assert not Membership.objects.filter(user=outsider, workspace__slug="acme").exists()


def test_an_owner_withdraws_an_invitation_before_it_is_accepted(
    client_for, workspace, owner, make_user
):
    newbie = make_user("newbie")
    _invite(client_for(owner), "newbie")

    assert client_for(owner).delete("/api/workspaces/acme/invitations/newbie/").status_code == 204
    assert client_for(newbie).post("/api/invitations/acme/accept/").status_code == 404


def test_inviting_again_replaces_the_role(client_for, workspace, owner, make_user):
    newbie = make_user("newbie")
    _invite(client_for(owner), "newbie", role="viewer")
    _invite(client_for(owner), "newbie", role="owner")

    client_for(newbie).post("/api/invitations/acme/accept/")

    assert Membership.objects.get(user=newbie, workspace__slug="acme").role == "owner"


def test_inviting_a_current_member_is_a_conflict(client_for, workspace, owner, annotator):
    response = _invite(client_for(owner), "ann")

    assert response.status_code == 409
    assert response.json()["detail"] == (
        "'ann' is already a member of 'acme'; change their role instead"
    )


def test_a_full_width_spelling_invites_the_same_user(client_for, workspace, owner, make_user):
    newbie = make_user("newbie")
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in "newbie")

    _invite(client_for(owner), full_width)

    assert client_for(newbie).post("/api/invitations/acme/accept/").status_code == 200


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
