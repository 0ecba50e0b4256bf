"""Property: no write endpoint answers 5xx to hostile JSON, and a refused write stores nothing.

Every POST, PUT and PATCH operation of the OpenAPI schema (so a new endpoint is covered
without touching this file) gets, in each example, a body built from its request schema's
field names with values drawn from what databases cannot hold: lone surrogates, NUL, integers
past 64 bits, NaN and infinities (sent as the bare ``NaN``/``Infinity`` tokens), deeply mixed
JSON. Sent as the owner (so bodies get past the role checks) against the objects of
``tests/world.py``, inside a transaction rolled back after each example. For each request:
no 5xx; a 4xx leaves every table's row count as it was; and after the example the set, its
items and an item's history still read (a stored lone surrogate used to break all three).

This file carries no marker: the quick suite runs it on SQLite and CI's service run on
PostgreSQL (``DATABASE_URL``), where NUL and wide integers used to be 500s.
"""

from __future__ import annotations

import json
import math
import os
import re

import pytest
from django.apps import apps
from django.core.cache import cache
from django.db import transaction
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

EXAMPLES = int(os.environ.get("STORABLE_EXAMPLES", "12"))
WRITE_METHODS = ("post", "put", "patch")

HOSTILE_TEXT = st.one_of(
    st.sampled_from(["\ud800", "a\udfffb", "nul\x00here", "\x00", "\udbff\udc00", "q\ud83d"]),
    st.text(st.characters(codec=None, categories=["Cs", "Cc", "Ll", "Nd"]), max_size=6),
)
PLAUSIBLE_TEXT = st.sampled_from(
    [
        "q-new",
        "handbook.txt",
        "vic",
        "annotate",
        "contextgrid-jsonl",
        "Why?",
        "Leave may be carried over.",
    ]
)
HOSTILE_NUMBER = st.one_of(
    st.sampled_from([2**31, 2**40, 2**63, 2**70, -(2**63) - 1, 10**30, 1e308]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.integers(),
    st.floats(),
)
SCALAR = st.one_of(HOSTILE_TEXT, PLAUSIBLE_TEXT, HOSTILE_NUMBER, st.booleans(), st.none())
JSON_VALUE = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(HOSTILE_TEXT | PLAUSIBLE_TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)


def _write_operations() -> list[tuple[str, str, list[str]]]:
    """``(method, path template, body field names)`` for every write in the OpenAPI schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    operations = []
    for path, item in schema["paths"].items():
        for method in WRITE_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            fields: set[str] = set()
            for content in operation.get("requestBody", {}).get("content", {}).values():
                ref = content.get("schema", {}).get("$ref", "")
                body = components.get(ref.rsplit("/", 1)[-1], content.get("schema", {}))
                fields |= set(body.get("properties", {}))
            operations.append((method, path, sorted(fields)))
    return operations


OPERATIONS = _write_operations()


def _url(template: str, kwargs: dict) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(kwargs[m.group(1)]), template)


def _row_counts() -> dict[str, int]:
    models = [*apps.get_app_config("evalsets").get_models(), apps.get_model("auth", "User")]
    return {model._meta.label: model.objects.count() for model in models}


def _body(data, fields: list[str]) -> str:
    body = {}
    for name in fields:
        if data.draw(st.booleans(), label=f"send {name}"):
            body[name] = data.draw(st.one_of(PLAUSIBLE_TEXT, JSON_VALUE), label=name)
    if data.draw(st.booleans(), label="extra key"):
        body[data.draw(HOSTILE_TEXT, label="extra key name")] = data.draw(JSON_VALUE)
    # ensure_ascii escapes lone surrogates as \udXXX; allow_nan writes NaN and Infinity bare.
    return json.dumps(body, allow_nan=True)


def test_every_write_operation_is_enumerated():
    paths = {(method, path) for method, path, _ in OPERATIONS}
    assert ("post", "/api/workspaces/{ws}/evalsets/{set_slug}/items/") in paths
    assert ("patch", "/api/workspaces/{ws}/evalsets/{set_slug}/items/{item}/") in paths
    assert ("post", "/api/workspaces/{ws}/evalsets/{set_slug}/items/{item}/anchors/") in paths
    assert len(OPERATIONS) >= 25


@pytest.mark.django_db
@given(data=st.data())
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_hostile_json_to_any_write_is_never_a_5xx_and_a_refusal_stores_nothing(data, world):
    client = APIClient()
    client.force_authenticate(world.users["owner"])
    kwargs = world.kwargs
    item_url = f"/api/workspaces/{kwargs['ws']}/evalsets/{kwargs['set']}/items/{kwargs['item']}/"
    with transaction.atomic():
        cache.clear()
        for method, template, fields in OPERATIONS:
            raw = _body(data, fields)
            before = _row_counts()
            response = client.generic(
                method.upper(), _url(template, kwargs), raw, content_type="application/json"
            )
            where = f"{method.upper()} {template} {raw[:300]}"
            assert response.status_code < 500, f"{where} -> {response.status_code}"
            if response.status_code >= 400:
                assert _row_counts() == before, f"{where} was refused but wrote rows"
                assert "detail" in response.json(), where
        for url in (f"/api/workspaces/{kwargs['ws']}/evalsets/", item_url, f"{item_url}history/"):
            assert client.get(url).status_code == 200, f"{url} no longer reads"
        transaction.set_rollback(True)
