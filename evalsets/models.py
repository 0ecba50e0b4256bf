"""Groundwork's domain: workspaces, documents and their parses, eval sets, items and anchors.

The eval-set types mirror context-grid (``EvalSet`` / ``EvalItem`` / ``GoldAnchor`` /
``GoldSpan``) field for field, because our exports must load there unchanged. On top of
them we keep what a collaborative tool needs and a file format does not: who wrote what,
where a quote was highlighted, the workflow state, and where each anchor lies in every
parse of its document (``AnchorResolution``, a ``GoldSpan`` per parse).

Rules that a database can hold are constraints here; rules that need words for a person
(context-grid's messages) live in ``evalsets.validation`` and run before any write.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Substr

from evalsets import resolver
from evalsets.textpages import page_begin, page_begins, page_of


class Role(models.TextChoices):
    """A member's role in one workspace, declared highest first.

    Each role may do everything the roles below it may, so a rule names the least role it
    needs and ``at_least`` compares: ``Role.REVIEWER.at_least(Role.ANNOTATOR)`` is true.
    Which role each action needs is declared on the views (``required_roles``, ``@requires``)
    and, for single fields, in ``evalsets.access``.
    """

    OWNER = "owner", "Owner"
    REVIEWER = "reviewer", "Reviewer"
    ANNOTATOR = "annotator", "Annotator"
    VIEWER = "viewer", "Viewer"

    @property
    def rank(self) -> int:
        """0 for a viewer, up to 3 for an owner."""
        members = list(type(self))
        return len(members) - 1 - members.index(self)

    def at_least(self, other: Role | str) -> bool:
        """True when this role is ``other`` or above it."""
        return self.rank >= Role(other).rank


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    #: ``{"parsers": {kind: [parser, ...]}, "reference": {kind: parser}}``; empty means the
    #: defaults of ``evalsets.parsers``.
    parser_settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["workspace", "user"], name="one_membership_per_user"),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="membership_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} as {self.role}"

    def allows(self, role: Role | str) -> bool:
        """True when this member's role is ``role`` or above it."""
        return Role(self.role).at_least(role)


class Invitation(models.Model):
    """An owner's offer of a role in a workspace, waiting for the invitee to accept it.

    Nobody becomes a member without consent: adding someone by username only invites them,
    and they see and accept (or decline) it themselves. The invitee is a username, not a
    user row, so inviting a name nobody holds looks exactly like inviting a real user (the
    owner learns nothing about which usernames exist); the name is NFKC-normalised as Django
    normalises user names, and an account later created with it sees the invitation.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, choices=Role.choices)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace_id", "username"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "username"], name="one_invitation_per_name"
            ),
            models.CheckConstraint(
                condition=Q(role__in=[r.value for r in Role]), name="invitation_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.username} invited to {self.workspace} as {self.role}"


def document_upload_to(instance: Document, filename: str) -> str:
    return f"documents/{instance.workspace.slug}/{instance.sha256[:2]}/{instance.sha256}"


class Document(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="documents")
    source_id = models.CharField(max_length=255)
    file = models.FileField(upload_to=document_upload_to, max_length=300, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField(default=0)
    kind = models.CharField(max_length=16, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    #: When a "resolve what is pending" task was queued for this document's new anchors and
    #: has not started yet (``evalsets.resolution``): set by a conditional update, so a burst
    #: of anchors queues one message, not one each; cleared by the task as it starts.
    resolve_queued_at = models.DateTimeField(null=True, blank=True)
    #: The ``resolve_document`` task resolving this document now, and when it last said so: a
    #: lease like a parse's, so one task at a time does the work (``evalsets.resolution``).
    resolving_by = models.CharField(max_length=120, blank=True, default="")
    resolving_heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["source_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "source_id"], name="source_id_unique_in_workspace"
            ),
            models.UniqueConstraint(
                fields=["workspace", "sha256"], name="same_bytes_stored_once_per_workspace"
            ),
        ]

    def __str__(self) -> str:
        return self.source_id

    @property
    def reference_parse(self) -> ParseVersion | None:
        return self.parses.filter(is_reference=True).first()


class ParseStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    PARSING = "parsing", "Parsing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


def _pages(numbers: list[int], shown: int = 10) -> str:
    """``page 3``, ``pages 12, 40``, ``pages 1, 2, ... (120 in all)``."""
    if len(numbers) == 1:
        return f"page {numbers[0]}"
    listed = ", ".join(str(n) for n in numbers[:shown])
    if len(numbers) > shown:
        listed += f", … ({len(numbers)} in all)"
    return f"pages {listed}"


def parse_boxes_upload_to(instance: ParseVersion, filename: str) -> str:
    return f"parses/{instance.document.workspace.slug}/{instance.public_id}.boxes"


class ParseVersion(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="parses")
    parser = models.CharField(max_length=64)
    parser_version = models.CharField(max_length=64, blank=True)
    #: ``parsed`` by one of our parsers, or ``uploaded`` by a user from their own pipeline.
    origin = models.CharField(max_length=16, default="parsed")
    text = models.TextField(blank=True)
    #: ``len(text)`` in code points, kept beside it so a view never reads megabytes to know it.
    text_length = models.PositiveIntegerField(default=0)
    page_starts = models.JSONField(default=list, blank=True)
    #: What the parser noted about the file (``ParsedText.meta``): ``failed_pages`` and
    #: ``empty_pages`` (numbers from 1), ``encoding``, page counts. ``warnings`` words them.
    diagnostics = models.JSONField(default=dict, blank=True)
    #: Where each character of ``text`` sits on its PDF page (``parsers/charboxes.py``), for
    #: parsers that know (pdfium); the PDF view's text layer reads it a page at a time.
    char_boxes = models.FileField(upload_to=parse_boxes_upload_to, max_length=300, blank=True)
    status = models.CharField(max_length=16, choices=ParseStatus.choices, default="queued")
    error = models.TextField(blank=True)
    error_code = models.CharField(max_length=32, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    is_reference = models.BooleanField(default=False)
    # The lease of the worker running this parse (ingest.claim_parse): who holds it and
    # when they last renewed it; a parse nobody renews is taken over.
    claimed_by = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: How many page ranges this parse was split into (``ParseRange``); 0: one task read it
    #: whole. A split parse is driven by its ranges' leases, not by its own.
    range_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["document_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["document"],
                condition=Q(is_reference=True),
                name="one_reference_parse_per_document",
            ),
            models.UniqueConstraint(
                fields=["document", "parser", "parser_version"],
                name="one_parse_per_parser_version",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ParseStatus]), name="parse_status_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document} / {self.parser} {self.parser_version}"

    def save(self, *args, **kwargs) -> None:
        if "text" not in self.get_deferred_fields():
            self.text_length = len(self.text)
            if kwargs.get("update_fields") is not None and "text" in kwargs["update_fields"]:
                kwargs["update_fields"] = {*kwargs["update_fields"], "text_length"}
        super().save(*args, **kwargs)

    @property
    def page_begins(self) -> list[int]:
        """Where each page begins, ``[0]`` when the parse has no page starts (one page)."""
        return page_begins(self.page_starts)

    @property
    def page_count(self) -> int:
        return len(self.page_begins)

    @property
    def warnings(self) -> list[str]:
        """What a reader of this parse should know about pages it lost, as sentences."""
        found = self.diagnostics or {}
        out = []
        if found.get("failed_pages"):
            out.append(f"{_pages(found['failed_pages'])} could not be read")
        if found.get("empty_pages"):
            out.append(f"{_pages(found['empty_pages'])} had no text")
        encoding = str(found.get("encoding") or "")
        if encoding and encoding.replace("_", "-").lower() not in ("utf-8", "ascii"):
            out.append(f"the text was decoded as {encoding}, not UTF-8")
        return out

    def text_between(self, start: int, end: int) -> str:
        """``text[start:end]``, read from the database alone when the text was not loaded
        (a parse's text can be megabytes; a highlight needs a page of it)."""
        if "text" not in self.get_deferred_fields():
            return self.text[start:end]
        return (
            ParseVersion.objects.filter(pk=self.pk)
            .annotate(part=Substr("text", start + 1, max(0, end - start)))
            .values_list("part", flat=True)
            .get()
        )

    def page_of(self, offset: int) -> int:
        """The page (from 1) holding ``offset`` (``textpages.page_of``)."""
        return page_of(self.page_starts, offset)

    def page_begin(self, offset: int) -> int:
        """Where the page holding ``offset`` begins (``textpages.page_begin``)."""
        return page_begin(self.page_starts, offset)


class ParseRange(models.Model):
    """Pages ``start_page`` .. ``stop_page`` of a long PDF's parse, read by one task.

    Any worker takes a range with a lease of its own (``ingest.claim_range``), so a worker
    lost mid-range costs only that range; the task finishing the last one joins them all, in
    page order, into the parse's text. ``text``/``page_starts``/``diagnostics``/``char_boxes``
    are the range's part until then (emptied once joined).
    """

    parse = models.ForeignKey(ParseVersion, on_delete=models.CASCADE, related_name="ranges")
    #: The range's first page, 0-based, and the page after its last (null: to the end).
    start_page = models.PositiveIntegerField()
    stop_page = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ParseStatus.choices, default="queued")
    text = models.TextField(blank=True)
    page_starts = models.JSONField(default=list, blank=True)
    diagnostics = models.JSONField(default=dict, blank=True)
    #: The range's character boxes (``parsers/charboxes.py``, pdfium) until the join puts
    #: them in the parse's one box file: kept in the row, so a range taken over or a parse
    #: deleted leaves no file behind.
    char_boxes = models.BinaryField(blank=True, default=b"")
    #: Pages of this range read so far (the parse's progress is the sum over its ranges).
    progress_done = models.PositiveIntegerField(default=0)
    #: How many times a task took this range: 1 unless its worker was lost.
    attempts = models.PositiveIntegerField(default=0)
    claimed_by = models.CharField(max_length=128, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["parse_id", "start_page"]
        constraints = [
            models.UniqueConstraint(fields=["parse", "start_page"], name="one_range_per_start"),
            models.CheckConstraint(
                condition=Q(stop_page__isnull=True) | Q(stop_page__gt=F("start_page")),
                name="range_has_pages",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ParseStatus]), name="range_status_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.parse} pages {self.start_page + 1}-{self.stop_page or 'end'}"


class EvalSet(models.Model):
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="evalsets")
    slug = models.SlugField(max_length=100)
    name = models.CharField(max_length=200, blank=True)
    version = models.PositiveIntegerField(default=1)
    source = models.CharField(max_length=100, default="manual")
    meta = models.JSONField(default=dict, blank=True)
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


# Models that live in their own modules, registered with the app here.
from evalsets.models_inbox import *  # noqa: E402, F403
from evalsets.models_release import *  # noqa: E402, F403
from evalsets.models_review import *  # noqa: E402, F403
