"""The parse-scaling schedule played on paper: how long one long PDF takes on 1-4 workers.

Why it exists: on a shared machine the wall clock of ``parse_scaling_bench.py`` says more
about the other engineers' load than about the ranges, so the range size and shapes were
chosen with this model, from costs measured per range (the record in ``git show
b7b8f47:bench/README.md``, "Where pdfminer.six's ranges lost time"): each range costs a
start-up (``FIX`` s: a child process, imports, opening the file) plus its pages (``PAGE`` s
each); the first range starts at
once, the other workers ``DELTA`` s later (once the first child has counted the pages);
workers take ranges in order as they come free; the last one joins (``JOIN`` s). The
single task is one start-up plus every page. No other load, no CPU lost to two busy cores.

Run: ``.venv/bin/python bench/parse_scaling_model.py`` (pdfminer.six's costs), or e.g.
``PAGE=0.009 FIX=0.19 JOIN=0.3 .venv/bin/python bench/parse_scaling_model.py`` (pdfium's).
"""

from __future__ import annotations

import heapq
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PAGES = int(os.environ.get("PAGES", 1000))
PAGE = float(os.environ.get("PAGE", 0.025))
FIX = float(os.environ.get("FIX", 0.2))
DELTA = float(os.environ.get("DELTA", 0.3))
JOIN = float(os.environ.get("JOIN", 0.2))


def finish(sizes: list[int], workers: int) -> float:
    """When the last range is read and joined, ranges taken in order by free workers."""
    free = [0.0] + [DELTA] * (workers - 1)
    heapq.heapify(free)
    end = 0.0
    for size in sizes:
        done = heapq.heappop(free) + FIX + size * PAGE
        end = max(end, done)
        heapq.heappush(free, done)
    return end + JOIN


def main() -> int:
    from evalsets.documents.ingest import range_bounds

    single = FIX + PAGES * PAGE
    print(f"{PAGES} pages, {PAGE * 1000:g} ms a page, {FIX:g} s a start-up: ", end="")
    print(f"single task {single:.1f} s")
    print(f"{'range':>5}  {'ranges':>6}  {'shape':9}  speed-up with 1 / 2 / 3 / 4 workers")
    for span in (100, 125, 150, 200, 250, 334, 500):
        equal = [min(span, PAGES - a) for a in range(0, PAGES, span)]
        shrinking = [(stop or PAGES) - start for start, stop in range_bounds(PAGES, span)]
        for shape, sizes in (("equal", equal), ("shrinking", shrinking)):
            ups = " / ".join(f"{single / finish(sizes, w):.2f}x" for w in (1, 2, 3, 4))
            print(f"{span:>5}  {len(sizes):>6}  {shape:9}  {ups}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
    import django

    django.setup()
    sys.exit(main())
