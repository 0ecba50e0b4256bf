"""Run one parser in a child process with a wall-clock timeout and a memory ceiling.

PDF libraries can loop forever or allocate gigabytes on a hostile or merely broken file. Parsing
in the worker process itself would let one upload take the worker down, so each parse runs in a
fresh ``python -m evalsets.parsers.isolate`` process. A plain subprocess (not ``multiprocessing``)
is used because Celery's prefork workers are daemonic processes, which may not start
multiprocessing children.

Protocol with the child (see ``isolate.py``): the document bytes arrive on stdin (from a temporary
file, so a large upload cannot deadlock a pipe); the answer is one JSON object on stdout; progress
arrives as ``PROGRESS_PREFIX done total`` lines on stderr and is passed to the caller's callback
on the caller's own thread. The child limits its own address space with ``RLIMIT_AS`` and its CPU
time with ``RLIMIT_CPU`` (a backstop if this process dies); the parent kills the child's whole
process group when the wall-clock timeout passes.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .base import DEFAULT_MAX_PAGES, ParsedText, ParseError, ProgressFn

PROGRESS_PREFIX = "@@groundwork-progress"
#: The child's exit status when the parser ran out of memory and the JSON answer could not be
#: written either.
OUT_OF_MEMORY_EXIT = 75

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MEMORY_MB = 1024

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
_STDERR_TAIL = 4000


def timeout_error(timeout_s: float) -> ParseError:
    return ParseError("timeout", f"Parsing took longer than {timeout_s:g} s and was stopped.")


def memory_error(memory_mb: int) -> ParseError:
    return ParseError(
        "out_of_memory", f"Parsing needed more than {memory_mb} MB of memory and was stopped."
    )


def parse_isolated(
    parser_name: str,
    data: bytes,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    max_pages: int = DEFAULT_MAX_PAGES,
    progress: ProgressFn | None = None,
) -> ParsedText:
    """Parse ``data`` with ``parser_name`` in a child process; return its ``ParsedText``.

    ``parser_name`` is a registered name (``"pypdf"``) or a dotted path
    (``"evalsets.parsers.diagnostic:HangingParser"``). Raises ``ParseError``: the parser's own
    errors as it raised them, ``timeout`` after ``timeout_s`` seconds of wall-clock time,
    ``out_of_memory`` when the child needs more than ``memory_mb`` MB of address space, and
    ``corrupt`` when the child dies without an answer. ``memory_mb=0`` means no memory limit.
    """
    from .registry import get_parser, isolated_name

    get_parser(parser_name)  # a wrong name is a programming error: fail here, not in the child
    parser_name = isolated_name(parser_name)  # a plugin travels as its dotted path
    cmd = [
        sys.executable,
        "-m",
        "evalsets.parsers.isolate",
        "--parser",
        parser_name,
        "--max-pages",
        str(max_pages),
        "--memory-mb",
        str(memory_mb),
        "--cpu-s",
        str(math.ceil(timeout_s) + 5),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PROJECT_ROOT, env.get("PYTHONPATH")) if p)
    env["PYTHONIOENCODING"] = "utf-8"

    with tempfile.TemporaryFile() as stdin:
        stdin.write(data)
        stdin.seek(0)
        proc = subprocess.Popen(
            cmd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=_PROJECT_ROOT,
            start_new_session=True,  # its own process group, so a kill reaches grandchildren too
            close_fds=True,
        )
        try:
            stdout, stderr_tail, timed_out = _collect(proc, timeout_s, progress)
        finally:
            if proc.poll() is None:
                _kill(proc)
    if timed_out:
        raise timeout_error(timeout_s)
    return _interpret(proc.returncode, stdout, stderr_tail, parser_name, memory_mb)


def _collect(
    proc: subprocess.Popen[bytes], timeout_s: float, progress: ProgressFn | None
) -> tuple[bytes, str, bool]:
    """Read stdout and stderr until both close or the deadline passes."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout_s
    stdout_chunks: list[bytes] = []
    stderr_buffer = b""
    stderr_tail = ""
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ, "out")
    selector.register(proc.stderr, selectors.EVENT_READ, "err")
    try:
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return b"", stderr_tail, True
            for key, _ in selector.select(timeout=min(remaining, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                if key.data == "out":
                    stdout_chunks.append(chunk)
                    continue
                stderr_buffer += chunk
                *lines, stderr_buffer = stderr_buffer.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace")
                    if text.startswith(PROGRESS_PREFIX):
                        _report(progress, text)
                    else:
                        stderr_tail = (stderr_tail + text + "\n")[-_STDERR_TAIL:]
    finally:
        selector.close()
    stderr_tail = (stderr_tail + stderr_buffer.decode("utf-8", "replace"))[-_STDERR_TAIL:]
    remaining = deadline - time.monotonic()
    try:
        proc.wait(timeout=max(remaining, 0.01))
    except subprocess.TimeoutExpired:
        return b"", stderr_tail, True
    return b"".join(stdout_chunks), stderr_tail, False


def _report(progress: ProgressFn | None, line: str) -> None:
    if progress is None:
        return
    try:
        _, done, total = line.split()
        done_pages, total_pages = int(done), int(total)
    except ValueError:
        return
    progress(done_pages, total_pages)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _interpret(
    returncode: int, stdout: bytes, stderr_tail: str, parser_name: str, memory_mb: int
) -> ParsedText:
    answer = None
    if stdout:
        try:
            answer = json.loads(stdout.decode("utf-8", "surrogatepass"))
        except (ValueError, UnicodeDecodeError):
            answer = None
    if isinstance(answer, dict) and "ok" in answer:
        if answer["ok"]:
            return ParsedText.from_dict(answer["result"])
        error = answer["error"]
        if error["code"] == "out_of_memory":
            raise memory_error(memory_mb)
        raise ParseError(error["code"], error["reason"], error.get("detail", ""))
    if returncode == OUT_OF_MEMORY_EXIT or returncode == -signal.SIGKILL:
        # SIGKILL that we did not send: the kernel's out-of-memory killer.
        raise memory_error(memory_mb)
    if returncode == -signal.SIGXCPU:
        raise ParseError("timeout", "Parsing used too much processor time and was stopped.")
    raise ParseError(
        "corrupt",
        "This file could not be read: the parser stopped unexpectedly. "
        "It may be damaged; try saving or exporting it again.",
        f"{parser_name} child exited with status {returncode}: {stderr_tail.strip()[-1000:]}",
    )
