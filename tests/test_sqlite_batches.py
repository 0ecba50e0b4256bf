"""On the embedded default's SQLite, a document's anchors resolve while others write.

Reading a document's anchors through one open cursor while writing their rows kept a read
transaction open across the writes; once anyone else committed meanwhile, SQLite refused
the next write at once ("database is locked": a stale snapshot cannot become a writer,
however long it waits), so past one batch (500 anchors) an import never resolved under
load. Each batch is now read whole, then written in its own short transaction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _resolve_under_writes(tmp_path, anchors: int) -> dict:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "GROUNDWORK_VAR_DIR": str(tmp_path),
        "DJANGO_MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.sqlite_resolve_child", str(anchors)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_1200_anchor_document_resolves_on_a_sqlite_file_while_another_process_writes(
    tmp_path,
):
    result = _resolve_under_writes(tmp_path, 1200)

    assert result == {"error": "", "rows": 1200, "lease_held": False}
