"""SQLite for the embedded default, with writers handed the write lock in turn.

Why: under 20 users creating anchors, the embedded default's anchor-create p95 was 1.5-1.8 s
against a p50 of 140 ms, and profiling put nearly all of it in ``BEGIN IMMEDIATE``: the
requests' own statements take milliseconds, but a writer that finds the lock taken waits in
SQLite's busy handler, which sleeps in steps growing to 100 ms before it looks again, so a
waiter misses hand-overs while others take the lock. Worse, a process whose writers queue
among themselves (runserver's threads) can hand the lock from one to the next so quickly
that another process's writer (a Celery worker) never finds it free and fails after the
timeout: its task is retried and, five failures later, dropped.

So every write, in every process, first takes a turn: a thread lock among the process's
threads, then an exclusive ``flock`` on a file beside the database among processes (the
kernel gives it up the moment its holder does, or dies). Transactions take the turn before
``BEGIN`` and give it back on commit, rollback or close; a write outside a transaction
(autocommit) takes it around that one statement. A writer waits for its turn at most as long
as SQLite would (the ``timeout`` option), then goes on to SQLite's own waiting, so nothing
can hang on it. In-memory databases (the test suite's) need no file lock.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from django.db.backends.sqlite3 import base

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC")


class _Turn:
    """This process's place in the queue of writers to one database file."""

    def __init__(self) -> None:
        self.threads = threading.Lock()
        self.files: dict[str, int] = {}

    def reset(self) -> None:  # in a forked child: its own locks and open file descriptions
        self.threads = threading.Lock()
        self.files = {}

    def acquire(self, path: str | None, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        if not self.threads.acquire(timeout=timeout):
            return False
        if path is None:
            return True
        fd = self.files.get(path)
        if fd is None:
            fd = self.files[path] = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.threads.release()
                    return False
                time.sleep(0.002)

    def release(self, path: str | None) -> None:
        if path is not None:
            fcntl.flock(self.files[path], fcntl.LOCK_UN)
        self.threads.release()


turn = _Turn()
os.register_at_fork(after_in_child=turn.reset)


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_turn = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.execute_wrappers.append(self._autocommit_write_in_turn)

    def _lock_path(self) -> str | None:
        return None if self.is_in_memory_db() else f"{self.settings_dict['NAME']}.writers"

    def _timeout(self) -> float:
        return float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))

    def _take_turn(self) -> None:
        self._holds_turn = turn.acquire(self._lock_path(), self._timeout())

    def _give_turn_back(self) -> None:
        if self._holds_turn:
            self._holds_turn = False
            turn.release(self._lock_path())

    def _autocommit_write_in_turn(self, execute, sql, params, many, context):
        if self._holds_turn or not self.get_autocommit() or sql.lstrip()[:6].upper() not in WRITES:
            return execute(sql, params, many, context)
        self._take_turn()
        try:
            return execute(sql, params, many, context)
        finally:
            self._give_turn_back()

    def _start_transaction_under_autocommit(self) -> None:
        self._take_turn()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._give_turn_back()
            raise

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._give_turn_back()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._give_turn_back()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._give_turn_back()
