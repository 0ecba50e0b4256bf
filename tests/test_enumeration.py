"""Nothing tells an outsider whether a workspace or a user exists.

Every workspace URL of the permission matrix, with every method it serves, answers a member of
another workspace (and an anonymous visitor) byte for byte as it answers for a slug nobody
holds. Naming a user who exists but is not a member gives the same answer as naming no one,
wherever a username is taken (member invitations, assignees, assignments).

Deliberately not hidden: creating a workspace with a slug that is taken is a conflict (409).
Slugs are names, not secrets; every URL under one answers a non-member as if it did not exist.
"""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from tests.test_security_matrix import MATRIX, ROUTES, request, url_for

pytestmark = pytest.mark.django_db

MISSING = "no-such-workspace"
WORKSPACE_CASES = [
    (name, method)
    for name in sorted(MATRIX)
    if "<slug:ws>" in ROUTES[name][0]
    for method in MATRIX[name]
]


def _answer(world, actor: str, method: str, url: str, rule) -> tuple[int, bytes, str]:
    with transaction.atomic():
        response = request(world, actor, method, url, rule)
        transaction.set_rollback(True)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body, response.get("Content-Type", "")


@pytest.mark.parametrize(
    ("name", "method"), WORKSPACE_CASES, ids=[f"{m} {n}" for n, m in WORKSPACE_CASES]
)
def test_another_workspaces_urls_answer_exactly_like_a_missing_one(world, name, method):
    rule = MATRIX[name][method]
    real = url_for(world, name, rule)
    missing = real.replace(f"/{world.workspace.slug}/", f"/{MISSING}/", 1)
    assert missing != real

    for actor in ("outsider", "anonymous"):
        existing = _answer(world, actor, method, real, rule)
        absent = _answer(world, actor, method, missing, rule)
        assert existing == absent, f"{actor} can tell {real} exists: {existing!r} vs {absent!r}"


def test_the_walk_covers_every_workspace_route():
    assert len(WORKSPACE_CASES) > 40
    assert {"workspace-detail", "member-list", "document-detail", "release-file"} <= {
        name for name, _ in WORKSPACE_CASES
    }


def _owner_client(world) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens['owner']}")
    return client


def test_inviting_an_unknown_username_answers_like_inviting_a_real_user(world, make_user):
    make_user("stranger")
    client = _owner_client(world)
    url = f"/api/workspaces/{world.workspace.slug}/members/"

    with transaction.atomic():
        real = client.post(url, {"username": "stranger", "role": "viewer"}, format="json")
        transaction.set_rollback(True)
    made_up = client.post(url, {"username": "strangr", "role": "viewer"}, format="json")

    assert real.status_code == made_up.status_code == 201
    assert real.content.replace(b"stranger", b"strangr") == made_up.content


NAMED_USERS = {
    "item-assignee": ("items/", lambda name: {"id": "q8", "question": "Why?", "assignee": name}),
    "assignment": ("assignments/", lambda name: {"users": [name], "kind": "annotate"}),
}


@pytest.mark.parametrize("case", sorted(NAMED_USERS))
def test_naming_a_user_who_is_not_a_member_is_refused_like_naming_no_one(world, make_user, case):
    make_user("stranger")
    path, body = NAMED_USERS[case]
    url = f"/api/workspaces/{world.workspace.slug}/evalsets/{world.evalset.slug}/{path}"

    real, made_up = (
        _owner_client(world).post(url, body(name), format="json")
        for name in ("stranger", "strangr")
    )

    assert real.status_code == made_up.status_code == 400
    assert real.content.replace(b"stranger", b"strangr") == made_up.content


def test_a_member_url_for_a_non_member_answers_like_one_for_no_one(world, make_user):
    make_user("stranger")
    client = _owner_client(world)
    base = f"/api/workspaces/{world.workspace.slug}/members/"

    for method in ("get", "patch", "delete"):
        real = getattr(client, method)(f"{base}stranger/", {"role": "viewer"}, format="json")
        made_up = getattr(client, method)(f"{base}strangr/", {"role": "viewer"}, format="json")
        assert real.status_code == made_up.status_code == 404
        assert real.content == made_up.content


def test_a_taken_workspace_slug_is_a_conflict_by_design(world):
    client = APIClient()
    client.force_authenticate(world.users["outsider"])

    response = client.post("/api/workspaces/", {"slug": world.workspace.slug}, format="json")

    assert response.status_code == 409
    assert re.search(r"already exists", response.json()["detail"])


def test_a_wrong_password_and_an_unknown_user_get_the_same_token_answer(world, settings):
    settings.GROUNDWORK_LOGIN_ATTEMPTS = 3

    def answers(name: str, address: str) -> list[tuple[int, bytes]]:
        responses = [
            APIClient(REMOTE_ADDR=address).post(
                "/api/auth/token/", {"username": name, "password": "wrong"}, format="json"
            )
            for _ in range(3)
        ]
        # The lock-out names its wait in seconds, which may tick between the two runs.
        return [(r.status_code, re.sub(rb"\d+ s\b", b"N s", r.content)) for r in responses]

    real, unknown = answers("olive", "10.2.0.1"), answers("olivx", "10.2.0.2")

    assert real == unknown
    assert [status for status, _ in real] == [400, 400, 429]
