"""Eval sets, items, gold anchors and each anchor's resolution in a parse."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from evalsets.models.documents import Document, ParseVersion
from evalsets.models.workspaces import Workspace
from evalsets.pure import resolver


class EvalSet(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="evalsets")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200, blank=True)
    version = models.PositiveIntegerField(default=1)
    source = models.CharField(max_length=100, default="manual")
    meta = models.JSONField(default=dict, blank=True)
    #: What annotators read before they work (Markdown, written by an owner; shown rendered
    #: and sanitised by ``evalsets.pure.guidelines``).
    guidelines = models.TextField(blank=True, default="")
    #: The question types an item may have, in the owner's order; empty: any text.
    qtypes = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "slug"], name="evalset_id_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="evalset_version_positive"),
        ]

    def __str__(self) -> str:
        return self.slug


class ItemState(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"
    CHANGES_REQUESTED = "changes_requested", "Changes requested"
    APPROVED = "approved", "Approved"


class EvalItem(models.Model):
    evalset = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="items")
    item_id = models.CharField(max_length=128)
    question = models.TextField()
    qtype = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 (None != "")
    answer = models.TextField(null=True, blank=True)  # noqa: DJ001 (None != "")
    meta = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=20, choices=ItemState.choices, default=ItemState.DRAFT)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_items",
    )
    #: Bumped on every write; a client sends the one it read, and a stale one gets a 409.
    row_version = models.PositiveIntegerField(default=1)
    #: When a reviewer chose between the versions of an overlapped item (blind until then:
    #: ``evalsets.review.blind``); empty for an item never adjudicated.
    adjudicated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["evalset_id", "created_at", "id"]
        indexes = [
            # A page of a set in list order, and one person's queue ("my drafts") likewise.
            models.Index(fields=["evalset", "created_at", "id"], name="item_list_order"),
            models.Index(
                fields=["evalset", "assignee", "state", "created_at", "id"], name="item_work_queue"
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["evalset", "item_id"], name="item_id_unique_in_set"),
            models.CheckConstraint(condition=~Q(question=""), name="item_question_not_empty"),
            models.CheckConstraint(
                condition=Q(state__in=[s.value for s in ItemState]), name="item_state_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.evalset}/{self.item_id}"


class GoldAnchor(models.Model):
    """A quote that answers an item, portable across parses (context-grid's ``GoldAnchor``).

    ``document`` is empty while the quoted file is not in the workspace yet (an imported
    label waiting for its file); ``source_id`` always says which file it means.
    """

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    item = models.ForeignKey(EvalItem, on_delete=models.CASCADE, related_name="anchors")
    source_id = models.CharField(max_length=255)
    document = models.ForeignKey(
        Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="anchors"
    )
    quote = models.TextField()
    grade = models.PositiveSmallIntegerField(default=2)
    page_hint = models.PositiveIntegerField(null=True, blank=True)
    occurrence = models.PositiveIntegerField(default=0)
    # Where it was highlighted, when it was: the parse, the offsets and a little context.
    reference_parse = models.ForeignKey(
        ParseVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    ref_start = models.PositiveIntegerField(null=True, blank=True)
    ref_end = models.PositiveIntegerField(null=True, blank=True)
    prefix = models.CharField(max_length=64, blank=True)
    suffix = models.CharField(max_length=64, blank=True)
    #: When the annotator started from a suggested passage (search or suggested evidence):
    #: the passage offered (``parse`` public id, ``start``, ``end``, ``page``) and what
    #: offered it (``via``, ``rank``). Empty for evidence found without help. A reviewer
    #: sees it in the history and exports carry it in the item's meta.
    suggested = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item_id", "created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(grade__lte=2), name="anchor_grade_0_to_2"),
            models.CheckConstraint(condition=~Q(quote=""), name="anchor_quote_not_empty"),
            models.CheckConstraint(
                condition=Q(page_hint__isnull=True) | Q(page_hint__gte=1),
                name="anchor_page_hint_from_1",
            ),
            models.CheckConstraint(
                condition=Q(ref_start__isnull=True, ref_end__isnull=True)
                | Q(ref_start__lt=F("ref_end")),
                name="anchor_highlight_start_before_end",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id}: {self.quote[:40]}"


class ResolutionStatus(models.TextChoices):
    """Where an anchor stands in one parse: the resolver's own answers, stored as it gives
    them, plus the two only the app knows (not yet resolved, placed by a person)."""

    PENDING = "pending", "Pending"
    EXACT = resolver.EXACT, "Exact"
    NORMALISED = resolver.NORMALISED, "Normalised"
    FUZZY = resolver.FUZZY, "Fuzzy"
    AMBIGUOUS = resolver.AMBIGUOUS, "Ambiguous"
    NOT_FOUND = resolver.NOT_FOUND, "Lost"
    #: Placed by a person (a candidate confirmed, or the span selected by hand); a re-run of
    #: the resolver never overwrites it.
    CONFIRMED = "confirmed", "Confirmed"


#: Statuses that place the anchor on a span.
FOUND_STATUSES = (
    ResolutionStatus.EXACT,
    ResolutionStatus.NORMALISED,
    ResolutionStatus.FUZZY,
    ResolutionStatus.CONFIRMED,
)


class AnchorResolution(models.Model):
    """Where one anchor lies in one parse version: a context-grid ``GoldSpan`` for that parse."""

    anchor = models.ForeignKey(GoldAnchor, on_delete=models.CASCADE, related_name="resolutions")
    parse = models.ForeignKey(ParseVersion, on_delete=models.CASCADE, related_name="resolutions")
    status = models.CharField(max_length=16, choices=ResolutionStatus.choices, default="pending")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    score = models.FloatField(default=0.0)
    candidates = models.PositiveIntegerField(default=0)
    detail = models.JSONField(default=dict, blank=True)
    resolver_version = models.CharField(max_length=32, blank=True)
    #: Who placed a ``confirmed`` resolution, and when (empty for the resolver's own).
    confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    confirmed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["anchor_id", "parse_id"]
        # How fast the backlog drains: the rows written in the last minute (evalsets.sweep).
        indexes = [models.Index(fields=["updated_at"], name="resolution_updated_at")]
        constraints = [
            models.UniqueConstraint(fields=["anchor", "parse"], name="one_resolution_per_parse"),
            models.CheckConstraint(
                condition=Q(start__isnull=True, end__isnull=True) | Q(start__lt=F("end")),
                name="resolution_start_before_end",
            ),
            models.CheckConstraint(
                condition=Q(score__gte=0) & Q(score__lte=1), name="resolution_score_0_to_1"
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ResolutionStatus]),
                name="resolution_status_known",
            ),
            models.CheckConstraint(
                condition=~Q(status="confirmed") | Q(start__isnull=False),
                name="resolution_confirmed_has_span",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.anchor_id} in {self.parse_id}: {self.status}"

    @property
    def is_found(self) -> bool:
        return self.status in FOUND_STATUSES
