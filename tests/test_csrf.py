"""CSRF: every form post and every session-authenticated API write needs the token.

Browsers send the session cookie with any cross-site request, so a write authenticated by the
session alone would let another site act as the user. Django's test client normally skips the
check; ``Client(enforce_csrf_checks=True)`` does not. Every write the permission matrix lists
is sent by a logged-in owner twice, each in a rolled-back savepoint: without the token (403,
nothing done) and with the token the page gave (the matrix's answer for the owner). Token
authentication is exempt by design (no cookie is involved), which the last test pins down.
"""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from evalsets.models import EvalSet
from tests.test_security_matrix import MATRIX, OWNER, Rule, url_for
from tests.world import World

pytestmark = pytest.mark.django_db

API_WRITES = [
    (name, method)
    for name in sorted(MATRIX)
    for method in MATRIX[name]
    if method != "GET" and name not in ("login", "logout")
]


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    cache.clear()
    yield
    cache.clear()


def _strict(user=None) -> tuple[Client, str]:
    """A client that enforces CSRF, logged in as ``user``, and the token a page gave it."""
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    page = client.get("/login/")
    assert page.status_code == 200
    return client, client.cookies["csrftoken"].value


def _send(client: Client, method: str, url: str, rule: Rule, world: World, token: str | None):
    headers = {"HTTP_X_CSRFTOKEN": token} if token else {}
    data = rule.body(world) if rule.body else None
    if rule.multipart:
        return client.generic(method, url, **_multipart(client, data or {}), **headers)
    body = json.dumps(data) if data is not None else ""
    return client.generic(method, url, body, content_type="application/json", **headers)


def _multipart(client: Client, data: dict) -> dict:
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    return {"data": encode_multipart(BOUNDARY, data), "content_type": MULTIPART_CONTENT}


@pytest.mark.parametrize(("name", "method"), API_WRITES, ids=[f"{m} {n}" for n, m in API_WRITES])
def test_a_session_write_without_the_csrf_token_is_refused_and_with_it_works(world, name, method):
    rule = MATRIX[name][method]
    if rule.setup:
        rule.setup(world)
    url = url_for(world, name, rule)
    client, token = _strict(world.users[OWNER])

    with transaction.atomic():
        refused = _send(client, method, url, rule, world, token=None)
        transaction.set_rollback(True)
    with transaction.atomic():
        accepted = _send(client, method, url, rule, world, token=token)
        transaction.set_rollback(True)

    assert refused.status_code == 403, refused.content[:300]
    assert "CSRF" in refused.json()["detail"]
    assert accepted.status_code == rule.expect[OWNER], accepted.content[:300]


def test_a_refused_write_changes_nothing(world):
    client, _ = _strict(world.users[OWNER])

    response = client.delete("/api/workspaces/acme/evalsets/quiz/")

    assert response.status_code == 403
    assert EvalSet.objects.filter(slug="quiz").exists()


def test_the_log_in_form_needs_the_token(world):
    client, token = _strict()
    credentials = {"username": "olive", "password": "correct horse battery"}

    refused = client.post("/login/", credentials)
    assert refused.status_code == 403
    assert client.get("/").status_code == 302  # not logged in: sent to log in

    accepted = client.post("/login/", {**credentials, "csrfmiddlewaretoken": token})
    assert accepted.status_code == 302
    assert client.get("/").status_code == 200


def test_the_log_out_form_needs_the_token(world):
    client, token = _strict(world.users[OWNER])

    refused = client.post("/logout/")
    assert refused.status_code == 403
    assert client.get("/").status_code == 200  # still logged in

    accepted = client.post("/logout/", {"csrfmiddlewaretoken": token})
    assert accepted.status_code == 302
    assert client.get("/").status_code == 302  # logged out: sent to log in


@pytest.mark.parametrize(
    "page", ["/", "/w/acme/", "/w/acme/sets/quiz/", "/w/acme/documents/handbook.txt"]
)
def test_every_page_that_writes_through_the_api_hands_the_script_a_token(world, page):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.users[OWNER])

    response = client.get(page)

    assert response.status_code == 200
    assert client.cookies["csrftoken"].value


def test_token_authenticated_api_calls_need_no_csrf_token(world):
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[OWNER]}")

    response = client.patch(
        "/api/workspaces/acme/evalsets/quiz/", {"name": "Renamed"}, format="json"
    )

    assert response.status_code == 200
