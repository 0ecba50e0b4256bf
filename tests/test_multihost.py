"""Hosts that share nothing but PostgreSQL, Redis and the S3 server.

Two web hosts (A, B) and two worker hosts (C, D), each a process started from its line of
the ``Procfile`` (as a deployment runs them), each in a working folder of its own with its
own media, cache and var folders, on the same PostgreSQL test database, the same Redis
(queues of this module's own) and the same S3 bucket (a prefix of this module's own). What
one host writes, another reads only through those: an upload through A is parsed by a
worker and read on B; a rendered view a worker built is served by B; a long PDF's page ranges
are read by both workers, and when one is killed mid-range the other finishes the parse; a
release a worker built downloads byte-identical from A and B. No host writes a media folder.

Each host runs in a network namespace of its own (``tests/netns.py``), reaching PostgreSQL,
Redis and the S3 server only through its veth pair, and this process reaches the web hosts
at their own addresses. Where namespaces cannot be made (not root), the hosts share this
machine's loopback instead; CI (``GROUNDWORK_REQUIRE_SERVICES=1``) refuses that.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from django.conf import settings
from rest_framework.authtoken.models import Token

from evalsets.anchoring import services as anchoring_services
from evalsets.models import EvalItem, ParseRange, ParseVersion, Release, ReleaseStatus
from evalsets.pure.parsers import PARSERS
from labelling.celery import app as celery_app
from tests import netns
from tests import services as svc
from tests.documents import make_pdf
from tests.s3 import new_prefix

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

WS = "/api/workspaces/acme"
HTML = (
    "<html><body><h1>Leave policy</h1>"
    + "".join(f"<p>Paragraph {n} of the long policy text.</p>" for n in range(2000))
    + "</body></html>"
).encode()
# 40-page ranges of dense text take pdfminer a second or more each (its progress is written
# every 0.5 s), long enough to see one range read and another part-way before a worker is
# killed.
BIG_PAGES, RANGE_PAGES = 160, "40"
BIG = [
    f"Page {n}. " + "Dense words about leave and remote work policy. " * 40
    for n in range(BIG_PAGES)
]


@dataclass
class Host:
    """One process kind on a host of its own: a working folder, nothing else of its own."""

    name: str
    kind: str
    folder: Path
    env: dict[str, str]
    process: subprocess.Popen | None = None
    base: str = ""
    pids: set[int] = field(default_factory=set)
    network: netns.Namespace | None = None

    def start(self) -> None:
        self.folder.mkdir(parents=True)
        log = (self.folder / "process.log").open("wb")
        command = ["bash", "-c", f"exec {svc.procfile()[self.kind]}"]
        self.process = subprocess.Popen(
            self.network.command(command) if self.network else command,
            cwd=self.folder,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        if self.process.poll() is not None:
            log = (self.folder / "process.log").read_text(errors="replace")[-3000:]
            pytest.fail(f"host {self.name} exited with {self.process.returncode}:\n{log}")
        return True

    def children(self) -> set[int]:
        """The worker's pool processes (whose pids name the leases they hold)."""
        path = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        with contextlib.suppress(FileNotFoundError):
            self.pids |= {int(pid) for pid in path.read_text().split()}
        return self.pids

    def kill(self) -> None:
        """SIGKILL the host's processes at once, as a host that loses power; drop the messages
        it held (Redis would hand them back only after its visibility timeout)."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        svc.forget_deliveries_before(
            settings.CELERY_BROKER_URL, time.time(), self.env["GROUNDWORK_TASK_QUEUE"]
        )

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)

    def wait_or_kill(self, deadline: float) -> None:
        """Wait for the host to stop until ``deadline`` (``time.monotonic()``), then kill it:
        the test is over, no need for a warm shutdown."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            self.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def wrote_media(self) -> bool:
        return (self.folder / "media").exists()


def _host_env(base: dict[str, str], folder: Path, name: str) -> dict[str, str]:
    return {
        **base,
        "DJANGO_MEDIA_ROOT": str(folder / "media"),
        "GROUNDWORK_VAR_DIR": str(folder / "var"),
        "PROCESS_NAME": f"{name}-{os.getpid()}",
    }


def _web_answers(host: Host) -> bool:
    host.alive()
    try:
        return requests.get(f"{host.base}/healthz/", timeout=5).status_code == 200
    except requests.RequestException:  # not listening yet, or its worker still loading
        return False


def _worker_answers(host: Host) -> bool:
    host.alive()
    replies = celery_app.control.ping(timeout=0.5) or []
    return any(key.startswith(f"{host.env['PROCESS_NAME']}@") for r in replies for key in r)


HOSTS = (("a", "web"), ("b", "web"), ("c", "parse-worker"), ("d", "parse-worker"))
#: The environment variables that locate a service: each host reaches it through its gateway.
SERVICE_URLS = ("DATABASE_URL", "CELERY_BROKER_URL", "GROUNDWORK_S3_ENDPOINT_URL")


def _networks(service_urls: list[str]):
    """A network namespace per host, reaching only ``service_urls``; none where namespaces
    cannot be made here (a developer without root), which CI does not accept."""
    reason = netns.unavailable()
    if reason is None:
        return netns.namespaces([name for name, _ in HOSTS], service_urls)
    if os.environ.get("GROUNDWORK_REQUIRE_SERVICES") == "1":
        pytest.fail(f"CI runs the hosts in network namespaces of their own: {reason}")
    return contextlib.nullcontext({})


def _start_host(root: Path, base: dict, name: str, kind: str, networks: dict) -> Host:
    folder = root / name
    network = networks.get(name)
    env = _host_env(base, folder, name)
    if network is not None:
        env |= {key: network.url(env[key]) for key in SERVICE_URLS}
    host = Host(name, kind, folder, env, network=network)
    if kind == "web":
        # A namespace's addresses are its own: any port is free there.
        address, port = (network.address, 8000) if network else ("127.0.0.1", svc.free_port())
        host.env["BIND"] = f"{address}:{port}"
        host.env["DJANGO_ALLOWED_HOSTS"] = address
        host.base = f"http://{address}:{port}"
    host.start()
    return host


@pytest.fixture(scope="module")
def hosts(s3_server, django_db_setup, tmp_path_factory):
    """Web hosts A and B, worker hosts C and D, started from the Procfile."""
    reason = svc.services_configured()
    if reason:
        pytest.skip(f"needs PostgreSQL, Redis and workers: {reason}")
    root = tmp_path_factory.mktemp("hosts")
    venv_bin = str(Path(sys.executable).parent)
    with svc.own_queues() as queues:
        base = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GROUNDWORK_")},
            **s3_server.env(new_prefix()),
            "PATH": f"{venv_bin}:{os.environ['PATH']}",
            "PYTHONPATH": str(svc.ROOT),
            "DATABASE_URL": svc.database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "GROUNDWORK_TASK_QUEUE": queues,
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "multi-host-test-only",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "WEB_PROCESSES": "1",
            "WORKER_PROCESSES": "1",
            "GROUNDWORK_PARSE_RANGE_PAGES": RANGE_PAGES,
            # a range whose holder stopped renewing for 6 s is taken over within 3 s more
            "GROUNDWORK_LEASE_S": "6",
            "GROUNDWORK_SWEEP_STALE_S": "20",
        }
        services = [base[key] for key in SERVICE_URLS]
        with _networks(services) as networks:
            started = {name: _start_host(root, base, name, kind, networks) for name, kind in HOSTS}
            try:
                for host in started.values():
                    ready = _web_answers if host.kind == "web" else _worker_answers
                    svc.wait_for(lambda h=host, r=ready: r(h), what=f"host {host.name} to answer")
                yield started
            finally:
                for host in started.values():
                    host.terminate()
                deadline = time.monotonic() + 5
                for host in started.values():
                    host.wait_or_kill(deadline)


@pytest.fixture
def as_user():
    """Call a web host as ``user`` with an API token."""

    def make(user):
        session = requests.Session()
        session.headers["Authorization"] = f"Token {Token.objects.get_or_create(user=user)[0]}"

        def call(host: Host, method: str, path: str, **kwargs) -> requests.Response:
            return session.request(method, f"{host.base}{path}", timeout=60, **kwargs)

        return call

    return make


def _ready(source_id: str, parser: str, timeout: float = 90) -> ParseVersion:
    return svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id=source_id, parser=parser, status="ready"
        ).first(),
        timeout=timeout,
        what=f"a worker to parse {source_id} with {parser}",
    )


def _no_media_written(hosts: dict[str, Host]) -> None:
    assert [h.name for h in hosts.values() if h.wrote_media()] == []


#: Run inside a host's namespace: can it open a TCP connection to each ``host:port`` given?
REACHES = """
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        print("yes")
    except OSError:
        print("no")
"""


def test_each_host_is_on_a_network_of_its_own_that_reaches_only_the_services(hosts):
    if any(host.network is None for host in hosts.values()):
        pytest.skip("no network namespaces here: the hosts share this machine's loopback")
    database = urlsplit(svc.database_url())
    for host in hosts.values():
        network = host.network
        probe = subprocess.run(
            network.command(
                [
                    sys.executable,
                    "-c",
                    REACHES,
                    f"127.0.0.1:{database.port}",
                    f"{network.gateway}:{database.port}",
                ]
            ),
            capture_output=True,
            text=True,
            check=True,
        )
        # The machine's own loopback is out of reach; the database is there via the gateway.
        assert probe.stdout.split() == ["no", "yes"], (host.name, probe.stderr)
    assert len({host.network.address for host in hosts.values()}) == len(hosts)


def test_an_upload_through_a_is_parsed_by_a_worker_and_read_with_its_rendition_on_b(
    hosts, workspace, annotator, viewer, as_user
):
    a, b = hosts["a"], hosts["b"]
    upload = as_user(annotator)(
        a, "POST", f"{WS}/documents/", files={"file": ("leave.html", HTML, "text/html")}
    )
    assert upload.status_code == 201, upload.text
    _ready("leave.html", "selectolax")
    read = as_user(viewer)
    document = read(b, "GET", f"{WS}/documents/leave.html/")
    assert document.status_code == 200, document.text
    served = svc.wait_for(
        lambda: (
            (r := read(b, "GET", f"{WS}/documents/leave.html/rendered/?from=1&to=2")).status_code
            == 200
            and r
        ),
        what="web host B to serve the rendition a worker stored",
    )
    assert "Leave policy" in served.json()["sections"][0]["html"]
    again = read(a, "GET", f"{WS}/documents/leave.html/rendered/?from=1&to=2")
    assert again.json()["sections"] == served.json()["sections"]
    _no_media_written(hosts)


def test_a_release_built_by_a_worker_downloads_byte_identical_from_both_web_hosts(
    hosts, workspace, owner, annotator, evalset, document, as_user
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="How much leave?"
    )
    EvalItem.objects.filter(pk=item.pk).update(state="approved")
    call = as_user(owner)
    started = call(
        hosts["a"], "POST", f"{WS}/evalsets/quiz/releases/", json={"formats": ["contextgrid-csv"]}
    )
    assert started.status_code == 202, started.text
    svc.wait_for(
        lambda: Release.objects.filter(status=ReleaseStatus.READY).exists(),
        what="a worker to build the release",
    )
    url = f"{WS}/evalsets/quiz/releases/1/files/contextgrid-csv"
    from_a, from_b = call(hosts["a"], "GET", url), call(hosts["b"], "GET", url)
    assert from_a.status_code == from_b.status_code == 200
    assert from_a.content == from_b.content and b"How much leave?" in from_a.content
    assert hashlib.sha256(from_b.content).hexdigest() == from_b.headers["X-Content-SHA256"]
    _no_media_written(hosts)


def _holder(token: str, workers: list[Host]) -> str | None:
    """Which worker host holds a lease token (``host:pid:random``)."""
    match = re.match(r"[^:]*:(\d+):", token or "")
    pid = int(match.group(1)) if match else -1
    return next((w.name for w in workers if pid in w.children()), None)


def test_a_long_pdfs_ranges_are_read_by_both_workers_and_a_killed_ones_range_by_the_other(
    hosts, workspace, owner, annotator, as_user
):
    workers = [hosts["c"], hosts["d"]]
    settings_changed = as_user(owner)(
        hosts["a"],
        "PATCH",
        f"{WS}/",
        json={"parser_settings": {"parsers": {"pdf": ["pdfminer"]}}},
    )
    assert settings_changed.status_code == 200, settings_changed.text
    data = make_pdf(BIG)
    upload = as_user(annotator)(
        hosts["b"], "POST", f"{WS}/documents/", files={"file": ("big.pdf", data)}
    )
    assert upload.status_code == 201, upload.text
    ranges = ParseRange.objects.filter(parse__document__source_id="big.pdf")

    def mid_range_on_both():
        rows = list(ranges.values("pk", "status", "claimed_by", "progress_done"))
        holders = {_holder(r["claimed_by"], workers) for r in rows if r["claimed_by"]}
        busy = [r for r in rows if r["status"] == "parsing" and r["progress_done"] >= 1]
        done = [r for r in rows if r["status"] == "ready"]
        return {"c", "d"} <= holders and busy and done and (busy[0], rows)

    victim_range, _rows = svc.wait_for(
        mid_range_on_both, timeout=120, what="both workers reading big.pdf's ranges"
    )
    victim = next(w for w in workers if w.name == _holder(victim_range["claimed_by"], workers))
    survivor = next(w for w in workers if w is not victim)
    victim.kill()

    parse = _ready("big.pdf", "pdfminer", timeout=180)
    after = {r.pk: r for r in ranges}
    assert len(after) == BIG_PAGES // int(RANGE_PAGES)
    assert all(r.status == "ready" for r in after.values())
    assert _holder(after[victim_range["pk"]].claimed_by, [survivor]) == survivor.name
    assert after[victim_range["pk"]].attempts == 2
    assert parse.text == PARSERS["pdfminer"].parse(data, max_pages=BIG_PAGES).text
    _no_media_written(hosts)
