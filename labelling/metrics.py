"""Prometheus counters for requests and Celery tasks, counted in the process that did the work.

Requests are counted by view name (the URL pattern's, never the path: ids in paths would
make a series per object), method and status, with their latency; tasks by name and
outcome (the state Celery gives ``task_postrun``: SUCCESS, FAILURE, RETRY...), with their
duration, and failures by exception class too (``task_failure``).

gunicorn runs several web processes and a Celery worker several children: each counts its
own. With ``PROMETHEUS_MULTIPROC_DIR`` set (before the process starts: prometheus-client
reads it when imported), every process writes its counts into files there and a scrape
adds them up (``labelling.probes``); without it, a scrape sees the counts of the process
that answers it, which is right only for a single process. Gauges of the moment (queue
depths, the resolution backlog) are not kept here at all: they are read when scraped.

This module imports nothing of Django's models, so the Celery app can connect its signals
(``connect_task_signals``) before Django is set up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from celery import signals
from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Histogram, disable_created_metrics

# A "_created" timestamp beside every series doubles what is scraped for nothing we read.
disable_created_metrics()

#: From a quick API read to a long import; past the last, "+Inf".
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
#: From a task that finds its work done to a long parse (the task time limit is 900 s).
TASK_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 900)

REQUESTS = Counter(
    "groundwork_http_requests",
    "HTTP requests answered, by view, method and status",
    ["view", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "groundwork_http_request_duration_seconds",
    "Time to answer an HTTP request, by view and method",
    ["view", "method"],
    buckets=REQUEST_BUCKETS,
)
TASKS = Counter(
    "groundwork_celery_tasks",
    "Celery tasks run, by task and outcome (Celery's state after the run)",
    ["task", "outcome"],
)
TASK_SECONDS = Histogram(
    "groundwork_celery_task_duration_seconds",
    "Time a Celery task ran, by task and outcome",
    ["task", "outcome"],
    buckets=TASK_BUCKETS,
)
TASK_FAILURES = Counter(
    "groundwork_celery_task_failures",
    "Celery tasks that raised, by task and exception class",
    ["task", "exception"],
)

#: The label of a request no URL pattern matched (a 404, or refused before routing).
UNROUTED = "<unrouted>"


def view_label(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNROUTED
    return match.view_name or match._func_path


class RequestMetricsMiddleware:
    """Count each request and time it, outside every other middleware but the request id's,
    so a request refused early (a bad host, a locked-out log-in) is counted too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        view, method = view_label(request), request.method or ""
        REQUESTS.labels(view, method, str(response.status_code)).inc()
        REQUEST_SECONDS.labels(view, method).observe(elapsed)
        return response


#: When each running task started, by task id: a worker child runs one task at a time, a
#: threaded or eager run may run several.
_started: dict[str, float] = {}
_started_lock = threading.Lock()


def _task_name(task, sender=None) -> str:
    return getattr(task, "name", None) or getattr(sender, "name", None) or "unknown"


def task_started(task_id: str | None = None, **_) -> None:
    if task_id is None:
        return
    with _started_lock:
        _started[task_id] = time.perf_counter()


def task_finished(task_id: str | None = None, task=None, state: str | None = None, **_) -> None:
    with _started_lock:
        started = _started.pop(task_id, None) if task_id is not None else None
    name, outcome = _task_name(task), state or "UNKNOWN"
    TASKS.labels(name, outcome).inc()
    if started is not None:
        TASK_SECONDS.labels(name, outcome).observe(time.perf_counter() - started)


def task_failed(sender=None, exception: BaseException | None = None, **_) -> None:
    TASK_FAILURES.labels(_task_name(sender), type(exception).__name__).inc()


def connect_task_signals() -> None:
    """Count every task this process runs (a worker's, or an eager run's). Weak references
    are not needed: these are module functions, alive as long as the process."""
    signals.task_prerun.connect(task_started, weak=False, dispatch_uid="groundwork-metrics")
    signals.task_postrun.connect(task_finished, weak=False, dispatch_uid="groundwork-metrics")
    signals.task_failure.connect(task_failed, weak=False, dispatch_uid="groundwork-metrics")
