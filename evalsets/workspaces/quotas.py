"""What one user or one workspace may hold: workspaces, documents, bytes, releases a day.

Each limit is a setting (``labelling/settings.py``). The services check a limit inside the
transaction that writes, after ``lock_user`` or ``lock_workspace`` has locked the row that
owns the count: a second request for the same owner waits there until the first commits,
then counts what the first wrote, so two requests at once cannot both take the last place.
(``FOR NO KEY UPDATE``: it excludes another such lock but not the key-share lock that a new
row referencing the owner takes, so ordinary writes in the workspace are not held up.)

One rule for the answers: a count the caller holds is at its limit, which only deleting or
a raised limit changes: 409 (``LimitReached``); storing would pass the byte limit: 413
(``TooLarge``); a count per day, which frees itself as time passes: 429 with Retry-After
(``RateLimited``). Every message names the setting and its value, and ``extra["limit"]``
carries both for a program.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum
from django.utils import timezone

from evalsets.errors import LimitReached, RateLimited, TooLarge, limit_named
from evalsets.models import (
    Document,
    Membership,
    ParseVersion,
    Release,
    ReleaseFile,
    Role,
    Workspace,
)
from evalsets.pure.archive import MB

DAY = timedelta(days=1)


def _limit(name: str) -> dict:
    return limit_named(name, getattr(settings, name))


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _mb(nbytes: int) -> str:
    return f"{nbytes / MB:,.1f} MB"


def lock_user(user) -> None:
    """Hold the user's row until the transaction ends: their counts are checked one at a time."""
    get_user_model().objects.select_for_update(no_key=True).filter(pk=user.pk).first()


def lock_workspace(workspace: Workspace) -> None:
    """Hold the workspace's row until the transaction ends: its counts are checked one at a
    time."""
    Workspace.objects.select_for_update(no_key=True).filter(pk=workspace.pk).first()


def check_workspace_count(user) -> None:
    """Refuse a new workspace to a user who owns as many as they may."""
    name = "GROUNDWORK_MAX_WORKSPACES_PER_USER"
    most = getattr(settings, name)
    owned = Membership.objects.filter(user=user, role=Role.OWNER).count()
    if owned >= most:
        raise LimitReached(
            f"you own {_count(owned, 'workspace')}, the most {name} allows ({most:,}); "
            "ask the site's administrator to raise it",
            field="slug",
            extra=_limit(name),
        )


def check_document_count(workspace: Workspace) -> None:
    """Refuse one more document to a workspace that holds as many as it may."""
    name = "GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE"
    most = getattr(settings, name)
    held = Document.objects.filter(workspace=workspace).count()
    if held >= most:
        raise LimitReached(
            f"workspace {workspace.slug!r} holds {_count(held, 'document')}, the most {name} "
            f"allows ({most:,}); delete some before uploading more",
            field="file",
            extra=_limit(name),
        )


def stored_bytes(workspace: Workspace) -> int:
    """What the workspace keeps: its uploaded files, its parses' text (a character counted
    as a byte) and its built release files. Caches that rebuild themselves (page images,
    rendered views) have budgets of their own and are not counted."""
    files = Document.objects.filter(workspace=workspace).aggregate(n=Sum("size"))["n"]
    texts = ParseVersion.objects.filter(document__workspace=workspace).aggregate(
        n=Sum("text_length")
    )["n"]
    built = ReleaseFile.objects.filter(release__evalset__workspace=workspace).aggregate(
        n=Sum("size")
    )["n"]
    return (files or 0) + (texts or 0) + (built or 0)


def check_room(workspace: Workspace, adding: int, what: str, field: str | None = None) -> None:
    """Refuse to store ``adding`` more bytes (``what`` says of what) past the workspace's
    byte limit; ``adding`` 0 refuses only a workspace already at it (a release, whose size
    is known once built)."""
    name = "GROUNDWORK_MAX_WORKSPACE_MB"
    most = getattr(settings, name) * MB
    used = stored_bytes(workspace)
    if used + adding > most or used >= most:
        raise TooLarge(
            f"{what} would take workspace {workspace.slug!r} to {_mb(used + adding)} stored, "
            f"past the {_mb(most)} {name} allows ({_mb(used)} is stored now in uploads, "
            "parses and releases); delete some of them first",
            field=field,
            extra=_limit(name),
        )


def check_releases_today(workspace: Workspace) -> None:
    """Refuse a release to a workspace that made as many in the last 24 hours as it may; one
    more is allowed when the oldest of them is a day old."""
    name = "GROUNDWORK_MAX_RELEASES_PER_DAY"
    most = getattr(settings, name)
    since = timezone.now() - DAY
    recent = Release.objects.filter(evalset__workspace=workspace, created_at__gt=since)
    made = recent.count()
    if made >= most:
        oldest = recent.order_by("-created_at").values_list("created_at", flat=True)[most - 1]
        wait = (oldest + DAY - timezone.now()).total_seconds()
        raise RateLimited(
            f"workspace {workspace.slug!r} made {_count(made, 'release')} in the last 24 "
            f"hours, the most {name} allows ({most:,}); the next is allowed in {_wait(wait)}",
            retry_after=wait,
            extra=_limit(name),
        )


def _wait(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    if minutes < 120:
        return f"{minutes} min"
    return f"{round(minutes / 60)} hours"
