"""Creates a client may retry safely: an ``Idempotency-Key`` names one create.

A create whose answer was lost after its commit (the connection dropped just after COMMIT)
answered 503, and the client retrying it made a second anchor. With a key, the create
records ``(user, key) -> object`` in its own transaction (``record``, called by the
services inside theirs), so the object and its key commit together or not at all; the retry
finds the key (``earlier``) and is answered with the object the first request made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from evalsets.errors import Conflict, InvalidInput
from evalsets.models import IdempotencyKey

#: Longest key accepted: a UUID is 36 characters; room for a client's own prefix.
KEY_MAX = 100

#: The key the running create records against: (user id, key, kind), or None.
_recording: ContextVar[tuple[int, str, str] | None] = ContextVar("idempotency", default=None)


def check_key(raw: str) -> str:
    """The key as sent, if it is one: 1 to ``KEY_MAX`` printable ASCII characters."""
    key = raw.strip()
    if not key or len(key) > KEY_MAX or not key.isascii() or not key.isprintable():
        raise InvalidInput(
            f"an Idempotency-Key is 1 to {KEY_MAX} printable ASCII characters "
            f"(a fresh UUID per action); this one has {len(key)}",
            field="Idempotency-Key",
        )
    return key


def _window_start():
    return timezone.now() - timedelta(seconds=settings.GROUNDWORK_IDEMPOTENCY_WINDOW_S)


def earlier(user, key: str, kind: str) -> int | None:
    """The primary key of the ``kind`` object this user's ``key`` made within the window."""
    found = IdempotencyKey.objects.filter(
        user=user, key=key, created_at__gte=_window_start()
    ).first()
    if found is None:
        return None
    if found.kind != kind:
        raise Conflict(
            f"this Idempotency-Key was used for creating a {found.kind}, not a {kind}; "
            "send a fresh key for each new action",
            field="Idempotency-Key",
        )
    return found.object_pk


@contextlib.contextmanager
def recording(user, key: str, kind: str) -> Iterator[None]:
    """Have the ``kind`` create run inside this block record its object under ``key``."""
    token = _recording.set((user.pk, key, kind))
    try:
        yield
    finally:
        _recording.reset(token)


def record(kind: str, pk: int) -> None:
    """Inside a create's transaction: remember what it made under the caller's key, if a
    ``recording`` block for ``kind`` is open (else nothing: a create with no key)."""
    current = _recording.get()
    if current is None or current[2] != kind:
        return
    user_id, key, _ = current
    # An expired row for the same key would block the new one (one row per user and key).
    IdempotencyKey.objects.filter(user_id=user_id, key=key, created_at__lt=_window_start()).delete()
    IdempotencyKey.objects.create(user_id=user_id, key=key, kind=kind, object_pk=pk)
    _recording.set(None)  # one object per key: a nested create records nothing more


def forget_expired() -> int:
    """Delete the keys older than the window; how many."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=_window_start()).delete()
    return deleted
