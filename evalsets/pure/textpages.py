"""Which page of a parse's text an offset lies on: one definition for every caller.

A parse version keeps ``page_starts``, where ``page_starts[i]`` is the code-point offset at
which page ``i + 1`` begins (context-grid counts pages from 1, and page hints name pages that
way). Highlights record a page hint with it, the resolver reports the page of each span, the
search reports the page of each hit and the comparison panel the page of each parse's span:
when these counted pages differently, an anchor highlighted on an unpaged document carried
page hint 1 while its resolutions said they had no page. So the rule lives here, once:

- Pages count from 1. An offset lies on the last page that begins at or before it; an
  offset at a page's start is on that page.
- No page starts (``None`` or ``[]``, what an unpaged or not yet parsed text has) means one
  page: the whole text is page 1, as ``[0]`` says.
- An offset before the first page's start (a negative one) is on page 1, and one at or past
  the text's end is on the last page: the answer is always a page the text has.

Pure Python with no Django import, so the resolver and the text search use it alone.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

__all__ = ["page_begin", "page_begins", "page_of"]


def page_of(page_starts: Sequence[int] | None, offset: int) -> int:
    """The page (from 1) holding ``offset``; 1 when the text has no page starts."""
    if not page_starts:
        return 1
    return max(1, bisect_right(page_starts, offset))


def page_begins(page_starts: Sequence[int] | None) -> list[int]:
    """Where each page begins: ``page_starts``, or ``[0]`` (one page) when there are none."""
    return list(page_starts) if page_starts else [0]


def page_begin(page_starts: Sequence[int] | None, offset: int) -> int:
    """Where the page holding ``offset`` begins; 0 when the text has no page starts."""
    if not page_starts:
        return 0
    return page_starts[page_of(page_starts, offset) - 1]
