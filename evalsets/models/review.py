"""Review and collaboration models: the audit trail, comments and assignment queues.

The audit trail (``ItemEvent``) is append-only: rows are written once and never changed or
deleted through the ORM, and each names its eval set and item by their ids as strings, so an
item's history outlives the item (and the eval set) it describes. Only deleting the whole
workspace, the tenant itself, removes its events.

Comments belong to an item and may point at one of its anchors (``anchor_uuid`` survives the
anchor) and answer another comment (``parent``). Assignments put an item in a person's queue
to annotate or to review; several annotate-assignments on one item is the overlap that
inter-annotator agreement is computed from.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = [
    "AssignmentKind",
    "AuditTrailIsAppendOnly",
    "Comment",
    "EventKind",
    "ItemAssignment",
    "ItemEvent",
]


class AuditTrailIsAppendOnly(Exception):
    """Raised on any attempt to change or delete an audit event through the ORM."""


class EventKind(models.TextChoices):
    CREATED = "created", "Created"
    EDITED = "edited", "Edited"
    DELETED = "deleted", "Deleted"
    SUBMITTED = "submitted", "Submitted"
    ANNOTATION_DONE = "annotation_done", "Annotation done (waiting for overlap)"
    APPROVED = "approved", "Approved"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    REOPENED = "reopened", "Reopened"
    ANCHOR_CREATED = "anchor_created", "Anchor created"
    ANCHOR_GRADE_CHANGED = "anchor_grade_changed", "Anchor grade changed"
    ANCHOR_DELETED = "anchor_deleted", "Anchor deleted"
    ANCHOR_CONFIRMED = "anchor_confirmed", "Anchor placed by hand in a parse"
    COMMENTED = "commented", "Commented"
    ASSIGNED = "assigned", "Assigned"
    UNASSIGNED = "unassigned", "Unassigned"
    ADJUDICATED = "adjudicated", "Adjudicated (versions picked or merged)"


#: The events that are workflow transitions (they carry ``from_state`` and ``to_state``).
TRANSITION_KINDS = (
    EventKind.SUBMITTED,
    EventKind.APPROVED,
    EventKind.CHANGES_REQUESTED,
    EventKind.REOPENED,
)


class ItemEventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        # The one update allowed is Django's own SET_NULL when the item or the person an
        # event points at is deleted; the event keeps their names as strings.
        if kwargs and set(kwargs) <= {"item", "actor"} and all(v is None for v in kwargs.values()):
            return super().update(**kwargs)
        raise AuditTrailIsAppendOnly("audit events are never changed")

    def delete(self):
        raise AuditTrailIsAppendOnly("audit events are never deleted")


class ItemEvent(models.Model):
    """One thing that happened to an eval item: who, when, what (before/after) and why."""

    workspace = models.ForeignKey(
        "evalsets.Workspace", on_delete=models.CASCADE, related_name="item_events"
    )
    evalset_slug = models.CharField(max_length=100)
    #: The item's id in its set (``EvalItem.item_id``), kept as a string.
    item_key = models.CharField(max_length=128)
    #: The live item, while it exists; the strings above keep naming it afterwards.
    item = models.ForeignKey(
        "evalsets.EvalItem",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="events",
    )
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    from_state = models.CharField(max_length=20, blank=True)
    to_state = models.CharField(max_length=20, blank=True)
    #: Why: the reviewer's comment, the reopen reason.
    reason = models.TextField(blank=True)
    anchor_uuid = models.UUIDField(null=True, blank=True)
    #: ``{"changes": {field: {"before": .., "after": ..}}}``, ``{"quote": ..}``, ...
    data = models.JSONField(default=dict, blank=True)
    #: The browser tab the change came from (``evalsets.origin``), so a page that polls for
    #: changes can tell its own writes, and the same person's other tab, from someone else's.
    tab = models.CharField(max_length=64, blank=True)

    objects = ItemEventQuerySet.as_manager()

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["workspace", "evalset_slug", "item_key", "at"])]

    def __str__(self) -> str:
        return f"{self.evalset_slug}/{self.item_key}: {self.kind} by {self.actor_name}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise AuditTrailIsAppendOnly("audit events are never changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditTrailIsAppendOnly("audit events are never deleted")


class Comment(models.Model):
    """A remark on an item, or on one of its anchors; ``parent`` makes threads."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey("evalsets.EvalItem", on_delete=models.CASCADE, related_name="comments")
    anchor = models.ForeignKey(
        "evalsets.GoldAnchor",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="comments",
    )
    #: The anchor's public id, kept after the anchor is deleted.
    anchor_uuid = models.UUIDField(null=True, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    #: ``comment``, or the transition it explains (``changes_requested``, ``approved``...).
    kind = models.CharField(max_length=32, default="comment")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["item_id", "created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=~Q(body=""), name="comment_body_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.body[:40]}"


class AssignmentKind(models.TextChoices):
    ANNOTATE = "annotate", "Annotate"
    REVIEW = "review", "Review"


class ItemAssignment(models.Model):
    """An item in someone's queue. ``done_at`` is set when they have done their part."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(
        "evalsets.EvalItem", on_delete=models.CASCADE, related_name="assignments"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="item_assignments"
    )
    kind = models.CharField(max_length=16, choices=AssignmentKind.choices)
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item__created_at", "item_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "user", "kind"], name="one_assignment_per_item_user_kind"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in AssignmentKind]),
                name="assignment_kind_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} -> {self.user_id} ({self.kind})"
