"""Run one parser in a limited child process (``limited.run_limited``), so a hostile or merely
broken file costs one failed parse, not the worker.

PDF libraries can loop forever or allocate gigabytes on such a file. Each parse runs the job
``isolate.parse_job`` in a fresh child with a wall-clock timeout, a memory ceiling, a CPU-time
backstop and a cap on the size of its answer; progress arrives on the caller's own thread.
"""

from __future__ import annotations

import json
import math

from .base import (
    DEFAULT_MAX_PAGES,
    ERROR_CODES,
    ParsedText,
    ParseError,
    ProgressFn,
    supports_ranges,
)
from .limited import DEFAULT_MEMORY_MB, JobError, LimitExceeded, run_limited
from .registry import get_parser, isolated_name

DEFAULT_TIMEOUT_S = 120.0
#: The largest parse a child may hand back (text, page offsets and character boxes as JSON).
MAX_PARSE_OUTPUT_BYTES = 1024 * 1024 * 1024

_PARSE_JOB = "evalsets.pure.parsers.isolate:parse_job"
_DIED = (
    "This file could not be read: the parser stopped unexpectedly. "
    "It may be damaged; try saving or exporting it again."
)


def parse_isolated(
    parser_name: str,
    data: bytes,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    max_pages: int = DEFAULT_MAX_PAGES,
    progress: ProgressFn | None = None,
    pages: tuple[int, int | None] | None = None,
    page_timeout_s: float | None = None,
) -> ParsedText:
    """Parse ``data`` with ``parser_name`` in a child process; return its ``ParsedText``.

    ``page_timeout_s`` bounds the time between two pages a parser reports (from its first
    report on), so a page crafted to cost minutes fails the parse at once rather than at
    ``timeout_s``; a parser that reports no pages (an unpaged format) has only ``timeout_s``.

    ``pages=(start, stop)`` reads only that range of pages (``stop`` None: to the end) with
    a parser that supports it (``base.supports_ranges``); the answer is then the range's
    part, for the parser's ``join_ranges``.

    ``parser_name`` is a registered name (``"pypdf"``) or a dotted path
    (``"evalsets.pure.parsers.diagnostic:HangingParser"``). Raises ``ParseError``: the parser's own
    errors as it raised them, ``timeout`` after ``timeout_s`` seconds of wall-clock time,
    ``out_of_memory`` when the child needs more than ``memory_mb`` MB of address space, and
    ``corrupt`` when the child dies without an answer. ``memory_mb=0`` means no memory limit.
    """
    parser = get_parser(parser_name)  # a wrong name is a programming error: fail here
    if pages is not None and not supports_ranges(parser):
        raise TypeError(f"parser {parser_name!r} cannot read a range of pages")
    args = {"parser": isolated_name(parser_name), "max_pages": max_pages}  # a plugin: its path
    if pages is not None:
        args["start"], args["stop"] = pages
    try:
        answer = run_limited(
            _PARSE_JOB,
            data,
            args=args,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            cpu_s=math.ceil(timeout_s) + 5,
            max_output_bytes=MAX_PARSE_OUTPUT_BYTES,
            progress=progress,
            what="Parsing",
            step=(page_timeout_s, "page") if page_timeout_s else None,
        )
    except JobError as exc:
        raise _parse_error(exc) from None
    return ParsedText.from_dict(json.loads(answer.decode("utf-8", "surrogatepass")))


def _parse_error(exc: JobError) -> ParseError:
    """The job's failure in the parsers' own vocabulary; a budget it ran out of is named in
    the detail (``wall_clock``, ``step``, ``cpu``...), so a retry knows whether more time
    overall would help."""
    if isinstance(exc, LimitExceeded):
        return ParseError(exc.code, exc.reason, exc.limit)
    if exc.code == "failed":
        return ParseError("corrupt", _DIED, exc.detail)
    if exc.code not in ERROR_CODES:
        return ParseError("corrupt", exc.reason, exc.detail)
    return ParseError(exc.code, exc.reason, exc.detail)
