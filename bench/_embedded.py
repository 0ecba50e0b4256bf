"""The embedded default (a SQLite file, a filesystem broker nobody reads) in a folder of one
benchmark's own under the git-ignored bench/.cache, set up before Django is imported.

Benchmarks of one request's cost run on it: no server, no worker, the same code path as
`make run`'s web process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def embedded_default(name: str, *, fresh: bool, seeded: str) -> tuple[Path, bool]:
    """Point this process at ``bench/.cache/<name>``; migrate a new database there when
    ``fresh`` or when the file ``seeded`` (written by the caller once seeded) is missing.
    Returns the folder and whether it was made afresh (and so must be seeded)."""
    var = HERE / ".cache" / name
    os.environ.update(
        DATABASE_URL=f"sqlite:///{var / 'groundwork.sqlite3'}",
        CELERY_BROKER_URL="filesystem://",
        CELERY_TASK_ALWAYS_EAGER="false",
        GROUNDWORK_VAR_DIR=str(var),
        DJANGO_MEDIA_ROOT=str(var / "media"),
        GROUNDWORK_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="labelling.settings",
    )
    fresh = fresh or not (var / seeded).exists()
    if fresh:
        shutil.rmtree(var, ignore_errors=True)
        (var / "media").mkdir(parents=True)
        manage = [sys.executable, "manage.py", "migrate", "--noinput"]
        subprocess.run(manage, cwd=HERE.parent, check=True, stdout=subprocess.DEVNULL)
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    return var, fresh
