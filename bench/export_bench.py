"""Export benchmark: 10,000 items streamed with bounded memory, against a build-it-all baseline.

Why it exists: the Django side exports eval sets from a queryset iterator straight into an
HTTP response, so a writer that collected the whole file (or the whole set) first would make
memory grow with the set. This runs every streaming writer in `evalsets.pure.formats` over a
generator of 10,000 items and compares items/s and peak traced memory with context-grid's
`write_jsonl` / `write_csv`, which need the whole `EvalSet` built in memory first.

Run: `.venv/bin/python bench/export_bench.py [--items 10000]`. Throughput is measured in a
pass without tracing; peak memory in a second pass under `tracemalloc` (which slows Python
down, so the two are taken separately). The document texts are built before either pass: they
are the caller's data, not the writer's.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from contextgrid.core.evalset import EvalItem, EvalSet, GoldAnchor
from contextgrid.evalset.io import write_csv, write_jsonl

from evalsets.pure.formats import FORMATS, EvalSetHeader

DOCUMENT_COUNT = 200
SENTENCES_PER_DOCUMENT = 40


class CountingSink:
    """A write-only binary sink that keeps nothing but a byte count, like a network socket."""

    def __init__(self) -> None:
        self.bytes = 0

    def write(self, data: bytes) -> int:
        self.bytes += len(data)
        return len(data)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        return None


def _sentence(doc: int, n: int) -> str:
    return f"Clause {n} of contract {doc} says the supplier delivers {n * 7 % 90} units per week."


def make_documents() -> dict[str, str]:
    return {
        f"contract-{d:03d}.txt": "\n\n".join(
            " ".join(_sentence(d, n + k) for k in range(3)) for n in range(SENTENCES_PER_DOCUMENT)
        )
        for d in range(DOCUMENT_COUNT)
    }


def make_items(count: int) -> Iterator[EvalItem]:
    """Items generated one at a time, as a queryset iterator would yield them."""
    for i in range(count):
        doc, n = i % DOCUMENT_COUNT, i % SENTENCES_PER_DOCUMENT
        anchors = (GoldAnchor(f"contract-{doc:03d}.txt", _sentence(doc, n)),)
        if i % 5 == 0:
            anchors += (GoldAnchor(f"contract-{(doc + 1) % DOCUMENT_COUNT:03d}.txt", "units"),)
        yield EvalItem(
            id=f"q{i:05d}",
            question=f"How many units per week does contract {doc} clause {n} promise? ({i})",
            anchors=anchors if i % 50 else (),
            answer=f"{n * 7 % 90} units",
            meta={"reviewed": i % 3 == 0, "filters": {"contract": str(doc)}},
        )


def streamed(slug: str, count: int, documents: dict[str, str]) -> Callable[[], int]:
    def run() -> int:
        sink = CountingSink()
        header = EvalSetHeader(id="bench", source="bench")
        FORMATS[slug].writer(header, make_items(count), sink, documents=documents)  # type: ignore[misc]
        return sink.bytes

    return run


def baseline(writer: Callable[[EvalSet, Path], Path], count: int, tmp: Path) -> Callable[[], int]:
    def run() -> int:
        evalset = EvalSet(id="bench", items=tuple(make_items(count)), source="bench")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = writer(evalset, tmp / "baseline.out")
        return path.stat().st_size

    return run


def measure(run: Callable[[], int]) -> tuple[float, float, int]:
    gc.collect()
    started = time.perf_counter()
    size = run()
    seconds = time.perf_counter() - started

    gc.collect()
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / (1 << 20), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    documents = make_documents()

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        cases: list[tuple[str, Callable[[], int]]] = [
            (f"streamed {slug}", streamed(slug, args.items, documents))
            for slug, fmt in FORMATS.items()
            if fmt.writer is not None
        ]
        cases += [
            ("baseline contextgrid write_jsonl", baseline(write_jsonl, args.items, tmp)),
            ("baseline contextgrid write_csv", baseline(write_csv, args.items, tmp)),
        ]

        print(
            f"{args.items:,} items, {DOCUMENT_COUNT} documents "
            f"({sum(map(len, documents.values())) / 1e6:.1f} M characters of text)\n"
        )
        header = f"{'export':<36} {'seconds':>8} {'items/s':>10} {'peak MiB':>9} {'output MB':>10}"
        print(header)
        print("-" * len(header))
        for name, run in cases:
            seconds, peak, size = measure(run)
            print(
                f"{name:<36} {seconds:>8.2f} {args.items / seconds:>10,.0f} "
                f"{peak:>9.2f} {size / 1e6:>10.2f}"
            )


if __name__ == "__main__":
    main()
