"""Several workers sweeping at once: each document resolved once, or once per worker.

Why it exists: every worker sweeps for lost work when it starts, and a sweep queues
``resolve_document`` for every document with anchors unresolved, without the flag a writer
takes. Four workers started together (a deploy, a host reboot) thus run four tasks per
document at about the same moment. Before the resolving lease each of them resolved every
anchor it found missing, side by side with the others; now the first takes the document's
lease and the others leave at once.

This runs that: ``--workers`` processes, each calling ``resolution.resolve_pending`` for every
document in the same order (what each worker's task does for its sweep's messages), on
PostgreSQL, against a backlog of anchors with no resolution yet. The peer, in the same run on
the same backlog: the same processes with the lease always granted, which is the task as it was
before. Printed: resolutions computed (the tasks' own counts; rows are upserts, so the table
ends with one row per anchor and parse either way), wall time and the processes' CPU time.

Run: ``.venv/bin/python bench/resolve_lease_bench.py [--documents 16] [--anchors 300]
[--workers 4]``. Uses a database ``gw_bench_lease`` of its own, emptied first.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import time

import _services as svc

DATABASE = "gw_bench_lease"
REDIS_DB = 13
WORDS = ["leave", "accrue", "month", "service", "approval", "manager", "remote", "staff"]
WORDS += ["budget", "proposal", "library", "inspection", "council", "travel", "flights"]


def seed(documents: int, anchors: int) -> list[int]:
    """Documents with two ready parses each and ``anchors`` quotes on them (one character
    changed in each, so the resolver does a fuzzy tier's work), none resolved yet."""
    from django.contrib.auth import get_user_model

    from evalsets.models import Document, EvalItem, EvalSet, GoldAnchor, ParseVersion, Workspace

    rng = random.Random(7)
    owner = get_user_model().objects.create_user("owner")
    workspace = Workspace.objects.create(slug="lease", name="Lease")
    evalset = EvalSet.objects.create(workspace=workspace, slug="set", created_by=owner)
    item = EvalItem.objects.create(evalset=evalset, item_id="q", question="What is agreed?")
    ids = []
    for n in range(documents):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(12)) + f" clause {n}-{k}."
            for k in range(anchors * 2)
        ]
        text = " ".join(sentences)
        document = Document.objects.create(
            workspace=workspace, source_id=f"doc-{n}.txt", sha256=f"{n:064x}", kind="txt"
        )
        for parser in ("plaintext", "other"):
            ParseVersion.objects.create(
                document=document, parser=parser, text=text, text_length=len(text), status="ready"
            )
        quotes = rng.sample(sentences, anchors)
        GoldAnchor.objects.bulk_create(
            GoldAnchor(
                item=item,
                source_id=document.source_id,
                document=document,
                quote=q[:20] + ("x" if q[20] != "x" else "y") + q[21:],
            )
            for q in quotes
        )
        ids.append(document.pk)
    return ids


def _worker(ids: list[int], lease: bool, start, out) -> None:
    from django.db import connections

    from evalsets.anchoring import resolution

    connections.close_all()
    if not lease:
        # every task takes the document as if nobody held it: the task before the lease
        resolution._take_resolving = lambda document_id, token: True
        resolution._renew_resolving = lambda document_id, token: True
    start.wait()
    began = time.process_time()
    done = sum(resolution.resolve_pending(pk) for pk in ids)
    out.put((done, time.process_time() - began))


def run(ids: list[int], workers: int, lease: bool) -> tuple[int, float, float, int]:
    from django.db import connections

    from evalsets.models import AnchorResolution

    AnchorResolution.objects.all().delete()
    connections.close_all()
    context = multiprocessing.get_context("fork")
    start, out = context.Barrier(workers + 1), context.Queue()
    processes = [
        context.Process(target=_worker, args=(ids, lease, start, out)) for _ in range(workers)
    ]
    for p in processes:
        p.start()
    start.wait()
    began = time.perf_counter()
    results = [out.get() for _ in processes]
    wall = time.perf_counter() - began
    for p in processes:
        p.join()
    return (
        sum(done for done, _ in results),
        wall,
        sum(cpu for _, cpu in results),
        AnchorResolution.objects.count(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=16)
    parser.add_argument("--anchors", type=int, default=300, help="per document")
    parser.add_argument("--workers", type=int, default=4, help="processes sweeping at once")
    args = parser.parse_args()
    svc.prepare(DATABASE, REDIS_DB)
    ids = seed(args.documents, args.anchors)
    expected = args.documents * args.anchors * 2
    print(
        f"{args.documents} documents x {args.anchors} anchors x 2 ready parses = {expected:,} "
        f"resolutions to make; {args.workers} processes each resolving every document in turn"
    )
    rows = []
    for name, lease in (
        ("with the resolving lease", True),
        ("peer: without it (as before)", False),
    ):
        done, wall, cpu, stored = run(ids, args.workers, lease)
        rows.append([name, done, f"{done / expected:.2f}x", stored, wall, cpu])
    print(
        svc.table(
            ["path", "resolutions computed", "of the work", "rows stored", "wall s", "CPU s"],
            rows,
        )
    )
    print(f"load average after: {svc.load_average()}")


if __name__ == "__main__":
    main()
