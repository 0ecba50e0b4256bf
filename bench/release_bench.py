"""Release benchmark: a 10,000-item release made and built end to end, against building it in
memory.

Why it exists: a release's snapshot (one row per item, with where its anchors lie) is written
in the request that makes it (``evalsets.releases.services.release_create``), inside the transaction
that holds the eval set's lock, so its cost is what that request and, on SQLite, every other
writer waits; then a worker streams one file per format from the snapshot
(``release_build``). If either held the whole set, a large set would need a large process.
This measures both on a throwaway SQLite database, and compares the build's seconds and peak
traced memory with the obvious alternative: ``bridge.evalset_to_cg`` over the whole queryset,
then context-grid's ``write_jsonl`` and ``write_csv``.

Run: `.venv/bin/python bench/release_bench.py [--items 10000]`. Seconds come from a pass
without tracing, peak memory from a second pass under `tracemalloc`.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="release-bench-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ["DJANGO_MEDIA_ROOT"] = str(WORK / "media")
os.environ["DJANGO_DEBUG"] = "false"  # DEBUG keeps every SQL query in memory
os.environ.setdefault("DJANGO_SECRET_KEY", "release-bench-only-" + "x" * 40)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

FORMATS = ["contextgrid-jsonl", "contextgrid-csv"]


def setup_database() -> None:
    """Tables straight from the models (no migrations), as the test suite builds them."""
    from django.core.management import call_command

    settings.MIGRATION_MODULES = {
        app: None for app in ("evalsets", "auth", "contenttypes", "sessions", "admin", "authtoken")
    }
    call_command("migrate", run_syncdb=True, verbosity=0)


def seed(count: int):
    from django.contrib.auth import get_user_model

    from evalsets.anchoring import services as anchoring_services
    from evalsets.models import Document, EvalItem, GoldAnchor, ParseVersion
    from evalsets.workspaces import services as workspaces_services

    user = get_user_model().objects.create_user("bench")
    workspace = workspaces_services.workspace_create(user=user, slug="bench")
    evalset = anchoring_services.evalset_create(workspace=workspace, user=user, slug="big")
    sentences = [f"Clause {n}: the party shall notify within {n % 90} days." for n in range(400)]
    text = "\n".join(sentences)
    document = Document.objects.create(
        workspace=workspace, source_id="contract.txt", sha256="0" * 64, size=len(text)
    )
    ParseVersion.objects.create(
        document=document, parser="plaintext", text=text, status="ready", is_reference=True
    )
    items = [
        EvalItem(
            evalset=evalset,
            item_id=f"q{n}",
            question=f"Within how many days must a party notify under clause {n % 400}? ({n})",
            qtype="numeric",
            answer=f"{(n % 400) % 90} days",
            meta={"batch": n // 1000, "tags": ["legal", "notice"]},
            state="approved",
        )
        for n in range(count)
    ]
    EvalItem.objects.bulk_create(items, batch_size=1000)
    anchors = [
        GoldAnchor(item=item, source_id="contract.txt", document=document, quote=sentences[n % 400])
        for n, item in enumerate(EvalItem.objects.order_by("id"))
    ]
    GoldAnchor.objects.bulk_create(anchors, batch_size=1000)
    return user, evalset


def create_release(user, evalset):
    """The request's part: number the release and freeze its snapshot in one transaction."""
    from evalsets.releases import services as releases_services

    release = releases_services.release_create(evalset=evalset, user=user, formats=FORMATS)
    assert release.item_count == evalset.items.filter(state="approved").count()
    return release


def build_release(release) -> None:
    """The worker's part: the files, streamed from the snapshot."""
    from evalsets.releases import services as releases_services

    built = releases_services.release_build(releases_services.release_claim(release.pk))
    assert built.status == "ready", built.error


def build_in_memory(user, evalset) -> None:
    from contextgrid.evalset.io import write_csv, write_jsonl

    from evalsets.releases import bridge

    items = evalset.items.filter(state="approved").prefetch_related("anchors__resolutions")
    whole = bridge.evalset_to_cg(evalset, items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_jsonl(whole, WORK / "whole.jsonl")
        write_csv(whole, WORK / "whole.csv")


def measure(fn, *args, prepare=None) -> tuple[float, float]:
    """Seconds of one pass, then peak traced memory of another; ``prepare()``, when given,
    makes each pass's arguments outside what is measured."""
    gc.collect()
    start = time.perf_counter()
    fn(*(prepare() if prepare else args))
    seconds = time.perf_counter() - start
    arguments = prepare() if prepare else args
    gc.collect()
    tracemalloc.start()
    fn(*arguments)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()

    django.setup()
    setup_database()
    user, evalset = seed(args.items)

    rows = [
        ("release_create (numbered + snapshot frozen)", *measure(create_release, user, evalset)),
        (
            "release_build (files streamed from snapshot)",
            *measure(build_release, prepare=lambda: (create_release(user, evalset),)),
        ),
        ("whole EvalSet in memory + write_jsonl/csv", *measure(build_in_memory, user, evalset)),
    ]
    title = f"build of {args.items} items, {' + '.join(FORMATS)}"
    header = f"{title:<48} {'seconds':>8} {'peak MiB':>9}"
    print(header)
    print("-" * len(header))
    for name, seconds, peak in rows:
        print(f"{name:<48} {seconds:>8.2f} {peak:>9.1f}")


if __name__ == "__main__":
    main()
