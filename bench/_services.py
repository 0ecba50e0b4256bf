"""The parts a service benchmark runs against, started and stopped by the benchmark itself.

Everything listens on 127.0.0.1 only: a PostgreSQL database of the benchmark's own (dropped
and created again), a Redis database number of its own (emptied), gunicorn, Celery workers
and, as a peer, Django's ``runserver``. Settings are production ones (``DJANGO_DEBUG=false``,
persistent database connections, static files collected), so the figures mean what they
would in a deployment on this machine.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import redis

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
PYTHON = sys.executable
POSTGRES = "postgres://postgres@127.0.0.1:5432"
REDIS = "redis://127.0.0.1:6379"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_env(database: str, redis_db: int) -> dict[str, str]:
    """Environment for every process of one benchmark: production settings, local parts."""
    return {
        **os.environ,
        "DATABASE_URL": f"{POSTGRES}/{database}",
        "DATABASE_CONN_MAX_AGE": "60",
        "CELERY_BROKER_URL": f"{REDIS}/{redis_db}",
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "benchmark-only-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_STATIC_ROOT": str(CACHE / "static"),
        "DJANGO_MEDIA_ROOT": str(CACHE / "media"),
        "GROUNDWORK_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
    }


def recreate_database(name: str) -> None:
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def empty_broker(redis_db: int) -> None:
    redis.Redis(host="127.0.0.1", port=6379, db=redis_db).flushdb()


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )


def setup_django(env: dict[str, str]) -> None:
    """Configure Django in this process with the benchmark's settings (for seeding)."""
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def prepare(database: str, redis_db: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A fresh, migrated database and an empty broker, and Django configured in this process
    to seed them; says so, with the load average; returns the environment to use. ``extra``
    is added to that environment before anything starts (a settings module of the bench's)."""
    print(f"preparing database {database!r} and Redis db {redis_db} ...", flush=True)
    print(f"load average before: {load_average()}", flush=True)
    env = {**bench_env(database, redis_db), **(extra or {})}
    (CACHE / "media").mkdir(parents=True, exist_ok=True)
    recreate_database(database)
    empty_broker(redis_db)
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")
    setup_django(env)
    return env


class Stack:
    """Processes started for one benchmark; ``stop`` ends exactly those."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.processes: list[subprocess.Popen] = []
        self.kinds: dict[int, str] = {}  # pid -> "web" or "workers"

    def _spawn(self, args: list[str], kind: str = "web", **env: str) -> subprocess.Popen:
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            env={**self.env, **env},
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(process)
        self.kinds[process.pid] = kind
        return process

    def gunicorn(self, *, workers: int = 4, threads: int = 1) -> str:
        port = free_port()
        options = ["--workers", str(workers), "--threads", str(threads), "--timeout", "120"]
        options += ["--log-level", "warning"]  # the production line of docs/deployment.md, quieter
        self._spawn(
            [PYTHON, "-m", "gunicorn", "labelling.wsgi", "--bind", f"127.0.0.1:{port}", *options]
        )
        return self._wait_http(port)

    def runserver(self) -> str:
        port = free_port()
        self._spawn(
            [PYTHON, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure"]
        )
        return self._wait_http(port)

    def celery_workers(self, count: int, *, concurrency: int = 1) -> None:
        celery = [PYTHON, "-m", "celery", "-A", "labelling", "worker", "--loglevel=WARNING"]
        options = [f"--concurrency={concurrency}", "--without-gossip", "--without-mingle"]
        for n in range(count):
            self._spawn(
                [*celery, *options, f"--hostname=bench{n}-{os.getpid()}@%h"], kind="workers"
            )
        time.sleep(3)

    def _wait_http(self, port: int) -> str:
        import requests

        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                requests.get(f"{base}/api/workspaces/", timeout=10)
                return base
            except (requests.ConnectionError, requests.Timeout):
                time.sleep(0.2)
        raise RuntimeError(f"nothing answered on {base} within 60 s")

    def cpu_seconds(self, kind: str | None = None) -> float:
        """CPU time used so far by every live process this stack started and all their
        descendants (those reaped included: a parent's counters hold its reaped children's);
        ``kind`` ("web", "workers", "load") counts only those."""
        by_kind = self.cpu_by_kind()
        return sum(by_kind.values()) if kind is None else by_kind.get(kind, 0.0)

    def cpu_by_kind(self) -> dict[str, float]:
        """CPU seconds so far by kind, over each started process's whole tree. A Celery
        worker and everything under it counts as "workers" whoever started it: ``rundev`` is
        the web server, but the two workers it starts (and their prefork children) are not."""
        table = _process_table()
        children: dict[int, list[int]] = {}
        for pid, (parent, _) in table.items():
            children.setdefault(parent, []).append(pid)
        totals: dict[str, float] = {}
        for process in self.processes:
            if process.pid not in table:
                continue
            todo = [(process.pid, self.kinds[process.pid])]
            while todo:
                pid, kind = todo.pop()
                if kind != "workers" and _is_celery_worker(pid):
                    kind = "workers"
                totals[kind] = totals.get(kind, 0.0) + table[pid][1]
                todo.extend((child, kind) for child in children.get(pid, []))
        return totals

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def load_average() -> str:
    """The 1/5/15-minute load averages: other work on the machine skews every figure."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def _process_table() -> dict[int, tuple[int, float]]:
    """Every process: pid -> (parent pid, CPU seconds used by it and by the children it has
    reaped: utime + stime + cutime + cstime)."""
    tick = os.sysconf("SC_CLK_TCK")
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(stat.parent.name)] = (int(fields[1]), sum(map(int, fields[11:15])) / tick)
    return table


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except (OSError, UnicodeDecodeError):
        return ""


def _is_celery_worker(pid: int) -> bool:
    """``python -m celery ... worker``, or the same once it has renamed itself
    (``[celeryd: name@host:MainProcess] ...``, its pool's ``...:ForkPoolWorker-1]``)."""
    title = _cmdline(pid)
    words = title.split()
    return title.startswith("[celeryd") or ("celery" in words and "worker" in words)


def _servers(database: str | None) -> dict[int, str]:
    """The server processes a benchmark's work lands on: PostgreSQL's backends for
    ``database`` (their title names it) and Redis (shared with anything else using it)."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        pid = int(cmdline.parent.name)
        title = _cmdline(pid)
        if database and title.startswith("postgres: ") and f" {database} " in title:
            found[pid] = f"PostgreSQL ({database})"
        elif title.startswith("redis-server"):
            found[pid] = "Redis server"
    return found


class CpuMeter:
    """How busy the whole machine and this process were between ``start`` and ``stop``; with
    a stack, its processes by kind; with ``database``, that database's PostgreSQL backends
    and the Redis server (a backend that ended meanwhile is not counted)."""

    KINDS = {"web": "web server", "workers": "Celery workers", "load": "load processes"}

    def __init__(self, stack: Stack | None = None, database: str | None = None) -> None:
        self.stack = stack
        self.database = database

    def start(self) -> None:
        self._stack = self.stack.cpu_by_kind() if self.stack else {}
        self._servers = self._server_cpu()
        self._machine = _proc_stat()
        self._self = os.times()
        self._wall = time.monotonic()

    def _server_cpu(self) -> dict[int, tuple[str, float]]:
        if not self.database:
            return {}
        table = _process_table()
        return {
            pid: (label, table[pid][1])
            for pid, label in _servers(self.database).items()
            if pid in table
        }

    def shares(self) -> dict[str, float]:
        """Cores used since ``start`` (1.0 = one core busy throughout), by part."""
        wall = time.monotonic() - self._wall
        shares = {}
        if self.stack:
            now = self.stack.cpu_by_kind()
            for kind, label in self.KINDS.items():
                if kind in now or kind in self._stack:
                    used = now.get(kind, 0.0) - self._stack.get(kind, 0.0)
                    shares[label] = used / wall
        before = self._servers
        for pid, (label, seconds) in self._server_cpu().items():
            used = seconds - (before[pid][1] if pid in before else 0.0)
            shares[label] = shares.get(label, 0.0) + used / wall
        return shares

    def stop(self) -> str:
        busy0, total0 = self._machine
        busy1, total1 = _proc_stat()
        mine = os.times()
        wall = time.monotonic() - self._wall
        client = (mine.user + mine.system - self._self.user - self._self.system) / wall
        machine = (busy1 - busy0) / max(1, total1 - total0)
        parts = "".join(f"; {label} {share:.0%}" for label, share in self.shares().items())
        return (
            f"machine CPU busy {machine:.0%} of {os.cpu_count()} cores; "
            f"this load generator {client:.0%}{parts} (each of one core)"
        )


def _proc_stat() -> tuple[int, int]:
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def table(headers: list[str], rows: list[list]) -> str:
    """A plain-text table, right-aligned numbers, as the other benchmarks print."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
