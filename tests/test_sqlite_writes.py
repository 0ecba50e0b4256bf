"""The embedded default's SQLite: writers take turns at the write lock.

A write transaction takes its turn before ``BEGIN IMMEDIATE`` and gives it back on commit,
rollback or close (``labelling/sqlite/base.py``), so waiting writers are handed the lock at
once instead of sleeping in SQLite's busy handler; a turn never outlives its transaction,
and a process's writers cannot starve another process's (a file lock orders processes).
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from evalsets.models import Workspace
from labelling.sqlite import base as sqlite_base

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _on_sqlite():
    if connection.vendor != "sqlite":
        pytest.skip("the embedded default's SQLite only")


def _turn_is_free() -> bool:
    if sqlite_base.turn.threads.acquire(blocking=False):
        sqlite_base.turn.threads.release()
        return True
    return False


def test_a_write_transaction_holds_the_turn_until_it_commits():
    with transaction.atomic():
        assert not _turn_is_free()
    assert _turn_is_free()


def test_a_transaction_that_fails_gives_the_turn_back():
    with pytest.raises(RuntimeError), transaction.atomic():
        raise RuntimeError("the request failed")

    assert _turn_is_free()


def test_a_writer_waits_for_the_turn_and_goes_on_the_moment_it_is_free():
    order: list[str] = []
    inside = threading.Event()

    def other_writer() -> None:
        inside.wait()
        with transaction.atomic():
            order.append("second")
        connection.close()

    thread = threading.Thread(target=other_writer)
    thread.start()
    with transaction.atomic():
        inside.set()
        thread.join(timeout=0.5)  # it cannot begin while this transaction is open
        assert thread.is_alive()
        order.append("first")
    thread.join(timeout=30)

    assert order == ["first", "second"]


def test_a_write_outside_a_transaction_takes_its_turn_for_that_statement_only():
    seen: list[bool] = []

    def spy(execute, sql, params, many, context):
        seen.append(_turn_is_free())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        Workspace.objects.filter(slug="nobody").update(name="x")

    assert seen == [False]
    assert _turn_is_free()


def test_processes_queue_on_a_file_beside_the_database(tmp_path):
    path = str(tmp_path / "db.sqlite3.writers")
    assert sqlite_base.turn.acquire(path, timeout=1)
    try:
        other = sqlite_base._Turn()  # as another process would: its own open file
        assert not other.acquire(path, timeout=0.05)
    finally:
        sqlite_base.turn.release(path)
    assert other.acquire(path, timeout=1)
    other.release(path)
