"""The child side of ``parse_isolated``: ``python -m evalsets.parsers.isolate --parser NAME``.

It limits its own memory and CPU time first, then reads the document from stdin, runs the parser
and writes exactly one JSON object to stdout: ``{"ok": true, "result": {...ParsedText...}}`` or
``{"ok": false, "error": {"code", "reason", "detail"}}``. With ``--start`` (and ``--stop``) it
reads only that range of pages (``base.PageRangeParser``). Progress goes to stderr as
``@@groundwork-progress done total`` lines. Limits are set here rather than in a ``preexec_fn``
because ``preexec_fn`` is unsafe in a threaded parent such as a Celery worker.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from typing import Any

from .base import ParseError, error_detail
from .registry import get_parser
from .runner import OUT_OF_MEMORY_EXIT, PROGRESS_PREFIX

_GENERIC_FAILURE = (
    "This file could not be read; it may be damaged or use features the parser does not "
    "support. Try saving or exporting it again."
)


def _limit_resources(memory_mb: int, cpu_s: int) -> None:
    try:
        import resource
    except ImportError:  # not on Linux/macOS: run without limits
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
    """Stop if the parent goes away (a worker killed mid-task), even if the parser is asleep.

    The child runs in its own session so the parent can kill its whole process group; the flip
    side is that signals sent to the worker's group do not reach it, hence this watchdog.
    """
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="orphan-watchdog", daemon=True).start()


def _progress(done: int, total: int) -> None:
    sys.stderr.write(f"{PROGRESS_PREFIX} {int(done)} {int(total)}\n")
    sys.stderr.flush()


def _write(answer: dict[str, Any]) -> None:
    payload = json.dumps(answer, ensure_ascii=False).encode("utf-8", "surrogatepass")
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--parser", required=True)
    args.add_argument("--max-pages", type=int, default=2000)
    args.add_argument("--memory-mb", type=int, default=0)
    args.add_argument("--cpu-s", type=int, default=0)
    args.add_argument("--start", type=int, default=None, help="first page of a range (0-based)")
    args.add_argument("--stop", type=int, default=None, help="page after the range's last")
    options = args.parse_args(argv)

    _limit_resources(options.memory_mb, options.cpu_s)
    _exit_when_orphaned()
    out_of_memory = False
    answer: dict[str, Any] | None = None
    try:
        data = sys.stdin.buffer.read()
        parser = get_parser(options.parser)
        if options.start is None:
            result = parser.parse(data, max_pages=options.max_pages, progress=_progress)
        else:
            result = parser.parse_pages(
                data,
                start=options.start,
                stop=options.stop,
                max_pages=options.max_pages,
                progress=_progress,
            )
        answer = {"ok": True, "result": result.to_dict()}
    except ParseError as exc:
        answer = {"ok": False, "error": exc.to_dict()}
    except MemoryError:
        out_of_memory = True  # handled below, once the frames holding the memory are gone
    except RecursionError as exc:
        answer = {"ok": False, "error": _error("corrupt", _GENERIC_FAILURE, exc)}
    except Exception as exc:
        answer = {"ok": False, "error": _error("corrupt", _GENERIC_FAILURE, exc)}

    if out_of_memory:
        gc.collect()
        answer = {"ok": False, "error": {"code": "out_of_memory", "reason": "", "detail": ""}}
    try:
        _write(answer)  # type: ignore[arg-type]
    except MemoryError:
        return OUT_OF_MEMORY_EXIT
    return 0


def _error(code: str, reason: str, exc: BaseException) -> dict[str, str]:
    return {"code": code, "reason": reason, "detail": error_detail(exc)}


if __name__ == "__main__":
    sys.exit(main())
