"""Sustained-rate benchmark: anchors created at a fixed rate by many users for a minute.

Why it exists: the load benchmark thinks for a second between actions and the
throughput benchmark resolves whole workspaces in bulk, so neither saw the background side
fall behind a team creating anchors flat out. This one drives a fixed rate of anchor
creations over HTTP (an open loop: a request is sent on schedule whether or not earlier ones
have answered), prints the backlog every few seconds, uploads a document half-way and
times until its parses are ready, and after the load times until every anchor is resolved
in every parse of its document. A third of the way in, ``--side-anchors`` anchors are made
at once on a second document the load never touches (``side.pdf``): the table says how long
their backlog took to drain and whether it drained while the first document was still under
load, as it must (a burst on one document once held another's 8,970 anchors until the load
ended).

Three stacks, each started here and stopped afterwards, on 127.0.0.1:
  default   ``manage.py rundev`` as ``make run`` starts it: gunicorn, SQLite (a file of its
            own under bench/.cache), the filesystem broker, a parse+release worker and a
            resolve worker;
  services  gunicorn + PostgreSQL (``--database``, created afresh) + Redis (``--redis-db``,
            emptied) + 4 Celery worker processes, each consuming every queue;
  inject    the services stack's background side alone (PostgreSQL + Redis + 4 workers, no
            web server): ``--inject-processes`` load processes (processes, not threads: the
            GIL) call the very service the API's anchor-create view calls
            (``services.anchor_create_from_highlight``, after the lookups the view makes:
            workspace, eval set, item, parse), at a fixed open-loop rate, so the same flag
            claim and task queueing run after each commit. It measures whether the workers
            keep up with a rate the web side of this machine cannot deliver.
Each runs twice in the same invocation: the coalesced path, and as the peer the path before
it, one task per anchor (``bench/per_anchor``, loaded by every process of that run through
``DJANGO_SETTINGS_MODULE``; the product no longer has that path).

Run: ``.venv/bin/python bench/sustained_bench.py [--duration 60] [--rate 40]
[--services-rate 500] [--inject-rate 500] [--inject-processes 4] [--users 20]
[--only default|services|inject] [--skip-peer] [--database NAME] [--redis-db N]``.
The load generator runs on the same cores as the servers; its CPU share is printed, and for
the PostgreSQL stacks that of the database's backends and of the Redis server.
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
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import _services as svc
import requests
from load_bench import page_sentences, seed_parses

DATABASE = "gw_coalesce_bench"
REDIS_DB = 1
SEEDED = svc.CACHE / "sustained-seeded.json"
WS = "sustained"
SET = "sustained"
MODES = ["default", "services", "inject", "drain"]
#: The environment each resolution path adds to every process of its run.
PATHS = {
    "coalesced": {},
    "per-anchor": {
        "DJANGO_SETTINGS_MODULE": "per_anchor.settings",
        "PYTHONPATH": os.pathsep.join([str(svc.ROOT), str(svc.ROOT / "bench")]),
    },
}
LATE = b"A document uploaded while the team was busy.\n\nIts parse should not wait.\n"
#: The document the load never touches; a burst of anchors is made on it a third of the way.
SIDE = "side.pdf"


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
        docs.append(seed_document(doc, by_page))
    side = Document.objects.create(workspace=workspace, source_id=SIDE, sha256="e" * 64, kind="pdf")
    side_pages = [
        page_sentences(rng, args.documents + 1, p + 1, args.page_chars)
        for p in range(args.side_pages)
    ]
    people = []
    for u in range(1, args.users + 1):
        user = users.objects.create_user(f"user{u:02}")
        Membership.objects.create(workspace=workspace, user=user, role="annotator")
        items = [f"u{u:02}-{k:03}" for k in range(args.items_per_user)]
        EvalItem.objects.bulk_create(
            EvalItem(evalset=evalset, item_id=i, question=f"{i}?", author=user, assignee=user)
            for i in items
        )
        people.append(
            {"token": Token.objects.create(user=user).key, "items": items, "user": user.username}
        )
    return {
        "docs": docs,
        "side": seed_document(side, side_pages),
        "people": people,
        "owner": Token.objects.create(user=owner).key,
    }


def seed_document(doc, by_page: list[list[str]]) -> dict:
    """The document's three ready parses, and its reference parse's sentence spans."""
    pages = len(by_page)
    parses = seed_parses(doc, by_page, progress_done=pages, progress_total=pages)
    spans, text = [], parses[0].text
    for p, sentences in enumerate(by_page):
        offset = parses[0].page_starts[p]
        for sentence in sentences:
            spans.append((offset, offset + len(sentence)))
            offset += len(sentence) + 1
    assert all(text[a:b].startswith("Clause") for a, b in spans[:5])
    return {"reference": str(parses[0].public_id), "spans": spans}


def side_backlog() -> tuple[int, int]:
    """``backlog()`` of the side document alone."""
    from evalsets.models import AnchorResolution, Document

    side = Document.objects.get(source_id=SIDE)
    rows = AnchorResolution.objects.filter(parse__document=side).count()
    return side.anchors.count() * side.parses.filter(status="ready").count(), rows


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


def anchors_made() -> int:
    from evalsets.models import GoldAnchor

    return GoldAnchor.objects.count()


def messages_waiting(mode: str, env: dict[str, str]) -> int:
    if mode == "default":
        folder = Path(env["GROUNDWORK_VAR_DIR"]) / "broker" / "queue"
        return sum(1 for _ in folder.iterdir()) if folder.exists() else 0
    db = int(env["CELERY_BROKER_URL"].rsplit("/", 1)[1])
    client = svc.redis.Redis(host="127.0.0.1", port=6379, db=db)
    return sum(client.llen(name) for name in client.keys("celery*") if client.type(name) == b"list")


def make_plan(seeded: dict, total: int) -> list[tuple[int, str, dict]]:
    """Every anchor to create, in order: (user index, item id, highlight); the same list in
    every process that reads the same seed."""
    rng = random.Random(40)
    people = seeded["people"]
    plan = []
    for n in range(total):
        u = n % len(people)
        doc = rng.choice(seeded["docs"])
        start, end = rng.choice(doc["spans"])
        item = people[u]["items"][(n // len(people)) % len(people[u]["items"])]
        plan.append((u, item, {"parse": doc["reference"], "start": start, "end": end}))
    return plan


def child(args) -> None:
    mode, path = args.child
    if mode == "default":
        env = {**embedded_env(), **PATHS[path]}
        svc.manage(env, "migrate", "--noinput")
        svc.setup_django(env)
    else:
        env = svc.prepare(args.database, args.redis_db, PATHS[path])
    seeded = seed(args)
    rate = {
        "default": args.rate,
        "services": args.services_rate,
        "inject": args.inject_rate,
        "drain": 0,
    }[mode]
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
        elif mode == "services":
            base = stack.gunicorn(workers=args.gunicorn_workers)
            stack.celery_workers(4)
        if mode == "inject":
            stack.celery_workers(4)
            warm_up_direct(seeded, args)
            load = InjectedLoad(seeded, rate, args, env, stack)
        elif mode == "drain":
            load = backlog_made_beforehand(seeded, args, env, stack)
        else:
            warm_up(base, seeded, args)
            load = HttpLoad(base, seeded, rate, args)
        database = None if mode == "default" else args.database
        result = drive(load, args, mode, env, stack, database)
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
    wait_until_warm(args)


def warm_up_direct(seeded: dict, args) -> None:
    """``warm_up`` through the services, for the stack with no web server."""
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from evalsets.anchoring import selectors as anchoring_selectors
    from evalsets.anchoring import services as anchoring_services
    from evalsets.documents import selectors as documents_selectors
    from evalsets.documents import services as documents_services
    from evalsets.models import Workspace

    workspace = Workspace.objects.get(slug=WS)
    users = get_user_model().objects
    upload = SimpleUploadedFile("warm-up.txt", b"Warm up.\n")
    documents_services.document_upload(
        workspace=workspace, user=users.get(username="owner"), upload=upload
    )
    person, doc = seeded["people"][0], seeded["docs"][0]
    start, end = doc["spans"][0]
    anchoring_services.anchor_create_from_highlight(
        item=anchoring_selectors.evalset_in(workspace, SET).items.get(item_id=person["items"][0]),
        user=users.get(username=person["user"]),
        parse=documents_selectors.parse_in_workspace(workspace, doc["reference"]),
        start=start,
        end=end,
    )
    wait_until_warm(args)


def wait_until_warm(args) -> None:
    from evalsets.models import ParseVersion

    parses = ParseVersion.objects.filter(document__source_id="warm-up.txt")
    deadline = time.monotonic() + args.drain_timeout
    while time.monotonic() < deadline:
        expected, rows = backlog()
        statuses = list(parses.values_list("status", flat=True))
        if rows >= expected and statuses and all(s == "ready" for s in statuses):
            return
        time.sleep(0.2)
    raise RuntimeError("the workers did not warm up")


class HttpLoad:
    """Anchors created over HTTP by a pool of threads, one request leaving on schedule."""

    def __init__(self, base: str, seeded: dict, rate: float, args) -> None:
        self.api = f"{base}/api/workspaces/{WS}"
        self.seeded, self.rate, self.args = seeded, rate, args
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}

    def run(self, began: float, tick: Callable[[], None]) -> None:
        args, seeded, rate = self.args, self.seeded, self.rate
        lock = threading.Lock()
        sessions = [requests.Session() for _ in seeded["people"]]
        plan = make_plan(seeded, int(rate * args.duration))

        def create(n: int) -> None:
            if time.monotonic() > began + args.duration + 5:
                with lock:  # the server fell so far behind that this one was never sent
                    self.errors["not sent"] = self.errors.get("not sent", 0) + 1
                return
            u, item, body = plan[n]
            headers = {"Authorization": f"Token {seeded['people'][u]['token']}"}
            started = time.perf_counter()
            try:
                url = f"{self.api}/evalsets/{SET}/items/{item}/anchors/"
                answer = sessions[u].post(url, json=body, headers=headers, timeout=60)
                outcome = None if answer.status_code == 201 else str(answer.status_code)
            except requests.RequestException as exc:
                outcome = type(exc).__name__
            took = (time.perf_counter() - started) * 1000
            with lock:
                if outcome is None:
                    self.latencies.append(took)
                else:
                    self.errors[outcome] = self.errors.get(outcome, 0) + 1

        with ThreadPoolExecutor(max_workers=args.users * 2) as pool:
            for n in range(len(plan)):
                due = began + n / rate
                while (now := time.monotonic()) < due:
                    tick()
                    time.sleep(min(due - now, 0.01))
                pool.submit(create, n)

    def upload(self) -> object:
        headers = {"Authorization": f"Token {self.seeded['owner']}"}
        try:
            answer = requests.post(
                f"{self.api}/documents/",
                files={"file": ("late-upload.txt", LATE)},
                headers=headers,
                timeout=120,
            )
        except requests.RequestException as exc:
            return type(exc).__name__
        return answer.status_code


class InjectedLoad:
    """Anchors created by ``--inject-processes`` processes calling the service directly,
    each taking every K-th anchor of the plan on its schedule (``inject_load``)."""

    def __init__(
        self, seeded: dict, rate: float, args, env: dict[str, str], stack, *extra: str
    ) -> None:
        self.seeded, self.rate, self.args, self.env, self.stack = seeded, rate, args, env, stack
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}
        self.behind_s = 0.0
        SEEDED.write_text(json.dumps(seeded))
        count = args.inject_processes
        self.outputs = [svc.CACHE / f"sustained-load-{k}.json" for k in range(count)]
        self.processes = []
        for k, output in enumerate(self.outputs):
            output.unlink(missing_ok=True)
            command = [sys.executable, __file__, *sys.argv[1:]]
            command = command[: command.index("--child")] if "--child" in command else command
            process = subprocess.Popen(
                [*command, *extra, "--inject-load", str(k), str(count), str(output)],
                cwd=svc.ROOT,
                env=env,
                start_new_session=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            stack.processes.append(process)
            stack.kinds[process.pid] = "load"
            self.processes.append(process)
        for process in self.processes:  # each has Django set up and a connection open
            if process.stdout.readline().strip() != "READY":
                raise RuntimeError("a load process did not start")

    def run(self, began: float, tick: Callable[[], None]) -> None:
        for process in self.processes:
            process.stdin.write(f"{began!r}\n")
            process.stdin.flush()
        # Each writes its figures, then waits (alive, so the CPU meter still sees it) until
        # the stack stops it.
        while not all(output.exists() for output in self.outputs):
            if any(process.poll() not in (None, 0) for process in self.processes):
                raise RuntimeError("a load process failed")
            tick()
            time.sleep(0.05)
        for output in self.outputs:
            found = json.loads(output.read_text())
            self.latencies.extend(found["latencies"])
            for key, n in found["errors"].items():
                self.errors[key] = self.errors.get(key, 0) + n
            self.behind_s = max(self.behind_s, found["behind_s"])

    def upload(self) -> object:
        from django.contrib.auth import get_user_model
        from django.core.files.uploadedfile import SimpleUploadedFile

        from evalsets.documents import services as documents_services
        from evalsets.models import Workspace

        documents_services.document_upload(
            workspace=Workspace.objects.get(slug=WS),
            user=get_user_model().objects.get(username="owner"),
            upload=SimpleUploadedFile("late-upload.txt", LATE),
        )
        return 201


def backlog_made_beforehand(seeded: dict, args, env: dict[str, str], stack) -> DrainLoad:
    """``--drain-anchors`` anchors made through the service with no worker running (one
    ``resolve_document`` message queued, the flag claimed), then a ``DrainLoad``."""
    maker = InjectedLoad(seeded, 0, args, env, stack, "--inject-unpaced")
    started = time.monotonic()
    maker.run(started, lambda: None)
    took = time.monotonic() - started
    made = len(maker.latencies)
    print(
        f"  backlog: {made:,} anchors made with no worker running in {took:.1f} s "
        f"({made / took:.0f}/s by {args.inject_processes} processes; errors {maker.errors})",
        flush=True,
    )
    return DrainLoad(args, stack)


class DrainLoad:
    """The drain stack's "load": the 4 workers started on a backlog made beforehand, timed
    until every resolution is written (a document is uploaded as they start)."""

    upload_after = 0.0

    def __init__(self, args, stack) -> None:
        self.args, self.stack = args, stack
        self.latencies: list[float] = []
        self.errors: dict[str, int] = {}

    def run(self, began: float, tick: Callable[[], None]) -> None:
        self.stack.celery_workers(4)
        while time.monotonic() - began < self.args.drain_timeout:
            expected, rows = backlog()
            if rows >= expected:
                return
            tick()
            time.sleep(0.2)

    upload = InjectedLoad.upload


def create_through_service(user, item_id: str, body: dict) -> None:
    """What the API's anchor-create view does past authentication and its role check: its
    lookups (workspace, eval set, item, parse), then the service. No response is built."""
    from evalsets.anchoring import selectors as anchoring_selectors
    from evalsets.anchoring import services as anchoring_services
    from evalsets.documents import selectors as documents_selectors
    from evalsets.models import Workspace

    workspace = Workspace.objects.get(slug=WS)
    item = anchoring_selectors.evalset_in(workspace, SET).items.get(item_id=item_id)
    anchoring_services.anchor_create_from_highlight(
        item=item,
        user=user,
        parse=documents_selectors.parse_in_workspace(workspace, body["parse"]),
        start=body["start"],
        end=body["end"],
    )


def cost(args) -> None:
    """Where an anchor's CPU goes, in this one process against PostgreSQL (no worker runs):
    the create path (statements, this process's and its database backend's CPU per create)
    and the worker's ``resolve_document`` task after bursts of several sizes."""
    svc.prepare(args.database, args.redis_db)  # Django is set up from here on
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from evalsets.anchoring import resolution
    from evalsets.models import Document, GoldAnchor

    seeded = seed(args)
    names = [person["user"] for person in seeded["people"]]
    users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
    plan = iter(make_plan(seeded, 10 * args.cost + 1000))
    tick = os.sysconf("SC_CLK_TCK")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = Path(f"/proc/{cursor.fetchone()[0]}/stat")

    def cpu() -> tuple[float, float]:
        fields = backend.read_text().rsplit(")", 1)[1].split()
        return time.process_time(), (int(fields[11]) + int(fields[12])) / tick

    def create(count: int) -> None:
        for _ in range(count):
            u, item_id, body = next(plan)
            create_through_service(users[names[u]], item_id, body)

    create(20)  # this process has read the parse's text once
    with CaptureQueriesContext(connection) as one:
        create(1)
    print(f"one anchor create: {len(one.captured_queries)} statements")
    for query in one.captured_queries:
        print(f"    {query['sql'][:96]}")
    (c0, p0), _, (c1, p1) = cpu(), create(args.cost), cpu()
    print(
        f"per create ({args.cost:,}): this process {(c1 - c0) / args.cost * 1000:.2f} ms CPU, "
        f"its PostgreSQL backend {(p1 - p0) / args.cost * 1000:.2f} ms"
    )
    document = Document.objects.get(source_id="doc-1.pdf").pk
    resolution.resolve_pending(document)  # prepares the 3 parses, as a warm worker has them
    for burst in (1, 20, 100):
        runs, client, server, statements = max(3, 300 // burst), 0.0, 0.0, 0
        for _ in range(runs):
            create(burst)
            (c0, p0) = cpu()
            with CaptureQueriesContext(connection) as task:
                resolution.resolve_pending(document)
            (c1, p1) = cpu()
            client, server = client + c1 - c0, server + p1 - p0
            statements += len(task.captured_queries)
        print(
            f"resolve_document after a burst of {burst:3}: {statements / runs:.0f} statements, "
            f"{client / runs * 1000:6.1f} ms worker CPU + {server / runs * 1000:5.1f} ms "
            f"PostgreSQL a task; {(client + server) / runs / burst * 1000:5.2f} ms an anchor "
            f"({GoldAnchor.objects.filter(document=document).count():,} anchors on the document)"
        )
    svc.empty_broker(args.redis_db)  # the messages queued meanwhile: no worker ran


def inject_load(args) -> None:
    """One load process of the inject stack: its share of the plan, on schedule."""
    k, count, output = int(args.inject_load[0]), int(args.inject_load[1]), args.inject_load[2]
    svc.setup_django(os.environ)
    from django.contrib.auth import get_user_model

    seeded = json.loads(SEEDED.read_text())
    unpaced = args.inject_unpaced  # the drain stack's backlog: as fast as they go
    plan = make_plan(
        seeded, args.drain_anchors if unpaced else int(args.inject_rate * args.duration)
    )
    names = [person["user"] for person in seeded["people"]]
    users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
    print("READY", flush=True)
    began = float(sys.stdin.readline())
    latencies: list[float] = []
    errors: dict[str, int] = {}
    for n in range(k, len(plan), count):
        due = began + (0 if unpaced else n / args.inject_rate)
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        if not unpaced and time.monotonic() > began + args.duration + 5:
            errors["not sent"] = errors.get("not sent", 0) + 1
            continue
        u, item_id, body = plan[n]
        started = time.perf_counter()
        try:
            create_through_service(users[names[u]], item_id, body)
        except Exception as exc:  # counted and shown, as HTTP errors are
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            continue
        latencies.append((time.perf_counter() - started) * 1000)
    behind = max(0.0, time.monotonic() - (began + args.duration))
    written = Path(f"{output}.part")
    written.write_text(json.dumps({"latencies": latencies, "errors": errors, "behind_s": behind}))
    written.rename(output)
    sys.stdin.readline()  # until the stack stops this process


def side_burst(seeded: dict, args, began: float, side: dict) -> None:
    """A third of the way into the load, ``--side-anchors`` anchors on the side document,
    made through the service one after another; then the time until every one has a row in
    each of its ready parses, written into ``side``."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    time.sleep(args.duration / 3)
    people = seeded["people"]
    names = [person["user"] for person in people]
    users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
    rng = random.Random(28)
    side["made_at"] = time.monotonic() - began
    errors: dict[str, int] = {}
    for n in range(args.side_anchors):
        person = people[n % len(people)]
        start, end = rng.choice(seeded["side"]["spans"])
        body = {"parse": seeded["side"]["reference"], "start": start, "end": end}
        item_id = person["items"][(n // len(people)) % len(person["items"])]
        try:
            create_through_service(users[person["user"]], item_id, body)
        except Exception as exc:  # counted and shown, as the load's errors are
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
    side["errors"] = errors
    side["made_s"] = time.monotonic() - began - side["made_at"]
    try:
        while time.monotonic() - began < args.duration + args.drain_timeout:
            expected, rows = side_backlog()
            if expected and rows >= expected:
                side["drained_at"] = time.monotonic() - began
                return
            time.sleep(0.2)
    finally:
        connection.close()


def drive(load, args, mode, env, stack, database) -> dict:
    upload = {}
    side: dict = {}

    def upload_mid_run() -> None:
        """Upload half-way; "ready" is when its last parse was written, from the database's
        timestamps (polling over HTTP would add the loaded server's latency to it)."""
        from evalsets.models import ParseVersion

        time.sleep(getattr(load, "upload_after", args.duration / 2))
        upload["status"] = load.upload()
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

    meter = svc.CpuMeter(stack, database)
    made_before = anchors_made()
    rows_before = backlog()[1]
    meter.start()
    began = time.monotonic()
    uploader = threading.Thread(target=upload_mid_run, daemon=True)
    uploader.start()
    sider = None
    if mode != "drain" and args.side_anchors:  # the drain stack has no load to be beside
        sider = threading.Thread(target=side_burst, args=(load.seeded, args, began, side))
        sider.daemon = True
        sider.start()
    samples: list[tuple[float, int]] = []
    next_sample = [began + args.every]

    def sample(label: str) -> int:
        expected, rows = backlog()
        missing = expected - rows
        side_expected, side_rows = side_backlog()
        waiting = messages_waiting(mode, env)
        elapsed = time.monotonic() - began
        samples.append((elapsed, missing))
        print(
            f"  {label:>6} t={elapsed:5.1f}s  anchors made {anchors_made() - made_before:6,}  "
            f"resolutions written {rows:7,} of {expected:7,}  missing {missing:6,}  "
            f"of them on {SIDE} {side_expected - side_rows:5,}  messages queued {waiting:6,}",
            flush=True,
        )
        return missing

    def tick() -> None:
        if time.monotonic() >= next_sample[0]:
            sample("load")
            next_sample[0] += args.every

    load.run(began, tick)
    load_s = time.monotonic() - began
    cpu = meter.stop()
    shares = meter.shares()
    written = backlog()[1] - rows_before
    at_end = sample("end")
    drained_at = None
    while time.monotonic() - began - load_s < args.drain_timeout:
        if sample("drain") <= 0:
            drained_at = time.monotonic() - began
            break
        time.sleep(args.every)
    uploader.join(timeout=args.duration + args.drain_timeout)
    if sider is not None:
        sider.join(timeout=args.duration + args.drain_timeout)
    lat = load.latencies or [0.0]
    third = [m for t, m in samples if t <= load_s]
    return {
        "created": len(load.latencies),
        "errors": load.errors,
        "load_s": load_s,
        "achieved_rate": len(load.latencies) / load_s,
        "resolved_rate": written / load_s,
        "behind_s": getattr(load, "behind_s", None),
        "p50_ms": svc.percentile(lat, 50),
        "p95_ms": svc.percentile(lat, 95),
        "p99_ms": svc.percentile(lat, 99),
        "backlog_mid": third[len(third) // 2] if third else 0,
        "backlog_end": at_end,
        "all_resolved_s": drained_at,
        "drain_after_load_s": None if drained_at is None else drained_at - load_s,
        "upload_ready_s": upload.get("ready_s"),
        "upload": upload.get("statuses") or upload.get("status"),
        **side_figures(side, load_s),
        "cpu": cpu,
        "cpu_shares": shares,
        "load_average": svc.load_average(),
    }


def side_figures(side: dict, load_s: float) -> dict:
    """How the side document's burst fared: made when, drained how long after, and whether
    that was while the load on the first document still ran."""
    drained_at = side.get("drained_at")
    made_at = side.get("made_at")
    return {
        "side_made_at_s": made_at,
        "side_made_s": side.get("made_s"),
        "side_errors": side.get("errors", {}),
        "side_drained_s": None if drained_at is None else drained_at - made_at,
        "side_drained_in_load": drained_at is not None and drained_at <= load_s,
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
    parser.add_argument(
        "--side-anchors", type=int, default=500, help="the burst on the side document"
    )
    parser.add_argument("--side-pages", type=int, default=50, help="the side document's pages")
    parser.add_argument("--inject-rate", type=float, default=500, help="anchors/s, inject")
    parser.add_argument("--inject-processes", type=int, default=4, help="load processes, inject")
    parser.add_argument("--database", default=DATABASE, help="PostgreSQL database (recreated)")
    parser.add_argument("--redis-db", type=int, default=REDIS_DB, help="Redis db (emptied)")
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--every", type=float, default=5, help="seconds between backlog lines")
    parser.add_argument("--drain-timeout", type=float, default=180)
    parser.add_argument("--only", choices=MODES)
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--inject-load", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--inject-unpaced", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--cost", type=int, default=0, help="N: profile N creates and the resolve task instead"
    )
    parser.add_argument(
        "--drain-anchors", type=int, default=10_000, help="the drain stack's backlog"
    )
    args = parser.parse_args()
    if args.inject_load:
        inject_load(args)
        return
    if args.cost:
        cost(args)
        return
    if args.child:
        child(args)
        return
    print(f"load average before: {svc.load_average()}", flush=True)
    results = []
    modes = [args.only] if args.only else MODES
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


def _side(r: dict) -> str:
    if r.get("side_made_at_s") is None:
        return "-"
    return _s(r["side_drained_s"]) + (" in load" if r["side_drained_in_load"] else " after")


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
        "resolved/s",
        "backlog mid",
        "backlog end",
        "all resolved s",
        "upload ready s",
        "side drained s",
    ]
    rows = [
        [
            f"{r['mode']} / {r['path']}",
            r["rate"],
            r["achieved_rate"],
            sum(r["errors"].values()),
            r["p50_ms"],
            r["p95_ms"],
            r["resolved_rate"],
            r["backlog_mid"],
            r["backlog_end"],
            _s(r["all_resolved_s"]),
            _s(r["upload_ready_s"]),
            _side(r),
            r["load_average"].split(" / ")[0],
        ]
        for r in results
    ]
    print(svc.table([*headers, "load avg"], rows))
    print(
        "\n'resolved/s' = resolution rows written during the load (the drain stack: from the "
        "workers' start until none is missing); 'backlog' = anchor x parse resolutions not "
        "written yet (mid-load and when the load stops); 'all resolved' = seconds from the "
        "start until none is missing; 'upload ready' = from the document's row to its last "
        "parse written (database timestamps); 'side drained' = seconds from the burst of "
        f"{args.side_anchors} anchors on {SIDE} (a third of the way in) until each has a row "
        "in its every parse, 'in load' when that was before the load on the first document "
        "stopped."
    )
    for r in results:
        behind = "" if r["behind_s"] is None else f"; the load ended {r['behind_s']:.1f} s late"
        print(
            f"  {r['mode']} / {r['path']}: {r['created']:,} anchors in {r['load_s']:.1f} s"
            f"{behind}; mid-run upload {r['upload']}"
        )
        if r.get("side_made_at_s") is not None:
            print(
                f"    {SIDE}: {args.side_anchors} anchors made from t={r['side_made_at_s']:.1f} s "
                f"in {r['side_made_s']:.1f} s (errors {r['side_errors']}), drained "
                f"{_side(r)}"
            )
    parts = sorted({part for r in results for part in r["cpu_shares"]})
    print("\nCPU during the load, in cores (1.0 = one core busy throughout):\n")
    rows = [
        [f"{r['mode']} / {r['path']}", *(f"{r['cpu_shares'].get(p, 0.0):.2f}" for p in parts)]
        for r in results
    ]
    print(svc.table(["stack / resolution", *parts], rows))


if __name__ == "__main__":
    main()
