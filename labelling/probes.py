"""Readiness and metrics for the machines that watch the app: a load balancer, an
orchestrator, Prometheus.

``/healthz/`` (``labelling.views``) says the process answers. ``/readyz/`` says whether
it can do its work: the database answers, the broker takes a connection (Redis) or its
folder takes a file (the embedded filesystem broker), and file storage can write, read
and delete a small object. It answers 200 with each check's result, or 503 naming what
failed; the error itself is logged, not shown (it may name hosts), and neither answer
needs a log-in or says anything about anyone's data.

``/metrics`` is Prometheus's text format, served only when ``GROUNDWORK_METRICS`` is on,
and then only to a bearer of ``GROUNDWORK_METRICS_TOKEN`` when that is set (404 and 401
otherwise). Besides the counters of ``labelling.metrics`` it reads, at each scrape, what
is waiting: each queue's depth from the broker and the background backlog from the
database (``evalsets.sweep.pending_summary``), so every process answers the same.
"""

from __future__ import annotations

import hmac
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from kombu import Connection
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from evalsets import queue, sweep

log = logging.getLogger(__name__)

#: Seconds a check waits for the broker before calling it down.
BROKER_TIMEOUT_S = 3.0
#: Where the storage check writes its object (removed at once).
STORAGE_PROBE_FOLDER = "readyz"


def broker_connection() -> Connection:
    """A fresh connection to the configured broker (never Celery's pool: a probe must see
    the broker as it is now, not a connection that was fine a minute ago)."""
    return Connection(
        settings.CELERY_BROKER_URL,
        transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        connect_timeout=BROKER_TIMEOUT_S,
    )


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def check_broker() -> None:
    """The filesystem broker's queue folder takes a file (written beside the messages under
    a name no queue reads, then removed); any other broker takes a connection and answers
    for the default queue's depth."""
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"])
        probe = folder / f".readyz-{uuid.uuid4().hex}.part"
        probe.write_bytes(b"ok")
        probe.unlink()
        return
    with broker_connection() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_S)
        conn.default_channel.queue_declare(queue=queue.all_queue_names()[0], passive=False)


def check_storage() -> None:
    name = default_storage.save(
        f"{STORAGE_PROBE_FOLDER}/{uuid.uuid4().hex}.txt", ContentFile(b"ready")
    )
    try:
        with default_storage.open(name) as stored:
            if stored.read() != b"ready":
                raise OSError(f"storage gave back other bytes for {name}")
    finally:
        default_storage.delete(name)


def queue_depths() -> dict[str, int]:
    """Messages waiting in each queue Celery sends to: the files named for it in the
    filesystem broker's folder, or what the broker says (for Redis, the lengths of the
    queue's lists, one a priority)."""
    names = queue.all_queue_names()
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
        files = [entry.name for entry in os.scandir(folder)]
        return {name: sum(1 for f in files if f.endswith(f".{name}.msg")) for name in names}
    with broker_connection() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_S)
        channel = conn.default_channel
        return {
            name: channel.queue_declare(queue=name, passive=False).message_count for name in names
        }


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "broker": check_broker,
    "storage": check_storage,
}


def run_checks() -> dict[str, dict]:
    """Each check's result: ``{"ok": True, "ms": ...}`` or ``{"ok": False, "error": class}``."""
    results = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            check()
        except Exception as exc:
            log.warning("readiness: the %s check failed", name, exc_info=exc)
            results[name] = {"ok": False, "error": type(exc).__name__}
            continue
        results[name] = {"ok": True, "ms": round((time.perf_counter() - started) * 1000, 1)}
    return results


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results = run_checks()
    failed = [name for name, result in results.items() if not result["ok"]]
    body = {"ok": not failed, "checks": results}
    if failed:
        body["failed"] = failed
    return JsonResponse(body, status=503 if failed else 200)


class WaitingCollector:
    """Gauges read at scrape time: each queue's depth and the background backlog."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield self._queue_depths()
        yield from self._backlog()

    def _queue_depths(self) -> GaugeMetricFamily:
        depth = GaugeMetricFamily(
            "groundwork_queue_depth",
            "Messages waiting in each Celery queue (Redis list lengths, or the filesystem "
            "broker's files); absent when the broker did not answer",
            labels=["queue"],
        )
        try:
            for name, waiting in queue_depths().items():
                depth.add_metric([name], waiting)
        except Exception as exc:
            log.warning("metrics: could not read the queues' depths", exc_info=exc)
        return depth

    def _backlog(self) -> Iterator[GaugeMetricFamily]:
        try:
            summary = sweep.pending_summary()
        except DatabaseError as exc:
            # The counters are still worth the scrape; the backlog is absent, not zero.
            log.warning("metrics: could not read the background backlog", exc_info=exc)
            return
        backlog = GaugeMetricFamily(
            "groundwork_resolution_backlog",
            "Anchor x parse resolutions not yet written (every workspace)",
        )
        backlog.add_metric([], summary["resolutions_missing"])
        yield backlog
        waiting = GaugeMetricFamily(
            "groundwork_background_waiting",
            "Background work waiting, by kind (evalsets.sweep.pending_summary)",
            labels=["kind"],
        )
        for kind in (*sweep.WAITING_KEYS, "anchors_waiting_for_their_file"):
            waiting.add_metric([kind], summary[kind])
        yield waiting


class _ThisProcess:
    """The default registry's metrics (this process's counters, and its own CPU and
    memory) inside a registry made for one scrape."""

    def collect(self):
        return REGISTRY.collect()


def scrape_registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(WaitingCollector())
    return registry


def _bearer_ok(request: HttpRequest, token: str) -> bool:
    given = request.headers.get("Authorization", "")
    scheme, _, value = given.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.GROUNDWORK_METRICS:
        return JsonResponse({"detail": "metrics are not served here", "errors": {}}, status=404)
    token = settings.GROUNDWORK_METRICS_TOKEN
    if token and not _bearer_ok(request, token):
        response = JsonResponse(
            {"detail": "metrics need the bearer token GROUNDWORK_METRICS_TOKEN", "errors": {}},
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
