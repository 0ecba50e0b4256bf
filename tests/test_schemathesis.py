"""schemathesis against our own OpenAPI schema, in process, as every role: no 5xx, and every
documented response matches its schema.

The schema is read from ``/api/schema/`` through the WSGI app (no server). One test per
operation; each generated case is sent as one of the roles (owner, reviewer, annotator, viewer,
drawn by Hypothesis, with their API tokens) inside a savepoint that is rolled back, so an
owner's DELETE does not leave the next case with nothing to work on. Path parameters are
pinned to real objects in workspace ``acme`` (tests/world.py), so generated bodies reach the
code behind the permission checks instead of stopping at a 404; query strings, bodies and
uploads are generated.
``SECURITY_EXAMPLES`` bounds the examples per operation (CI sets nothing: the default keeps
the whole file to a couple of minutes).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.world import World

ROLES = ("owner", "reviewer", "annotator", "viewer")
EXAMPLES = int(os.environ.get("SECURITY_EXAMPLES", "16"))

schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Requests go straight to the WSGI handler, which closes the database connection when a
    request ends; that would end the test's transaction (PostgreSQL). Django's own test client
    holds these signals back the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _pin_path(case, world: World) -> None:
    """Real objects for every path parameter the operation has."""
    if case.path_parameters is None:
        return
    for name in list(case.path_parameters):
        if name in world.kwargs:
            case.path_parameters[name] = world.kwargs[name]


@pytest.mark.django_db
@schema.parametrize()
@schema.given(role=st.sampled_from(ROLES))
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_never_fails_with_a_server_error_and_matches_its_schema(case, role, world):
    _pin_path(case, world)
    with transaction.atomic():
        cache.clear()
        case.call_and_validate(
            headers={"Authorization": f"Token {world.tokens[role]}"},
            checks=[not_a_server_error, response_schema_conformance],
        )
        transaction.set_rollback(True)


@pytest.mark.django_db
def test_a_malformed_anchor_filter_on_comments_is_a_400_not_a_500(world, client_for):
    """Found by schemathesis: the filter's error was raised with a wrong signature (500)."""
    response = client_for(world.users["viewer"]).get(
        "/api/workspaces/acme/evalsets/quiz/items/q1/comments/?anchor=not-a-uuid"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == {
        "anchor": ["anchor must be an anchor id (a UUID), got 'not-a-uuid'"]
    }
