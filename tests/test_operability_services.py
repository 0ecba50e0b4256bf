"""Readiness, metrics and a real lock error on PostgreSQL + Redis (``make test-services``)."""

from __future__ import annotations

import uuid

import psycopg
import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import Client
from kombu import Connection
from prometheus_client.parser import text_string_to_metric_families

from evalsets import queue
from labelling.celery import app as celery_app
from tests import services as svc

pytestmark = pytest.mark.services

ITEMS = "/api/workspaces/acme/evalsets/quiz/items/"


@pytest.fixture(autouse=True)
def _on_services():
    reason = svc.services_configured()
    if reason:
        pytest.skip(f"needs PostgreSQL and Redis: {reason}")


def _samples(text: str, name: str) -> dict[tuple, float]:
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


def test_readiness_checks_postgresql_redis_and_storage():
    response = Client().get("/readyz/")

    assert response.status_code == 200, response.content
    checks = response.json()["checks"]
    assert {name: check["ok"] for name, check in checks.items()} == {
        "database": True,
        "broker": True,
        "storage": True,
    }


@pytest.fixture
def private_queues():
    """Queues of this test's own, that no worker reads: their depth is what was put there."""
    prefix = f"groundwork-metrics-{uuid.uuid4().hex[:8]}"
    session_prefix = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = prefix
    yield prefix
    celery_app.conf.task_default_queue = session_prefix
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for name in queue.all_queue_names(prefix):
        client.delete(name)


def test_metrics_read_redis_queue_lengths_and_the_backlog_from_postgresql(settings, private_queues):
    settings.GROUNDWORK_METRICS = True
    parse_queue = queue.queue_name(queue.PARSE)
    with Connection(settings.CELERY_BROKER_URL) as conn:
        waiting = conn.SimpleQueue(parse_queue)
        for n in range(3):
            waiting.put({"n": n})
    Client().get("/healthz/")

    response = Client().get("/metrics")

    assert response.status_code == 200
    text = response.content.decode()
    depths = _samples(text, "groundwork_queue_depth")
    assert depths[(("queue", parse_queue),)] == 3
    assert depths[(("queue", private_queues),)] == 0
    assert _samples(text, "groundwork_resolution_backlog") == {(): 0}
    requests = _samples(text, "groundwork_http_requests_total")
    assert requests[(("method", "GET"), ("status", "200"), ("view", "healthz"))] >= 1


def test_a_postgresql_lock_not_granted_in_time_answers_503(evalset, annotator, client_for):
    holder = psycopg.connect(svc.database_url().replace("postgres://", "postgresql://"))
    try:
        holder.execute("LOCK TABLE evalsets_evalitem IN ACCESS EXCLUSIVE MODE")
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '300ms'")
        try:
            response = client_for(annotator).post(
                ITEMS, {"id": "q2", "question": "Q?"}, format="json"
            )
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = 0")
    finally:
        holder.rollback()
        holder.close()

    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "2"
