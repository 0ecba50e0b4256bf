"""Keeping a disk cache within its byte budget: what goes first, and when to stop.

The PDF view's page images (``pdfview``) and the stored renditions (``renditions``) are
caches of things a worker can draw again. Each lists what it holds; this module decides what
to delete: the least recently read first, until what is left fits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Entry = TypeVar("Entry")


def evict_least_recent(
    stored: Iterable[tuple[float, int, Entry]],
    total: int,
    target: int,
    remove: Callable[[Entry], bool],
) -> int:
    """Remove entries, least recently read first, until ``total`` less what was freed is at
    most ``target``; the bytes freed.

    ``stored`` holds ``(last read, bytes, entry)``; ``total`` may count more than ``stored``
    (an entry that must stay). ``remove`` returns whether it removed the entry: one another
    process removed first frees nothing here, so the next one goes instead.
    """
    freed = 0
    for _, size, entry in sorted(stored, key=lambda item: (item[0], item[1])):
        if total - freed <= target:
            break
        if remove(entry):
            freed += size
    return freed
