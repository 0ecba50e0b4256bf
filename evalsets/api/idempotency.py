"""The ``Idempotency-Key`` header on the create endpoints (``evalsets.idempotency``).

A create sent with a key the same user sent before (within the window) is answered with
what the first request made, the same status and body (read again), and the header
``Idempotent-Replayed: true``; nothing is created again.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError
from rest_framework import status
from rest_framework.response import Response

from evalsets import idempotency
from evalsets.errors import Conflict

HEADER = "HTTP_IDEMPOTENCY_KEY"

#: What a create gives back: the answer's body, the new object's pk, and whether it is new
#: (201; else 200, an upload of bytes stored already).
Made = tuple[dict, int, bool]


def _answer(made: Made) -> Response:
    body, _pk, created = made
    return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def create_once(
    request, kind: str, make: Callable[[], Made], again: Callable[[int], dict]
) -> Response:
    """``make()`` once per key (the service records the key in its transaction through
    ``idempotency.record``); a retry with the key is answered with ``again(pk)``, the
    object as it is now."""
    raw = request.META.get(HEADER)
    if raw is None:
        return _answer(make())
    key = idempotency.check_key(raw)
    pk = idempotency.earlier(request.user, key, kind)
    if pk is None:
        try:
            with idempotency.recording(request.user, key, kind):
                return _answer(make())
        except IntegrityError:
            # The same key at the same moment from another request: its create won and
            # ours rolled back whole; answer with its object.
            pk = idempotency.earlier(request.user, key, kind)
            if pk is None:
                raise
    try:
        body = again(pk)
    except ObjectDoesNotExist:
        raise Conflict(
            f"the {kind} this Idempotency-Key created was deleted since; "
            "send a fresh key to create it again",
            field="Idempotency-Key",
        ) from None
    return Response(body, status=status.HTTP_201_CREATED, headers={"Idempotent-Replayed": "true"})
