"""The parse job ``parse_isolated`` runs in a limited child (``limited.run_limited``).

It runs one parser over the document's bytes (or one range of its pages, see
``base.PageRangeParser``) and answers the ``ParsedText`` as UTF-8 JSON. A parser's own
``ParseError`` travels as a ``JobError`` with the same code and reason; anything else a parser
raises on a damaged file becomes ``corrupt`` with a sentence a labeller can act on.
"""

from __future__ import annotations

import json

from .base import ParseError, error_detail
from .limited import JobError, limited_job, report_progress
from .registry import get_parser

GENERIC_FAILURE = (
    "This file could not be read; it may be damaged or use features the parser does not "
    "support. Try saving or exporting it again."
)


@limited_job
def parse_job(
    payload: bytes,
    *,
    parser: str,
    max_pages: int,
    start: int | None = None,
    stop: int | None = None,
) -> bytes:
    """``payload`` parsed by the parser named ``parser``, as JSON of its ``ParsedText``."""
    try:
        chosen = get_parser(parser)
        if start is None:
            result = chosen.parse(payload, max_pages=max_pages, progress=report_progress)
        else:
            result = chosen.parse_pages(
                payload, start=start, stop=stop, max_pages=max_pages, progress=report_progress
            )
    except ParseError as exc:
        raise JobError(exc.code, exc.reason, exc.detail) from None
    except MemoryError:
        raise  # the limited child answers it as out of memory
    except Exception as exc:  # RecursionError included: a damaged file, not a programming error
        raise JobError("corrupt", GENERIC_FAILURE, error_detail(exc)) from None
    return json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8", "surrogatepass")
