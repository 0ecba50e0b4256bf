"""Answers kept for idempotent requests (``evalsets.idempotency``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IdempotencyKey(models.Model):
    """A key a client sent with a create, and what that create made.

    Written in the create's own transaction, so when the answer is lost after the commit (a
    dropped connection) the client's retry with the same key finds the object it made and is
    answered with it, instead of making a second one. Kept for
    ``GROUNDWORK_IDEMPOTENCY_WINDOW_S``; the sweep deletes older ones.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=100)
    kind = models.CharField(max_length=20)
    object_pk = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="one_object_per_idempotency_key")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key} -> {self.kind} {self.object_pk}"
