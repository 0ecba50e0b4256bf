"""Log lines an operator can search, and errors that reach Sentry.

Every line carries its time (UTC), level and logger, and the id of the request it was
written for (``-`` outside one, in a worker say): an unexpected error's answer gives that
id as its reference, so the person who saw the error and the operator reading the log
are talking about the same line. ``GROUNDWORK_LOG_FORMAT=json`` writes one JSON object a
line instead, for a log collector; a traceback is then a field of its line, not lines of
its own. The web processes and the Celery workers log the same way: Django configures
logging through ``configure`` in both, and the workers' Celery is told not to configure its
own (``labelling.celery``).

Sentry is initialised only when ``SENTRY_DSN`` is set (``init_sentry``, from settings),
with the Django and Celery integrations: an exception nothing caught in a view or a task
is sent with its request or task, without personal data (sentry-sdk's default).
"""

from __future__ import annotations

import json
import logging
import logging.config
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime

import sentry_sdk
from django.http import HttpRequest, HttpResponse
from sentry_sdk.integrations.celery import CeleryIntegration
from sentry_sdk.integrations.django import DjangoIntegration

#: The id of the request being answered in this thread, for every line logged meanwhile.
current_request_id: ContextVar[str] = ContextVar("current_request_id", default="-")

#: The response header that gives the request's id back to the client.
REQUEST_ID_HEADER = "X-Request-ID"

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
#: ISO 8601 in UTC, to the millisecond, in both formats.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
LOG_FORMATS = ("text", "json")


def new_request_id() -> str:
    return uuid.uuid4().hex[:16]


def request_id_of(request: HttpRequest | None) -> str:
    """``request``'s id (given by ``RequestIdMiddleware``), made now if it has none yet."""
    if request is None:
        return new_request_id()
    request_id = getattr(request, "request_id", None)
    if not request_id:
        request_id = new_request_id()
        request.request_id = request_id
    return request_id


class RequestIdMiddleware:
    """Give each request an id, on every line logged while it is answered and in its
    response's ``X-Request-ID`` header. First in the chain, so a line any other
    middleware logs carries it too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_of(request)
        token = current_request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response[REQUEST_ID_HEADER] = request_id
        return response


def _record_factory(base: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def make(*args, **kwargs) -> logging.LogRecord:
        record = base(*args, **kwargs)
        record.request_id = current_request_id.get()
        return record

    make.groundwork = True  # type: ignore[attr-defined]
    return make


class RequestIdFilter(logging.Filter):
    """Name the request on the line: Django's own error line is written with the request
    in ``extra`` after the request's id left the context (the error page was made first),
    so the request itself is asked before the context."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        request_id = getattr(request, "request_id", None)
        if request_id:
            record.request_id = request_id
        elif not getattr(record, "request_id", None):
            record.request_id = current_request_id.get()
        return True


class UtcFormatter(logging.Formatter):
    converter = staticmethod(lambda seconds: datetime.fromtimestamp(seconds, UTC).timetuple())
    default_time_format = TIME_FORMAT
    default_msec_format = "%s.%03dZ"


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, request_id, and the traceback
    (``exc_info``) or stack (``stack_info``) when the record has one."""

    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, UTC)
        line = {
            "time": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        status_code = getattr(record, "status_code", None)
        if status_code is not None:
            line["status_code"] = status_code
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def logging_config(log_format: str, level: str) -> dict:
    """The ``LOGGING`` setting: one console handler in ``log_format`` (text or json)."""
    if log_format not in LOG_FORMATS:
        choices = ", ".join(LOG_FORMATS)
        raise ValueError(f"the log format must be one of {choices}, not {log_format!r}")
    formatter = {"()": JsonFormatter} if log_format == "json" else {"()": UtcFormatter}
    if log_format == "text":
        formatter["format"] = TEXT_FORMAT
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"groundwork": formatter},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "groundwork",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Django's own console handler (DEBUG only) would print each of its lines a
            # second time, in another format: its lines reach ours through the root.
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            "django.db.backends": {"level": "WARNING"},
            # axes logs each log-in at INFO; its warnings (failures, lock-outs) are the ones
            # to keep.
            "axes": {"level": "WARNING"},
        },
    }


def configure(config: dict) -> None:
    """Django's ``LOGGING_CONFIG``: apply ``config`` and give every record the request id
    of the moment (so a test's caplog sees it too, not only our handler)."""
    logging.config.dictConfig(config)
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "groundwork", False):
        logging.setLogRecordFactory(_record_factory(factory))


def init_sentry(
    dsn: str,
    *,
    environment: str,
    traces_sample_rate: float = 0.0,
    transport: Callable | None = None,
) -> None:
    """Send unexpected errors (in views and tasks) to Sentry at ``dsn``; ``transport`` is for
    tests, which capture the envelopes instead of sending them."""
    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        # The logging integration is on by default: an ERROR line becomes an event (a
        # failure a task caught and logged too), lower ones breadcrumbs.
        integrations=[DjangoIntegration(), CeleryIntegration()],
        traces_sample_rate=traces_sample_rate,
        transport=transport,
    )
