"""Background work is queued one way: by task name, after commit, surviving a broker that is down,
each kind of task on its own queue.

A broker that cannot be reached is simulated by making every publish fail the way kombu
reports it; the tasks run in-process once it is "back" (the quick suite's eager mode).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from queue import Empty

import pytest
from celery.app.task import Task
from celery.exceptions import NotRegistered
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from kombu import Connection
from kombu.exceptions import OperationalError as BrokerUnreachable
from kombu.utils.json import dumps

from evalsets import queue, sweep
from evalsets.documents import services as documents_services
from evalsets.management.commands import rundev
from evalsets.models import GoldAnchor, ParseVersion, PendingImportLabel
from labelling import fsbroker
from labelling.celery import app as celery_app
from labelling.settings import filesystem_broker_options
from tests import services as svc

CONTRACT = "This agreement starts today. Either party may terminate it."
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def broker_down(monkeypatch):
    """Every publish fails as it does when Redis refuses the connection; undo() brings it back."""

    def refuse(self, *args, **kwargs):
        raise BrokerUnreachable("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(Task, "apply_async", refuse)
    return monkeypatch


def _spans_on_the_contract() -> bytes:
    start = CONTRACT.index("Either party")
    return json.dumps(
        {
            "tests": [
                {
                    "id": "lb-1",
                    "query": "Can the agreement be ended?",
                    "snippets": [{"file_path": "contract.txt", "span": [start, len(CONTRACT)]}],
                }
            ]
        }
    ).encode()


def test_labels_whose_attach_could_not_be_queued_attach_when_the_sweep_runs(
    broker_down, client_for, owner, workspace, evalset, caplog, django_capture_on_commit_callbacks
):
    client = client_for(owner)
    with django_capture_on_commit_callbacks(execute=True):
        uploaded = client.post(
            "/api/workspaces/acme/documents/",
            {"file": SimpleUploadedFile("contract.txt", CONTRACT.encode())},
            format="multipart",
        )
    assert uploaded.status_code == 201, uploaded.content
    document = ParseVersion.objects.get(document__source_id="contract.txt").document
    # Imported spans wait for the reference parse, which has not run: its task was lost too.
    with caplog.at_level(logging.WARNING, logger="evalsets.queue"):
        with django_capture_on_commit_callbacks(execute=True):
            imported = client.post(
                "/api/workspaces/acme/evalsets/quiz/imports/",
                {"file": SimpleUploadedFile("bench.json", _spans_on_the_contract())},
                format="multipart",
            )
        assert imported.status_code == 201, imported.content
        # Another parse becomes the reference; attaching to it cannot be queued either.
        other = documents_services.parse_version_add(
            document=document, parser="elsewhere", text=CONTRACT.lower()
        )
        with django_capture_on_commit_callbacks(execute=True):
            documents_services.parse_make_reference(parse=other)
    lost = [r.getMessage() for r in caplog.records if "attach_pending_labels" in r.getMessage()]
    assert len(lost) == 2 and all("the sweep will queue it again" in m for m in lost)
    assert PendingImportLabel.objects.get().status == "waiting"

    broker_down.undo()
    queued = sweep.sweep(timedelta(0))

    assert queued["labels"] == 1
    label = PendingImportLabel.objects.get()
    assert label.status == "attached"
    assert GoldAnchor.objects.get().quote == "either party may terminate it."  # the new reference


def test_the_sweep_leaves_labels_alone_while_their_reference_parse_is_not_ready(
    broker_down, client_for, owner, workspace, evalset, django_capture_on_commit_callbacks
):
    client = client_for(owner)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/api/workspaces/acme/documents/",
            {"file": SimpleUploadedFile("contract.txt", CONTRACT.encode())},
            format="multipart",
        )
        client.post(
            "/api/workspaces/acme/evalsets/quiz/imports/",
            {"file": SimpleUploadedFile("bench.json", _spans_on_the_contract())},
            format="multipart",
        )

    assert sweep.documents_with_labels_to_attach(timedelta(0)) == []


def test_work_is_queued_only_once_the_write_commits(
    workspace, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(queue, "send", lambda name, *ids, **kw: sent.append((name, ids)))
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            queue.after_commit("resolve_workspace", workspace.pk)
            raise RuntimeError("the write failed")
        with transaction.atomic():
            queue.after_commit("resolve_workspace", workspace.pk)
            assert sent == []
    assert sent == [("resolve_workspace", (workspace.pk,))]


def test_a_task_name_nobody_registered_fails_in_the_request_that_asked_for_it():
    with pytest.raises(NotRegistered):
        queue.after_commit("resolve_everything", 1)


# -- separate queues -------------------------------------------------------------------------


def test_every_groundwork_task_has_a_queue_of_its_kind():
    registered = {
        name.removeprefix(queue.TASK_PREFIX)
        for name in celery_app.tasks
        if name.startswith(queue.TASK_PREFIX)
    }

    assert registered - set(queue.QUEUE_OF) == set(), "add new tasks to evalsets.queue.QUEUE_OF"
    # the slow parse queue is named by the sender (ingest.parse_kind), not by a task's name
    assert set(queue.QUEUE_OF.values()) | {queue.PARSE_SLOW} == set(queue.KINDS)


@pytest.mark.parametrize(
    ("task_name", "kind"),
    [("parse_version", "parse"), ("resolve_document", "resolve"), ("build_release", "release")],
)
def test_a_task_is_routed_to_its_kinds_queue_under_the_sessions_prefix(task_name, kind):
    routed = celery_app.amqp.router.route({}, queue.TASK_PREFIX + task_name, (1,), {})

    assert routed["queue"].name == f"{celery_app.conf.task_default_queue}.{kind}"


def test_a_worker_started_without_a_queue_option_consumes_every_queue(settings):
    declared = [q.name for q in settings.CELERY_TASK_QUEUES]

    assert declared == queue.all_queue_names(settings.CELERY_TASK_DEFAULT_QUEUE)
    assert len({q.routing_key for q in settings.CELERY_TASK_QUEUES}) == len(declared)


def test_a_message_on_the_filesystem_broker_is_never_seen_half_written(tmp_path, monkeypatch):
    """kombu's own transport creates the file, then writes it: a worker polling meanwhile
    took an empty file and its consumer died (JSONDecodeError), leaving the queue unread."""
    connection = Connection("filesystem://", transport_options=filesystem_broker_options(tmp_path))
    assert isinstance(connection.transport, fsbroker.Transport), "every filesystem:// URL"
    channel = connection.channel()
    seen_while_writing = []

    def serialise_while_a_worker_polls(payload):
        with contextlib.suppress(Empty):
            seen_while_writing.append(channel._get("celery.resolve"))
        return dumps(payload)

    monkeypatch.setattr(fsbroker, "dumps", serialise_while_a_worker_polls)
    channel._put("celery.resolve", {"body": "resolve_document(1)"})

    assert seen_while_writing == []
    assert channel._get("celery.resolve") == {"body": "resolve_document(1)"}
    assert channel._size("celery.resolve") == 0
    connection.release()


def test_rundev_serves_the_web_side_from_several_processes_of_reused_threads():
    """One process runs one request at a time, threads or not: runserver's queued 20
    annotators' anchor creations behind each other."""
    command = rundev.web_command("127.0.0.1:8000", processes=2, threads=8, reload=False)

    assert command[1:4] == ["-m", "gunicorn", "labelling.wsgi"]
    assert {"--bind=127.0.0.1:8000", "--workers=2", "--worker-class=gthread", "--threads=8"} <= set(
        command
    )
    assert "--reload" not in command
    assert "--reload" in rundev.web_command("x:1", processes=1, threads=1, reload=True)
    assert rundev.default_web_processes() >= 2


def _group(pgid: int) -> list[str]:
    """The command lines of the live processes in a process group."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def test_rundev_answers_from_its_web_processes_and_stops_every_child_when_stopped(tmp_path):
    """``make run``'s command: one line says where to go, the web answers, and stopping the
    command (Ctrl-C, or SIGTERM as a benchmark or a supervisor sends it to it alone) leaves
    no web process or worker behind."""
    port = svc.free_port()
    env = svc.embedded_env(tmp_path)
    command = [sys.executable, "manage.py", "rundev", f"127.0.0.1:{port}", "--web-processes=2"]
    out = open(tmp_path / "rundev.log", "w+")  # noqa: SIM115
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/static/css/groundwork.css"
                )
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "rundev.log").read_text()
                time.sleep(0.3)
        assert answer.status == 200
        running = _group(process.pid)
        assert sum("gunicorn: worker" in line for line in running) == 2, running
        assert sum("celery" in line for line in running) >= 2, running
        assert f"Open      http://127.0.0.1:{port}/" in (tmp_path / "rundev.log").read_text()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=40)
        assert _group(process.pid) == []
    finally:
        if process.poll() is None or _group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_rundev_consumes_every_queue_with_parsing_and_resolution_in_separate_workers(settings):
    commands = rundev.worker_commands(1, 1)
    consumed = [
        arg.removeprefix("--queues=").split(",")
        for command in commands
        for arg in command
        if arg.startswith("--queues=")
    ]
    prefix = settings.CELERY_TASK_DEFAULT_QUEUE

    assert sorted(name for names in consumed for name in names) == sorted(
        queue.all_queue_names(prefix)
    )
    parse_worker = next(q for q in consumed if f"{prefix}.parse" in q)
    assert f"{prefix}.resolve" not in parse_worker
    assert f"{prefix}.parse-slow" not in parse_worker
