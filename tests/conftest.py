"""Shared fixtures: a workspace with one member of each role, an outsider, and clients.

Tasks run in-process (eager) by default. Tests marked ``services`` run against real
PostgreSQL and Redis with a real Celery worker process; where those are not configured they
are skipped, except in CI (``GROUNDWORK_REQUIRE_SERVICES=1``), where a skip is a failure.
"""

from __future__ import annotations

import copy
import os
import shutil
import time
from contextlib import ExitStack, contextmanager

import pytest
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.db import connection, transaction
from django.test import TestCase, override_settings
from rest_framework.test import APIClient

from evalsets import queue
from evalsets.anchoring import services as anchoring_services
from evalsets.models import Document, ParseStatus
from evalsets.pure.parsers import text as text_parser
from evalsets.review import workflow
from labelling.celery import app as celery_app
from tests.world import (
    HANDBOOK,
    PASSWORD,
    build_world_from_scratch,
    create_acme,
    create_handbook,
    create_outsider,
    create_q1,
    create_quiz,
)

pytest_plugins = ["tests.browser", "tests.services", "tests.s3"]

REQUIRE_SERVICES = os.environ.get("GROUNDWORK_REQUIRE_SERVICES") == "1"

# Hashing passwords properly costs ~0.4 s a user; tests need users, not security.
FAST_PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_addoption(parser):
    parser.addoption(
        "--database-backed-only",
        action="store_true",
        help="run only tests that touch the database or real services (`make test-services`: "
        "`make test` has already run the rest, which do the same on any database)",
    )


def touches_database(item) -> bool:
    return (
        "services" in item.keywords
        or item.get_closest_marker("django_db") is not None
        or "django_db_setup" in item.fixturenames
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "services" in item.keywords and "transactional_db" not in item.fixturenames:
            item.fixturenames.append("transactional_db")
    if config.getoption("--database-backed-only"):
        pure = [item for item in items if not touches_database(item)]
        if pure:
            config.hook.pytest_deselected(items=pure)
            items[:] = [item for item in items if touches_database(item)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI a skipped service or browser test is a failure: it proved nothing."""
    outcome = yield
    report = outcome.get_result()
    if (
        REQUIRE_SERVICES
        and report.skipped
        and ("services" in item.keywords or "e2e" in item.keywords)
    ):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run it: {report.longrepr}"


@pytest.fixture(autouse=True)
def _no_rate_counted_yet():
    """API rate limits count in the cache, per user id, and ids repeat across tests: each
    test starts with nothing counted."""
    cache.clear()


@pytest.fixture(autouse=True)
def _eager_tasks(request, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.GROUNDWORK_PAGE_CACHE_DIR = str(tmp_path / "page-cache")
    settings.PASSWORD_HASHERS = FAST_PASSWORD_HASHERS
    # Each test starts with no parse prepared in this process (ids repeat across tests).
    from evalsets.anchoring.resolution import prepared_parses
    from evalsets.anchoring.services import highlight_texts

    prepared_parses.clear()
    highlight_texts.clear()
    if "services" in request.keywords or "e2e" in request.keywords:
        yield
        return
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


def others_at_work() -> int:
    """How many other connections to this PostgreSQL test database are running a statement
    or sit in a transaction: a worker's task, a web process's request."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state IS NOT NULL AND state <> 'idle'"
        )
        return cursor.fetchone()[0]


def wait_until_others_are_idle(timeout: float = 30) -> None:
    """Idle twice in a row, 0.05 s apart (a worker between two tasks is idle for a moment), or
    ``timeout`` s have passed (a task still running then is left to meet the flush). Every
    test that commits pays the 0.05 s."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while time.monotonic() < deadline:
        quiet = quiet + 1 if others_at_work() == 0 else 0
        if quiet == 2:
            return
        time.sleep(0.05)


def _commits(request) -> bool:
    """Whether this test's writes are committed and flushed at its end (a real worker, a live
    server or ``transaction=True``) rather than rolled back."""
    marker = request.node.get_closest_marker("django_db")
    return bool(
        {"transactional_db", "live_server"} & set(request.fixturenames)
        or (marker is not None and marker.kwargs.get("transaction"))
    )


@pytest.fixture(autouse=True)
def _others_idle_before_the_flush(request):
    """A test that commits may have set a worker going (a parse, the passages index a parse
    queues when it is ready, a rendition) just before it ends. Django's flush truncates every
    table, and a worker's transaction holding one of them deadlocks with it; when the flush is
    the one PostgreSQL cancels, the test's rows stay behind for the next test in this process
    (its users already exist). So the flush waits for that work. Set up after the database,
    so that it is torn down before the flush."""
    if not _commits(request):
        yield
        return
    request.getfixturevalue("transactional_db")
    yield
    if connection.vendor == "postgresql":
        wait_until_others_are_idle()


@pytest.fixture
def sent(monkeypatch):
    """What would have been published, in order, instead of publishing it."""
    published: list[tuple[str, tuple]] = []

    def record(name, *ids, **options):
        published.append((name, ids))
        return True

    monkeypatch.setattr(queue, "send", record)
    return published


@pytest.fixture
def make_user(django_user_model):
    def make(username: str):
        return django_user_model.objects.create_user(username=username, password=PASSWORD)

    return make


@pytest.fixture
def owner(make_user):
    return make_user("olive")


@pytest.fixture
def reviewer(make_user):
    return make_user("rita")


@pytest.fixture
def annotator(make_user):
    return make_user("ann")


@pytest.fixture
def viewer(make_user):
    return make_user("vic")


@pytest.fixture
def outsider(make_user):
    """A member of another workspace, and of nothing here."""
    return create_outsider(make_user)


@pytest.fixture
def workspace(owner, reviewer, annotator, viewer):
    return create_acme(owner=owner, reviewer=reviewer, annotator=annotator, viewer=viewer)


@pytest.fixture
def client_for():
    def make(user) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return make


@pytest.fixture
def document(workspace, owner):
    """A document with a ready reference parse (no parser needed)."""
    return create_handbook(workspace)


@pytest.fixture
def reference(document):
    return document.parses.get(is_reference=True)


@pytest.fixture
def evalset(workspace, owner):
    return create_quiz(workspace, owner)


@pytest.fixture
def item(evalset, annotator):
    return create_q1(evalset, annotator)


@pytest.fixture
def changes_requested(item, annotator, reviewer, reference):
    """q1 anchored on "Remote work", submitted, and sent back by the reviewer about that anchor.

    Returns ``(item, anchor, start)``: the item as it is now, the anchor the request is about,
    and where that anchor was highlighted in the reference parse.
    """
    start = HANDBOOK.index("Remote work")
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + 11
    )
    item.refresh_from_db()
    item, _ = workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    item = workflow.item_request_changes(
        item=item,
        user=reviewer,
        row_version=item.row_version,
        comment="Quote the whole <b>sentence</b>, please.",
        anchor=anchor,
    )
    return item, anchor, start


#: Fixtures that make objects the shared world already holds (same usernames, slugs, source
#: ids): a test beside the shared world takes them from the world instead.
WORLD_PARTS = frozenset(
    {"owner", "reviewer", "annotator", "viewer", "outsider", "workspace", "document"}
    | {"reference", "evalset", "item", "changes_requested", "failed_upload"}
)


def _shared_world_problems(items) -> list[str]:
    """Why these tests (one module's) cannot run beside a world kept in an open transaction:
    a real worker or a flushing test needs committed data, and a per-test copy of a world
    object would clash with the world's own."""
    problems = []
    for item in items:
        names = set(item.fixturenames)
        if "services" in item.keywords or names & {"transactional_db", "live_server"}:
            problems.append(f"{item.name} commits (a real worker or a live server reads it)")
        elif names & WORLD_PARTS:
            clash = ", ".join(sorted(names & WORLD_PARTS))
            problems.append(f"{item.name} makes its own {clash}: use world.* instead")
    return problems


@contextmanager
def _outer_transaction():
    """An atomic block that Django's test machinery treats as one of its own, so the code
    under test may still open ``durable`` blocks inside it."""
    atomic = transaction.atomic()
    atomic._from_testcase = True
    atomic.__enter__()
    try:
        yield
    finally:
        transaction.set_rollback(True)
        atomic.__exit__(None, None, None)


@pytest.fixture(scope="module")
def _module_world(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """One world for a whole module, built inside a transaction rolled back at the module's
    end (Django's ``TestCase.setUpTestData``, per module). Each test still runs in its own
    savepoint (pytest-django), so what a test writes is gone before the next one starts.

    Building it per test cost about a third of the suite's time, and the tests that use it
    write only inside their own savepoint. Its files live in a module folder that each test
    gets a copy of (``world``)."""
    module_items = [item for item in request.session.items if item.module is request.module]
    problems = _shared_world_problems(module_items)
    if problems:
        pytest.fail(
            f"{request.module.__name__} cannot share one world:\n  " + "\n  ".join(problems),
            pytrace=False,
        )
    media = tmp_path_factory.mktemp("world-media")
    with django_db_blocker.unblock():
        transaction_open = ExitStack()
        transaction_open.enter_context(_outer_transaction())
        try:
            built = _build_world_eagerly(media)
        except BaseException:
            transaction_open.close()
            raise
    # The transaction stays open between the tests; only theirs touch the database.
    yield built, media
    with django_db_blocker.unblock():
        transaction_open.close()


def _build_world_eagerly(media):
    """The world with its tasks run in this process and its files in ``media`` (the
    per-test settings and eager tasks of ``_eager_tasks`` do not reach a module fixture)."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        with override_settings(MEDIA_ROOT=media, PASSWORD_HASHERS=FAST_PASSWORD_HASHERS):
            return build_world_from_scratch(capture=TestCase.captureOnCommitCallbacks)
    finally:
        celery_app.conf.task_always_eager = eager


@pytest.fixture
def world(_module_world, db, settings):
    """One of everything in ``acme`` (``tests/world.py``), for the security tests: built once
    per module (``_module_world``); each test gets its own copy of the Python objects (as
    ``setUpTestData`` does) and of the files, in its own ``MEDIA_ROOT``."""
    built, media = _module_world
    shutil.copytree(media, settings.MEDIA_ROOT, dirs_exist_ok=True)
    cache.clear()  # rate limits start from zero whatever building counted
    return copy.deepcopy(built)


@pytest.fixture
def failed_upload(workspace, owner):
    """A text upload whose only parse failed: what Retry and Remove act on."""
    doc = Document(workspace=workspace, source_id="broken.txt", sha256="f" * 64, size=3)
    doc.file.save("broken.txt", ContentFile(b"abc"), save=False)
    doc.kind = "text"
    doc.save()
    doc.parses.create(
        parser="plaintext",
        parser_version=text_parser.PARSER.version,
        status=ParseStatus.FAILED,
        error="The worker ran out of memory.",
    )
    return doc
