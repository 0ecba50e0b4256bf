"""Capacity: CPU time per unit of work, by process, on PostgreSQL + Redis; the cores a rate needs.

Why it exists: a scale target (500 anchors a second on 3 parses) cannot be run on a 2-core
machine, but it can be computed from what one unit of each kind of work costs, measured as
CPU time (not wall time: the machine is shared) of the process that does it, and any machine
can check the figures by running this. Units:

- an anchor created (web): anchors created over HTTP through gunicorn (one process, the
  production line of docs/deployment.md) by a few client threads, no worker running; CPU of
  the gunicorn process tree and of the database's PostgreSQL backends, divided by anchors;
- an anchor resolved in one parse (worker): every anchor's resolution queued from scratch
  (``resolve_document`` per document) to one Celery worker that has resolved them all once
  already (so it holds the parses prepared, as a worker in steady state does); CPU of the
  worker's process tree and of PostgreSQL, divided by the resolution rows written (anchors
  x parses);
- the drain rate with 2 worker processes against 1 (the peer, in the same run): the same
  backlog, warm workers, rows written per second between the first and the last row's
  ``updated_at`` (so the workers' start-up is not counted);
- a PDF page parsed, per parser: one PDF parsed by one worker in one task
  (``parse_scaling_bench.timed_parse``); the parser child processes' CPU (their start-up
  included), divided by pages;
- a release item written: a release of ``--release-items`` approved items, one anchor each
  (``release_bench.seed``), its snapshot made (``release_create``, the request's part) and its
  files built (``release_build``, the worker's part, run in this process); this process's
  CPU and its PostgreSQL backend's, divided by items.

From them it prints the cores a rate needs: web = rate x web CPU per create, workers = rate x
parses x worker CPU per anchor per parse, PostgreSQL the sum of both its shares.

Run: ``.venv/bin/python bench/capacity_bench.py [--anchors 1500] [--documents 6] [--pages 40]
[--pdf-pages 60] [--release-items 2000] [--rate 500] [--parses 3] [--only creates]``
(``--only creates``: the anchor-create row alone). Uses a database
``gw_bench_capacity`` of its own and Redis db 14 (``--database``, ``--redis-db``), both
emptied first; everything on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import _services as svc
import requests
from parse_scaling_bench import make_long_pdf, timed_parse, wait_for_workers
from release_bench import build_release, create_release
from release_bench import seed as seed_release
from sustained_bench import SET, WS, make_plan
from sustained_bench import seed as seed_anchors

DATABASE = "gw_bench_capacity"
REDIS_DB = 14
PDF_PARSERS = ("pypdf", "pdfminer", "pdfium")


def server_cpu(database: str) -> float:
    """CPU seconds so far of the database's PostgreSQL backends (live ones)."""
    table = svc._process_table()
    return sum(
        table[pid][1]
        for pid, label in svc._servers(database).items()
        if label.startswith("PostgreSQL") and pid in table
    )


def create_anchors(base: str, seeded: dict, plan: list, clients: int = 4) -> int:
    """Create the plan's anchors over HTTP, ``clients`` at a time; how many answered 201."""
    api = f"{base}/api/workspaces/{WS}/evalsets/{SET}/items"
    sessions = threading.local()
    created = []

    def create(step) -> None:
        u, item, body = step
        if not hasattr(sessions, "http"):
            sessions.http = requests.Session()
        answer = sessions.http.post(
            f"{api}/{item}/anchors/",
            json=body,
            headers={"Authorization": f"Token {seeded['people'][u]['token']}"},
            timeout=60,
        )
        if answer.status_code == 201:
            created.append(1)

    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(create, plan))
    return len(created)


def resolutions() -> tuple[int, float]:
    """Resolution rows written, and the seconds between the first and the last."""
    from django.db.models import Max, Min

    from evalsets.models import AnchorResolution

    found = AnchorResolution.objects.aggregate(Min("updated_at"), Max("updated_at"))
    count = AnchorResolution.objects.count()
    if not count:
        return 0, 0.0
    return count, (found["updated_at__max"] - found["updated_at__min"]).total_seconds()


def expected_rows() -> int:
    from evalsets.models import GoldAnchor, ParseVersion

    per_document = {
        d: ParseVersion.objects.filter(document=d, status="ready").count()
        for d in GoldAnchor.objects.values_list("document", flat=True).distinct()
    }
    return sum(per_document[d] for d in GoldAnchor.objects.values_list("document", flat=True))


def resolve_everything(database: str) -> None:
    """Queue every document's resolution from scratch and wait until every anchor has a row
    in every ready parse of its document."""
    from evalsets import queue
    from evalsets.models import AnchorResolution, Document

    AnchorResolution.objects.all().delete()
    want = expected_rows()
    for document in Document.objects.filter(workspace__slug=WS).exclude(anchors=None):
        queue.send("resolve_document", document.pk)
    deadline = time.monotonic() + 1800
    while AnchorResolution.objects.count() < want:
        if time.monotonic() > deadline:
            raise RuntimeError("the backlog did not drain within 30 minutes")
        time.sleep(0.5)


def drain(env: dict, workers: int, database: str) -> dict:
    """``workers`` workers resolve every anchor once to warm up (each has then prepared the
    parses it reads, as a worker in steady state has), then again from scratch, measured:
    their CPU and PostgreSQL's over the second pass, its rows and their span."""
    svc.empty_broker(int(env["CELERY_BROKER_URL"].rsplit("/", 1)[1]))
    with svc.Stack(env) as stack:
        stack.celery_workers(workers)
        wait_for_workers(workers)
        resolve_everything(database)
        cpu0, pg0 = stack.cpu_seconds("workers"), server_cpu(database)
        resolve_everything(database)
        cpu, pg = stack.cpu_seconds("workers") - cpu0, server_cpu(database) - pg0
    rows, span = resolutions()
    return {"rows": rows, "span": span, "cpu": cpu, "pg": pg}


def measure_creates(env: dict, seeded: dict, args) -> dict:
    plan = make_plan(seeded, args.anchors + 20)
    with svc.Stack(env) as stack:
        base = stack.gunicorn(workers=1)
        create_anchors(base, seeded, plan[:20])  # warm: the parse's text read once
        web0, pg0 = stack.cpu_seconds("web"), server_cpu(args.database)
        started = time.monotonic()
        made = create_anchors(base, seeded, plan[20:])
        wall = time.monotonic() - started
        web, pg = stack.cpu_seconds("web") - web0, server_cpu(args.database) - pg0
    return {"made": made, "web": web / made, "pg": pg / made, "wall": wall}


def measure_pdf_pages(env: dict, args) -> dict[str, float]:
    from django.core.files.base import ContentFile

    from evalsets.models import Document, Workspace

    data = make_long_pdf(args.pdf_pages)
    document = Document(
        workspace=Workspace.objects.get(slug=WS),
        source_id="capacity.pdf",
        kind="pdf",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    document.file.save("capacity.pdf", ContentFile(data), save=False)
    document.save()
    per_page = {}
    for parser in PDF_PARSERS:
        _seconds, cpu, _parse = timed_parse(env, document, parser, "capacity", 1, 0)
        per_page[parser] = cpu / args.pdf_pages
    return per_page


def measure_release(args) -> dict:
    from django.db import connection

    user, evalset = seed_release(args.release_items)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]

    def cpu() -> tuple[float, float]:
        table = svc._process_table()
        return time.process_time(), table[backend][1]

    c0, p0 = cpu()
    release = create_release(user, evalset)
    c1, p1 = cpu()
    build_release(release)
    c2, p2 = cpu()
    items = args.release_items
    return {
        "snapshot": (c1 - c0) / items,
        "snapshot_pg": (p1 - p0) / items,
        "build": (c2 - c1) / items,
        "build_pg": (p2 - p1) / items,
    }


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def report_creates(creates: dict, args) -> None:
    print(
        f"\nanchor created (HTTP), web (gunicorn): {ms(creates['web'])} ms of CPU each, "
        f"PostgreSQL {ms(creates['pg'])} ms; {creates['made']:,} creates by 4 HTTP clients in "
        f"{creates['wall']:.1f} s; load average now {svc.load_average()}"
    )


def report(creates: dict, one: dict, two: dict, pages: dict, release: dict, args) -> None:
    per_resolution = one["cpu"] / one["rows"]
    pg_resolution = one["pg"] / one["rows"]
    rate1, rate2 = one["rows"] / max(one["span"], 1e-9), two["rows"] / max(two["span"], 1e-9)
    print("\nCPU per unit of work (ms of one core), by the process that does it")
    rows = [
        ["anchor created (HTTP)", "web (gunicorn)", ms(creates["web"]), ms(creates["pg"])],
        ["anchor resolved in 1 parse", "worker", ms(per_resolution), ms(pg_resolution)],
        *(
            [f"PDF page parsed ({parser})", "worker (parser child)", ms(cpu), "-"]
            for parser, cpu in pages.items()
        ),
        [
            "release item: snapshot",
            "web (the request)",
            ms(release["snapshot"]),
            ms(release["snapshot_pg"]),
        ],
        ["release item: file written", "worker", ms(release["build"]), ms(release["build_pg"])],
    ]
    print(svc.table(["unit", "process", "process ms", "PostgreSQL ms"], rows))
    print(
        f"\nmethod: CPU time (utime+stime of each process tree, from /proc) over "
        f"{creates['made']:,} creates by 4 HTTP clients, {one['rows']:,} resolution rows by "
        f"1 worker, {args.pdf_pages}-page PDFs in one task, {args.release_items:,} release "
        f"items; load average now {svc.load_average()}"
    )
    print("\nDrain rate of the same backlog (resolution rows a second, first to last row)")
    print(
        svc.table(
            ["workers", "rows", "seconds", "rows/s", "vs 1 worker"],
            [
                [1, one["rows"], one["span"], rate1, "1.00x"],
                [2, two["rows"], two["span"], rate2, f"{rate2 / rate1:.2f}x"],
            ],
        )
    )
    web_cores = args.rate * creates["web"]
    worker_cores = args.rate * args.parses * per_resolution
    pg_cores = args.rate * (creates["pg"] + args.parses * pg_resolution)
    print(
        f"\n{args.rate} anchors/s on {args.parses} parses needs: web {web_cores:.1f} cores, "
        f"workers {worker_cores:.1f} cores, PostgreSQL {pg_cores:.1f} cores "
        f"(rate x CPU per unit; before any headroom)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--anchors", type=int, default=1500, help="anchors created")
    parser.add_argument("--documents", type=int, default=6)
    parser.add_argument("--pages", type=int, default=40, help="pages of each document")
    parser.add_argument("--page-chars", type=int, default=2000)
    parser.add_argument("--pdf-pages", type=int, default=60)
    parser.add_argument("--release-items", type=int, default=2000)
    parser.add_argument("--rate", type=int, default=500, help="anchors a second to size for")
    parser.add_argument("--parses", type=int, default=3, help="parses each anchor resolves in")
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--redis-db", type=int, default=REDIS_DB)
    parser.add_argument(
        "--only",
        choices=["creates"],
        help="measure only this unit (creates: the anchor-create row, a minute instead of many)",
    )
    args = parser.parse_args()
    args.side_pages, args.users, args.items_per_user = 1, 8, 50
    env = svc.prepare(args.database, args.redis_db)
    seeded = seed_anchors(args)
    creates = measure_creates(env, seeded, args)
    if args.only == "creates":
        svc.empty_broker(args.redis_db)
        report_creates(creates, args)
        return
    one = drain(env, 1, args.database)
    two = drain(env, 2, args.database)
    pages = measure_pdf_pages(env, args)
    release = measure_release(args)
    svc.empty_broker(args.redis_db)
    report(creates, one, two, pages, release, args)


if __name__ == "__main__":
    os.chdir(svc.ROOT)
    main()
