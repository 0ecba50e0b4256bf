"""What an operator sees: database errors answered for what they are, log lines with time,
level, logger and request id (text or JSON), errors in Sentry, readiness and metrics."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import psycopg.errors
import pytest
import sentry_sdk
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    connection,
)
from django.test import Client
from kombu import Connection
from prometheus_client.parser import text_string_to_metric_families
from sentry_sdk.transport import Transport

from evalsets import dberrors, worker
from evalsets.anchoring import services as anchoring_services
from evalsets.anchoring import tasks as anchoring_tasks
from evalsets.documents import services as documents_services
from evalsets.management.commands import rundev
from evalsets.models import AnchorResolution
from labelling import logs, views
from labelling.settings import filesystem_broker_options
from tests.conftest import HANDBOOK

ROOT = Path(__file__).resolve().parent.parent
ITEMS = "/api/workspaces/acme/evalsets/quiz/items/"
NEW_ITEM = {"id": "q2", "question": "Who approves leave?"}


# -- real errors from the real drivers -----------------------------------------------------------


def _as_django(exc_type: type[DatabaseError], cause: Exception) -> DatabaseError:
    """``cause`` wrapped as Django wraps a driver's error: the same arguments, ``from`` it."""
    try:
        raise exc_type(*cause.args) from cause
    except exc_type as wrapped:
        return wrapped


def _sqlite_lock_error(tmp_path: Path) -> sqlite3.OperationalError:
    """SQLite's own "database is locked": a second connection writing while the first holds
    the write lock, with no time to wait."""
    path = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("INSERT INTO t VALUES (1)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        other.close()
        holder.close()
    raise AssertionError("the second writer was not refused")


def _sqlite_error(sql: str) -> sqlite3.Error:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a INTEGER NOT NULL UNIQUE)")
    db.execute("INSERT INTO t VALUES (1)")
    try:
        db.execute(sql)
    except sqlite3.Error as exc:
        return exc
    raise AssertionError(f"{sql} did not fail")


@pytest.mark.parametrize(
    ("error", "transient", "unique"),
    [
        (lambda p: _as_django(OperationalError, _sqlite_lock_error(p)), True, False),
        (lambda p: _as_django(OperationalError, _sqlite_error("SELECT b FROM t")), False, False),
        (lambda p: _as_django(OperationalError, _sqlite_error("SELECT FROM")), False, False),
        (lambda p: _as_django(IntegrityError, _sqlite_error("INSERT INTO t VALUES (1)")), 0, 1),
        (lambda p: _as_django(IntegrityError, _sqlite_error("INSERT INTO t VALUES (NULL)")), 0, 0),
        (lambda p: _as_django(OperationalError, psycopg.errors.LockNotAvailable("no")), 1, 0),
        (lambda p: _as_django(OperationalError, psycopg.errors.DeadlockDetected("d")), 1, 0),
        (lambda p: _as_django(OperationalError, psycopg.errors.SerializationFailure()), 1, 0),
        (lambda p: _as_django(OperationalError, psycopg.OperationalError("refused")), 1, 0),
        (lambda p: _as_django(OperationalError, psycopg.errors.AdminShutdown("bye")), 1, 0),
        (lambda p: _as_django(ProgrammingError, psycopg.errors.UndefinedColumn("b")), 0, 0),
        (lambda p: _as_django(OperationalError, psycopg.errors.InternalError_()), 0, 0),
        (lambda p: _as_django(IntegrityError, psycopg.errors.UniqueViolation("dup")), 0, 1),
        (lambda p: _as_django(IntegrityError, psycopg.errors.NotNullViolation("n")), 0, 0),
        (lambda p: _as_django(IntegrityError, psycopg.errors.ForeignKeyViolation()), 0, 0),
        (lambda p: InterfaceError("connection already closed"), True, False),
        (lambda p: OperationalError("database is locked"), True, False),
        (lambda p: ValueError("database is locked"), False, False),
    ],
)
def test_each_database_error_is_judged_by_the_drivers_code(tmp_path, error, transient, unique):
    exc = error(tmp_path)

    assert dberrors.transient(exc) is bool(transient)
    assert dberrors.unique_race(exc) is bool(unique)


def test_a_sqlite_error_is_described_by_its_code_name():
    exc = _as_django(IntegrityError, _sqlite_error("INSERT INTO t VALUES (NULL)"))

    assert dberrors.describe(exc) == (
        "IntegrityError (SQLITE_CONSTRAINT_NOTNULL): NOT NULL constraint failed: t.a"
    )


# -- the API's answers -------------------------------------------------------------------------


def _fails_with(sql: str, params=()):
    """A stand-in for ``EvalItem.objects.create`` that runs ``sql`` on the real database."""

    def run(**kwargs):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    return run


@pytest.fixture
def post_item_while(client_for, evalset, annotator, monkeypatch):
    """POST a new item with ``create`` standing in for the insert of its row."""

    def post(create):
        monkeypatch.setattr(anchoring_services.EvalItem.objects, "create", create)
        client = client_for(annotator)
        client.raise_request_exception = False
        return client.post(ITEMS, NEW_ITEM, format="json")

    return post


def _error_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "django.request"]


@pytest.mark.django_db
def test_a_not_null_violation_answers_500_saying_it_is_unexpected_and_logs_its_traceback(
    post_item_while, caplog
):
    response = post_item_while(_fails_with("INSERT INTO evalsets_evalitem (item_id) VALUES (NULL)"))

    assert response.status_code == 500
    body = response.json()
    assert "unexpected error" in body["detail"] and "same moment" not in body["detail"]
    assert body["reference"] == response["X-Request-ID"]
    assert body["reference"] in body["detail"]
    (line,) = _error_lines(caplog)
    assert line.request_id == body["reference"]
    assert line.exc_info is not None and isinstance(line.exc_info[1], IntegrityError)
    traceback = logging.Formatter().formatException(line.exc_info)
    assert traceback.startswith("Traceback") and "item_id" in traceback  # the column named


@pytest.mark.django_db
def test_a_missing_column_answers_500_not_503(post_item_while, caplog):
    response = post_item_while(_fails_with("SELECT no_such_column FROM evalsets_evalitem"))

    assert response.status_code == 500
    assert "Retry-After" not in response
    (line,) = _error_lines(caplog)
    assert isinstance(line.exc_info[1], OperationalError | ProgrammingError)


@pytest.mark.django_db
def test_a_lock_error_from_the_driver_answers_503_and_logs_its_cause(
    post_item_while, caplog, tmp_path
):
    locked = _as_django(OperationalError, _sqlite_lock_error(tmp_path))

    def create(**kwargs):
        raise locked

    response = post_item_while(create)

    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert "busy" in response.json()["detail"]
    assert any("SQLITE_BUSY" in r.getMessage() for r in caplog.records)


@pytest.mark.django_db
def test_a_genuine_uniqueness_race_answers_409(post_item_while, annotator):
    # Another request wrote the row this one meant to write: "ann" already exists.
    response = post_item_while(lambda **kwargs: User.objects.create(username=annotator.username))

    assert response.status_code == 409
    assert "same moment" in response.json()["detail"]


@pytest.mark.django_db
def test_an_upload_that_hits_a_not_null_violation_is_not_called_a_race(
    workspace, owner, monkeypatch
):
    def save(*args, **kwargs):
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO evalsets_document (source_id) VALUES (NULL)")

    monkeypatch.setattr(documents_services.Document, "save", save)
    upload = SimpleUploadedFile("a.txt", HANDBOOK.encode(), "text/plain")

    with pytest.raises(IntegrityError):
        documents_services.document_upload(workspace=workspace, user=owner, upload=upload)


@pytest.mark.django_db
def test_a_page_that_fails_answers_djangos_500_page_and_logs_the_traceback(
    owner, monkeypatch, caplog
):
    def broken(user):
        with connection.cursor() as cursor:
            cursor.execute("SELECT no_such_column FROM evalsets_workspace")

    monkeypatch.setattr(views.workspaces_selectors, "memberships_with_counts", broken)
    client = Client(raise_request_exception=False)
    client.force_login(owner)

    response = client.get("/")

    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    (line,) = _error_lines(caplog)
    assert line.request_id == response["X-Request-ID"]
    assert line.exc_info is not None


# -- log lines ---------------------------------------------------------------------------------


def _record(**extra) -> logging.LogRecord:
    try:
        raise ValueError("the cause")
    except ValueError as exc:
        record = logging.LogRecord(
            "groundwork.test", logging.ERROR, __file__, 1, "hi %s", ("x",), None
        )
        record.exc_info = (type(exc), exc, exc.__traceback__)
    record.__dict__.update(extra)
    return record


def test_a_json_line_has_time_level_logger_message_and_traceback():
    line = json.loads(logs.JsonFormatter().format(_record(request_id="abc")))

    assert line["level"] == "ERROR" and line["logger"] == "groundwork.test"
    assert line["message"] == "hi x" and line["request_id"] == "abc"
    assert line["time"].endswith("Z") and "T" in line["time"]
    assert "ValueError: the cause" in line["exc_info"]


def test_a_text_line_has_time_level_logger_and_request_id():
    config = logs.logging_config("text", "INFO")
    formatter = logs.UtcFormatter(config["formatters"]["groundwork"]["format"])

    text = formatter.format(_record(request_id="abc")).splitlines()[0]

    assert text.endswith("Z ERROR groundwork.test [abc] hi x")
    assert text[:4].isdigit() and text[10] == "T"


def test_an_unknown_log_format_stops_the_settings():
    with pytest.raises(ValueError, match="json"):
        logs.logging_config("xml", "INFO")


LOG_LINES = """
import logging
from celery import signals
import labelling.celery
logging.getLogger("groundwork.web").warning("from the web")
signals.setup_logging.send(sender=None, loglevel="INFO", logfile=None, format="", colorize=False)
logging.getLogger("celery.worker").warning("from a worker")
"""


def test_web_and_worker_lines_are_json_when_asked(tmp_path):
    env = {
        **os.environ,
        "GROUNDWORK_LOG_FORMAT": "json",
        "GROUNDWORK_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "labelling.settings",
    }
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(){LOG_LINES}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert [(x["logger"], x["message"]) for x in lines] == [
        ("groundwork.web", "from the web"),
        ("celery.worker", "from a worker"),
    ]
    assert all({"time", "level", "request_id"} <= set(x) for x in lines)


# -- Sentry ------------------------------------------------------------------------------------


class Captured(Transport):
    def __init__(self) -> None:
        super().__init__()
        self.envelopes = []

    def capture_envelope(self, envelope) -> None:
        self.envelopes.append(envelope)


@pytest.fixture
def sentry():
    transport = Captured()
    logs.init_sentry("https://key@sentry.invalid/1", environment="test", transport=transport)
    yield transport
    sentry_sdk.get_client().close()
    sentry_sdk.init()


@pytest.mark.django_db
def test_an_unexpected_exception_in_a_view_reaches_sentry(sentry, post_item_while):
    def create(**kwargs):
        raise RuntimeError("a fault of our own")

    assert post_item_while(create).status_code == 500
    sentry_sdk.flush()

    events = [
        item.payload.json for e in sentry.envelopes for item in e.items if item.type == "event"
    ]
    (event,) = events
    (exception,) = event["exception"]["values"]
    assert exception["type"] == "RuntimeError" and exception["value"] == "a fault of our own"
    assert event["environment"] == "test"


# -- readiness ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_readiness_answers_200_with_each_check():
    response = Client().get("/readyz/")

    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert set(body["checks"]) == {"database", "broker", "storage"}
    assert all(check["ok"] for check in body["checks"].values())


@pytest.mark.django_db
def test_readiness_names_storage_that_cannot_be_written(settings, tmp_path):
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("x")
    settings.MEDIA_ROOT = not_a_folder / "media"

    response = Client().get("/readyz/")

    assert response.status_code == 503
    assert response.json()["failed"] == ["storage"]
    assert response.json()["checks"]["database"]["ok"] is True


@pytest.mark.django_db
def test_readiness_names_a_broker_it_cannot_reach(settings, caplog):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}

    response = Client().get("/readyz/")

    assert response.status_code == 503
    assert response.json()["failed"] == ["broker"]
    assert "127.0.0.1" not in response.content.decode(), "the error is logged, not shown"
    assert any("broker check failed" in r.getMessage() and r.exc_info for r in caplog.records)


PLAIN_HTTP = """
from django.test import Client
client = Client(HTTP_HOST="groundwork.example")
print(client.get("/readyz/").status_code, client.get("/metrics").status_code)
"""


def test_readiness_and_metrics_answer_over_plain_http_in_production(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))},
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "y" * 60 + "-not-a-real-secret-but-long-and-varied-1a2b3c",
        "DJANGO_ALLOWED_HOSTS": "groundwork.example",
        "GROUNDWORK_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", PLAIN_HTTP],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    # Ready (not a 301 to https), and metrics off by default (404, not a 301).
    assert result.stdout.strip().splitlines()[-1] == "200 404"


# -- metrics -----------------------------------------------------------------------------------


def _sample(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def _scrape(client: Client | None = None, **headers) -> str:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    return response.content.decode()


@pytest.mark.django_db
def test_metrics_are_not_served_unless_switched_on():
    assert Client().get("/metrics").status_code == 404


@pytest.mark.django_db
def test_metrics_with_a_token_are_served_only_to_its_bearer(settings):
    settings.GROUNDWORK_METRICS = True
    settings.GROUNDWORK_METRICS_TOKEN = "s3cret"

    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert "groundwork_http_requests_total" in _scrape(HTTP_AUTHORIZATION="Bearer s3cret")


@pytest.mark.django_db
def test_metrics_count_a_request_by_view_and_status(settings):
    settings.GROUNDWORK_METRICS = True
    labels = {"view": "healthz", "method": "GET", "status": "200"}
    before = _sample(_scrape(), "groundwork_http_requests_total", **labels)

    Client().get("/healthz/")

    text = _scrape()
    assert _sample(text, "groundwork_http_requests_total", **labels) == before + 1
    assert (
        _sample(
            text, "groundwork_http_request_duration_seconds_count", view="healthz", method="GET"
        )
        >= 1
    )


@pytest.mark.django_db
def test_metrics_count_a_task_and_its_failure(settings, monkeypatch):
    settings.GROUNDWORK_METRICS = True
    name = "evalsets.tasks.resolve_parse"
    ok = {"task": name, "outcome": "SUCCESS"}
    before = _sample(_scrape(), "groundwork_celery_tasks_total", **ok)

    anchoring_tasks.resolve_parse.delay(987654)  # no such parse: it returns at once
    with monkeypatch.context() as patched:
        patched.setattr(anchoring_tasks.ParseVersion.objects, "filter", lambda **kw: 1 / 0)
        # Run as a worker runs it: the failure is recorded, not raised into the caller.
        failed = anchoring_tasks.resolve_parse.apply(args=(987654,), throw=False)
    assert isinstance(failed.result, ZeroDivisionError)

    text = _scrape()
    assert _sample(text, "groundwork_celery_tasks_total", **ok) == before + 1
    assert _sample(text, "groundwork_celery_task_duration_seconds_count", **ok) >= 1
    assert _sample(text, "groundwork_celery_tasks_total", task=name, outcome="FAILURE") >= 1
    failures = _sample(
        text, "groundwork_celery_task_failures_total", task=name, exception="ZeroDivisionError"
    )
    assert failures >= 1


@pytest.mark.django_db
def test_metrics_read_the_queue_depths_from_the_filesystem_broker(settings, tmp_path):
    settings.GROUNDWORK_METRICS = True
    settings.CELERY_BROKER_URL = "filesystem://"  # the suite on services runs on Redis
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = filesystem_broker_options(tmp_path / "broker")
    parse_queue = worker.queue.queue_name(worker.queue.PARSE)
    with Connection(
        "filesystem://", transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS
    ) as conn:
        waiting = conn.SimpleQueue(parse_queue)
        waiting.put({"n": 1})
        waiting.put({"n": 2})

    text = _scrape()

    assert _sample(text, "groundwork_queue_depth", queue=parse_queue) == 2
    assert _sample(text, "groundwork_queue_depth", queue=worker.queue.queue_name("resolve")) == 0


@pytest.mark.django_db
def test_metrics_read_the_resolution_backlog_from_the_database(
    settings, item, annotator, reference, django_capture_on_commit_callbacks
):
    settings.GROUNDWORK_METRICS = True
    start = HANDBOOK.index("Remote work")
    with django_capture_on_commit_callbacks(execute=True):  # resolved as after a commit
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + 11
        )
    assert _sample(_scrape(), "groundwork_resolution_backlog") == 0

    AnchorResolution.objects.all().delete()  # as if no worker had got to it yet

    text = _scrape()
    assert _sample(text, "groundwork_resolution_backlog") == 1
    assert _sample(text, "groundwork_background_waiting", kind="resolutions_missing") == 1


COUNT_IN_A_CHILD = """
from labelling import metrics
metrics.REQUESTS.labels("child-view", "GET", "200").inc(3)
"""


@pytest.mark.django_db
def test_with_a_multiprocess_folder_a_scrape_adds_up_every_process(settings, tmp_path, monkeypatch):
    settings.GROUNDWORK_METRICS = True
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder)}
    for _ in range(2):  # two web processes
        child = subprocess.run(
            [sys.executable, "-c", COUNT_IN_A_CHILD], cwd=ROOT, env=env, capture_output=True
        )
        assert child.returncode == 0, child.stderr
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))

    text = _scrape()

    assert _sample(text, "groundwork_http_requests_total", view="child-view") == 6
    assert "groundwork_queue_depth" in text


def test_rundev_shares_one_emptied_metrics_folder_when_metrics_are_on(
    settings, tmp_path, monkeypatch
):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")  # restored after the test
    settings.VAR_DIR = tmp_path
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "prometheus" / "counter_123.db").write_bytes(b"an earlier run")
    settings.GROUNDWORK_METRICS = False
    assert rundev.share_metrics_folder() is None

    settings.GROUNDWORK_METRICS = True
    folder = rundev.share_metrics_folder()

    assert folder == tmp_path / "prometheus" and list(folder.iterdir()) == []
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(folder)
