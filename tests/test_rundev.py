"""``make run`` keeps its workers running and serves with the documented production limits.

A worker that dies (killed, out of memory, a crash) is started again after a pause that
grows while it keeps dying, with a log line; before, its queues went unread until someone
restarted ``make run``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsets import queue
from evalsets.management.commands import rundev
from tests import services as svc

ROOT = Path(__file__).resolve().parent.parent


def _sleeper() -> list[str]:
    return [sys.executable, "-c", "import time; time.sleep(600)", "--hostname=sleeper@here"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def started():
    processes: list[subprocess.Popen] = []

    def start(command):
        processes.append(subprocess.Popen(command))
        return processes[-1]

    yield start, processes
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()


def _died(worker: rundev.Supervised) -> None:
    worker.process.kill()
    worker.process.wait()


def test_a_killed_worker_is_started_again_after_a_pause(started):
    start, processes = started
    clock = Clock()
    worker = rundev.Supervised(_sleeper(), start, now=clock)
    _died(worker)

    worker.check()  # seen dead: the first pause begins
    assert len(processes) == 1
    clock.now += rundev.RESTART_PAUSES[0]
    worker.check()

    assert len(processes) == 2 and worker.process is processes[1]
    assert worker.process.poll() is None and worker.restarts == 1


def test_a_worker_that_keeps_dying_at_once_waits_longer_each_time(started):
    start, _ = started
    clock = Clock()
    worker = rundev.Supervised(_sleeper(), start, now=clock)
    waited = []
    for _ in range(3):
        _died(worker)
        worker.check()
        pause = 0.0
        while worker.process.poll() is not None:
            clock.now += 0.5
            pause += 0.5
            worker.check()
        waited.append(pause)

    assert waited == sorted(waited) and waited[0] < waited[-1]


def test_a_worker_that_ran_a_while_before_dying_gets_the_first_pause_again(started):
    start, _ = started
    clock = Clock()
    worker = rundev.Supervised(_sleeper(), start, now=clock)
    _died(worker)
    worker.check()
    clock.now += rundev.RESTART_PAUSES[0]
    worker.check()
    clock.now += rundev.HEALTHY_AFTER_S
    _died(worker)
    worker.check()
    clock.now += rundev.RESTART_PAUSES[0]
    worker.check()

    assert worker.restarts == 2


def test_the_procfiles_workers_together_read_every_queue_work_is_sent_to():
    read = set()
    for command in svc.procfile().values():
        if " worker " in command:
            queues = re.search(r" -Q (\S+)", command).group(1)
            read |= set(queues.replace("${GROUNDWORK_TASK_QUEUE:-celery}", "celery").split(","))
    assert read == set(queue.all_queue_names("celery"))


def test_the_deployment_docs_list_the_procfile_as_it_is():
    deployment = (ROOT / "docs" / "deployment.md").read_text()
    for kind, command in svc.procfile().items():
        assert f"{kind}: {command}" in deployment


def test_the_procfiles_gunicorn_line_has_the_timeout_make_run_uses():
    line = svc.procfile()["web"]
    timeout = re.search(r"--timeout[ =](\d+)", line)

    assert timeout is not None, line
    assert int(timeout.group(1)) == rundev.WEB_TIMEOUT_S
    command = rundev.web_command("127.0.0.1:1", processes=1, threads=1, reload=False)
    assert f"--timeout={rundev.WEB_TIMEOUT_S}" in command
    assert rundev.WEB_TIMEOUT_S >= 120


def _children(pid: int) -> list[tuple[int, str]]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                cmd = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append((int(stat.parent.name), cmd))
        except (OSError, ValueError):
            continue
    return found


def _wait(what: str, check, log: Path, timeout: float = 90):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"no {what}:\n{log.read_text()[-4000:]}"
        time.sleep(0.5)
    return found


UPLOAD = """
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from evalsets.documents import services as documents_services
from evalsets.workspaces import services as workspaces_services
user = get_user_model().objects.create_user(username="u", password="p")
ws = workspaces_services.workspace_create(user=user, slug="w", name="W")
documents_services.document_upload(
    workspace=ws, user=user, upload=SimpleUploadedFile("a.txt", b"Some text to parse.")
)
"""
READY = (
    "from evalsets.models import ParseVersion; "
    "print(ParseVersion.objects.filter(status='ready').count())"
)


def test_make_run_starts_a_killed_parse_worker_again_and_it_does_the_work(tmp_path):
    port = svc.free_port()
    env = svc.embedded_env(tmp_path)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    log = tmp_path / "rundev.log"
    out = open(log, "w+")  # noqa: SIM115
    process = subprocess.Popen(
        [*manage, "rundev", f"127.0.0.1:{port}", "--web-processes=1", "--web-threads=1"],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def parse_worker():
            return [pid for pid, cmd in _children(process.pid) if "groundwork-parse@" in cmd]

        first = _wait("parse worker", parse_worker, log)
        os.kill(first[0], signal.SIGKILL)
        _wait("restart line", lambda: "started worker groundwork-parse@" in log.read_text(), log)
        again = _wait("new parse worker", lambda: [p for p in parse_worker() if p != first[0]], log)
        assert again

        subprocess.run([*manage, "shell", "-c", UPLOAD], cwd=ROOT, env=env, check=True)

        def ready() -> bool:
            answer = subprocess.run(
                [*manage, "shell", "-c", READY], cwd=ROOT, env=env, capture_output=True, text=True
            )
            return answer.stdout.strip() not in ("", "0")

        _wait("ready parse after the restart", ready, log, timeout=120)
        assert "worker groundwork-parse@" in log.read_text() and "stopped (exit code" in (
            log.read_text()
        )
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
