"""Parsers that misbehave on purpose, to prove the isolated runner contains real failures.

A parser that loops forever on a hostile PDF, or allocates until the machine swaps, must cost
one failed parse version and nothing else. These parsers do exactly that so tests (and an
operator checking a new worker host) can run
``parse_isolated("evalsets.pure.parsers.diagnostic:HangingParser", ...)`` and watch it being
stopped, without mocks. They are never registered for any kind.
"""

from __future__ import annotations

import os
import time

from .base import ParsedText, ProgressFn, report


class _Diagnostic:
    kind = "text"
    version = "0"
    name = "diagnostic"

    def _result(self, text: str) -> ParsedText:
        return ParsedText(text=text, page_starts=[0], parser=self.name, parser_version=self.version)


class HangingParser(_Diagnostic):
    """Reports one page done out of three, then never returns."""

    name = "diagnostic-hang"

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        report(progress, 1, 3)
        while True:
            time.sleep(60)


class MemoryHogParser(_Diagnostic):
    """Allocates 256 MB at a time until the allocator refuses (at most 16 GB of address space).

    ``bytes(n)`` maps zero pages lazily (calloc), so without a memory limit this claims address
    space but little real memory, and then returns normally (which a test would catch as a failure).
    """

    name = "diagnostic-memory-hog"

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        hoard = [bytes(256 * 1024 * 1024) for _ in range(64)]
        return self._result(f"allocated {len(hoard)} blocks without hitting a limit")


class CrashingParser(_Diagnostic):
    """Exits abruptly without answering, like a parser dying in native code."""

    name = "diagnostic-crash"

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        os._exit(13)


class EchoParser(_Diagnostic):
    """Returns the input decoded as UTF-8, reporting one progress step per line."""

    name = "diagnostic-echo"

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        for i in range(len(lines)):
            report(progress, i + 1, len(lines))
        return self._result(text)
