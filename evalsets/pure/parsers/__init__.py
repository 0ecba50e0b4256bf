"""Read uploaded documents into text, several ways per document, safely.

Groundwork's evaluation sets compare how different parsers read the same document, so each
upload is read by every parser registered for its kind, and each reading becomes one "parse
version": ``text`` plus ``page_starts`` (the code-point offset where each page begins; ``[0]`` for
unpaged formats). This package is pure Python with no Django import; the app calls it from Celery
tasks, normally through ``parse_isolated`` so a hostile file costs one failed parse, not a worker.

Typical use::

    check_size(len(data), limit_bytes)
    kind = sniff(data, filename)
    for parser in parsers_for(kind):
        try:
            parsed = parse_isolated(parser.name, data, timeout_s=120, memory_mb=1024,
                                    max_pages=2000, progress=on_progress)
        except ParseError as exc:
            save_failure(parser.name, exc.code, exc.reason)

Pages of a PDF are joined with ``PAGE_SEPARATOR`` (a blank line); paragraphs of unpaged formats
with a blank line as well.

A paged parser may also read a range of pages alone (``PageRangeParser``: ``parse_pages`` and
``join_ranges``; ``supports_ranges`` tells), so several workers share one long document:
``parse_isolated(name, data, pages=(start, stop))`` reads one range, and ``join_ranges`` puts
the ranges back together, byte for byte what ``parse`` returns.
"""

from __future__ import annotations

from .base import (
    BLOCK_SEPARATOR,
    DEFAULT_MAX_PAGES,
    ERROR_CODES,
    PAGE_SEPARATOR,
    PageRangeParser,
    ParsedText,
    ParseError,
    Parser,
    ProgressFn,
    check_page_count,
    check_size,
    parse_seconds,
    supports_ranges,
)
from .encoding import decode_text
from .html import html_to_text, sanitize_html
from .registry import (
    DEFAULT_PARSERS,
    DEFAULT_REFERENCE,
    ENTRY_POINT_GROUP,
    PARSERS,
    get_parser,
    kinds_of,
    parsers_for,
    register_plugins,
)
from .runner import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, parse_isolated
from .sniffing import KINDS, describe_content, sniff

__all__ = [
    "BLOCK_SEPARATOR",
    "DEFAULT_MAX_PAGES",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_PARSERS",
    "DEFAULT_REFERENCE",
    "DEFAULT_TIMEOUT_S",
    "ENTRY_POINT_GROUP",
    "ERROR_CODES",
    "KINDS",
    "PAGE_SEPARATOR",
    "PARSERS",
    "PageRangeParser",
    "ParseError",
    "ParsedText",
    "Parser",
    "ProgressFn",
    "check_page_count",
    "check_size",
    "decode_text",
    "describe_content",
    "get_parser",
    "html_to_text",
    "kinds_of",
    "parse_isolated",
    "parse_seconds",
    "parsers_for",
    "register_plugins",
    "sanitize_html",
    "sniff",
    "supports_ranges",
]
