"""Resolution throughput: 100,000 anchors over 1,000 documents x 3 parses, end to end.

Why it exists: after a resolver upgrade an owner re-resolves a whole workspace, and a new
parser run re-resolves every anchor of each document it reads. This measures how fast the
real path does that on this 2-core machine -- ``resolve_workspace`` queues one
``resolve_parse`` task per parse on Redis, two Celery worker processes resolve and upsert
into PostgreSQL -- timed until every anchor x parse ``AnchorResolution`` row exists. The
peer, in the same run: the pure resolver (``evalsets.pure.resolver``) alone, in this process, on
the same texts and anchors (one core, no database, no broker), so the gap is what the
database, the broker and the task machinery cost.

It also times the sweep's query for parses missing resolutions (run at every worker start)
once all rows exist, written as it was (two joined ``Count``s) and as it is (two counting
subqueries).

Run: ``.venv/bin/python bench/resolve_throughput_bench.py [--documents 1000]
[--anchors-per-document 100]``. Seeding goes straight through the ORM (bulk inserts), before
the clock starts. Uses a database ``gw_bench_resolve`` of its own and Redis db 12, both
emptied first; everything on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import random
import time

import _services as svc
from load_bench import PARSERS, page_sentences, seed_parses

DATABASE = "gw_bench_resolve"
REDIS_DB = 12


def seed(args) -> tuple[int, list[tuple[str, list[int], list[dict]]]]:
    """Documents, parses and anchors; returns the workspace id and, for the peer, each
    parse's text, page starts and the anchors on its document."""
    from django.contrib.auth import get_user_model

    from evalsets.models import (
        Document,
        EvalItem,
        EvalSet,
        GoldAnchor,
        Membership,
        Workspace,
    )

    rng = random.Random(100)
    owner = get_user_model().objects.create_user("owner")
    workspace = Workspace.objects.create(slug="throughput", name="Throughput")
    Membership.objects.create(workspace=workspace, user=owner, role="owner")
    evalset = EvalSet.objects.create(workspace=workspace, slug="big", created_by=owner)
    work: list[tuple[str, list[int], list[dict]]] = []
    per_item = 10
    for n in range(1, args.documents + 1):
        by_page = [page_sentences(rng, n, p + 1, args.page_chars) for p in range(args.pages)]
        document = Document.objects.create(
            workspace=workspace, source_id=f"doc-{n:05}.pdf", sha256=f"{n:064x}", kind="pdf"
        )
        parses = seed_parses(document, by_page)
        reference = parses[0]
        spans = []
        for p, sentences in enumerate(by_page):
            offset = reference.page_starts[p]
            for sentence in sentences:
                spans.append((p + 1, offset, offset + len(sentence)))
                offset += len(sentence) + 1
        chosen = rng.sample(spans, args.anchors_per_document)
        items = EvalItem.objects.bulk_create(
            EvalItem(evalset=evalset, item_id=f"d{n}-q{k}", question=f"Question {k} on {n}?")
            for k in range(0, len(chosen), per_item)
        )
        anchors = []
        for k, (page, a, b) in enumerate(chosen):
            anchors.append(
                GoldAnchor(
                    item=items[k // per_item],
                    source_id=document.source_id,
                    document=document,
                    quote=reference.text[a:b],
                    page_hint=page,
                    reference_parse=reference,
                    ref_start=a,
                    ref_end=b,
                    prefix=reference.text[max(0, a - 32) : a],
                    suffix=reference.text[b : b + 32],
                )
            )
        GoldAnchor.objects.bulk_create(anchors, batch_size=1000)
        fields = [
            {"quote": x.quote, "page_hint": x.page_hint, "prefix": x.prefix, "suffix": x.suffix}
            for x in anchors
        ]
        work.extend((p.text, p.page_starts, fields) for p in parses)
        if n % 100 == 0:
            print(f"  seeded {n} documents", flush=True)
    return workspace.pk, work


def resolver_alone(work) -> tuple[int, float]:
    from evalsets.pure import resolver

    done = 0
    started = time.perf_counter()
    for text, page_starts, anchors in work:
        prepared = resolver.prepare(text, page_starts=page_starts or [0])
        for a in anchors:
            prepared.resolve(
                a["quote"],
                occurrence=0,
                page_hint=a["page_hint"],
                prefix=a["prefix"],
                suffix=a["suffix"],
            )
            done += 1
    return done, time.perf_counter() - started


def end_to_end(workspace_id: int, expected: int) -> tuple[float, dict]:
    from django.db.models import Count

    from evalsets.anchoring import tasks as anchoring_tasks
    from evalsets.models import AnchorResolution

    started = time.perf_counter()
    anchoring_tasks.resolve_workspace.delay(workspace_id)
    last_report = started
    while True:
        rows = AnchorResolution.objects.count()
        now = time.perf_counter()
        if rows >= expected:
            break
        if now - last_report >= 15:
            print(f"  {rows:,} of {expected:,} rows after {now - started:.0f} s", flush=True)
            last_report = now
        if now - started > 3 * 3600:
            raise RuntimeError(f"only {rows:,} of {expected:,} rows after 3 hours")
        time.sleep(0.25)
    elapsed = time.perf_counter() - started
    statuses = dict(
        AnchorResolution.objects.values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    return elapsed, statuses


def sweep_query_times() -> list[list]:
    from django.db import connection
    from django.db.models import Count, F, Q

    from evalsets import sweep
    from evalsets.models import ParseStatus, ParseVersion

    def old() -> list[int]:
        ready = (
            ParseVersion.objects.filter(status=ParseStatus.READY)
            .annotate(rows=Count("resolutions", distinct=True))
            .annotate(
                anchors=Count(
                    "document__anchors", filter=Q(document__anchors__isnull=False), distinct=True
                )
            )
            .filter(rows__lt=F("anchors"))
        )
        return list(ready.values_list("pk", flat=True))

    out = []
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = '600s'")
    for label, query in (
        ("two joined Counts (before)", old),
        ("two counting subqueries (now)", sweep.parses_missing_resolutions),
    ):
        started = time.perf_counter()
        found = query()
        out.append([label, len(found), (time.perf_counter() - started) * 1000])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--anchors-per-document", type=int, default=100)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--page-chars", type=int, default=1600)
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--skip-sweep-query", action="store_true")
    args = parser.parse_args()

    env = svc.prepare(DATABASE, REDIS_DB)
    with svc.Stack(env) as stack:
        # Workers first, so the sweep each runs at start finds an empty database and queues
        # nothing: every resolution below comes from the one resolve_workspace task.
        stack.celery_workers(args.workers)
        started = time.perf_counter()
        workspace_id, work = seed(args)
        anchors = args.documents * args.anchors_per_document
        expected = anchors * len(PARSERS)
        text_mb = sum(len(text) for text, _, _ in work) / 1e6
        print(f"seeded {anchors:,} anchors in {time.perf_counter() - started:.0f} s", flush=True)

        print("resolver alone, in this process (workers idle) ...", flush=True)
        done, alone_s = resolver_alone(work)
        print(f"end to end through {args.workers} Celery workers ...", flush=True)
        e2e_s, statuses = end_to_end(workspace_id, expected)
    sweep_rows = [] if args.skip_sweep_query else sweep_query_times()

    print()
    print(
        f"{anchors:,} anchors over {args.documents:,} documents x {len(PARSERS)} parses "
        f"= {expected:,} resolutions; {text_mb:.0f} MB of parse text"
    )
    print(
        svc.table(
            ["path", "resolutions", "seconds", "resolutions/s", "anchors/s (all 3 parses)"],
            [
                [
                    f"end to end: resolve_workspace -> {args.workers} workers -> PostgreSQL",
                    expected,
                    e2e_s,
                    expected / e2e_s,
                    anchors / e2e_s,
                ],
                [
                    "peer: evalsets.pure.resolver alone, 1 process, no database",
                    done,
                    alone_s,
                    done / alone_s,
                    done / len(PARSERS) / alone_s,
                ],
            ],
        )
    )
    print(f"  statuses: {statuses}")
    print(f"  load average after: {svc.load_average()}")
    if sweep_rows:
        print()
        print(f"sweep: find ready parses missing resolutions ({len(work):,} parses, all resolved)")
        print(svc.table(["query", "parses found", "ms"], sweep_rows))


if __name__ == "__main__":
    main()
