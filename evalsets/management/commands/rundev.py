"""Run the web server and the Celery workers together, for ``make run``.

One command, one Ctrl-C: the web server and the workers are child processes that are
stopped when this command stops, so nothing is left running in the background.

Two workers, so a new upload's parse never waits behind resolution work: one consumes the
parse and release queues (and the default one), the other the resolution queue
(``evalsets.queue``). One worker reading all queues would alternate between them (kombu
polls a worker's queues in turn, the filesystem broker included), but with every process
busy on a long resolution a parse would still wait for one to finish.

The web side is gunicorn with several processes of a few threads each, not ``runserver``
(issue 18): one Python process runs one request at a time whatever its threads, so under
20 annotators highlighting at 40 anchors/s runserver's one process was busy 98% of the time
and the requests queued behind each other (create p95 1.25 s). Several processes share the
SQLite file safely: WAL lets readers run beside the writer, and ``labelling.sqlite`` hands
the write lock from writer to writer across processes. Threads are reused, so each keeps
its database connection (``CONN_MAX_AGE``). Static files are served by WhiteNoise from the
app folders, as under runserver. ``--reload`` restarts the web processes when code changes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evalsets import queue


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
    """rundev's workers: parsing and releases in one, resolution in the other; together
    they consume every queue."""
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE
    return [
        worker_command(
            "parse",
            [
                prefix,
                queue.queue_name(queue.PARSE, prefix),
                queue.queue_name(queue.RELEASE, prefix),
            ],
            parse_concurrency,
        ),
        worker_command("resolve", [queue.queue_name(queue.RESOLVE, prefix)], resolve_concurrency),
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
        # Long enough for a large upload over a slow link; a busy thread does not count.
        "--timeout=120",
        # An idle connection is kept (in the poller, not a thread) longer than a client keeps
        # it: a client reusing one just as the server closed it gets a reset, not an answer.
        "--keep-alive=75",
        "--no-control-socket",  # gunicorn 27 would share ~/.gunicorn/gunicorn.ctl
        "--access-logfile=-",
        '--access-logformat=%(t)s "%(r)s" %(s)s %(b)s %(M)sms',
        *(["--reload"] if reload else []),
    ]


def default_web_processes() -> int:
    """One web process a core, at least two, at most four."""
    return max(2, min(4, os.cpu_count() or 1))


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
        children = [
            subprocess.Popen(command, cwd=settings.BASE_DIR, env=os.environ.copy())
            for command in worker_commands(concurrency, resolve_concurrency)
        ]
        command = web_command(host, processes=web_processes, threads=web_threads, reload=reload)
        web = subprocess.Popen(command, cwd=settings.BASE_DIR, env=os.environ.copy())
        children.insert(0, web)
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
            code = web.wait()
            if code:
                raise CommandError(f"the web server stopped (exit code {code})")
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _stop(children)
            self.stdout.write("Stopped the web server and the workers.")
