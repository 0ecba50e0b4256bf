"""Password guessing is slowed: the log-in page and the token endpoint, per username and address."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

ATTEMPTS = 3


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.GROUNDWORK_LOGIN_ATTEMPTS = ATTEMPTS
    settings.GROUNDWORK_LOGIN_WINDOW_S = 300
    cache.clear()
    yield
    cache.clear()


def _log_in(username: str, password: str, address: str = "10.0.0.1"):
    client = Client(REMOTE_ADDR=address)
    response = client.post("/login/", {"username": username, "password": password})
    return client, response


def test_wrong_passwords_below_the_limit_just_say_they_did_not_match(annotator):
    for _ in range(ATTEMPTS - 1):
        _, response = _log_in("ann", "wrong")
        assert response.status_code == 200
        assert "didn't match" in response.content.decode()


def test_the_last_allowed_failure_answers_429_saying_how_long_to_wait(annotator):
    for _ in range(ATTEMPTS - 1):
        _log_in("ann", "wrong")

    _, response = _log_in("ann", "wrong")

    assert response.status_code == 429
    wait = int(response["Retry-After"])
    assert 0 < wait <= 300
    assert f"Too many failed log-in attempts; try again in {wait} s." in response.content.decode()


def test_once_limited_even_the_right_password_is_refused_without_logging_in(annotator):
    for _ in range(ATTEMPTS):
        _log_in("ann", "wrong")

    client, response = _log_in("ann", PASSWORD)

    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302  # still anonymous: sent to log in


def test_the_limit_is_per_username_and_address(annotator, viewer):
    for _ in range(ATTEMPTS):
        _log_in("ann", "wrong", address="10.0.0.1")

    assert _log_in("ANN", PASSWORD, address="10.0.0.1")[1].status_code == 429  # case-folded
    assert _log_in("vic", PASSWORD, address="10.0.0.1")[1].status_code == 302
    assert _log_in("ann", PASSWORD, address="10.0.0.2")[1].status_code == 302


def test_after_the_window_the_right_password_works_again(annotator, monkeypatch):
    for _ in range(ATTEMPTS):
        _log_in("ann", "wrong")
    later = time.time() + 301
    monkeypatch.setattr(time, "time", lambda: later)

    client, response = _log_in("ann", PASSWORD)

    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(annotator.pk)


def test_a_successful_log_in_clears_the_count(annotator):
    for _ in range(ATTEMPTS - 1):
        _log_in("ann", "wrong")
    assert _log_in("ann", PASSWORD)[1].status_code == 302

    for _ in range(ATTEMPTS - 1):
        assert _log_in("ann", "wrong")[1].status_code == 200


def test_the_token_endpoint_allows_ten_a_minute_per_username_and_address(annotator, viewer):
    client = APIClient(REMOTE_ADDR="10.0.0.9")
    for _ in range(10):
        response = client.post("/api/auth/token/", {"username": "ann", "password": "wrong"})
        assert response.status_code == 400

    limited = client.post("/api/auth/token/", {"username": "ann", "password": PASSWORD})
    other_user = client.post("/api/auth/token/", {"username": "vic", "password": PASSWORD})
    other_address = APIClient(REMOTE_ADDR="10.0.0.8").post(
        "/api/auth/token/", {"username": "ann", "password": PASSWORD}
    )

    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
    assert "throttled" in limited.json()["detail"].lower()
    assert "token" not in limited.json()
    assert other_user.status_code == 200 and other_user.json()["token"]
    assert other_address.status_code == 200
