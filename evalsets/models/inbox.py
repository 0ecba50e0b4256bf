"""What needs a person: one ``Notification`` per thing someone else did that asks for them.

Changes requested on an item they wrote or were given, an item assigned to them, a review
waiting for them, a reply to their comment. The services that make those changes write the
notification in the same transaction (``evalsets.review.inbox.notify``), never a signal, so
the inbox cannot disagree with the data. A notification names its item by its ids as strings
(as the audit trail does), so it still reads after the item is gone; ``read_at`` is the
person's "seen it" mark.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = ["Notification", "NotificationKind"]


class NotificationKind(models.TextChoices):
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    ASSIGNED = "assigned", "Assigned to you"
    REVIEW = "review", "Review waiting"
    REPLY = "reply", "Reply to your comment"


class Notification(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    workspace = models.ForeignKey(
        "evalsets.Workspace", on_delete=models.CASCADE, related_name="notifications"
    )
    kind = models.CharField(max_length=32, choices=NotificationKind.choices)
    evalset_slug = models.CharField(max_length=100)
    item_key = models.CharField(max_length=128)
    item = models.ForeignKey(
        "evalsets.EvalItem",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="notifications",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    #: The reviewer's comment, the reply: what the person will read first (cut to 500).
    text = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["recipient", "read_at", "created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in NotificationKind]),
                name="notification_kind_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.recipient_id}: {self.kind} {self.evalset_slug}/{self.item_key}"
