"""Run the web server and the Celery workers together, for ``make run``.

One command, one Ctrl-C: the web server and the workers are child processes that are
stopped when this command stops, so nothing is left running in the background. A worker
that dies meanwhile (killed, out of memory) is started again after a pause that grows
while it keeps dying at once (``Supervised``), with a log line each way.

Three workers, so a new upload's parse never waits behind resolution work nor behind a
slow parser on a long document: one consumes the parse and release queues (and the default
one), one the resolution queue, and one process the slow parse queue (``evalsets.queue``).
One worker reading all queues would alternate between them (kombu polls a worker's queues
in turn, the filesystem broker included), but with every process busy on a long resolution
a parse would still wait for one to finish.

The web side is gunicorn with several processes of a few threads each, not ``runserver``:
one Python process runs one request at a time whatever its threads, so under
20 annotators highlighting at 40 anchors/s runserver's one process was busy 98% of the time
and the requests queued behind each other (create p95 1.25 s). Several processes share the
SQLite file safely: WAL lets readers run beside the writer, and ``labelling.sqlite`` hands
the write lock from writer to writer across processes. Threads are reused, so each keeps
its database connection (``CONN_MAX_AGE``). Static files are served by WhiteNoise from the
app folders, as under runserver. ``--reload`` restarts the web processes when code changes.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evalsets import queue

log = logging.getLogger(__name__)

#: gunicorn's limit on one request, also the production line's in docs/deployment.md: its
#: default of 30 s killed a worker in the middle of a 300-item import on a loaded machine (a
#: 500, nothing saved).
WEB_TIMEOUT_S = 120
#: Seconds before a dead worker is started again, doubling from the first to the last for a
#: worker that keeps dying at once (a broken setting), so it does not spin the machine.
RESTART_PAUSES = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
#: A worker that ran this long before dying starts again after the first pause.
HEALTHY_AFTER_S = 60.0
#: How often the command looks at its children.
CHECK_EVERY_S = 0.5


def worker_command(name: str, queues: list[str], concurrency: int) -> list[str]:
    """The ``celery worker`` command line for one of rundev's workers."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "labelling",
        "worker",
        "--loglevel=INFO",
        f"--concurrency={concurrency}",
        f"--queues={','.join(queues)}",
        f"--hostname=groundwork-{name}@%h",
    ]


def worker_commands(parse_concurrency: int, resolve_concurrency: int) -> list[list[str]]:
    """rundev's workers: parsing, releases and experiment cells in one, resolution in
    another, and slow parses in one process of their own; together they consume every
    queue."""
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE
    return [
        worker_command(
            "parse",
            [
                prefix,
                queue.queue_name(queue.PARSE, prefix),
                queue.queue_name(queue.RELEASE, prefix),
                queue.queue_name(queue.EXPERIMENTS, prefix),
            ],
            parse_concurrency,
        ),
        worker_command("resolve", [queue.queue_name(queue.RESOLVE, prefix)], resolve_concurrency),
        worker_command("slow-parse", [queue.queue_name(queue.PARSE_SLOW, prefix)], 1),
    ]


def web_command(addrport: str, *, processes: int, threads: int, reload: bool) -> list[str]:
    """The web server's command line: gunicorn, ``processes`` x ``threads``, requests
    logged to the console as runserver does."""
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "labelling.wsgi",
        f"--bind={addrport}",
        f"--workers={processes}",
        "--worker-class=gthread",
        f"--threads={threads}",
        # Long enough for a large upload over a slow link or a long import on a busy machine.
        f"--timeout={WEB_TIMEOUT_S}",
        # An idle connection is kept (in the poller, not a thread) longer than a client keeps
        # it: a client reusing one just as the server closed it gets a reset, not an answer.
        "--keep-alive=75",
        "--no-control-socket",  # gunicorn 27 would share ~/.gunicorn/gunicorn.ctl
        "--access-logfile=-",
        '--access-logformat=%(t)s "%(r)s" %(s)s %(b)s %(M)sms',
        *(["--reload"] if reload else []),
    ]


def share_metrics_folder() -> Path | None:
    """With metrics on, the web processes and the workers count into one folder, emptied
    first (counts of an earlier run would be added in), so a scrape of any web process
    adds up all of them (``labelling.metrics``). None when metrics are off or a folder was
    given."""
    if not settings.GROUNDWORK_METRICS or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return None
    folder = Path(settings.VAR_DIR) / "prometheus"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    return folder


def default_web_processes() -> int:
    """One web process a core, at least two, at most four."""
    return max(2, min(4, os.cpu_count() or 1))


class Supervised:
    """One worker that rundev starts again when it dies, after a pause that grows while it
    keeps dying: without this a killed or crashed worker left its queue unread (releases and
    parses waited) until someone restarted ``make run``."""

    def __init__(self, command: list[str], start, now=time.monotonic) -> None:
        self.command = command
        self._start = start
        self._now = now
        self.restarts = 0
        self._failures = 0
        self._started_at = now()
        self._due: float | None = None
        self.process: subprocess.Popen = start(command)

    @property
    def name(self) -> str:
        return next(arg for arg in self.command if arg.startswith("--hostname=")).split("=")[1]

    def check(self) -> None:
        """Start the worker again if it died and its pause is over."""
        if self._due is None:
            code = self.process.poll()
            if code is None:
                return
            self._died(code)
        if self._now() >= self._due:
            self._due = None
            self.restarts += 1
            self._started_at = self._now()
            self.process = self._start(self.command)
            log.warning("started worker %s again (restart %d)", self.name, self.restarts)

    def _died(self, code: int) -> None:
        ran = self._now() - self._started_at
        self._failures = 1 if ran >= HEALTHY_AFTER_S else self._failures + 1
        pause = RESTART_PAUSES[min(self._failures, len(RESTART_PAUSES)) - 1]
        self._due = self._now() + pause
        log.warning(
            "worker %s stopped (exit code %s) after %.0f s; starting it again in %.0f s",
            self.name,
            code,
            ran,
            pause,
        )


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _spawn(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=settings.BASE_DIR, env=os.environ.copy())


def _watch(web: subprocess.Popen, workers: list[Supervised]) -> int:
    """Keep the workers running until the web server stops; its exit code."""
    while (code := web.poll()) is None:
        for worker in workers:
            worker.check()
        time.sleep(CHECK_EVERY_S)
    return code


def _stop_on_sigterm(signum, frame) -> None:
    raise KeyboardInterrupt  # stop the children as Ctrl-C does, not leave them running


class Command(BaseCommand):
    help = "Start the web server and the Celery workers together (Ctrl-C stops all)."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--concurrency", type=int, default=1, help="processes of the parse/release worker"
        )
        parser.add_argument(
            "--resolve-concurrency", type=int, default=1, help="processes of the resolve worker"
        )
        parser.add_argument(
            "--web-processes",
            type=int,
            default=default_web_processes(),
            help="web server processes (default: one a core, 2 to 4)",
        )
        parser.add_argument(
            "--web-threads", type=int, default=8, help="threads of each web server process"
        )
        parser.add_argument(
            "--reload", action="store_true", help="restart the web processes when code changes"
        )

    def handle(
        self,
        *args,
        addrport: str,
        concurrency: int,
        resolve_concurrency: int,
        web_processes: int,
        web_threads: int,
        reload: bool,
        **options,
    ):
        host = addrport if ":" in addrport else f"127.0.0.1:{addrport}"
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        share_metrics_folder()
        workers = [
            Supervised(command, _spawn)
            for command in worker_commands(concurrency, resolve_concurrency)
        ]
        web = _spawn(web_command(host, processes=web_processes, threads=web_threads, reload=reload))
        broker = settings.CELERY_BROKER_URL.split("@")[-1]
        self.stdout.write(
            self.style.SUCCESS(
                "\n  Groundwork is starting.\n\n"
                f"  Open      http://{host}/  (API docs: http://{host}/api/docs/)\n"
                "  Log in as annotator / groundwork, reviewer / groundwork or owner / groundwork\n"
                f"  Database  {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
                f"   Broker  {broker}   Workers  parse + release, resolve\n"
                f"  Web       {web_processes} processes x {web_threads} threads"
                f"{', reloading on code changes' if reload else ''}\n"
                "  Ctrl-C stops the server and the workers.\n"
            )
        )
        try:
            code = _watch(web, workers)
            if code:
                raise CommandError(f"the web server stopped (exit code {code})")
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _stop([web, *(worker.process for worker in workers)])
            self.stdout.write("Stopped the web server and the workers.")
