"""A 1,000-anchor import resolved on the embedded default (SQLite file) while 10 users write.

Why it exists: resolving a document's anchors read them through one open cursor while it
wrote their rows; on SQLite an open cursor is an open read transaction, and once anyone else
committed meanwhile the next batch's write was refused at once ("database is locked"), so
past 500 anchors an import stayed unresolved for minutes under load (0.5-6 s idle). Now
each batch is read whole and written in its own short transaction.

This runs that: a fresh SQLite file (WAL, ``labelling.sqlite`` as ``make run`` uses), one
document with ``--anchors`` anchors and two ready parses, none resolved; ``--users``
processes each creating items and editing them as fast as SQLite lets them (a think time of
``--think`` s); and, in this process, ``resolution.resolve_pending`` retried as its task
would be (up to 5 tries, a second apart) until every anchor has a row in every parse. The
peer, on the same data in the same run: the read as it was (one cursor through the anchors).
Printed: seconds until fully resolved, tries, rows, and the users' writes and failed writes.

Run: ``.venv/bin/python bench/import_resolve_bench.py [--anchors 1000] [--users 10]``.
Everything lives in a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import _services as svc

TRIES = 5


def seed(anchors: int) -> int:
    from django.contrib.auth import get_user_model

    from evalsets.models import Document, EvalItem, EvalSet, GoldAnchor, ParseVersion, Workspace

    owner = get_user_model().objects.create_user("owner")
    workspace = Workspace.objects.create(slug="import", name="Import")
    evalset = EvalSet.objects.create(workspace=workspace, slug="set", created_by=owner)
    EvalSet.objects.create(workspace=workspace, slug="users", created_by=owner)
    item = EvalItem.objects.create(evalset=evalset, item_id="q", question="What is agreed?")
    text = " ".join(f"clause {n} of the agreement says what it says." for n in range(anchors))
    document = Document.objects.create(
        workspace=workspace, source_id="imported.txt", sha256="0" * 64, kind="txt"
    )
    for parser in ("plaintext", "other"):
        ParseVersion.objects.create(
            document=document, parser=parser, text=text, text_length=len(text), status="ready"
        )
    GoldAnchor.objects.bulk_create(
        GoldAnchor(
            item=item, source_id=document.source_id, document=document, quote=f"clause {n} of"
        )
        for n in range(anchors)
    )
    return document.pk


def _user(n: int, think: float, stop, out) -> None:
    from django.contrib.auth import get_user_model
    from django.db import DatabaseError, connections

    from evalsets.anchoring import services as anchoring_services
    from evalsets.models import EvalSet

    connections.close_all()
    user, _ = get_user_model().objects.get_or_create(username=f"user{n}")
    evalset = EvalSet.objects.get(slug="users")
    done = failed = 0
    while not stop.is_set():
        try:
            item = anchoring_services.item_create(
                evalset=evalset,
                user=user,
                item_id=f"u{n}-{os.getpid()}-{done}",
                question="Is it agreed?",
            )
            anchoring_services.item_update(
                item=item, user=user, row_version=item.row_version, answer="yes"
            )
            done += 1
        except DatabaseError:
            failed += 1
        time.sleep(think)
    out.put((done, failed))


def _resolved(document_id: int) -> int:
    from evalsets.models import AnchorResolution

    return AnchorResolution.objects.filter(parse__document=document_id).count()


def run(document_id: int, users: int, think: float, old_read: bool) -> list:
    from django.db import DatabaseError, connections

    from evalsets.anchoring import resolution
    from evalsets.models import AnchorResolution, Document

    AnchorResolution.objects.all().delete()
    Document.objects.filter(pk=document_id).update(resolving_by="", resolving_heartbeat_at=None)
    expected = resolution.GoldAnchor.objects.filter(document=document_id).count() * 2
    connections.close_all()
    context = multiprocessing.get_context("fork")
    stop, out = context.Event(), context.Queue()
    writers = [context.Process(target=_user, args=(n, think, stop, out)) for n in range(users)]
    for p in writers:
        p.start()
    time.sleep(2)  # the users are writing
    pages = resolution.in_pages
    if old_read:
        resolution.in_pages = lambda anchors: anchors.iterator(chunk_size=resolution.BATCH)
    began = time.perf_counter()
    tries, error, took = 0, "", None
    try:
        while tries < TRIES:
            tries += 1
            try:
                resolution.resolve_pending(document_id, holder="bench-task")
            except DatabaseError as exc:
                error = str(exc)
            if _resolved(document_id) == expected:
                took = time.perf_counter() - began
                break
            time.sleep(1)
    finally:
        resolution.in_pages = pages
        stop.set()
        results = [out.get() for _ in writers]
        for p in writers:
            p.join()
    return [
        "peer: one open cursor (as before)" if old_read else "whole pages, short writes",
        "never" if took is None else took,
        tries,
        f"{_resolved(document_id)}/{expected}",
        error or "-",
        sum(done for done, _ in results),
        sum(failed for _, failed in results),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--anchors", type=int, default=1000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--think", type=float, default=0.05, help="seconds between writes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **svc.bench_env("unused", 0),
            "DATABASE_URL": f"sqlite:///{Path(folder) / 'groundwork.sqlite3'}",
            "GROUNDWORK_VAR_DIR": folder,
            "DJANGO_MEDIA_ROOT": str(Path(folder) / "media"),
            "CELERY_BROKER_URL": "filesystem://",
            "CELERY_TASK_ALWAYS_EAGER": "true",
        }
        print(f"load average before: {svc.load_average()}", flush=True)
        svc.manage(env, "migrate", "--noinput")
        svc.setup_django(env)
        document_id = seed(args.anchors)
        print(
            f"1 document x {args.anchors} anchors x 2 ready parses on a SQLite file; "
            f"{args.users} users creating and editing items, {args.think} s apart"
        )
        rows = [run(document_id, args.users, args.think, old) for old in (False, True)]
        print(
            svc.table(
                ["path", "s to resolved", "tries", "rows", "last error", "writes", "failed"],
                rows,
            )
        )
        print(f"load average after: {svc.load_average()}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    main()
