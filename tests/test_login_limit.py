"""Password guessing is slowed (django-axes): page and token endpoint share one count, kept by
the canonical user at an address and by the client address as the deployment defines it. A
user is never locked out of an address that has not failed: failing on purpose from elsewhere
only slows the addresses that failed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.signals import user_login_failed
from django.db.models import F
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

ATTEMPTS = 3
WINDOW_S = 300
SLOWDOWN_S = 60
# Spellings of "ann" that Django's NFKC normalisation (and case-folding) brings back to it.
FULL_WIDTH = "\uff41\uff4e\uff4e"
FULL_WIDTH_UPPER = "\uff21\uff2e\uff2e"
MIXED = "\uff21nn"
MATH_BOLD = "\U0001d41a\U0001d427\U0001d427"
CIRCLED = "\u24d0\u24dd\u24dd"


@pytest.fixture(autouse=True)
def _limits(settings):
    settings.GROUNDWORK_LOGIN_ATTEMPTS = ATTEMPTS
    settings.GROUNDWORK_LOGIN_WINDOW_S = WINDOW_S
    settings.GROUNDWORK_LOGIN_SLOWDOWN_S = SLOWDOWN_S
    settings.GROUNDWORK_PROXY_COUNT = 0


def _page(username: str, password: str, address: str = "10.0.0.1", forwarded: str = ""):
    client = Client(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=forwarded)
    response = client.post("/login/", {"username": username, "password": password})
    return client, response


def _token(username: str, password: str, address: str = "10.0.0.1", forwarded: str = ""):
    client = APIClient(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=forwarded)
    return client.post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )


def _logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_wrong_passwords_below_the_limit_just_say_they_did_not_match(annotator):
    for _ in range(ATTEMPTS - 1):
        _, response = _page("ann", "wrong")
        assert response.status_code == 200
        assert "didn't match" in response.content.decode()


def test_the_last_allowed_failure_answers_429_saying_when_to_try_again(annotator):
    for _ in range(ATTEMPTS - 1):
        _page("ann", "wrong")

    _, response = _page("ann", "wrong")

    assert response.status_code == 429
    wait = int(response["Retry-After"])
    assert 0 < wait <= WINDOW_S
    assert f"Too many failed log-in attempts; try again in {wait} s." in response.content.decode()


def test_once_locked_even_the_right_password_is_refused_without_logging_in(annotator):
    for _ in range(ATTEMPTS):
        _page("ann", "wrong")

    client, response = _page("ann", PASSWORD)

    assert response.status_code == 429
    assert not _logged_in(client)
    assert client.get("/").status_code == 302  # still anonymous: sent to log in


def test_a_fresh_forwarded_header_per_try_is_still_throttled(annotator):
    statuses = [
        _token("ann", "wrong", forwarded=f"203.0.113.{n}").status_code for n in range(ATTEMPTS + 2)
    ]

    assert statuses[: ATTEMPTS - 1] == [400] * (ATTEMPTS - 1)
    assert set(statuses[ATTEMPTS - 1 :]) == {429}


def test_a_locked_address_gets_no_token_with_the_right_password(annotator):
    for n in range(ATTEMPTS):
        _token("ann", "wrong", forwarded=f"203.0.113.{n}")

    response = _token("ann", PASSWORD, forwarded="198.51.100.7")

    assert response.status_code == 429
    body = response.json()
    assert "token" not in body
    assert body["detail"].startswith("Too many failed log-in attempts; try again in ")
    assert body["errors"] == {"non_field_errors": [body["detail"]]}
    assert int(response["Retry-After"]) > 0


def test_failures_from_other_addresses_never_lock_the_user_out_of_one_that_has_not_failed(
    annotator,
):
    # Ten times the limit, from addresses that each fail a little and then a lot.
    for n in range(ATTEMPTS * 10):
        _token("ann", "wrong", address=f"203.0.113.{n % 7}")
        _page("ann", "wrong", address=f"198.51.100.{n}")

    client, page = _page("ann", PASSWORD, address="10.9.9.9")
    token = _token("ann", PASSWORD, address="10.9.9.8")

    assert page.status_code == 302 and _logged_in(client)
    assert token.status_code == 200 and token.json()["token"]


def test_an_address_that_failed_for_a_user_under_attack_waits_the_slowdown_then_may_try(
    annotator,
):
    for n in range(ATTEMPTS):  # one failure from each address: no address is locked
        _page("ann", "wrong", address=f"10.0.20.{n}")

    slowed = _page("ann", PASSWORD, address="10.0.20.0")[1]
    assert slowed.status_code == 429
    assert 0 < int(slowed["Retry-After"]) <= SLOWDOWN_S

    AccessAttempt.objects.filter(ip_address="10.0.20.0").update(
        attempt_time=F("attempt_time") - timedelta(seconds=SLOWDOWN_S + 1)
    )
    client, response = _page("ann", PASSWORD, address="10.0.20.0")
    assert response.status_code == 302 and _logged_in(client)


def test_below_the_users_limit_an_address_that_failed_is_not_slowed(annotator):
    for n in range(ATTEMPTS - 1):
        _page("ann", "wrong", address=f"10.0.21.{n}")

    assert _page("ann", PASSWORD, address="10.0.21.0")[1].status_code == 302


def test_signing_in_to_ones_own_account_does_not_clear_what_the_address_did_to_others(
    annotator, viewer
):
    for _ in range(ATTEMPTS - 1):
        _page("ann", "wrong", address="10.0.22.1")
    assert _page("vic", PASSWORD, address="10.0.22.1")[1].status_code == 302

    # The address's failures still count: one more and it is locked.
    assert _page("ann", "wrong", address="10.0.22.1")[1].status_code == 429


def test_a_name_longer_than_any_account_is_refused_before_any_password_is_checked(annotator):
    failures = []

    def record(**kwargs):
        failures.append(kwargs)

    user_login_failed.connect(record)
    try:
        page = _page("a" * 151, "wrong")[1]
        token = _token("a" * 256, "wrong")
    finally:
        user_login_failed.disconnect(record)

    assert page.status_code == 400
    assert "at most 150 characters" in page.content.decode()
    assert token.status_code == 400
    assert "no more than 150 characters" in str(token.json()["errors"]["username"])
    assert failures == [] and not AccessAttempt.objects.exists()


def test_a_name_that_normalises_past_the_counts_column_is_still_counted(annotator):
    # U+FDFA is one character that NFKC makes eighteen: 150 of them make a 2,700-character key.
    response = _token("\ufdfa" * 150, "wrong")

    assert response.status_code == 400
    (attempt,) = AccessAttempt.objects.all()
    assert attempt.username.startswith("sha256:") and attempt.failures_since_start == 1


def test_a_nul_in_a_name_is_refused_by_both_ways_in_without_counting(annotator):
    page = _page("ann\x00", "wrong")[1]
    token = _token("ann\x00", "wrong")

    assert page.status_code == 400 and token.status_code == 400
    assert not AccessAttempt.objects.exists()


@pytest.mark.parametrize(
    "look_alike",
    ["ann", "ANN", FULL_WIDTH, FULL_WIDTH_UPPER, MIXED, MATH_BOLD, CIRCLED],
    ids=["plain", "upper", "full-width", "full-width-upper", "mixed", "math-bold", "circled"],
)
def test_look_alike_spellings_of_a_slowed_name_are_slowed_too(annotator, look_alike):
    for n in range(ATTEMPTS):
        _page(FULL_WIDTH if n % 2 else "ann", "wrong", address=f"10.0.1.{n}")

    client, response = _page(look_alike, PASSWORD, address="10.0.1.1")

    assert response.status_code == 429
    assert not _logged_in(client)


def test_full_width_failures_count_against_the_user_they_would_log_in_as(annotator):
    # Django accepts the full-width spelling for "ann" (NFKC): so must the count.
    client, response = _page(FULL_WIDTH, PASSWORD, address="10.0.3.1")
    assert response.status_code == 302 and _logged_in(client)

    for n in range(ATTEMPTS):
        _page(FULL_WIDTH, "wrong", address=f"10.0.4.{n}")

    assert _page("ann", PASSWORD, address="10.0.4.0")[1].status_code == 429
    assert _page("ann", PASSWORD, address="10.0.5.1")[1].status_code == 302


def test_look_alike_failures_on_the_token_endpoint_slow_the_canonical_user(annotator):
    for n in range(ATTEMPTS):
        _token([FULL_WIDTH, FULL_WIDTH_UPPER, CIRCLED][n % 3], "wrong", address=f"10.0.10.{n}")

    assert _page("ann", PASSWORD, address="10.0.10.1")[1].status_code == 429
    assert _token("ann", PASSWORD, address="10.0.10.2").status_code == 429


def test_one_address_guessing_many_names_is_locked_for_every_name(annotator, viewer):
    for n in range(ATTEMPTS):
        _page(f"nobody{n}", "wrong", address="10.0.6.1")

    assert _page("vic", PASSWORD, address="10.0.6.1")[1].status_code == 429
    assert _page("vic", PASSWORD, address="10.0.6.2")[1].status_code == 302


def test_other_users_are_not_locked_by_someone_elses_failures(annotator, viewer):
    for n in range(ATTEMPTS):
        _page("ann", "wrong", address=f"10.0.7.{n}")

    assert _page("vic", PASSWORD, address="10.0.8.1")[1].status_code == 302


def test_with_one_proxy_the_forwarded_address_is_the_client(settings, annotator, viewer):
    settings.GROUNDWORK_PROXY_COUNT = 1
    proxy = "10.0.0.254"
    for n in range(ATTEMPTS):
        # The client wrote the first entry itself; the proxy appended the real address.
        _page(f"nobody{n}", "wrong", address=proxy, forwarded=f"1.2.3.{n}, 198.51.100.9")

    locked = _page("vic", PASSWORD, address=proxy, forwarded="198.51.100.9")[1]
    other_client = _page("vic", PASSWORD, address=proxy, forwarded="198.51.100.10")[1]

    assert locked.status_code == 429
    assert other_client.status_code == 302


def test_without_a_proxy_count_the_forwarded_header_is_ignored(annotator, viewer):
    for n in range(ATTEMPTS):
        _page(f"nobody{n}", "wrong", address="10.0.9.1", forwarded=f"198.51.100.{n}")

    assert _page("vic", PASSWORD, address="10.0.9.1", forwarded="192.0.2.1")[1].status_code == 429


def test_the_lock_ends_after_the_cool_off(annotator):
    for _ in range(ATTEMPTS):
        _page("ann", "wrong")
    assert _page("ann", PASSWORD)[1].status_code == 429

    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=WINDOW_S + 1))
    client, response = _page("ann", PASSWORD)

    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(annotator.pk)


def test_the_lock_holds_just_before_the_cool_off_ends(annotator):
    for _ in range(ATTEMPTS):
        _page("ann", "wrong")

    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=WINDOW_S - 5))

    assert _page("ann", PASSWORD)[1].status_code == 429


def test_the_page_and_the_token_endpoint_share_the_count(annotator):
    _page("ann", "wrong", address="10.1.0.1")
    _token("ann", "wrong", address="10.1.0.1")
    assert ATTEMPTS == 3
    third = _page("ann", "wrong", address="10.1.0.1")[1]

    assert third.status_code == 429
    assert _token("ann", PASSWORD, address="10.1.0.1").status_code == 429


def test_a_successful_log_in_clears_the_count(annotator):
    for _ in range(ATTEMPTS - 1):
        _page("ann", "wrong")
    assert _page("ann", PASSWORD)[1].status_code == 302

    for _ in range(ATTEMPTS - 1):
        assert _page("ann", "wrong")[1].status_code == 200


def test_the_right_password_below_the_limit_gets_a_token(annotator):
    _token("ann", "wrong")

    response = _token("ann", PASSWORD)

    assert response.status_code == 200 and response.json()["token"]
