"""Load benchmark: 20 simulated annotators against gunicorn + PostgreSQL + Redis + 2 workers.

Why it exists: the issue sets targets for a 2-core machine -- p95 < 150 ms per endpoint with
no errors, an anchor resolved in every parse within 2 s (p95) of being created, and the first
page of a 1,000-page document shown within 1 s. This starts the whole stack itself on
127.0.0.1 (a database ``gw_bench`` of its own, created afresh; Redis db 11, emptied;
production settings), seeds it through the ORM, and drives it with threads using
``requests``: each annotator lists its draft items, opens a document page and its first
pages, highlights a sentence (creating an anchor) and submits the item, in a closed loop for
a bounded time, starting after a pause of its own (so the 20 do not start in lock-step).
Every created anchor is polled on the anchor detail API until it is resolved in all three
parses of its document; the same delay is also read from the database
(resolution ``updated_at`` minus anchor ``created_at``), which is exact. A reader opens the
1,000-page document's page and first pages once a second throughout.

A baseline, in the same run (not a peer: it is our own app on another server, so it says what
gunicorn buys, not how Groundwork compares with another labelling tool): the same workload
against Django's ``runserver`` (one threaded process), the embedded-mode web server. The
comparison with another labelling tool is ``span_bench.py``: the part of this work that Label
Studio also does (storing highlighted spans), against Label Studio itself in the same run.

Run: ``.venv/bin/python bench/load_bench.py [--duration 60] [--think 1.0] [--annotators 20]``.
``--think`` is the mean pause between an annotator's actions (exponentially distributed; 0 =
flat out). ``--skip-peer`` leaves out the runserver baseline. The client runs on the same two
cores as the server, so its own CPU time is part of every latency measured here.
"""

from __future__ import annotations

import argparse
import queue
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

import _services as svc
import requests

DATABASE = "gw_bench"
REDIS_DB = 11
WS = "bench"
SET = "bench"
PARSERS = ("pypdf", "pdfminer", "their-pipeline")
WORDS = [
    "leave",
    "policy",
    "remote",
    "manager",
    "approval",
    "employee",
    "contract",
    "notice",
    "period",
    "salary",
    "review",
    "annual",
    "budget",
    "office",
    "travel",
    "expense",
    "claim",
    "report",
    "training",
    "safety",
    "record",
    "access",
    "system",
    "data",
    "backup",
    "incident",
    "response",
    "benefit",
    "pension",
    "holiday",
    "overtime",
    "schedule",
    "shift",
    "deadline",
    "grievance",
    "audit",
    "finance",
    "quarter",
    "invoice",
    "supplier",
    "payment",
    "refund",
    "warranty",
    "liability",
    "insurance",
    "compliance",
]


# -- documents ---------------------------------------------------------------------------------


def page_sentences(rng: random.Random, doc: int, page: int, chars: int) -> list[str]:
    sentences, size, n = [], 0, 0
    while size < chars:
        n += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18)))
        sentence = f"Clause {doc}.{page}.{n} states that the {words}."
        sentences.append(sentence)
        size += len(sentence) + 1
    return sentences


def variant(text: str, parser: str) -> str:
    """What another extractor makes of a page: ligatures and hyphenation, or lost spaces."""
    if parser == "pdfminer":
        return (
            text.replace("fi", "\ufb01").replace("fl", "\ufb02").replace("approval", "ap-\nproval")
        )
    if parser == "their-pipeline":
        return text.replace(" the ", " the").replace(". ", ".\n")
    return text


def join_pages(pages: list[str]) -> tuple[str, list[int]]:
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + 1
    return "\n".join(pages), starts


def seed_parses(document, by_page: list[list[str]], **fields) -> list:
    """The document's readings by each of ``PARSERS`` (the first is the reference), saved."""
    from evalsets.models import ParseVersion

    parses = []
    for i, parser in enumerate(PARSERS):
        text, starts = join_pages([variant(" ".join(s), parser) for s in by_page])
        parses.append(
            ParseVersion(
                document=document,
                parser=parser,
                parser_version="1",
                text=text,
                text_length=len(text),
                page_starts=starts,
                status="ready",
                is_reference=i == 0,
                **fields,
            )
        )
    return ParseVersion.objects.bulk_create(parses)


@dataclass
class Doc:
    source_id: str
    reference: str  # public id of the reference parse
    sentences: list[tuple[int, int]] = field(default_factory=list)  # on pages 1-3


@dataclass
class Seeded:
    docs: list[Doc]
    big: Doc
    tokens: dict[str, str]
    sessions: dict[str, str]
    items: dict[str, list[str]]


def seed(args) -> Seeded:
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore
    from rest_framework.authtoken.models import Token

    from evalsets.models import (
        AnchorResolution,
        Document,
        EvalItem,
        EvalSet,
        GoldAnchor,
        Membership,
        Workspace,
    )

    rng = random.Random(8)
    users = get_user_model()
    owner = users.objects.create_user("owner")
    workspace = Workspace.objects.create(slug=WS, name="Bench")
    Membership.objects.create(workspace=workspace, user=owner, role="owner")
    evalset = EvalSet.objects.create(workspace=workspace, slug=SET, name="Bench", created_by=owner)

    def document(n: int, pages: int, anchors: int) -> Doc:
        by_page = [page_sentences(rng, n, p + 1, args.page_chars) for p in range(pages)]
        source_id = f"doc-{n:04}.pdf" if pages < 1000 else "thousand-pages.pdf"
        doc = Document.objects.create(
            workspace=workspace,
            source_id=source_id,
            sha256=f"{n:064x}",
            size=pages * args.page_chars,
            kind="pdf",
        )
        parses = seed_parses(doc, by_page, progress_done=pages, progress_total=pages)
        reference_text = parses[0].text
        spans, offset = [], 0
        for p, sentences in enumerate(by_page[:3]):
            offset = parses[0].page_starts[p]
            for sentence in sentences:
                spans.append((offset, offset + len(sentence)))
                offset += len(sentence) + 1
        # Anchors already made (approved items), resolved in every parse.
        item = EvalItem.objects.create(
            evalset=evalset, item_id=f"seed-{n}", question=f"Seeded {n}?", state="approved"
        )
        made = GoldAnchor.objects.bulk_create(
            GoldAnchor(
                item=item,
                source_id=source_id,
                document=doc,
                quote=reference_text[a:b],
                reference_parse=parses[0],
                ref_start=a,
                ref_end=b,
                page_hint=1,
            )
            for a, b in rng.sample(spans, min(anchors, len(spans)))
        )
        AnchorResolution.objects.bulk_create(
            AnchorResolution(anchor=anchor, parse=parse, status="exact", start=0, end=1, score=1.0)
            for anchor in made
            for parse in parses
        )
        return Doc(source_id, str(parses[0].public_id), spans)

    docs = [document(n, args.pages, args.seeded_anchors) for n in range(1, args.documents + 1)]
    big = document(9999, 1000, 200)

    tokens, sessions, items = {}, {}, {}
    for a in range(1, args.annotators + 1):
        user = users.objects.create_user(f"ann{a:02}")
        Membership.objects.create(workspace=workspace, user=user, role="annotator")
        tokens[user.username] = Token.objects.create(user=user).key
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        sessions[user.username] = session.session_key
        ids = [f"{user.username}-{k:04}" for k in range(args.items_per_annotator)]
        EvalItem.objects.bulk_create(
            EvalItem(
                evalset=evalset,
                item_id=item_id,
                question=f"What does clause {k} of {user.username}'s list say?",
                qtype="extractive",
                author=user,
                assignee=user,
            )
            for k, item_id in enumerate(ids)
        )
        items[user.username] = ids
    return Seeded(docs, big, tokens, sessions, items)


# -- the load ----------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def call(self, name: str, expect: int, send, *args, **kwargs) -> requests.Response | None:
        started = time.perf_counter()
        try:
            response = send(*args, timeout=30, **kwargs)
        except requests.RequestException as exc:
            with self.lock:
                self.errors[name][type(exc).__name__] += 1
            return None
        elapsed = (time.perf_counter() - started) * 1000
        with self.lock:
            self.times[name].append(elapsed)
            if response.status_code != expect:
                self.errors[name][str(response.status_code)] += 1
        return response if response.status_code == expect else None


@dataclass
class Run:
    label: str
    recorder: Recorder
    resolved_client_ms: list[float]
    resolved_server_ms: list[float]
    unresolved: int
    anchors: list[str]
    duration: float
    cpu: str = ""


def run_load(base: str, seeded: Seeded, args, label: str, stack: svc.Stack) -> Run:
    recorder = Recorder()
    api = f"{base}/api/workspaces/{WS}"
    stop_at = time.monotonic() + args.duration
    created: queue.Queue = queue.Queue()
    resolved_ms: list[float] = []
    unresolved = [0]
    anchors: list[str] = []
    lock = threading.Lock()

    def think(rng: random.Random) -> None:
        if args.think > 0:
            time.sleep(rng.expovariate(1 / args.think))

    def annotator(username: str, seed_value: int) -> None:
        rng = random.Random(seed_value)
        http = requests.Session()
        token = {"Authorization": f"Token {seeded.tokens[username]}"}
        cookie = {"Cookie": f"sessionid={seeded.sessions[username]}"}
        # Start after a pause like any other, as people do: without it the run opened with
        # all 20 lists at the same millisecond, and those 20 queued requests (6% of the
        # samples) set the list's p95 by themselves.
        think(rng)
        while time.monotonic() < stop_at:
            listed = recorder.call(
                "items: list my drafts",
                200,
                http.get,
                f"{api}/evalsets/{SET}/items/?assignee={username}&state=draft",
                headers=token,
            )
            if listed is None or not listed.json()["results"]:
                time.sleep(0.5)
                continue
            item = listed.json()["results"][0]["id"]
            think(rng)
            doc = rng.choice(seeded.docs)
            recorder.call(
                "document page (HTML)",
                200,
                http.get,
                f"{base}/w/{WS}/documents/{doc.source_id}",
                headers=cookie,
            )
            recorder.call(
                "pages 1-3 of a parse",
                200,
                http.get,
                f"{api}/documents/{doc.source_id}/parses/{doc.reference}/pages/?from=1&to=3",
                headers=token,
            )
            think(rng)
            start, end = rng.choice(doc.sentences)
            made = recorder.call(
                "anchor: create from highlight",
                201,
                http.post,
                f"{api}/evalsets/{SET}/items/{item}/anchors/",
                json={"parse": doc.reference, "start": start, "end": end, "grade": 2},
                headers=token,
            )
            if made is not None:
                anchor = made.json()["id"]
                created.put((f"{api}/evalsets/{SET}/items/{item}/anchors/{anchor}/", token))
                with lock:
                    anchors.append(anchor)
            think(rng)
            recorder.call(
                "item: submit",
                200,
                http.post,
                f"{api}/evalsets/{SET}/items/{item}/submit/",
                json={},
                headers=token,
            )
            think(rng)

    def follow(url: str, headers: dict, created_at: float) -> None:
        """Poll one anchor until every parse has placed it, as the document view does."""
        http = requests.Session()
        deadline = created_at + 60
        while time.monotonic() < deadline:
            response = recorder.call("anchor detail (poll)", 200, http.get, url, headers=headers)
            if response is not None:
                rows = response.json()["resolutions"]
                if len(rows) >= len(PARSERS) and all(r["status"] != "pending" for r in rows):
                    with lock:
                        resolved_ms.append((time.monotonic() - created_at) * 1000)
                    return
            time.sleep(args.poll)
        with lock:
            unresolved[0] += 1

    def followers() -> None:
        threads = []
        while True:
            entry = created.get()
            if entry is None:
                break
            url, headers = entry
            thread = threading.Thread(target=follow, args=(url, headers, time.monotonic()))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()

    def reader() -> None:
        http = requests.Session()
        cookie = {"Cookie": f"sessionid={next(iter(seeded.sessions.values()))}"}
        token = {"Authorization": f"Token {next(iter(seeded.tokens.values()))}"}
        big = seeded.big
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            page = recorder.call(
                "1,000-page doc: page (HTML)",
                200,
                http.get,
                f"{base}/w/{WS}/documents/{big.source_id}",
                headers=cookie,
            )
            pages = recorder.call(
                "1,000-page doc: pages 1-3",
                200,
                http.get,
                f"{api}/documents/{big.source_id}/parses/{big.reference}/pages/?from=1&to=3",
                headers=token,
            )
            if page is not None and pages is not None:
                with recorder.lock:
                    recorder.times["1,000-page doc: first page, both"].append(
                        (time.perf_counter() - started) * 1000
                    )
            time.sleep(1)

    meter = svc.CpuMeter(stack)
    meter.start()
    follower = threading.Thread(target=followers)
    follower.start()
    workers = [
        threading.Thread(target=annotator, args=(name, n)) for n, name in enumerate(seeded.tokens)
    ]
    workers.append(threading.Thread(target=reader))
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    cpu = meter.stop()
    created.put(None)
    follower.join()
    return Run(label, recorder, resolved_ms, [], unresolved[0], anchors, args.duration, cpu)


def server_side_latency(anchor_ids: list[str]) -> list[float]:
    """Exact delay from an anchor's creation to its last resolution row, from the database."""
    from django.db.models import Count, Max

    from evalsets.models import GoldAnchor

    rows = (
        GoldAnchor.objects.filter(public_id__in=anchor_ids)
        .annotate(last=Max("resolutions__updated_at"), n=Count("resolutions"))
        .values_list("created_at", "last", "n")
    )
    return [
        (last - created).total_seconds() * 1000
        for created, last, n in rows
        if last is not None and n >= len(PARSERS)
    ]


def warm_up(base: str, seeded: Seeded) -> None:
    """One unmeasured pass of every request from every annotator at once, so each server
    process has imported, connected and compiled its templates before the clock runs."""
    api = f"{base}/api/workspaces/{WS}"

    def one(username: str) -> None:
        http = requests.Session()
        token = {"Authorization": f"Token {seeded.tokens[username]}"}
        cookie = {"Cookie": f"sessionid={seeded.sessions[username]}"}
        for doc in (seeded.docs[0], seeded.big):
            http.get(f"{base}/w/{WS}/documents/{doc.source_id}", headers=cookie, timeout=60)
            http.get(
                f"{api}/documents/{doc.source_id}/parses/{doc.reference}/pages/?from=1&to=3",
                headers=token,
                timeout=60,
            )
        listed = http.get(
            f"{api}/evalsets/{SET}/items/?assignee={username}&state=draft", headers=token
        )
        # A first write too: the web process imports the task modules on its first queueing.
        item = listed.json()["results"][0]["id"]
        start, end = seeded.docs[0].sentences[0]
        http.post(
            f"{api}/evalsets/{SET}/items/{item}/anchors/",
            json={"parse": seeded.docs[0].reference, "start": start, "end": end},
            headers=token,
            timeout=60,
        )

    threads = [threading.Thread(target=one, args=(name,)) for name in seeded.tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def idle_first_page(base: str, seeded: Seeded, samples: int = 10) -> list[float]:
    http = requests.Session()
    cookie = {"Cookie": f"sessionid={next(iter(seeded.sessions.values()))}"}
    token = {"Authorization": f"Token {next(iter(seeded.tokens.values()))}"}
    big, out = seeded.big, []
    api = f"{base}/api/workspaces/{WS}"
    for _ in range(samples):
        started = time.perf_counter()
        http.get(f"{base}/w/{WS}/documents/{big.source_id}", headers=cookie, timeout=30)
        http.get(
            f"{api}/documents/{big.source_id}/parses/{big.reference}/pages/?from=1&to=3",
            headers=token,
            timeout=30,
        ).raise_for_status()
        out.append((time.perf_counter() - started) * 1000)
    return out


# -- report ------------------------------------------------------------------------------------

ORDER = [
    "items: list my drafts",
    "document page (HTML)",
    "pages 1-3 of a parse",
    "anchor: create from highlight",
    "item: submit",
    "anchor detail (poll)",
    "1,000-page doc: page (HTML)",
    "1,000-page doc: pages 1-3",
    "1,000-page doc: first page, both",
]


def report(runs: list[Run], args, idle: list[float]) -> None:
    p = svc.percentile
    print()
    print(
        f"{args.annotators} annotators, {args.duration:.0f} s, think time {args.think} s mean, "
        f"{args.documents} documents x {args.pages} pages x {len(PARSERS)} parses "
        f"+ one of 1,000 pages; gunicorn {args.gunicorn_workers} workers, 2 Celery workers"
    )
    for run in runs:
        print()
        print(f"== {run.label} ==")
        rows = []
        for name in ORDER:
            times = run.recorder.times.get(name)
            errors = sum(run.recorder.errors.get(name, {}).values())
            if not times:
                continue
            rows.append(
                [
                    name,
                    len(times),
                    p(times, 50),
                    p(times, 95),
                    p(times, 99),
                    max(times),
                    errors,
                ]
            )
        print(
            svc.table(
                ["endpoint", "requests", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"], rows
            )
        )
        for name, kinds in run.recorder.errors.items():
            if kinds:
                print(f"  errors on {name}: {dict(kinds)}")
        total = sum(len(t) for t in run.recorder.times.values() if t)
        print(f"  throughput: {total / run.duration:,.1f} requests/s; {run.cpu}")
        rows = []
        for label, values in (
            ("as polled on the API", run.resolved_client_ms),
            ("from database timestamps", run.resolved_server_ms),
        ):
            if values:
                rows.append(
                    [label, len(values), p(values, 50), p(values, 95), p(values, 99), max(values)]
                )
        print()
        print(
            f"anchor created -> resolved in all {len(PARSERS)} parses: polled every "
            f"{args.poll * 1000:.0f} ms; {run.unresolved} not resolved within 60 s"
        )
        print(svc.table(["measured", "anchors", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows))
    if idle:
        print()
        print("1,000-page document, first page (page HTML + pages 1-3 API), no other load")
        print(
            svc.table(
                ["server", "samples", "p50 ms", "p95 ms", "max ms"],
                [["gunicorn", len(idle), p(idle, 50), p(idle, 95), max(idle)]],
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--peer-duration", type=float, default=None, help="default: --duration")
    parser.add_argument("--think", type=float, default=1.0)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--page-chars", type=int, default=2000)
    parser.add_argument("--seeded-anchors", type=int, default=30)
    parser.add_argument("--items-per-annotator", type=int, default=800)
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between anchor polls")
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()

    env = svc.prepare(DATABASE, REDIS_DB)
    started = time.perf_counter()
    seeded = seed(args)
    print(f"seeded in {time.perf_counter() - started:.1f} s", flush=True)

    runs = []
    with svc.Stack(env) as stack:
        stack.celery_workers(2)
        base = stack.gunicorn(workers=args.gunicorn_workers)
        warm_up(base, seeded)
        idle = idle_first_page(base, seeded)
        print(f"running {args.duration:.0f} s against gunicorn ...", flush=True)
        run = run_load(base, seeded, args, f"gunicorn ({args.gunicorn_workers} workers)", stack)
        run.resolved_server_ms = server_side_latency(run.anchors)
        runs.append(run)
        if not args.skip_peer:
            peer = stack.runserver()
            warm_up(peer, seeded)
            duration = args.duration
            args.duration = args.peer_duration or duration
            print(f"running {args.duration:.0f} s against runserver (baseline) ...", flush=True)
            run = run_load(
                peer,
                seeded,
                args,
                "baseline, not a peer: our app on Django runserver (1 process, threaded)",
                stack,
            )
            run.resolved_server_ms = server_side_latency(run.anchors)
            runs.append(run)
            args.duration = duration
    report(runs, args, idle)
    print(f"load average after: {svc.load_average()}")


if __name__ == "__main__":
    main()
