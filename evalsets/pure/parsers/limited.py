"""Run one pure function in a child process within a wall-clock, memory, CPU and output budget.

Parsing a PDF, drawing one of its pages or rendering a Word file costs what the file asks for:
a crafted file of a few hundred bytes can loop for hours or allocate gigabytes. Running such
work in the web process or a worker lets one upload stall everyone sharing that process, so it
runs here instead: in a fresh ``python -m evalsets.pure.parsers.limited`` process that limits
its own address space (``RLIMIT_AS``) and processor time (``RLIMIT_CPU``), while this side kills the
child's whole process group when the wall-clock deadline passes or its output grows past the
cap. A plain subprocess (not ``multiprocessing``) is used because Celery's prefork workers are
daemonic processes, which may not start multiprocessing children.

A job is a module-level function marked with ``@limited_job`` that takes the payload bytes and
keyword arguments (plain JSON values) and returns bytes::

    @limited_job
    def draw_page_job(payload: bytes, *, index: int, scale: float) -> bytes: ...

    image = run_limited("evalsets.pure.pdfdraw:draw_page_job", pdf, args={"index": 0, "scale": 1.5},
                        timeout_s=30, memory_mb=768, cpu_s=20, max_output_bytes=8 << 20,
                        what="Drawing the page")

A job reports its own failure by raising ``JobError(code, reason)``; the caller gets the same
code and reason. Any other exception arrives as code ``failed``. A budget hit arrives as
``LimitExceeded`` (a ``JobError``) with code ``timeout`` (wall clock or processor time),
``out_of_memory`` or ``too_large`` (output over the cap), and a sentence naming the limit.

Protocol with the child: stdin (a temporary file, so a large payload cannot deadlock a pipe)
holds one JSON line of arguments and then the payload; stdout holds one JSON header line
(``{"ok": true, "size": n}`` or ``{"ok": false, "error": {...}}``) and then the result; progress
arrives as ``PROGRESS_PREFIX done total`` lines on stderr and is passed to the caller's callback
on the caller's own thread. Limits are set in the child itself rather than in a ``preexec_fn``,
because ``preexec_fn`` is unsafe in a threaded parent such as a Celery worker or a web server.
No Django here.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .base import JobError, ProgressFn, error_detail

try:
    import resource
except ImportError:  # not on Linux/macOS: the child runs without rlimits, the deadline holds
    resource = None  # type: ignore[assignment]

PROGRESS_PREFIX = "@@groundwork-progress"
#: The child's exit status when the job ran out of memory and its answer could not be written.
OUT_OF_MEMORY_EXIT = 75
#: The budgets the child itself reports hitting, as ``"limit"`` in its answer; that tells them
#: from a job's own ``JobError`` with the same code (a parser's own "too_large").
_CHILD_LIMITS = frozenset({"memory", "output"})

DEFAULT_MEMORY_MB = 1024
DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024 * 1024
#: Room for the header line on top of the output cap.
_HEADER_MAX = 64 * 1024
_JOB_MARK = "__limited_job__"
_PROJECT_ROOT = str(Path(__file__).resolve().parents[3])
_STDERR_TAIL = 4000

F = TypeVar("F", bound=Callable[..., bytes])

#: True in the child only, so ``report_progress`` called in a parent writes nothing.
_in_child = False


class LimitExceeded(JobError):
    """The job hit its budget and was stopped.

    ``code`` is ``timeout``, ``out_of_memory`` or ``too_large``; ``limit`` names the budget
    itself: ``wall_clock``, ``cpu``, ``memory`` or ``output`` (a wall-clock timeout may be a
    busy machine; processor time is the job's own).
    """

    def __init__(self, code: str, reason: str, limit: str) -> None:
        super().__init__(code, reason)
        self.limit = limit


def limited_job(function: F) -> F:
    """Mark ``function`` as one ``run_limited`` may run: a name from code, never any callable."""
    setattr(function, _JOB_MARK, True)
    return function


def load_job(name: str) -> Callable[..., bytes]:
    """The job ``"package.module:function"``; a wrong name is a programming error."""
    module_name, _, attr = name.partition(":")
    function = getattr(importlib.import_module(module_name), attr, None) if attr else None
    if not getattr(function, _JOB_MARK, False):
        raise TypeError(f"{name!r} is not a function marked with @limited_job")
    return function  # type: ignore[return-value]


def report_progress(done: int, total: int) -> None:
    """From inside a job: ``done`` of ``total`` steps finished (nothing outside a child)."""
    if _in_child:
        sys.stderr.write(f"{PROGRESS_PREFIX} {int(done)} {int(total)}\n")
        sys.stderr.flush()


def run_limited(
    job: str,
    payload: bytes,
    *,
    args: dict[str, Any] | None = None,
    timeout_s: float,
    memory_mb: int = DEFAULT_MEMORY_MB,
    cpu_s: float | None = None,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    progress: ProgressFn | None = None,
    what: str = "The job",
    step: tuple[float, str] | None = None,
) -> bytes:
    """Run ``job(payload, **args)`` in a limited child process; return the bytes it returned.

    ``timeout_s`` bounds wall-clock time, ``memory_mb`` address space (0: no limit), ``cpu_s``
    processor time (default: the timeout plus 5 s, a backstop should this process die; 0: no
    limit) and ``max_output_bytes`` the result. ``step=(seconds, "page")`` also bounds the
    wall-clock time between two progress reports, from the first report on: a job whose cost
    grows with its steps (a parser's pages) gets a budget in proportion to them, so one step
    crafted to be costly is stopped long before the whole job's deadline. ``what`` starts the
    sentences of the errors ("Drawing the page took longer than 30 s and was stopped."). Raises
    ``LimitExceeded`` for a budget hit and ``JobError`` for the job's own failure or a child
    that died without answering.
    """
    load_job(job)
    cpu_limit = _cpu_limit(timeout_s, cpu_s)
    budget = _Budget(timeout_s, memory_mb, cpu_limit, max_output_bytes, what, step)
    header = json.dumps(args or {}).encode("utf-8") + b"\n"
    with tempfile.TemporaryFile() as stdin:
        stdin.write(header)
        stdin.write(payload)
        stdin.seek(0)
        proc = subprocess.Popen(
            _command(job, budget),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(),
            cwd=_PROJECT_ROOT,
            start_new_session=True,  # its own process group, so a kill reaches grandchildren too
            close_fds=True,
        )
        try:
            collector = _Collector(proc, budget.max_output_bytes + _HEADER_MAX, progress)
            stopped = collector.run(timeout_s, step[0] if step else None)
        finally:
            if proc.poll() is None:
                _kill(proc)
    if stopped:
        raise budget.exceeded(stopped, at_step=collector.steps_done + 1)
    return _interpret(proc.returncode, collector.stdout(), collector.stderr_tail, job, budget)


def _cpu_limit(timeout_s: float, cpu_s: float | None) -> int:
    if cpu_s is None:
        return math.ceil(timeout_s) + 5
    return math.ceil(cpu_s)


class _Budget:
    def __init__(
        self,
        timeout_s: float,
        memory_mb: int,
        cpu_s: int,
        max_output_bytes: int,
        what: str,
        step: tuple[float, str] | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.max_output_bytes = max_output_bytes
        self.what = what
        self.step = step

    def exceeded(self, limit: str, at_step: int = 0) -> LimitExceeded:
        """The error for one limit: ``wall_clock``, ``step`` (then ``at_step`` says which),
        ``cpu``, ``memory`` or ``output``."""
        if limit == "step" and self.step is not None:
            seconds, name = self.step
            code, reason = "timeout", f"spent longer than {seconds:g} s on one {name}"
            reason += f" ({name} {at_step})"
        elif limit == "wall_clock":
            code, reason = "timeout", f"took longer than {self.timeout_s:g} s"
        elif limit == "cpu":
            code, reason = "timeout", f"used more than {self.cpu_s} s of processor time"
        elif limit == "memory":
            code, reason = "out_of_memory", f"needed more than {self.memory_mb} MB of memory"
        else:
            code, reason = "too_large", f"made more than {_size(self.max_output_bytes)} of output"
        return LimitExceeded(code, f"{self.what} {reason} and was stopped.", limit)


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):g} MB"
    return f"{n / 1024:g} KB" if n >= 1024 else f"{n} bytes"


def _command(job: str, budget: _Budget) -> list[str]:
    return [
        sys.executable,
        "-m",
        "evalsets.pure.parsers.limited",
        "--job",
        job,
        "--memory-mb",
        str(budget.memory_mb),
        "--cpu-s",
        str(budget.cpu_s),
        "--max-output",
        str(budget.max_output_bytes),
    ]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PROJECT_ROOT, env.get("PYTHONPATH")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


class _Collector:
    """Reads the child's stdout and stderr until both close, the deadline passes or stdout
    grows past ``max_stdout`` bytes; ``run`` names the limit that stopped it, or ""."""

    def __init__(
        self, proc: subprocess.Popen[bytes], max_stdout: int, progress: ProgressFn | None
    ) -> None:
        self.proc = proc
        self.max_stdout = max_stdout
        self.progress = progress
        self.chunks: list[bytes] = []
        self.stdout_bytes = 0
        self.stderr_buffer = b""
        self.stderr_tail = ""
        #: Steps reported done, and when the last report came (None before the first).
        self.steps_done = 0
        self.stepped_at: float | None = None

    def stdout(self) -> bytes:
        return b"".join(self.chunks)

    def run(self, timeout_s: float, step_s: float | None = None) -> str:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        deadline = time.monotonic() + timeout_s
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ, "out")
        selector.register(self.proc.stderr, selectors.EVENT_READ, "err")
        try:
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "wall_clock"
                step_left = self._step_left(step_s)
                if step_left <= 0:
                    return "step"
                wait = min(remaining, step_left, 1.0)
                for key, _ in selector.select(timeout=wait):
                    if not self._read(selector, key):
                        return "output"
        finally:
            selector.close()
        self._keep_stderr(self.stderr_buffer.decode("utf-8", "replace"))
        try:
            self.proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            return "wall_clock"
        return ""

    def _step_left(self, step_s: float | None) -> float:
        """Seconds the current step may still take (infinite with no step budget, or before
        the first report)."""
        if step_s is None or self.stepped_at is None:
            return math.inf
        return self.stepped_at + step_s - time.monotonic()

    def _read(self, selector: selectors.BaseSelector, key: selectors.SelectorKey) -> bool:
        """Take one chunk; False when stdout passed its cap."""
        chunk = os.read(key.fd, 1 << 16)
        if not chunk:
            selector.unregister(key.fileobj)
        elif key.data == "out":
            self.chunks.append(chunk)
            self.stdout_bytes += len(chunk)
            return self.stdout_bytes <= self.max_stdout
        else:
            self._stderr(chunk)
        return True

    def _stderr(self, chunk: bytes) -> None:
        self.stderr_buffer += chunk
        *lines, self.stderr_buffer = self.stderr_buffer.split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace")
            if text.startswith(PROGRESS_PREFIX):
                self._stepped(text)
            else:
                self._keep_stderr(text + "\n")

    def _keep_stderr(self, text: str) -> None:
        self.stderr_tail = (self.stderr_tail + text)[-_STDERR_TAIL:]

    def _stepped(self, line: str) -> None:
        """A progress report: the step clock starts again, and the caller hears of it."""
        try:
            _, done, total = line.split()
            done_steps, total_steps = int(done), int(total)
        except ValueError:
            return
        self.steps_done = done_steps
        self.stepped_at = time.monotonic()
        if self.progress is not None:
            self.progress(done_steps, total_steps)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _interpret(
    returncode: int, stdout: bytes, stderr_tail: str, job: str, budget: _Budget
) -> bytes:
    line, _, body = stdout.partition(b"\n")
    answer = _header(line)
    if answer.get("ok") is True and answer.get("size") == len(body):
        return body
    error = answer.get("error")
    if answer.get("ok") is False and isinstance(error, dict):
        if error.get("limit") in _CHILD_LIMITS:
            raise budget.exceeded(str(error["limit"]))
        reason = str(error.get("reason") or f"{budget.what} failed.")
        raise JobError(str(error.get("code") or "failed"), reason, str(error.get("detail", "")))
    if returncode == OUT_OF_MEMORY_EXIT or returncode == -signal.SIGKILL:
        # SIGKILL that we did not send: the kernel's out-of-memory killer.
        raise budget.exceeded("memory")
    if returncode == -signal.SIGXCPU:
        raise budget.exceeded("cpu")
    raise JobError(
        "failed",
        f"{budget.what} stopped unexpectedly.",
        f"{job} child exited with status {returncode}: {stderr_tail.strip()[-1000:]}",
    )


def _header(line: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return answer if isinstance(answer, dict) else {}


# -- the child ---------------------------------------------------------------------------------


def _limit_resources(memory_mb: int, cpu_s: int) -> None:
    if resource is None:
        return
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if cpu_s > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or cpu_s < hard:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, hard))


def _exit_when_orphaned() -> None:
    """Stop if the parent goes away (a worker killed mid-task), even if the job is asleep.

    The child runs in its own session so the parent can kill its whole process group; the flip
    side is that signals sent to the parent's group do not reach it, hence this watchdog.
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="orphan-watchdog", daemon=True).start()


def _run_job(job: str, max_output: int) -> tuple[dict[str, Any], bytes]:
    """Read the arguments and payload, run the job; the header to write and the result."""
    out_of_memory = False
    try:
        args = json.loads(sys.stdin.buffer.readline())
        payload = sys.stdin.buffer.read()
        result = load_job(job)(payload, **args)
        if not isinstance(result, bytes):
            raise TypeError(f"{job} returned {type(result).__name__}, not bytes")
        if len(result) > max_output:
            return {"ok": False, "error": {"code": "too_large", "limit": "output"}}, b""
        return {"ok": True, "size": len(result)}, result
    except JobError as exc:
        return {"ok": False, "error": exc.to_dict()}, b""
    except MemoryError:
        out_of_memory = True  # answered below, once the frames holding the memory are gone
    except Exception as exc:
        return {"ok": False, "error": {"code": "failed", "detail": error_detail(exc)}}, b""
    if out_of_memory:
        gc.collect()
    return {"ok": False, "error": {"code": "out_of_memory", "limit": "memory"}}, b""


def main(argv: list[str] | None = None) -> int:
    global _in_child
    parser = argparse.ArgumentParser(description="The child side of run_limited.")
    parser.add_argument("--job", required=True)
    parser.add_argument("--memory-mb", type=int, default=0)
    parser.add_argument("--cpu-s", type=int, default=0)
    parser.add_argument("--max-output", type=int, default=DEFAULT_MAX_OUTPUT_BYTES)
    options = parser.parse_args(argv)

    _limit_resources(options.memory_mb, options.cpu_s)
    _exit_when_orphaned()
    _in_child = True
    header, result = _run_job(options.job, options.max_output)
    try:
        sys.stdout.buffer.write(json.dumps(header).encode("utf-8") + b"\n")
        sys.stdout.buffer.write(result)
        sys.stdout.buffer.flush()
    except MemoryError:
        return OUT_OF_MEMORY_EXIT
    return 0


if __name__ == "__main__":
    # Run the importable copy of this module, not ``__main__``: the job imports that copy, and
    # both must share one ``JobError`` class and one ``_in_child`` flag.
    sys.exit(importlib.import_module("evalsets.pure.parsers.limited").main())
