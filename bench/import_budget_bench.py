"""Import budget benchmark: what hostile import files cost the readers and the planner.

Why it exists: a preview runs in a web process, so its cost must follow the file's useful
content and stop at the import budget (``ReadBudget``), not grow with the ways a file can be
wrong. Each row reads one crafted file (a few hundred bytes to a few KB zipped) with the
default budget and reports the CPU time, the peak traced memory, how many problems were
kept and why reading stopped. A last row plans one item of many anchors (the planner once
compared every pair).

Run: `.venv/bin/python bench/import_budget_bench.py`. CPU time is measured in a pass without
tracing, peak memory in a second pass under `tracemalloc`. Each file is read twice: with the
default budget, and by its peer, the same reader with no budget (as readers were before one
existed: about a minute and 1-2 GB of memory in all); `--no-peer` leaves the peer out.
"""

from __future__ import annotations

import io
import os
import sys
import time
import tracemalloc
import zipfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")

import django

django.setup()

import contextgrid as cg  # noqa: E402

from evalsets.pure.formats import BudgetExceeded, ReadBudget, get_format  # noqa: E402
from evalsets.releases import imports  # noqa: E402


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _cases() -> list[tuple[str, str, str, bytes]]:
    one_query = b'{"_id": "q", "text": "Why?"}\n'
    return [
        (
            "beir",
            "bad.zip",
            "BEIR, 3.9M lines that are not JSON",
            _zip({"queries.jsonl": b"x\n" * 3_900_000, "qrels/test.tsv": b"q\td\t1\n"}),
        ),
        (
            "beir",
            "unknown.zip",
            "BEIR, 1.2M judgements of unknown queries",
            _zip({"queries.jsonl": one_query, "qrels/test.tsv": b"z\td\t1\n" * 1_200_000}),
        ),
        ("contextgrid-jsonl", "bad.jsonl", "JSONL, 1M lines of {}", b"{}\n" * 1_000_000),
        (
            "contextgrid-csv",
            "bad.csv",
            "CSV, 1M rows without a question",
            b"question\n" + b",\n" * 1_000_000,
        ),
        (
            "contextgrid-csv",
            "ok.csv",
            "CSV, 40,000 good rows (read whole)",
            b"question\n" + b"Why?\n" * 40_000,
        ),
    ]


#: The peer: the same readers with no budget to stop them, as they read before there was one.
UNBOUNDED = ReadBudget(max_problems=10**12, max_lines=10**12, max_items=10**12)


def _read(slug: str, name: str, data: bytes, budget: ReadBudget) -> tuple[int, str]:
    try:
        result = get_format(slug).reader(data, filename=name, documents={}, budget=budget)
        return len(result.problems), f"read whole ({len(result.items):,} items)"
    except BudgetExceeded as exc:
        return len(exc.result.problems), f"stopped: {exc.limit} at line {exc.line:,}"


def _measure(run: Callable[[], object]) -> tuple[float, float, object]:
    started = time.process_time()
    out = run()
    cpu = time.process_time() - started
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return cpu, peak / 2**20, out


class _NoParse(imports.Evidence):
    def _reference(self, source_id):
        return None


def _plan(count: int) -> str:
    anchors = [cg.GoldAnchor("doc.txt", f"quote number {i}") for i in range(count)]
    added, _ = imports._plan_anchors(
        anchors, [], imports.CARRIES["contextgrid-jsonl"], _NoParse(workspace=None)
    )
    return f"{len(added):,} anchors kept"


def main() -> None:
    peer = "--no-peer" not in sys.argv[1:]
    print("| file | zipped/sent | reader | CPU s | peak MB | problems kept | outcome |")
    print("|---|---:|---|---:|---:|---:|---|")
    for slug, name, what, data in _cases():
        budgets = [("budget", ReadBudget())] + ([("no budget", UNBOUNDED)] if peer else [])
        for label, budget in budgets:
            cpu, peak, (kept, outcome) = _measure(partial(_read, slug, name, data, budget))
            print(
                f"| {what} | {len(data):,} B | {label} | {cpu:.2f} | {peak:.1f} | {kept:,} "
                f"| {outcome} |"
            )
    cpu, peak, outcome = _measure(partial(_plan, 40_000))
    print(f"| plan one item of 40,000 anchors | - | - | {cpu:.2f} | {peak:.1f} | - | {outcome} |")


if __name__ == "__main__":
    main()
