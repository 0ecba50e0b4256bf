"""Sustained-rate benchmark: anchors created at a fixed rate by many users for a minute.

Why it exists (issue 18): the load benchmark thinks for a second between actions and the
throughput benchmark resolves whole workspaces in bulk, so neither saw the background side
fall behind a team creating anchors flat out. This one drives a fixed rate of anchor
creations over HTTP (an open loop: a request is sent on schedule whether or not earlier ones
have answered), prints the backlog every few seconds, uploads a document half-way and
times until its parses are ready, and after the load times until every anchor is resolved
in every parse of its document.

Two stacks, each started here and stopped afterwards, on 127.0.0.1:
  default   ``manage.py rundev`` as ``make run`` starts it: runserver, SQLite (a file of its
            own under bench/.cache), the filesystem broker, a parse+release worker and a
            resolve worker;
  services  gunicorn + PostgreSQL (database ``gw_coalesce_bench``, created afresh) + Redis
            (db 1, emptied) + 4 Celery worker processes.
Each runs twice in the same invocation: the coalesced path, and as the peer the path before
it, one task per anchor (``GROUNDWORK_RESOLVE_PER_ANCHOR=true``).

Run: ``.venv/bin/python bench/sustained_bench.py [--duration 60] [--rate 40]
[--services-rate 500] [--users 20] [--only default|services] [--skip-peer]``.
The load generator runs on the same cores as the servers; its CPU share is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import _services as svc
import requests
from load_bench import page_sentences, seed_parses

DATABASE = "gw_coalesce_bench"
REDIS_DB = 1
WS = "sustained"
SET = "sustained"
PATHS = {"coalesced": {}, "per-anchor": {"GROUNDWORK_RESOLVE_PER_ANCHOR": "true"}}
LATE = b"A document uploaded while the team was busy.\n\nIts parse should not wait.\n"


# -- one stack, one path (a child process: Django is configured once per process) -----------


def embedded_env() -> dict[str, str]:
    var = svc.CACHE / "sustained-var"
    shutil.rmtree(var, ignore_errors=True)
    (var / "media").mkdir(parents=True)
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{var / 'groundwork.sqlite3'}",
        "CELERY_BROKER_URL": "filesystem://",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "GROUNDWORK_VAR_DIR": str(var),
        "DJANGO_MEDIA_ROOT": str(var / "media"),
        "GROUNDWORK_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(svc.ROOT),
    }


def seed(args) -> dict:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from evalsets.models import Document, EvalItem, EvalSet, Membership, Workspace

    rng = random.Random(18)
    users = get_user_model()
    owner = users.objects.create_user("owner")
    workspace = Workspace.objects.create(slug=WS, name="Sustained")
    Membership.objects.create(workspace=workspace, user=owner, role="owner")
    evalset = EvalSet.objects.create(workspace=workspace, slug=SET, name="Sustained")
    docs = []
    for n in range(1, args.documents + 1):
        by_page = [page_sentences(rng, n, p + 1, args.page_chars) for p in range(args.pages)]
        doc = Document.objects.create(
            workspace=workspace, source_id=f"doc-{n}.pdf", sha256=f"{n:064x}", kind="pdf"
        )
        parses = seed_parses(doc, by_page, progress_done=args.pages, progress_total=args.pages)
        spans, text = [], parses[0].text
        for p, sentences in enumerate(by_page):
            offset = parses[0].page_starts[p]
            for sentence in sentences:
                spans.append((offset, offset + len(sentence)))
                offset += len(sentence) + 1
        assert all(text[a:b].startswith("Clause") for a, b in spans[:5])
        docs.append({"reference": str(parses[0].public_id), "spans": spans})
    people = []
    for u in range(1, args.users + 1):
        user = users.objects.create_user(f"user{u:02}")
        Membership.objects.create(workspace=workspace, user=user, role="annotator")
        items = [f"u{u:02}-{k:03}" for k in range(args.items_per_user)]
        EvalItem.objects.bulk_create(
            EvalItem(evalset=evalset, item_id=i, question=f"{i}?", author=user, assignee=user)
            for i in items
        )
        people.append({"token": Token.objects.create(user=user).key, "items": items})
    return {"docs": docs, "people": people, "owner": Token.objects.create(user=owner).key}


def backlog() -> tuple[int, int]:
    """(anchor x ready-parse rows expected, rows written), read from the database."""
    from django.db.models import Count, Q

    from evalsets.models import AnchorResolution, Document

    rows = AnchorResolution.objects.count()  # first: an anchor made meanwhile only adds
    expected = sum(
        anchors * parses
        for anchors, parses in Document.objects.annotate(
            a=Count("anchors", distinct=True),
            p=Count("parses", filter=Q(parses__status="ready"), distinct=True),
        ).values_list("a", "p")
    )
    return expected, rows


def messages_waiting(mode: str, env: dict[str, str]) -> int:
    if mode == "default":
        folder = Path(env["GROUNDWORK_VAR_DIR"]) / "broker" / "queue"
        return sum(1 for _ in folder.iterdir()) if folder.exists() else 0
    client = svc.redis.Redis(host="127.0.0.1", port=6379, db=REDIS_DB)
    return sum(client.llen(name) for name in client.keys("celery*") if client.type(name) == b"list")


def child(args) -> None:
    mode, path = args.child
    if mode == "default":
        env = {**embedded_env(), **PATHS[path]}
        svc.manage(env, "migrate", "--noinput")
        svc.setup_django(env)
    else:
        env = {**svc.prepare(DATABASE, REDIS_DB), **PATHS[path]}
        os.environ.update(PATHS[path])
    seeded = seed(args)
    rate = args.rate if mode == "default" else args.services_rate
    with svc.Stack(env) as stack:
        if mode == "default":
            port = svc.free_port()
            log = open(svc.CACHE / f"sustained-rundev-{path}.log", "w")  # noqa: SIM115
            process = subprocess.Popen(
                [svc.PYTHON, "manage.py", "rundev", f"127.0.0.1:{port}"],
                cwd=svc.ROOT,
                env=env,
                start_new_session=True,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            stack.processes.append(process)
            stack.kinds[process.pid] = "web"
            base = stack._wait_http(port)
            time.sleep(5)  # the two workers start beside the server
        else:
            base = stack.gunicorn(workers=args.gunicorn_workers)
            stack.celery_workers(4)
        warm_up(base, seeded, args)
        result = drive(base, seeded, rate, args, mode, env, stack)
    result.update(mode=mode, path=path, rate=rate)
    print("RESULT " + json.dumps(result), flush=True)


def warm_up(base: str, seeded: dict, args) -> None:
    """Before the clock starts: an upload parsed and one anchor resolved in every parse, so
    every worker is up and has its parses prepared, as in a session already under way."""
    api = f"{base}/api/workspaces/{WS}"
    person = seeded["people"][0]
    headers = {"Authorization": f"Token {person['token']}"}
    owner = {"Authorization": f"Token {seeded['owner']}"}
    requests.post(
        f"{api}/documents/", files={"file": ("warm-up.txt", b"Warm up.\n")}, headers=owner
    ).raise_for_status()
    doc = seeded["docs"][0]
    start, end = doc["spans"][0]
    requests.post(
        f"{api}/evalsets/{SET}/items/{person['items'][0]}/anchors/",
        json={"parse": doc["reference"], "start": start, "end": end},
        headers=headers,
    ).raise_for_status()
    deadline = time.monotonic() + args.drain_timeout
    while time.monotonic() < deadline:
        parses = requests.get(f"{api}/documents/warm-up.txt/", headers=owner).json()["parses"]
        expected, rows = backlog()
        if rows >= expected and all(p["status"] == "ready" for p in parses):
            return
        time.sleep(0.2)
    raise RuntimeError("the workers did not warm up")


def drive(base, seeded, rate, args, mode, env, stack) -> dict:
    api = f"{base}/api/workspaces/{WS}"
    lock = threading.Lock()
    latencies: list[float] = []
    errors: dict[str, int] = {}
    sessions = [requests.Session() for _ in seeded["people"]]
    rng = random.Random(40)
    total = int(rate * args.duration)
    plan = []
    for n in range(total):
        u = n % len(seeded["people"])
        person = seeded["people"][u]
        doc = rng.choice(seeded["docs"])
        start, end = rng.choice(doc["spans"])
        item = person["items"][(n // len(seeded["people"])) % len(person["items"])]
        body = {"parse": doc["reference"], "start": start, "end": end}
        plan.append((u, item, body))

    def create(n: int) -> None:
        if time.monotonic() > clock["began"] + args.duration + 5:
            with lock:  # the server fell so far behind that this one was never sent
                errors["not sent"] = errors.get("not sent", 0) + 1
            return
        u, item, body = plan[n]
        headers = {"Authorization": f"Token {seeded['people'][u]['token']}"}
        began = time.perf_counter()
        try:
            url = f"{api}/evalsets/{SET}/items/{item}/anchors/"
            answer = sessions[u].post(url, json=body, headers=headers, timeout=60)
            outcome = None if answer.status_code == 201 else str(answer.status_code)
        except requests.RequestException as exc:
            outcome = type(exc).__name__
        took = (time.perf_counter() - began) * 1000
        with lock:
            if outcome is None:
                latencies.append(took)
            else:
                errors[outcome] = errors.get(outcome, 0) + 1

    upload = {}
    clock = {}

    def upload_mid_run() -> None:
        """Upload half-way; "ready" is when its last parse was written, from the database's
        timestamps (polling over HTTP would add the loaded server's latency to it)."""
        from evalsets.models import ParseVersion

        time.sleep(args.duration / 2)
        headers = {"Authorization": f"Token {seeded['owner']}"}
        try:
            answer = requests.post(
                f"{api}/documents/",
                files={"file": ("late-upload.txt", LATE)},
                headers=headers,
                timeout=120,
            )
        except requests.RequestException as exc:
            upload["status"] = type(exc).__name__
            return
        upload["status"] = answer.status_code
        parses = ParseVersion.objects.filter(document__source_id="late-upload.txt")
        deadline = time.monotonic() + args.duration + args.drain_timeout
        while time.monotonic() < deadline:
            found = list(parses.values("status", "updated_at", "document__created_at"))
            if found and all(p["status"] in ("ready", "failed") for p in found):
                done = max(p["updated_at"] for p in found)
                upload["ready_s"] = (done - found[0]["document__created_at"]).total_seconds()
                upload["statuses"] = sorted(p["status"] for p in found)
                return
            time.sleep(0.1)

    meter = svc.CpuMeter(stack)
    meter.start()
    began = clock["began"] = time.monotonic()
    uploader = threading.Thread(target=upload_mid_run, daemon=True)
    uploader.start()
    samples: list[tuple[float, int]] = []

    def sample(label: str) -> int:
        expected, rows = backlog()
        missing = expected - rows
        waiting = messages_waiting(mode, env)
        elapsed = time.monotonic() - began
        samples.append((elapsed, missing))
        print(
            f"  {label:>6} t={elapsed:5.1f}s  anchors made {len(latencies):6,}  resolutions "
            f"written {rows:7,} of {expected:7,}  missing {missing:6,}  messages queued "
            f"{waiting:6,}",
            flush=True,
        )
        return missing

    with ThreadPoolExecutor(max_workers=args.users * 2) as pool:
        next_sample = began + args.every
        for n in range(total):
            due = began + n / rate
            while (now := time.monotonic()) < due:
                if now >= next_sample:
                    sample("load")
                    next_sample += args.every
                time.sleep(min(due - now, 0.01))
            pool.submit(create, n)
    load_s = time.monotonic() - began
    cpu = meter.stop()
    at_end = sample("end")
    drained_at = None
    while time.monotonic() - began - load_s < args.drain_timeout:
        if sample("drain") <= 0:
            drained_at = time.monotonic() - began
            break
        time.sleep(args.every)
    uploader.join(timeout=args.duration + args.drain_timeout)
    lat = latencies or [0.0]
    third = [m for t, m in samples if t <= load_s]
    return {
        "created": len(latencies),
        "errors": errors,
        "achieved_rate": len(latencies) / load_s,
        "p50_ms": svc.percentile(lat, 50),
        "p95_ms": svc.percentile(lat, 95),
        "p99_ms": svc.percentile(lat, 99),
        "backlog_mid": third[len(third) // 2] if third else 0,
        "backlog_end": at_end,
        "all_resolved_s": drained_at,
        "drain_after_load_s": None if drained_at is None else drained_at - load_s,
        "upload_ready_s": upload.get("ready_s"),
        "upload": upload.get("statuses") or upload.get("status"),
        "cpu": cpu,
        "load_average": svc.load_average(),
    }


# -- the parent: every stack and path, one table ---------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--rate", type=float, default=40, help="anchors/s on the default")
    parser.add_argument("--services-rate", type=float, default=500, help="anchors/s on PG+Redis")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--items-per-user", type=int, default=50)
    parser.add_argument("--documents", type=int, default=1)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--page-chars", type=int, default=2000)
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--every", type=float, default=5, help="seconds between backlog lines")
    parser.add_argument("--drain-timeout", type=float, default=180)
    parser.add_argument("--only", choices=["default", "services"])
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    print(f"load average before: {svc.load_average()}", flush=True)
    results = []
    modes = [args.only] if args.only else ["default", "services"]
    for mode in modes:
        for path in ["coalesced"] if args.skip_peer else list(PATHS):
            print(f"\n== {mode} stack, {path} resolution ==", flush=True)
            command = [sys.executable, __file__, *sys.argv[1:], "--child", mode, path]
            output = subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=svc.ROOT)
            lines = output.stdout.splitlines()
            print("\n".join(line for line in lines if not line.startswith("RESULT ")), flush=True)
            found = [json.loads(line[7:]) for line in lines if line.startswith("RESULT ")]
            if not found:
                print(f"  (this run failed with exit code {output.returncode})")
                continue
            results.append(found[0])
            print(f"  {found[0]['cpu']}; load average {found[0]['load_average']}")
            if found[0]["errors"]:
                print(f"  failed requests by status: {found[0]['errors']}")
    report(results, args)


def _s(value) -> str:
    return "never" if value is None else f"{value:.1f}"


def report(results: list[dict], args) -> None:
    print(
        f"\nSustained anchor creation: {args.users} users, {args.duration:.0f} s at a fixed "
        f"rate, {args.documents} document(s) of {args.pages} pages x {args.page_chars} chars, "
        "3 parses each; a document uploaded half-way.\n"
    )
    headers = [
        "stack / resolution",
        "target/s",
        "made/s",
        "errors",
        "p50 ms",
        "p95 ms",
        "backlog mid",
        "backlog end",
        "all resolved s",
        "upload ready s",
    ]
    rows = [
        [
            f"{r['mode']} / {r['path']}",
            r["rate"],
            r["achieved_rate"],
            sum(r["errors"].values()),
            r["p50_ms"],
            r["p95_ms"],
            r["backlog_mid"],
            r["backlog_end"],
            _s(r["all_resolved_s"]),
            _s(r["upload_ready_s"]),
        ]
        for r in results
    ]
    print(svc.table(headers, rows))
    print(
        "\n'backlog' = anchor x parse resolutions not written yet (mid-load and when the load "
        "stops); 'all resolved' = seconds from the start until none is missing; 'upload ready' "
        "= from the document's row to its last parse written (database timestamps)."
    )
    for r in results:
        print(f"  {r['mode']} / {r['path']}: mid-run upload {r['upload']}; {r['cpu']}")


if __name__ == "__main__":
    main()
