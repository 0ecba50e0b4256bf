"""A child process for tests/test_sqlite_batches.py: a real SQLite file, a document with
``N`` anchors and no resolution yet, another process writing all the while, and
``resolve_pending`` run here; prints one JSON line of what came of it.

Run as ``python -m tests.sqlite_resolve_child N`` with ``DATABASE_URL`` naming the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import DatabaseError  # noqa: E402

from evalsets.anchoring import resolution  # noqa: E402
from evalsets.models import (  # noqa: E402
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ParseStatus,
    ParseVersion,
    Workspace,
)

WRITER = """
import os, sys, time, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelling.settings")
django.setup()
from evalsets.models import Workspace
print("writing", flush=True)
n = 0
while True:
    n += 1
    Workspace.objects.filter(slug="w").update(name=f"written {n}")
    time.sleep(0.001)
"""


def world(anchors: int) -> Document:
    user = get_user_model().objects.create_user(username="u", password="p")
    workspace = Workspace.objects.create(slug="w", name="W")
    evalset = EvalSet.objects.create(workspace=workspace, slug="s", name="S")
    item = EvalItem.objects.create(evalset=evalset, item_id="q", question="Q?", author=user)
    text = " ".join(f"sentence number {i} says something." for i in range(anchors))
    document = Document.objects.create(
        workspace=workspace, source_id="d.txt", sha256="0" * 64, size=len(text), kind="text"
    )
    ParseVersion.objects.create(
        document=document,
        parser="plaintext",
        text=text,
        text_length=len(text),
        page_starts=[0],
        status=ParseStatus.READY,
        is_reference=True,
    )
    GoldAnchor.objects.bulk_create(
        GoldAnchor(
            item=item,
            document=document,
            source_id="d.txt",
            quote=f"sentence number {i} says",
            created_by=user,
        )
        for i in range(anchors)
    )
    return document


def main() -> None:
    anchors = int(sys.argv[1])
    call_command("migrate", verbosity=0)
    document = world(anchors)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    error = ""
    try:
        assert writer.stdout.readline().strip() == "writing"
        time.sleep(0.5)
        try:
            resolution.resolve_pending(document.pk, holder="task-1")
        except DatabaseError as exc:
            error = str(exc)
    finally:
        writer.kill()
        writer.wait()
    document.refresh_from_db()
    print(
        json.dumps(
            {
                "error": error,
                "rows": AnchorResolution.objects.filter(parse__document=document).count(),
                "lease_held": bool(document.resolving_by),
            }
        )
    )


if __name__ == "__main__":
    main()
