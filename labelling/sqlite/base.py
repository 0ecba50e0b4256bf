"""SQLite for the embedded default, with write transactions handed over in turn.

Why: under 20 users creating anchors, the embedded default's anchor-create p95 was 1.5-1.8 s
against a p50 of 140 ms, and profiling put nearly all of it in ``BEGIN IMMEDIATE``: the
requests' own statements take milliseconds, but a thread that finds the write lock taken
waits in SQLite's busy handler, which sleeps in steps growing to 100 ms and retries, so a
waiter can miss many hand-overs in a row while others take the lock. Here the threads of one
process (runserver's, or a worker's) queue for a process-wide lock before ``BEGIN``: a
thread's turn comes the moment the previous writer commits. Another process (the web
server against a worker) still meets SQLite's own lock and busy handler; the worker writes
in a few bulk upserts per burst (``evalsets.resolution``), so that is rare.

A thread waits for the process lock at most as long as SQLite would (the ``timeout`` option)
and then goes on to SQLite's own waiting, so nothing can hang on it.
"""

from __future__ import annotations

import threading

from django.db.backends.sqlite3 import base

_writer = threading.Lock()


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_writer = False

    def _start_transaction_under_autocommit(self) -> None:
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        self._holds_writer = _writer.acquire(timeout=timeout)
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._release_writer()
            raise

    def _release_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            _writer.release()

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._release_writer()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._release_writer()

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._release_writer()
