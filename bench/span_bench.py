"""Span-creation load against a real peer: Groundwork and Label Studio, side by side.

Why it exists: the load benchmark (``load_bench.py``) compares our app on two web servers,
which is a baseline, not a peer. This one puts the same work to another labelling tool that
runs here: Label Studio (open-source edition, installed from PyPI into a virtual
environment of its own under ``bench/.cache/peers/``, because it pins its own Django). The
work is what annotators do all day: ``--users`` people highlight spans in one ``--doc-mb``
MB text document as fast as the server answers (no think time), for ``--duration``
seconds. Each highlight is one HTTP request that stores it:

- Groundwork: ``POST .../items/{item}/anchors/`` with a parse id and offsets (the document
  page's highlight). The anchor is then resolved in both parses of the document by the
  Celery worker; the backlog left at the end is printed, because a stored anchor is not yet
  a resolved one.
- Label Studio: ``POST /api/tasks/{task}/annotations/`` with one ``labels`` region over the
  same offsets (its text labelling interface's save). Label Studio stores the region and
  has nothing to resolve.

Each tool runs as its own quick start runs it, on this machine's two cores: Groundwork's
``make run`` (``manage.py rundev``: Django's server, SQLite and a Celery worker on the
filesystem broker) and ``label-studio start`` (Django's server and SQLite). Groundwork also
runs on its production stack (gunicorn with 4 processes, PostgreSQL, Redis, 2 workers).
Every user of Groundwork has an account and token of its own; Label Studio's users share
the one account its start command creates (a token per user would need its sign-up flow,
and the account does not change what a save costs).

Run: ``.venv/bin/python bench/span_bench.py [--duration 30] [--users 20] [--doc-mb 2]``;
``--skip-label-studio``, ``--skip-production``. The first run installs Label Studio
(``--label-studio-version``, default pinned below) with pip, which takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import _services as svc
import requests
from load_bench import WORDS

LABEL_STUDIO_VERSION = "1.23.2"
PEERS = svc.CACHE / "peers"
WS, SET, PASSWORD = "spans", "spans", "span-bench-password"
TOKEN_LS = "5b1e0a0c" * 5  # Label Studio's legacy token for its bench account (40 hex)


# -- the document ------------------------------------------------------------------------------


def document(megabytes: float, seed: int = 5) -> tuple[str, list[tuple[int, int]]]:
    """A text of about ``megabytes`` MB in sentences, and each sentence's (start, end)."""
    rng = random.Random(seed)
    parts, spans, offset, n = [], [], 0, 0
    while offset < megabytes * 1_000_000:
        n += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18)))
        sentence = f"Clause {n} states that the {words}."
        parts.append(sentence)
        spans.append((offset, offset + len(sentence)))
        offset += len(sentence) + 1
    return "\n".join(parts), spans


def other_reading(text: str) -> str:
    """What a second extractor makes of it: ligatures and lines joined differently."""
    return text.replace("fi", "\ufb01").replace(" the ", " the\n")


# -- the load ----------------------------------------------------------------------------------


@dataclass
class Result:
    label: str
    times_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    duration: float = 0.0
    cpu: str = ""
    backlog: str = "-"


def hammer(label: str, users: list, duration: float, post) -> Result:
    """Each of ``users`` calls ``post(user, http, rng)`` back to back for ``duration`` s."""
    result = Result(label)
    lock = threading.Lock()
    stop_at = time.monotonic() + duration

    def one(user, seed: int) -> None:
        rng, http = random.Random(seed), requests.Session()
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            try:
                status = post(user, http, rng)
            except requests.RequestException as exc:
                status = type(exc).__name__
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                if status in (200, 201):
                    result.times_ms.append(elapsed)
                else:
                    result.errors[str(status)] = result.errors.get(str(status), 0) + 1

    threads = [threading.Thread(target=one, args=(u, n)) for n, u in enumerate(users)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.duration = time.monotonic() - began
    return result


# -- Groundwork --------------------------------------------------------------------------------

SEED_CODE = """
import json
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from evalsets.models import EvalItem, EvalSet, Membership, Workspace
users = get_user_model()
owner = users.objects.create_user("owner", password={password!r})
ws = Workspace.objects.create(slug={ws!r}, name="Span bench")
Membership.objects.create(workspace=ws, user=owner, role="owner")
es = EvalSet.objects.create(workspace=ws, slug={set!r}, name="Span bench", created_by=owner)
out = {{"owner": Token.objects.create(user=owner).key, "users": []}}
for u in range({users}):
    user = users.objects.create_user(f"ann{{u:02}}", password={password!r})
    Membership.objects.create(workspace=ws, user=user, role="annotator")
    ids = [f"ann{{u:02}}-{{k:03}}" for k in range({items})]
    EvalItem.objects.bulk_create(
        EvalItem(evalset=es, item_id=i, question=f"What does clause {{k}} say?",
                 qtype="extractive", author=user, assignee=user)
        for k, i in enumerate(ids))
    out["users"].append([Token.objects.create(user=user).key, ids])
print(json.dumps(out))
"""


def seed_groundwork(env: dict[str, str], base: str, args, text: str) -> tuple[str, list, dict]:
    """Accounts, items and the document (uploaded through the API, parsed by the worker);
    returns the reference parse's id, a (token, item ids) pair per user and the owner's
    authorisation header."""
    code = SEED_CODE.format(password=PASSWORD, ws=WS, set=SET, users=args.users, items=40)
    made = subprocess.run(
        [svc.PYTHON, "manage.py", "shell", "-c", code],
        cwd=svc.ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    seeded = json.loads(made.stdout.strip().splitlines()[-1])
    owner = {"Authorization": f"Token {seeded['owner']}"}
    api = f"{base}/api/workspaces/{WS}/documents/"
    response = requests.post(
        api,
        files={"file": ("handbook.txt", text.encode(), "text/plain")},
        headers=owner,
        timeout=120,
    )
    response.raise_for_status()
    source_id = response.json()["source_id"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        parses = requests.get(f"{api}{source_id}/parses/", headers=owner, timeout=30).json()
        rows = parses["results"] if isinstance(parses, dict) else parses
        if rows and all(p["status"] == "ready" for p in rows):
            break
        time.sleep(0.5)
    else:
        raise RuntimeError(f"the upload was not parsed within 300 s: {rows}")
    reference = next(p["id"] for p in rows if p["is_reference"])
    other = other_reading(text)
    requests.post(
        f"{api}{source_id}/parses/",
        json={"parser": "their-pipeline", "text": other, "page_starts": [0]},
        headers=owner,
        timeout=120,
    ).raise_for_status()
    return reference, seeded["users"], owner


def pending(base: str, owner: dict[str, str]) -> int:
    """Resolutions still missing, as the workspace's backlog API counts them."""
    url = f"{base}/api/workspaces/{WS}/pending/"
    return requests.get(url, headers=owner, timeout=60).json()["resolutions_missing"]


def groundwork_run(label: str, env, base, stack, args, text, spans) -> Result:
    reference, users, owner = seed_groundwork(env, base, args, text)
    api = f"{base}/api/workspaces/{WS}/evalsets/{SET}/items"

    def post(user, http, rng) -> int:
        token, items = user
        start, end = rng.choice(spans)
        return http.post(
            f"{api}/{rng.choice(items)}/anchors/",
            json={"parse": reference, "start": start, "end": end, "grade": 2},
            headers={"Authorization": f"Token {token}"},
            timeout=60,
        ).status_code

    meter = svc.CpuMeter(stack)
    meter.start()
    result = hammer(label, users, args.duration, post)
    result.cpu = meter.stop()
    waiting = pending(base, owner)
    result.backlog = f"{waiting:,} resolutions waiting at the end"
    return result


def embedded_env(folder: Path) -> dict[str, str]:
    """``make run``'s settings: SQLite and the filesystem broker in a folder of its own."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env.pop("CELERY_BROKER_URL", None)
    return {
        **env,
        "GROUNDWORK_VAR_DIR": str(folder),
        "DJANGO_MEDIA_ROOT": str(folder / "media"),
        "GROUNDWORK_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(svc.ROOT),
    }


def run_embedded(args, text, spans) -> Result:
    folder = Path(tempfile.mkdtemp(prefix="span-bench-"))
    env = embedded_env(folder)
    try:
        svc.manage(env, "migrate", "--noinput")
        port = svc.free_port()
        with svc.Stack(env) as stack:
            stack._spawn([svc.PYTHON, "manage.py", "rundev", f"127.0.0.1:{port}"])
            base = stack._wait_http(port)
            label = "Groundwork: make run (runserver, SQLite, 2 workers, filesystem broker)"
            return groundwork_run(label, env, base, stack, args, text, spans)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_production(args, text, spans) -> Result:
    env = svc.prepare("gw_span_bench", 12)
    with svc.Stack(env) as stack:
        base = stack.gunicorn(workers=4)
        stack.celery_workers(2)
        label = "Groundwork: gunicorn x4, PostgreSQL, Redis, 2 workers"
        return groundwork_run(label, env, base, stack, args, text, spans)


# -- Label Studio ------------------------------------------------------------------------------

LABEL_CONFIG = """<View>
  <Labels name="label" toName="text"><Label value="Evidence"/></Labels>
  <Text name="text" value="$text"/>
</View>"""


def label_studio_venv(version: str) -> Path:
    """Label Studio ``version`` in a virtual environment of its own, installed once."""
    venv = PEERS / f"label-studio-{version}"
    binary = venv / "bin" / "label-studio"
    if not binary.exists():
        print(f"installing Label Studio {version} into {venv} (once) ...", flush=True)
        subprocess.run([svc.PYTHON, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", f"label-studio=={version}"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return binary


def run_label_studio(args, text, spans) -> Result:
    binary = label_studio_venv(args.label_studio_version)
    data = Path(tempfile.mkdtemp(prefix="label-studio-bench-"))
    port = svc.free_port()
    env = {
        **os.environ,
        "LABEL_STUDIO_BASE_DATA_DIR": str(data),
        "LABEL_STUDIO_USERNAME": "bench@example.com",
        "LABEL_STUDIO_PASSWORD": PASSWORD,
        "LABEL_STUDIO_USER_TOKEN": TOKEN_LS,
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
    }
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Token {TOKEN_LS}"}
    stack = svc.Stack(env)
    try:
        stack._spawn(
            [str(binary), "start", "--no-browser", "--port", str(port), "--data-dir", str(data)]
        )
        deadline = time.monotonic() + 900  # its first start migrates ~100 tables
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{base}/health", timeout=5).ok:
                    break
            except requests.RequestException:
                pass
            time.sleep(1)
        else:
            raise RuntimeError("Label Studio did not answer within 900 s")
        project = requests.post(
            f"{base}/api/projects/",
            json={"title": "Span bench", "label_config": LABEL_CONFIG},
            headers=auth,
            timeout=60,
        )
        project.raise_for_status()
        project_id = project.json()["id"]
        requests.post(
            f"{base}/api/projects/{project_id}/import",
            json=[{"text": text}],
            headers=auth,
            timeout=300,
        ).raise_for_status()
        tasks = requests.get(
            f"{base}/api/tasks/?project={project_id}&fields=task_only",
            headers=auth,
            timeout=60,
        ).json()
        task_id = (tasks["tasks"] if isinstance(tasks, dict) else tasks)[0]["id"]

        def post(user, http, rng) -> int:
            start, end = rng.choice(spans)
            region = {
                "id": f"r{rng.getrandbits(40):x}",
                "from_name": "label",
                "to_name": "text",
                "type": "labels",
                "value": {"start": start, "end": end, "labels": ["Evidence"]},
            }
            return http.post(
                f"{base}/api/tasks/{task_id}/annotations/",
                json={"result": [region], "lead_time": 1.0},
                headers=auth,
                timeout=60,
            ).status_code

        meter = svc.CpuMeter(stack)
        meter.start()
        label = f"Label Studio {args.label_studio_version}: label-studio start (runserver, SQLite)"
        result = hammer(label, list(range(args.users)), args.duration, post)
        result.cpu = meter.stop()
        result.backlog = "- (nothing to resolve)"
        return result
    finally:
        stack.stop()
        shutil.rmtree(data, ignore_errors=True)


# -- the table ---------------------------------------------------------------------------------


def row(result: Result) -> list:
    times = result.times_ms
    return [
        result.label,
        len(times),
        len(times) / result.duration if result.duration else 0.0,
        svc.percentile(times, 50) if times else "-",
        svc.percentile(times, 95) if times else "-",
        svc.percentile(times, 99) if times else "-",
        ", ".join(f"{k}: {v}" for k, v in sorted(result.errors.items())) or "0",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--doc-mb", type=float, default=2.0)
    parser.add_argument("--label-studio-version", default=LABEL_STUDIO_VERSION)
    parser.add_argument("--skip-label-studio", action="store_true")
    parser.add_argument("--skip-production", action="store_true")
    args = parser.parse_args()

    text, spans = document(args.doc_mb)
    print(
        f"{args.users} users highlight spans in one {len(text) / 1e6:.1f} MB text document, "
        f"no think time, {args.duration:.0f} s per tool; load average before: "
        f"{svc.load_average()}",
        flush=True,
    )
    results = [run_embedded(args, text, spans)]
    if not args.skip_label_studio:
        results.append(run_label_studio(args, text, spans))
    if not args.skip_production:
        results.append(run_production(args, text, spans))
    print()
    headers = ["server", "spans stored", "per s", "p50 ms", "p95 ms", "p99 ms", "errors"]
    print(svc.table(headers, [row(r) for r in results]))
    print()
    for result in results:
        print(f"{result.label}:\n  {result.cpu}\n  background: {result.backlog}")


if __name__ == "__main__":
    main()
