"""Run the web server and a Celery worker together, for ``make run``.

One command, one Ctrl-C: the worker is a child process that is stopped when the server
stops, so nothing is left running in the background.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start the Django server and a Celery worker together (Ctrl-C stops both)."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--concurrency", type=int, default=2)

    def handle(self, *args, addrport: str, concurrency: int, **options):
        worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "labelling",
                "worker",
                "--loglevel=INFO",
                f"--concurrency={concurrency}",
                "--hostname=groundwork-dev@%h",
            ],
            cwd=settings.BASE_DIR,
            env=os.environ.copy(),
        )
        host = addrport if ":" in addrport else f"127.0.0.1:{addrport}"
        broker = settings.CELERY_BROKER_URL.split("@")[-1]
        self.stdout.write(
            self.style.SUCCESS(
                "\n  Groundwork is starting.\n\n"
                f"  Open      http://{host}/  (API docs: http://{host}/api/docs/)\n"
                "  Log in as annotator / groundwork, reviewer / groundwork or owner / groundwork\n"
                f"  Database  {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}"
                f"   Broker  {broker}\n"
                "  Ctrl-C stops the server and the worker.\n"
            )
        )
        try:
            call_command("runserver", addrport, use_reloader=False)
        except KeyboardInterrupt:
            pass
        finally:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    worker.kill()
            self.stdout.write("Stopped the web server and the worker.")
