"""Run the web server and the Celery workers together, for ``make run``.

One command, one Ctrl-C: the workers are child processes that are stopped when the server
stops, so nothing is left running in the background.

Two workers, so a new upload's parse never waits behind resolution work: one consumes the
parse and release queues (and the default one), the other the resolution queue
(``evalsets.queue``). One worker reading all queues would alternate between them (kombu
polls a worker's queues in turn, the filesystem broker included), but with every process
busy on a long resolution a parse would still wait for one to finish.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

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


class Command(BaseCommand):
    help = "Start the Django server and the Celery workers together (Ctrl-C stops all)."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--concurrency", type=int, default=1, help="processes of the parse/release worker"
        )
        parser.add_argument(
            "--resolve-concurrency", type=int, default=1, help="processes of the resolve worker"
        )

    def handle(self, *args, addrport: str, concurrency: int, resolve_concurrency: int, **options):
        workers = [
            subprocess.Popen(command, cwd=settings.BASE_DIR, env=os.environ.copy())
            for command in worker_commands(concurrency, resolve_concurrency)
        ]
        host = addrport if ":" in addrport else f"127.0.0.1:{addrport}"
        broker = settings.CELERY_BROKER_URL.split("@")[-1]
        self.stdout.write(
            self.style.SUCCESS(
                "\n  Groundwork is starting.\n\n"
                f"  Open      http://{host}/  (API docs: http://{host}/api/docs/)\n"
                "  Log in as annotator / groundwork, reviewer / groundwork or owner / groundwork\n"
                f"  Database  {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
                f"   Broker  {broker}   Workers  parse + release, resolve\n"
                "  Ctrl-C stops the server and the workers.\n"
            )
        )
        try:
            call_command("runserver", addrport, use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            for worker in workers:
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
            for worker in workers:
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
            self.stdout.write("Stopped the web server and the workers.")
