"""API rate limits per user on every costly endpoint family: past the rate, a 429 that names
the limit and its setting, with Retry-After; other users and other actions are not held.

Each family runs at its default's own shape (the same period) with a count of 2, so a third
request in the window is the one refused. The throttles count in the cache, which every test
starts empty (tests/conftest.py); time is moved by the throttle's own clock, never waited.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.throttling import SimpleRateThrottle

from evalsets.api import throttles
from evalsets.errors import RateLimited
from labelling.settings import env_rate

WS = "/api/workspaces/acme"
SET = f"{WS}/evalsets/quiz"
Q = {"id": "t1", "question": "What is throttled?", "anchors": []}


def _jsonl() -> SimpleUploadedFile:
    return SimpleUploadedFile("set.jsonl", (json.dumps(Q) + "\n").encode())


def _upload(client, n):
    return client.post(
        f"{WS}/documents/",
        {"file": SimpleUploadedFile(f"d{n}.txt", f"Document {n}.\n".encode())},
        format="multipart",
    )


def _reparse(client, n):
    return client.post(f"{WS}/documents/handbook.txt/reparse/")


def _parse_upload(client, n):
    body = {"parser": "mine", "parser_version": str(n), "text": f"Parse {n}."}
    return client.post(f"{WS}/documents/handbook.txt/parses/", body, format="json")


def _preview(client, n):
    return client.post(f"{SET}/imports/preview/", {"file": _jsonl()}, format="multipart")


def _commit(client, n):
    return client.post(f"{SET}/imports/", {"file": _jsonl()}, format="multipart")


def _new_set_preview(client, n):
    return client.post(
        f"{WS}/imports/preview/", {"file": _jsonl(), "evalset": f"new{n}"}, format="multipart"
    )


def _release(client, n):
    body = {"formats": ["contextgrid-jsonl"], "include_states": ["draft"]}
    return client.post(f"{SET}/releases/", body, format="json")


def _resolve(client, n):
    return client.post(f"{WS}/resolve/")


def _workspace(client, n):
    return client.post("/api/workspaces/", {"slug": f"new-{n}"}, format="json")


#: (scope, what the refusal calls it, who may, request); every costly endpoint of the API.
FAMILIES = {
    "upload": ("uploads", "uploads and re-parses", "annotator", _upload),
    "reparse": ("uploads", "uploads and re-parses", "annotator", _reparse),
    "parse upload": ("parse_uploads", "parse uploads", "annotator", _parse_upload),
    "import preview": ("imports", "imports (previews and commits)", "owner", _preview),
    "import commit": ("imports", "imports (previews and commits)", "owner", _commit),
    "new-set import": ("imports", "imports (previews and commits)", "owner", _new_set_preview),
    "release": ("releases", "releases", "owner", _release),
    "resolve": ("resolve", "requests to re-resolve a workspace", "owner", _resolve),
    "workspace": ("workspaces", "new workspaces", "owner", _workspace),
}


def _low(scope: str) -> str:
    """2 in the period of the scope's default rate."""
    return "2/" + getattr(django_settings, throttles.rate_setting(scope)).split("/")[1]


@pytest.fixture
def actors(owner, annotator, item, document):
    return {"owner": owner, "annotator": annotator}


@pytest.mark.django_db
@pytest.mark.parametrize("family", FAMILIES)
def test_each_costly_endpoint_refuses_the_request_past_its_rate_with_a_429_naming_it(
    family, actors, client_for, settings
):
    scope, what, who, send = FAMILIES[family]
    name = throttles.rate_setting(scope)
    setattr(settings, name, _low(scope))
    client = client_for(actors[who])
    answers = [send(client, n).status_code for n in range(2)]
    assert 429 not in answers, answers
    refused = send(client, 2)
    assert refused.status_code == 429, refused.content
    body = refused.json()
    per = throttles.PERIODS[throttles.ScopedThrottle().parse_rate(_low(scope))[1]]
    wait = int(refused["Retry-After"])
    assert body["detail"] == (
        f"too many {what}: {name} allows 2 {per} for each user; try again in {wait} s"
    )
    assert body["errors"] == {"non_field_errors": [body["detail"]]}
    assert body["limit"] == {"setting": name, "value": _low(scope)}
    assert 1 <= wait <= throttles.ScopedThrottle().parse_rate(_low(scope))[1]


@pytest.mark.django_db
def test_the_rate_is_counted_per_user(client_for, annotator, owner, document, settings):
    settings.GROUNDWORK_RATE_UPLOADS = "2/min"
    ann, olive = client_for(annotator), client_for(owner)
    assert [_upload(ann, n).status_code for n in range(3)] == [201, 201, 429]
    assert _upload(olive, 3).status_code == 201


@pytest.mark.django_db
def test_a_request_is_allowed_again_once_the_oldest_leaves_the_window(
    client_for, annotator, document, settings, monkeypatch
):
    settings.GROUNDWORK_RATE_UPLOADS = "2/min"
    now = [1_000_000.0]
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: now[0])
    client = client_for(annotator)
    assert _upload(client, 0).status_code == 201
    now[0] += 20
    assert _upload(client, 1).status_code == 201
    refused = _upload(client, 2)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "40"  # the first upload leaves the minute in 40 s
    now[0] += 40
    assert _upload(client, 3).status_code == 201


@pytest.mark.django_db
def test_reading_is_not_counted_by_the_throttle_of_a_costly_action(
    client_for, owner, annotator, item, document, settings
):
    settings.GROUNDWORK_RATE_UPLOADS = "1/min"
    settings.GROUNDWORK_RATE_RELEASES = "1/hour"
    ann, olive = client_for(annotator), client_for(owner)
    for _ in range(3):
        assert ann.get(f"{WS}/documents/").status_code == 200
        assert ann.get(f"{WS}/documents/handbook.txt/").status_code == 200
        assert olive.get(f"{SET}/releases/").status_code == 200
    assert _upload(ann, 0).status_code == 201
    assert _release(olive, 0).status_code == 202


@pytest.mark.django_db
def test_a_request_refused_for_its_role_or_workspace_is_not_counted(
    client_for, viewer, outsider, annotator, document, settings
):
    settings.GROUNDWORK_RATE_UPLOADS = "1/min"
    for _ in range(3):
        assert _upload(client_for(viewer), 0).status_code == 403
        assert _upload(client_for(outsider), 0).status_code == 404
    assert _upload(client_for(viewer), 0).status_code == 403  # still the role, not the rate
    assert _upload(client_for(annotator), 0).status_code == 201


@pytest.mark.django_db
def test_a_request_past_the_rate_is_refused_before_its_body_is_read(
    client_for, annotator, document, settings
):
    settings.GROUNDWORK_RATE_PARSE_UPLOADS = "1/min"
    client = client_for(annotator)
    assert _parse_upload(client, 0).status_code == 201
    path = f"{WS}/documents/handbook.txt/parses/"
    refused = client.post(path, b"{not json", content_type="application/json")
    assert refused.status_code == 429, refused.content


@pytest.mark.django_db
def test_an_unset_rate_is_a_configuration_error_that_names_the_setting(
    client_for, annotator, document, settings
):
    del settings.GROUNDWORK_RATE_UPLOADS
    with pytest.raises(ImproperlyConfigured, match="GROUNDWORK_RATE_UPLOADS"):
        _upload(client_for(annotator), 0)


def test_every_default_rate_reads_as_drf_reads_it():
    for name in dir(django_settings):
        if name.startswith("GROUNDWORK_RATE_"):
            count, seconds = throttles.ScopedThrottle().parse_rate(getattr(django_settings, name))
            assert count >= 1 and seconds in throttles.PERIODS, name


@pytest.mark.parametrize(
    ("raw", "read"),
    [("120/min", "120/min"), ("5/h", "5/hour"), (" 10 / day ", "10/day"), ("3/second", "3/s")],
)
def test_a_rate_setting_is_read_in_the_one_form_drf_reads(monkeypatch, raw, read):
    monkeypatch.setenv("GROUNDWORK_RATE_X", raw)
    assert env_rate("GROUNDWORK_RATE_X", "1/min") == read


@pytest.mark.parametrize("raw", ["120", "0/min", "-1/min", "ten/min", "5/week", "5/"])
def test_a_malformed_rate_setting_stops_start_up_naming_the_setting(monkeypatch, raw):
    monkeypatch.setenv("GROUNDWORK_RATE_X", raw)
    with pytest.raises(ImproperlyConfigured, match="GROUNDWORK_RATE_X must be a rate like"):
        env_rate("GROUNDWORK_RATE_X", "1/min")


@pytest.mark.django_db
def test_a_wait_under_a_second_is_told_as_one_second(
    client_for, annotator, document, settings, monkeypatch
):
    settings.GROUNDWORK_RATE_UPLOADS = "1/min"
    now = [1_000_000.0]
    monkeypatch.setattr(SimpleRateThrottle, "timer", lambda self: now[0])
    client = client_for(annotator)
    assert _upload(client, 0).status_code == 201
    now[0] += 59.8
    refused = _upload(client, 1)
    assert refused.status_code == 429
    assert refused.json()["detail"].endswith("; try again in 1 s")
    assert refused["Retry-After"] == "1"


def test_the_refusal_says_the_same_wait_in_words_as_in_its_header(settings, monkeypatch):
    settings.GROUNDWORK_RATE_UPLOADS = "2/min"
    throttle = throttles.UploadThrottle()
    throttle.rate = throttle.get_rate()
    throttle.num_requests, throttle.duration = throttle.parse_rate(throttle.rate)
    # A wait just past a whole second: rounding it down in the words and up in the header
    # told a client two different moments (59 s and 60 s).
    monkeypatch.setattr(throttle, "wait", lambda: 59.3)
    with pytest.raises(RateLimited) as refused:
        throttle.throttle_failure()
    assert refused.value.retry_after == 60
    assert str(refused.value).endswith("try again in 60 s")
