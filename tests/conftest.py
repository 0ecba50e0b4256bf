"""Shared fixtures: a workspace with one member of each role, an outsider, and clients.

Tasks run in-process (eager) by default. Tests marked ``services`` run against real
PostgreSQL and Redis with a real Celery worker process; where those are not configured they
are skipped, except in CI (``GROUNDWORK_REQUIRE_SERVICES=1``), where a skip is a failure.
"""

from __future__ import annotations

import os

import pytest
from django.core.cache import cache
from django.core.files.base import ContentFile
from rest_framework.test import APIClient

from evalsets import queue, services
from evalsets.models import Document, Membership, ParseStatus, Role
from evalsets.parsers import text as text_parser
from evalsets.review import workflow
from labelling.celery import app as celery_app

pytest_plugins = ["tests.browser", "tests.services"]

REQUIRE_SERVICES = os.environ.get("GROUNDWORK_REQUIRE_SERVICES") == "1"


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
    # Hashing passwords properly costs ~0.4 s a user; tests need users, not security.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Each test starts with no parse prepared in this process (ids repeat across tests).
    from evalsets.resolution import prepared_parses
    from evalsets.services import highlight_texts

    prepared_parses.clear()
    highlight_texts.clear()
    if "services" in request.keywords or "e2e" in request.keywords:
        yield
        return
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


PASSWORD = "correct horse battery"


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
    user = make_user("otto")
    services.workspace_create(user=user, slug="elsewhere", name="Elsewhere")
    return user


@pytest.fixture
def workspace(owner, reviewer, annotator, viewer):
    ws = services.workspace_create(user=owner, slug="acme", name="Acme")
    Membership.objects.create(workspace=ws, user=reviewer, role=Role.REVIEWER)
    Membership.objects.create(workspace=ws, user=annotator, role=Role.ANNOTATOR)
    Membership.objects.create(workspace=ws, user=viewer, role=Role.VIEWER)
    return ws


@pytest.fixture
def client_for():
    def make(user) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return make


HANDBOOK = (
    "Employee Handbook\n\nEmployees accrue 1.5 days of leave per month. "
    "Leave may be carried over.\n"
    "Remote work is limited to 30 days a year.\n"
    "Employees accrue 1.5 days of leave per month.\n"
)


@pytest.fixture
def document(workspace, owner):
    """A document with a ready reference parse (no parser needed)."""
    doc = Document(
        workspace=workspace, source_id="handbook.txt", sha256="0" * 64, size=len(HANDBOOK)
    )
    doc.file.save("handbook.txt", ContentFile(HANDBOOK.encode()), save=False)
    doc.kind = "text"
    doc.save()
    services.parse_version_add(
        document=doc,
        parser="plaintext",
        parser_version="1",
        text=HANDBOOK,
        page_starts=[0, HANDBOOK.index("Remote")],
        origin="parsed",
    )
    return doc


@pytest.fixture
def reference(document):
    return document.parses.get(is_reference=True)


@pytest.fixture
def evalset(workspace, owner):
    return services.evalset_create(workspace=workspace, user=owner, slug="quiz", name="Quiz")


@pytest.fixture
def item(evalset, annotator):
    return services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="q1",
        question="How much leave do employees accrue per month?",
        qtype="numeric",
    )


@pytest.fixture
def changes_requested(item, annotator, reviewer, reference):
    """q1 anchored on "Remote work", submitted, and sent back by the reviewer about that anchor.

    Returns ``(item, anchor, start)``: the item as it is now, the anchor the request is about,
    and where that anchor was highlighted in the reference parse.
    """
    start = HANDBOOK.index("Remote work")
    anchor = services.anchor_create_from_highlight(
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


@pytest.fixture
def world(
    owner,
    reviewer,
    annotator,
    viewer,
    outsider,
    make_user,
    document,
    evalset,
    item,
    django_capture_on_commit_callbacks,
):
    """One of everything in ``acme`` (``tests/world.py``), for the security tests."""
    from django.core.cache import cache

    from tests.world import build_world

    built = build_world(
        owner=owner,
        reviewer=reviewer,
        annotator=annotator,
        viewer=viewer,
        outsider=outsider,
        make_user=make_user,
        document=document,
        evalset=evalset,
        item=item,
        capture=django_capture_on_commit_callbacks,
    )
    cache.clear()  # rate limits start from zero whatever building counted
    return built


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
