"""Long documents: a new highlight on a 1,000-page PDF, from save to resolved in every parse.

Why it exists: a highlight on a 1,000-page PDF took 8.4-10.9 s to show as resolved in every
parse (0.7-1.2 s on small documents), the worker spending 6.3-8.4 s on one anchor: each
of the three parses (4.2 M characters each) was folded and indexed again for every anchor
when they did not fit the resolver's cache together (``GROUNDWORK_RESOLVER_CACHE_MB``,
``evalsets.anchoring.resolution.prepared_parses``). The highlight itself shows at once (the
create answers with it, placed in the reference); this measures what follows.

It starts the stack on 127.0.0.1 (a database ``gw_bench_long_document`` of its own, created
afresh; Redis db 6, emptied; production settings; gunicorn with 2 processes and one Celery
worker of 2 processes reading every queue, as ``make run``'s parse and resolve workers
together), uploads through the API a 1,000-page PDF of dense prose
(``bench/parse_scaling_bench.py``'s, cached in ``bench/.cache``) and, in the same run, a
10-page PDF of the same prose (the peer), each read by the three default PDF parsers
(pypdf, the reference; pdfminer.six; pdfium). Then, one anchor at a time on each document,
it creates a highlight of one sentence or two on a random page through the API and waits
until every parse has its resolution row:

- **save**: the create request (its answer carries the highlight, drawn at once);
- **resolved**: from sending the create until the last parse's row is written (polled every
  20 ms); the first anchor of a document pays for folding its parses (once per worker
  process), the others should not;
- **worker CPU**: the Celery worker's processor time (all its processes) over that span.

Run: ``.venv/bin/python bench/long_document_bench.py [--pages 1000] [--small-pages 10]
[--anchors 8] [--database NAME] [--redis-db N]``. The machine may be shared: the load average
is printed before and after, and CPU time is printed beside wall time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

import _services as svc
import requests
from parse_scaling_bench import make_long_pdf

DATABASE = "gw_bench_long_document"
REDIS_DB = 6
WS = "bench"
PASSWORD = "bench-password-1"
PARSERS = 3  # pypdf, pdfminer.six and pdfium: the default PDF parsers


def seed() -> None:
    from django.contrib.auth import get_user_model

    from evalsets.anchoring import services as anchoring_services
    from evalsets.workspaces import services as workspaces_services

    user = get_user_model().objects.create_user(username="owner", password=PASSWORD)
    workspace = workspaces_services.workspace_create(user=user, slug=WS, name="Bench")
    evalset = anchoring_services.evalset_create(
        workspace=workspace, user=user, slug="quiz", name="Quiz"
    )
    anchoring_services.item_create(
        evalset=evalset, user=user, item_id="q1", question="What do the terms say?"
    )


def wait_ready(session: requests.Session, api: str, name: str, started: float) -> float:
    """Seconds from ``started`` until every parse of ``name`` is ready."""
    while True:
        parses = session.get(f"{api}/documents/{name}/parses/").json()["results"]
        failed = [p for p in parses if p["status"] == "failed"]
        if failed:
            sys.exit(f"{failed[0]['parser']} failed on {name}: {failed[0].get('error')}")
        if len(parses) == PARSERS and all(p["status"] == "ready" for p in parses):
            return time.perf_counter() - started
        time.sleep(0.5)


def quote_span(text: str, starts: list[int], rng: random.Random) -> tuple[int, int]:
    """A sentence or two on a random page of the reference text: its [start, end)."""
    page = rng.randrange(len(starts))
    begin = starts[page]
    end = starts[page + 1] - 1 if page + 1 < len(starts) else len(text)
    at = text.find(". ", rng.randrange(begin, max(begin + 1, end - 400))) + 2
    stop = text.find(". ", at + 60)
    if at < 2 or stop < 0 or stop + 1 > end:
        return quote_span(text, starts, rng)
    return at, stop + 1


def measure(stack, session, api, name: str, count: int, rng: random.Random) -> list[dict]:
    from evalsets.models import AnchorResolution, ParseVersion

    reference = ParseVersion.objects.get(document__source_id=name, is_reference=True)
    starts = reference.page_begins
    rows = []
    for _ in range(count):
        start, end = quote_span(reference.text, starts, rng)
        cpu0 = stack.cpu_seconds("workers")
        t0 = time.perf_counter()
        made = session.post(
            f"{api}/evalsets/quiz/items/q1/anchors/",
            json={"parse": str(reference.public_id), "start": start, "end": end},
        )
        saved = time.perf_counter() - t0
        made.raise_for_status()
        assert made.json()["highlight"] is not None  # drawn at once, from the answer
        anchor = made.json()["id"]
        deadline = time.monotonic() + 120
        while AnchorResolution.objects.filter(anchor__public_id=anchor).count() < PARSERS:
            if time.monotonic() > deadline:
                sys.exit(f"an anchor on {name} was not resolved in every parse within 120 s")
            time.sleep(0.02)
        resolved = time.perf_counter() - t0
        rows.append(
            {"save": saved, "resolved": resolved, "cpu": stack.cpu_seconds("workers") - cpu0}
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--small-pages", type=int, default=10)
    parser.add_argument("--anchors", type=int, default=8)
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--redis-db", type=int, default=REDIS_DB)
    options = parser.parse_args()
    rng = random.Random(34)
    documents = {
        f"small-{options.small_pages}.pdf": make_long_pdf(options.small_pages),
        f"long-{options.pages}.pdf": make_long_pdf(options.pages),
    }
    env = svc.prepare(options.database, options.redis_db)
    seed()
    from django.conf import settings

    from evalsets.models import ParseVersion

    results = {}
    with svc.Stack(env) as stack:
        base = stack.gunicorn(workers=2)
        stack.celery_workers(1, concurrency=2)
        session = requests.Session()
        token = session.post(
            f"{base}/api/auth/token/", json={"username": "owner", "password": PASSWORD}
        ).json()["token"]
        session.headers["Authorization"] = f"Token {token}"
        api = f"{base}/api/workspaces/{WS}"
        for name, data in documents.items():
            t0 = time.perf_counter()
            session.post(f"{api}/documents/", files={"file": (name, data)}).raise_for_status()
            ready = wait_ready(session, api, name, t0)
            lengths = list(
                ParseVersion.objects.filter(document__source_id=name).values_list(
                    "parser", "text_length"
                )
            )
            print(
                f"{name}: {len(data) / 1e6:.1f} MB, three parses ready in {ready:.1f} s: "
                + ", ".join(f"{p} {n / 1e6:.2f} M chars" for p, n in lengths),
                flush=True,
            )
        time.sleep(5)  # the first pages' pre-drawing and the passage index finish meanwhile
        for name in documents:
            results[name] = measure(stack, session, api, name, options.anchors, rng)
    total = {
        name: sum(
            ParseVersion.objects.filter(document__source_id=name).values_list(
                "text_length", flat=True
            )
        )
        for name in documents
    }
    print()
    print(
        f"resolver cache: GROUNDWORK_RESOLVER_CACHE_MB = "
        f"{settings.GROUNDWORK_RESOLVER_CACHE_MB} MB a worker process (a parse weighs about "
        "10 bytes a character prepared, plus its text)"
    )
    header = [
        "document",
        "chars, 3 parses",
        "save p50",
        "resolved 1st",
        "resolved p50 (rest)",
        "resolved max (rest)",
        "worker CPU 1st",
        "worker CPU p50 (rest)",
    ]
    table = []
    for name, rows in results.items():
        rest = rows[1:] or rows
        table.append(
            [
                name,
                f"{total[name] / 1e6:.2f} M",
                f"{statistics.median(r['save'] for r in rows) * 1000:.0f} ms",
                f"{rows[0]['resolved']:.2f} s",
                f"{statistics.median(r['resolved'] for r in rest):.2f} s",
                f"{max(r['resolved'] for r in rest):.2f} s",
                f"{rows[0]['cpu']:.2f} s",
                f"{statistics.median(r['cpu'] for r in rest):.2f} s",
            ]
        )
    print(svc.table(header, table))
    print(f"load average after: {svc.load_average()}")


if __name__ == "__main__":
    main()
