"""A real Celery worker process for service-backed tests.

The worker is a separate ``celery worker`` process reading the Redis broker and writing
to the same PostgreSQL test database the test uses, exactly as in production; nothing is
mocked. Tests that use it are marked ``services`` and run with ``transactional_db`` so the
worker sees committed rows.

Each test session sends its tasks to a queue of its own (``GROUNDWORK_TASK_QUEUE``) and
clears the broker's unacknowledged messages when it starts and ends, and a test that kills
a worker drops the messages that worker held: otherwise Redis hands them back an hour
later (its visibility timeout) to whichever session runs then, whose database reuses the
ids they name.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from kombu import pools as kombu_pools

from evalsets import queue
from labelling.celery import app as celery_app
from labelling.settings import filesystem_broker_options

ROOT = Path(__file__).resolve().parent.parent

#: This session's queues' prefix (``evalsets.queue``): no worker of another session, and no
#: message another session left behind, can reach them.
SESSION_QUEUE = f"groundwork-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
celery_app.conf.task_default_queue = SESSION_QUEUE
#: kombu's Redis transport: the unacknowledged messages and when each was delivered
UNACKED, UNACKED_INDEX = "unacked", "unacked_index"


def procfile() -> dict[str, str]:
    """The Procfile's command line of each process kind."""
    lines = (ROOT / "Procfile").read_text(encoding="utf-8").splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def services_configured() -> str | None:
    """None when PostgreSQL and Redis are configured, else why not."""
    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        return "DATABASE_URL does not point at PostgreSQL"
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        return "CELERY_BROKER_URL does not point at Redis"
    return None


def database_url() -> str:
    s = connection.settings_dict
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def start_worker(
    media_root: Path,
    *,
    name: str = "test",
    concurrency: int = 1,
    queues: list[str] | None = None,
    **extra_env: str,
) -> subprocess.Popen:
    """Start a worker in a session of its own, so a test can kill its whole process group.
    It reads every queue of this session unless ``queues`` names some (``-Q``)."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_MEDIA_ROOT": str(media_root),
        # the worker's own page cache, beside its media (never the checkout's var/, which
        # would outlive the session and its budgets)
        "GROUNDWORK_PAGE_CACHE_DIR": f"{media_root}-page-cache",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "GROUNDWORK_TASK_QUEUE": SESSION_QUEUE,
        **extra_env,
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "labelling",
            "worker",
            "--loglevel=WARNING",
            "--pool=prefork",
            f"--concurrency={concurrency}",
            "--without-gossip",
            "--without-mingle",
            f"--hostname={name}-{os.getpid()}@%h",
            *([f"--queues={','.join(queues)}"] if queues else []),
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Celery worker exited at start with code {process.returncode}")
        replies = celery_app.control.ping(timeout=0.5) or []
        if any(f"{name}-{os.getpid()}@" in key for reply in replies for key in reply):
            return process
    process.kill()
    raise RuntimeError("the Celery worker did not answer a ping within 60 s")


def clear_redis(url: str, prefix: str = SESSION_QUEUE) -> None:
    """Empty this session's queues (or those named after ``prefix``) and forget their
    unacknowledged messages on ``url``.

    Another test session, or the app itself, may share this Redis: its queues and its
    unacknowledged messages (which a worker that dies leaves to be delivered again) stay."""
    client = redis.Redis.from_url(url)
    names = queue.all_queue_names(prefix)
    bindings = [f"_kombu.binding{kind}.{name}" for name in names for kind in ("", "_permanent")]
    client.delete(*names, *bindings)
    forget_deliveries_before(url, float("inf"), prefix)


@contextmanager
def own_queues():
    """Send this process's tasks to queues of their own (yields their prefix, the
    ``GROUNDWORK_TASK_QUEUE`` of the workers that are to read them), so the session's
    shared worker never takes them; emptied afterwards."""
    prefix = f"{SESSION_QUEUE}-{uuid.uuid4().hex[:6]}"
    previous = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = prefix
    try:
        yield prefix
    finally:
        celery_app.conf.task_default_queue = previous
        clear_redis(settings.CELERY_BROKER_URL, prefix)


def forget_deliveries_before(url: str, moment: float, prefix: str = SESSION_QUEUE) -> int:
    """Drop this session's (or ``prefix``'s) unacknowledged messages delivered before
    ``moment`` (``time.time()``): the ones a worker killed then was holding. How many."""
    client = redis.Redis.from_url(url)
    ours = set(queue.all_queue_names(prefix))
    delivered = client.zrangebyscore(UNACKED_INDEX, "-inf", moment)
    held = client.hmget(UNACKED, delivered) if delivered else []
    tags = [tag for tag, raw in zip(delivered, held, strict=True) if _queue_of(raw) in ours]
    if tags:
        client.zrem(UNACKED_INDEX, *tags)
        client.hdel(UNACKED, *tags)
    return len(tags)


def _queue_of(raw: bytes | None) -> str | None:
    """The queue an unacknowledged message goes back to: kombu keeps ``[message, exchange,
    routing key]`` and restores it to the routing key's queue."""
    if raw is None:  # acknowledged meanwhile
        return None
    _message, _exchange, routing_key = json.loads(raw)
    return routing_key


def reset_producer() -> None:
    """Drop this process's broker connections so the next publish uses the current settings.

    kombu keeps connection and producer pools in process-wide registries keyed by broker;
    closing only the app's pool would leave a closed pool in the registry, which every later
    publish in this test session would be handed ("Acquire on closed pool"). Reset them all.
    """
    kombu_pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@contextmanager
def producer_on(url: str, transport_options: dict | None = None):
    """Point this process's Celery app at the broker ``url``.

    Celery prefers the ``CELERY_BROKER_URL`` environment variable to ``broker_url``, but
    ``broker_read_url``/``broker_write_url`` (which every connection is made from) to both.
    """
    conf = celery_app.conf
    keys = ("broker_read_url", "broker_write_url", "broker_transport_options")
    previous = {key: conf.get(key) for key in keys}
    reset_producer()
    conf.update(broker_read_url=url, broker_write_url=url)
    if transport_options is not None:
        conf.update(broker_transport_options=transport_options)
    try:
        yield
    finally:
        reset_producer()
        conf.update(previous)


def stop_worker(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for(predicate, *, timeout: float = 60, what: str = "the condition"):
    """Poll ``predicate`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_for_parses(source_id: str, count: int, *, timeout: float = 120) -> None:
    """Wait until ``count`` parses of ``source_id`` have finished, then check each is ready
    (a failed one fails the test with its reason, not with a timeout on a page)."""
    from evalsets.models import ParseStatus, ParseVersion

    parses = ParseVersion.objects.filter(document__source_id=source_id)
    deadline = time.monotonic() + timeout
    while parses.exclude(status__in=[ParseStatus.QUEUED, ParseStatus.PARSING]).count() < count:
        if time.monotonic() > deadline:
            seen = list(parses.values("pk", "parser", "status", "progress_done", "claimed_by"))
            pytest.fail(
                f"timed out after {timeout:.0f} s waiting for {count} parses of {source_id} "
                f"to finish; they are {seen}"
            )
        time.sleep(0.2)
    assert [(p.parser, p.status, p.error) for p in parses if p.status != "ready"] == []


def start_resolving_a_new_parse(document, text: str) -> int:
    """Add the parse "big" of ``text`` to ``document`` and wait until the workers have placed
    some but not all of its anchors; returns how many it must place in all."""
    from evalsets.documents import services as documents_services
    from evalsets.models import AnchorResolution, GoldAnchor

    total = GoldAnchor.objects.count()
    documents_services.parse_version_add(document=document, parser="big", text=text)
    wait_for(
        lambda: 0 < AnchorResolution.objects.filter(parse__parser="big").count() < total,
        what="resolution of the new parse to be under way",
    )
    return total


def check_every_anchor_resolved_once(total: int, *, what: str) -> None:
    """Wait until the parse "big" has a row for each of ``total`` anchors, then check it has
    exactly one each and none left pending: nothing duplicated, nothing lost."""
    from evalsets.models import AnchorResolution

    rows = AnchorResolution.objects.filter(parse__parser="big")
    wait_for(lambda: rows.count() == total, timeout=120, what=what)
    assert rows.values("anchor").distinct().count() == total
    assert not rows.filter(status="pending").exists()


@pytest.fixture(scope="session")
def worker_media(tmp_path_factory):
    return tmp_path_factory.mktemp("worker-media")


class WorkerHandle:
    """One real worker process that a test may kill and start again."""

    def __init__(self, media_root: Path):
        self.media_root = media_root
        self.process: subprocess.Popen | None = None
        self.broker_url = settings.CELERY_BROKER_URL

    def start(self, **extra_env: str) -> None:
        self.broker_url = extra_env.get("CELERY_BROKER_URL", settings.CELERY_BROKER_URL)
        self.process = start_worker(self.media_root, **extra_env)

    def ensure_running(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.start()

    def kill(self) -> None:
        """SIGKILL the worker and its pool children at once, as a crashed host would, then
        drop the messages it held: the tests check that the sweep recovers its work."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        if self.broker_url.startswith("redis://"):
            forget_deliveries_before(self.broker_url, time.time())

    def stop(self) -> None:
        if self.process is not None:
            stop_worker(self.process)


@pytest.fixture
def filesystem_broker(tmp_path, worker_media, settings):
    """The embedded default's filesystem broker in a folder of this test: this process
    publishes to it; yields a worker handle (not started) and the environment a worker
    needs to read it (``handle.start(**env)``)."""
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        pytest.skip("needs PostgreSQL, which a worker process can share with this test")
    var = tmp_path / "var"
    options = filesystem_broker_options(var / "broker")
    settings.MEDIA_ROOT = worker_media
    handle = WorkerHandle(worker_media)
    env = {"CELERY_BROKER_URL": "filesystem://", "GROUNDWORK_VAR_DIR": str(var)}
    with producer_on("filesystem://", options):
        yield handle, env
        handle.stop()


def waiting_messages(queue_name: str, env: dict | None = None) -> int:
    """How many messages wait in ``queue_name`` on Redis (``settings.CELERY_BROKER_URL``),
    or on the filesystem broker whose worker ``env`` is (``filesystem_broker``)."""
    if env is not None:
        folder = Path(env["GROUNDWORK_VAR_DIR"]) / "broker" / "queue"
        return sum(1 for f in folder.iterdir() if f.name.partition(".")[2] == f"{queue_name}.msg")
    return redis.Redis.from_url(settings.CELERY_BROKER_URL).llen(queue_name)


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, worker_media):
    """A real ``celery worker`` process on Redis and the PostgreSQL test database."""
    reason = services_configured()
    if reason:
        pytest.skip(f"needs PostgreSQL, Redis and a worker: {reason}")
    clear_redis(settings.CELERY_BROKER_URL)
    handle = WorkerHandle(worker_media)
    handle.start()
    yield handle
    handle.stop()
    clear_redis(settings.CELERY_BROKER_URL)


@pytest.fixture
def worker(celery_worker, worker_media, settings):
    """Use in a ``services`` test: uploads land where the worker process reads them."""
    celery_worker.ensure_running()
    settings.MEDIA_ROOT = worker_media
    return celery_worker


@pytest.fixture
def background(request, settings, worker_media):
    """For browser tests: a real worker where services are configured, else eager tasks.

    In CI services are always configured, so browser tests there run against a real worker.
    """
    if services_configured() is None:
        request.getfixturevalue("celery_worker").ensure_running()
        settings.MEDIA_ROOT = worker_media
        yield "worker"
        return
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield "eager"
    celery_app.conf.task_always_eager = previous


def race(*contenders) -> list:
    """Run each callable in its own thread at the same moment, each on its own database
    connection; return each one's result, or the exception it raised (a loser's refusal is
    what a race test looks at)."""
    barrier = threading.Barrier(len(contenders))
    results: list = [None] * len(contenders)

    def run(index, fn):
        try:
            barrier.wait(timeout=10)
            results[index] = fn()
        except Exception as exc:
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, fn)) for i, fn in enumerate(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


def free_port() -> int:
    """A TCP port on the loopback nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_env(tmp_path) -> dict[str, str]:
    """The environment of ``make run``'s embedded default in a folder of its own: a SQLite
    file, the file-system broker and media under ``tmp_path``, tasks sent to real workers."""
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "GROUNDWORK_VAR_DIR": str(tmp_path),
        "DJANGO_MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_BROKER_URL": "filesystem://",
        "CELERY_TASK_ALWAYS_EAGER": "false",
    }
