"""Faults in the services around the app: the broker restarted, database connections dropped.

Real parts throughout, nothing mocked. Redis faults use a private ``redis-server`` on a port
of its own (no persistence, as the shared one runs), killed with SIGKILL and started again,
with a real ``celery worker`` and this process's Celery producer pointed at it. Database
faults terminate real PostgreSQL backends with ``pg_terminate_backend`` from a second
connection, picked out by the ``application_name`` the process under test connects with.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest
import redis
import requests
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from kombu import Connection, Queue
from rest_framework.authtoken.models import Token

from evalsets import queue
from evalsets.anchoring import services as anchoring_services
from evalsets.management.commands import rundev
from evalsets.models import AnchorResolution, Document, EvalItem, GoldAnchor, ParseVersion
from tests import services as svc
from tests.conftest import HANDBOOK

ITEMS = "/api/workspaces/acme/evalsets/quiz/items"
PENDING = "/api/workspaces/acme/pending/"
NOTHING_PENDING = {
    "parses_queued": 0,
    "parses_running": 0,
    "parses_missing_resolutions": 0,
    "resolutions_missing": 0,
    "anchors_waiting_for_their_file": 0,
    "releases_queued": 0,
    "releases_building": 0,
    "waiting": 0,
}
#: How fast work drained lately: it depends on when the test looks, so compared apart.
DRAIN_KEYS = ("resolutions_done_last_minute", "resolutions_per_second", "resolutions_eta_seconds")


def _waiting(response) -> dict:
    """The pending summary's counts, without how fast it drained lately."""
    return {k: v for k, v in response.json().items() if k not in DRAIN_KEYS}


NO_PERSISTENCE = ["--save", "", "--appendonly", "no", "--daemonize", "no"]


# -- a Redis of our own ------------------------------------------------------------------------


class PrivateRedis:
    """A ``redis-server`` this test may crash and restart; it keeps nothing across restarts."""

    def __init__(self) -> None:
        self.port = svc.free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (Debian package redis-server)")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", *NO_PERSISTENCE],
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        svc.wait_for(self._answers, timeout=20, what=f"redis-server on port {self.port}")

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.ConnectionError:
            return False

    def crash(self) -> None:
        """SIGKILL, as a crashed or rebooted host would stop it."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2)

    def queued_messages(self) -> int:
        client = self.client()
        return sum(client.llen(name) for name in queue.all_queue_names(svc.SESSION_QUEUE))


@pytest.fixture
def private_redis():
    server = PrivateRedis()
    server.start()
    with svc.producer_on(server.url):
        yield server
    if server.process is not None and server.process.poll() is None:
        server.crash()


@pytest.fixture
def redis_workers(private_redis, worker_media, settings):
    """Start real workers on the private Redis; each is stopped after the test."""
    settings.MEDIA_ROOT = worker_media
    started: list[svc.WorkerHandle] = []

    def start(**extra_env: str) -> svc.WorkerHandle:
        handle = svc.WorkerHandle(worker_media)
        handle.start(CELERY_BROKER_URL=private_redis.url, **extra_env)
        started.append(handle)
        return handle

    yield start
    for handle in started:
        handle.stop()


def _highlight(reference, passage: str) -> dict:
    start = HANDBOOK.index(passage)
    return {"parse": str(reference.public_id), "start": start, "end": start + len(passage)}


def _every_anchor_resolved_in_every_ready_parse() -> bool:
    anchors = GoldAnchor.objects.exclude(document=None)
    expected = sum(
        ParseVersion.objects.filter(document=a.document_id, status="ready").count() for a in anchors
    )
    rows = AnchorResolution.objects.exclude(status="pending")
    return expected > 0 and rows.count() == expected


# -- Redis restarted mid-run ---------------------------------------------------------------------


@pytest.mark.services
def test_a_write_while_redis_is_down_is_saved_shown_as_pending_and_resolved_once_redis_is_back(
    redis_workers, private_redis, reference, item, annotator, viewer, client_for
):
    redis_workers()
    private_redis.crash()

    response = client_for(annotator).post(
        f"{ITEMS}/q1/anchors/",
        _highlight(reference, "Remote work is limited to 30 days a year."),
        format="json",
    )

    assert response.status_code == 201, response.content
    anchor = GoldAnchor.objects.get(public_id=response.json()["id"])
    assert not AnchorResolution.objects.filter(anchor=anchor).exists()
    pending = client_for(viewer).get(PENDING)
    assert pending.status_code == 200
    assert _waiting(pending) == {
        **NOTHING_PENDING,
        "parses_missing_resolutions": 1,
        "resolutions_missing": 1,
        "waiting": 1,
    }

    # No one runs anything: the worker reconnects by itself and sweeps when it does.
    private_redis.start()
    row = svc.wait_for(
        lambda: AnchorResolution.objects.filter(anchor=anchor, parse=reference).first(),
        timeout=120,
        what="the reconnected worker to resolve the anchor saved while Redis was down",
    )
    assert (row.status, row.start) == ("exact", HANDBOOK.index("Remote"))
    assert _waiting(client_for(viewer).get(PENDING)) == NOTHING_PENDING


@pytest.mark.services
def test_work_queued_before_redis_lost_its_messages_is_queued_again_when_a_worker_starts(
    private_redis, redis_workers, document, reference, item, annotator, client_for
):
    # No worker is running yet, so every message waits in Redis.
    client = client_for(annotator)
    uploaded = client.post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("notes.txt", b"Remote work needs a manager's approval.")},
        format="multipart",
    )
    assert uploaded.status_code == 201, uploaded.content
    added = client.post(
        "/api/workspaces/acme/documents/handbook.txt/parses/",
        {"parser": "their-pipeline", "text": HANDBOOK.replace("\n", " "), "page_starts": [0]},
        format="json",
    )
    assert added.status_code == 201, added.content
    anchored = client.post(
        f"{ITEMS}/q1/anchors/", _highlight(reference, "1.5 days of leave"), format="json"
    )
    assert anchored.status_code == 201, anchored.content
    assert private_redis.queued_messages() >= 3

    private_redis.crash()
    private_redis.start()
    assert private_redis.queued_messages() == 0

    pending = client_for(annotator).get(PENDING).json()
    assert pending["parses_queued"] == 1
    assert pending["resolutions_missing"] == 2  # the new anchor in both ready parses

    redis_workers(GROUNDWORK_SWEEP_STALE_S="0")
    svc.wait_for(
        lambda: ParseVersion.objects.filter(document__source_id="notes.txt", status="ready"),
        timeout=120,
        what="the upload's parse, lost with Redis's messages, to be queued again and run",
    )
    svc.wait_for(
        lambda: _waiting(client_for(annotator).get(PENDING)) == NOTHING_PENDING,
        timeout=120,
        what="nothing to be pending",
    )
    assert _every_anchor_resolved_in_every_ready_parse()


# -- test sessions sharing one Redis ---------------------------------------------------------


@pytest.mark.services
def test_a_test_session_forgets_only_its_own_unacknowledged_messages(private_redis):
    # One message for this session's resolve queue, as the app publishes it, and one that
    # another session (or the app itself) published on the same Redis; a consumer takes
    # both and holds them unacknowledged, as a worker killed mid-task leaves them.
    assert queue.send("resolve_parse", 1)
    other = Queue("another-session.resolve")
    ours = [Queue(name) for name in queue.all_queue_names(svc.SESSION_QUEUE)]
    held = []
    with Connection(private_redis.url) as broker:
        with broker.Producer() as producer:
            producer.publish({"task": "elsewhere"}, routing_key=other.name, declare=[other])
        with broker.Consumer([*ours, other], callbacks=[lambda _body, m: held.append(m)]):
            svc.wait_for(lambda: _delivered(broker, held, 2), timeout=10, what="two deliveries")
        client = private_redis.client()
        assert client.hlen(svc.UNACKED) == 2
        assert sorted(m.delivery_info["routing_key"] for m in held) == [
            other.name,
            queue.queue_name(queue.RESOLVE, svc.SESSION_QUEUE),
        ]

        now = time.time()  # both were delivered before it
        assert svc.forget_deliveries_before(private_redis.url, now) == 1
        (left,) = client.hvals(svc.UNACKED)
        assert json.loads(left)[2] == other.name

        svc.clear_redis(private_redis.url)
        assert client.hlen(svc.UNACKED) == client.zcard(svc.UNACKED_INDEX) == 1


def _delivered(broker, held: list, n: int) -> bool:
    with contextlib.suppress(TimeoutError):
        broker.drain_events(timeout=0.2)
    return len(held) >= n


# -- PostgreSQL connections dropped --------------------------------------------------------------


def _terminate_backends(application_name: str, *, waiting_for_a_lock: bool = False) -> int:
    """Terminate the named process's PostgreSQL backends from a connection of our own."""
    sql = (
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
        "AND application_name = %s"
    )
    if waiting_for_a_lock:
        sql += " AND wait_event_type = 'Lock'"
    with _admin_connection() as admin:
        return admin.execute(sql, [application_name]).fetchone()[0]


def _admin_connection() -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(
        host=s.get("HOST") or "127.0.0.1",
        port=s.get("PORT") or 5432,
        user=s.get("USER") or "postgres",
        password=s.get("PASSWORD") or None,
        dbname=s["NAME"],
        autocommit=True,
    )


class WebServer:
    """gunicorn serving the app on the test database, as production runs it."""

    application_name = "groundwork-faults-web"

    def __init__(self, media_root) -> None:
        self.port = svc.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.options = [
            "--bind",
            f"127.0.0.1:{self.port}",
            f"--timeout={rundev.WEB_TIMEOUT_S}",  # the documented production line's limit
            "--log-level",
            "warning",
        ]
        env = {
            **os.environ,
            "DATABASE_URL": f"{svc.database_url()}?application_name={self.application_name}",
            "DATABASE_CONN_MAX_AGE": "600",
            "DJANGO_MEDIA_ROOT": str(media_root),
            "CELERY_TASK_ALWAYS_EAGER": "false",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "labelling.wsgi", "--workers", "1", *self.options],
            cwd=svc.ROOT,
            env=env,
            start_new_session=True,
        )
        svc.wait_for(self._answers, timeout=60, what="gunicorn to answer")

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            pytest.fail(f"gunicorn exited at start with code {self.process.returncode}")
        try:
            return requests.get(f"{self.base}/healthz/", timeout=5).status_code == 200
        except (requests.ConnectionError, requests.Timeout):
            # A loaded machine can take longer than one probe's timeout to answer the first
            # request; that is "not yet", like a refused connection.
            return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def web(worker_media):
    server = WebServer(worker_media)
    yield server
    server.stop()


@pytest.fixture
def api(web, annotator):
    session = requests.Session()
    session.headers["Authorization"] = f"Token {Token.objects.create(user=annotator).key}"

    def call(method: str, path: str, **kwargs) -> requests.Response:
        return session.request(method, f"{web.base}{path}", timeout=30, **kwargs)

    return call


@pytest.mark.services
def test_a_connection_dropped_between_requests_is_replaced_before_the_next_one(
    web, api, workspace, item
):
    assert api("GET", f"{ITEMS}/q1/").status_code == 200
    assert _terminate_backends(web.application_name) == 1  # the persistent connection

    response = api("GET", f"{ITEMS}/q1/")

    assert response.status_code == 200, response.text
    assert response.json()["question"] == item.question


@pytest.mark.services
def test_a_connection_dropped_mid_request_answers_503_saves_nothing_and_the_next_request_works(
    web, api, workspace, item
):
    before = api("GET", f"{ITEMS}/q1/").json()
    answers: list[requests.Response] = []

    # Hold the item's row lock so the server's update waits inside its transaction, then
    # drop the server's connection while it waits: a drop in the middle of a write.
    with _admin_connection() as holder, holder.transaction():
        holder.execute(
            "SELECT id FROM evalsets_evalitem WHERE id = %s FOR UPDATE", [item.pk]
        ).fetchone()
        writer = threading.Thread(
            target=lambda: answers.append(
                api(
                    "PATCH",
                    f"{ITEMS}/q1/",
                    json={"question": "Changed?", "row_version": before["row_version"]},
                )
            )
        )
        writer.start()
        svc.wait_for(
            lambda: _terminate_backends(web.application_name, waiting_for_a_lock=True),
            timeout=30,
            what="the server's update to wait for the row lock, and its connection to drop",
        )
        writer.join(timeout=30)

    assert answers, "the server did not answer the interrupted request"
    failed = answers[0]
    assert failed.status_code == 503, failed.text
    assert failed.json()["detail"].startswith(
        "the database was busy or its connection failed; the change may or may not have been saved"
    )
    assert failed.headers["Retry-After"] == "2"
    item.refresh_from_db()
    assert (item.question, item.row_version) == (before["question"], before["row_version"])

    retried = api(
        "PATCH", f"{ITEMS}/q1/", json={"question": "Changed?", "row_version": before["row_version"]}
    )
    assert retried.status_code == 200, retried.text
    assert EvalItem.objects.get(pk=item.pk).question == "Changed?"


@pytest.mark.services
def test_a_worker_whose_database_connection_drops_mid_resolution_still_resolves_every_anchor(
    redis_workers, workspace, annotator, document
):
    name = "groundwork-faults-worker"
    sentences = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]
    evalset = anchoring_services.evalset_create(workspace=workspace, user=annotator, slug="many")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q", question="Why?"
    )
    # Damaged quotes go through the slower fuzzy tier, so the drop lands mid-task.
    GoldAnchor.objects.bulk_create(
        GoldAnchor(
            item=item,
            source_id="handbook.txt",
            document=document,
            quote=sentences[n].replace("limit", "lirnit"),
        )
        for n in range(0, 2000, 2)
    )
    redis_workers(DATABASE_URL=f"{svc.database_url()}?application_name={name}")
    total = svc.start_resolving_a_new_parse(document, " ".join(sentences))
    assert _terminate_backends(name) >= 1

    svc.check_every_anchor_resolved_once(total, what="the worker to retry and resolve every anchor")


def test_the_pending_summary_counts_only_the_callers_workspace(
    outsider, workspace, reference, item, annotator, client_for
):
    other = anchoring_services.evalset_create(
        workspace=outsider.memberships.get().workspace, user=outsider, slug="theirs"
    )
    theirs = anchoring_services.item_create(
        evalset=other, user=outsider, item_id="x", question="Theirs?"
    )
    GoldAnchor.objects.create(item=theirs, source_id="missing.pdf", quote="not uploaded yet")

    assert client_for(annotator).get(PENDING).json()["anchors_waiting_for_their_file"] == 0
    assert (
        client_for(outsider)
        .get("/api/workspaces/elsewhere/pending/")
        .json()["anchors_waiting_for_their_file"]
        == 1
    )
    assert client_for(outsider).get(PENDING).status_code == 404


@pytest.mark.services
def test_a_burst_whose_worker_loses_its_database_mid_task_is_finished_by_the_retry_at_once(
    redis_workers, workspace, annotator, document
):
    """The coalesced task holds the document's resolving lease; the dropped connection ends
    it, and the attempt to let the lease go on that connection failed too, so the retry and
    every later task left the work until the lease expired. Leases here last an hour: only a
    task that lets go (or a retry that takes back its own lease) finishes in time."""
    name = "groundwork-faults-resolver"
    sentences = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]
    text = " ".join(sentences)
    ParseVersion.objects.create(
        document=document, parser="big", text=text, text_length=len(text), status="ready"
    )
    evalset = anchoring_services.evalset_create(workspace=workspace, user=annotator, slug="many")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q", question="Why?"
    )
    GoldAnchor.objects.bulk_create(  # damaged quotes: the slower fuzzy tier, a longer task
        GoldAnchor(
            item=item,
            source_id="handbook.txt",
            document=document,
            quote=sentences[n].replace("limit", "lirnit"),
        )
        for n in range(0, 2000, 2)
    )
    redis_workers(
        DATABASE_URL=f"{svc.database_url()}?application_name={name}",
        GROUNDWORK_LEASE_S="3600",
        GROUNDWORK_SWEEP_STALE_S="7200",
    )
    # one anchor through the service queues the burst's task
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote=sentences[1]
    )
    total = GoldAnchor.objects.count()
    rows = AnchorResolution.objects.filter(parse__parser="big")
    svc.wait_for(lambda: 0 < rows.count() < total, what="the coalesced task to be part-way")
    assert _terminate_backends(name) >= 1

    svc.check_every_anchor_resolved_once(total, what="the retry to resolve every anchor")
    svc.wait_for(
        lambda: Document.objects.filter(pk=document.pk, resolving_by="").exists(),
        what="the lease to be let go",
    )
