"""Jobs that misbehave on purpose, for the limited child runner's tests: real children, no mocks."""

from __future__ import annotations

import os
import sys
import time

from evalsets.pure.parsers.limited import JobError, limited_job, report_progress


@limited_job
def echo(payload: bytes, *, prefix: str = "") -> bytes:
    report_progress(1, 2)
    report_progress(2, 2)
    return prefix.encode() + payload


@limited_job
def hang(payload: bytes) -> bytes:
    report_progress(1, 3)
    while True:
        time.sleep(60)


@limited_job
def spin(payload: bytes) -> bytes:
    while True:
        pass


@limited_job
def hog(payload: bytes) -> bytes:
    hoard = [bytes(256 * 1024 * 1024) for _ in range(64)]
    return b"allocated %d blocks without hitting a limit" % len(hoard)


@limited_job
def flood(payload: bytes, *, size: int) -> bytes:
    return b"x" * size


@limited_job
def crash(payload: bytes) -> bytes:
    os._exit(13)


@limited_job
def refuse(payload: bytes) -> bytes:
    raise JobError("too_large", "This picture is wider than the limit of 10 pixels.")


@limited_job
def stumble(payload: bytes) -> bytes:
    raise ValueError("a bug in the job")


def unmarked(payload: bytes) -> bytes:
    return payload


@limited_job
def scribble(payload: bytes, *, size: int) -> bytes:
    """Writes past the protocol, straight to stdout, as a chatty native library might."""
    sys.stdout.buffer.write(b"y" * size)
    sys.stdout.buffer.flush()
    return b""


@limited_job
def pages(payload: bytes, *, seconds: list[float]) -> bytes:
    """Reads one "page" per entry of ``seconds``, spending that long on it, reporting each."""
    report_progress(0, len(seconds))
    for done, pause in enumerate(seconds, start=1):
        time.sleep(pause)
        report_progress(done, len(seconds))
    return b"read %d pages" % len(seconds)


@limited_job
def slow_start(payload: bytes, *, pause: float) -> bytes:
    """Spends ``pause`` before its first report (opening the file), then reads one page."""
    time.sleep(pause)
    report_progress(0, 1)
    report_progress(1, 1)
    return b"opened"
