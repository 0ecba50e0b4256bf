"""Release and import models: frozen, numbered exports and the labels imports leave pending.

A ``Release`` freezes an eval set at a version number: which items went in (approved ones
unless an owner explicitly chose more, which the release records), an immutable snapshot of
each as context-grid's own dict (``ReleaseItem``) and the parse each document's text is read
from, all written in the request that made the release; and the files built from that
snapshot (``ReleaseFile``, one per format, with its SHA-256), so a download months later is
the same bytes whatever happened to the set since. Building the files runs in a Celery task
that reports progress on the release row.

``ImportRecord`` is the audit of one committed import. ``PendingImportLabel`` keeps an
imported offset-pinned label (LegalBench-RAG's spans, deepset's context offsets) whose
document is not in the workspace yet, or whose reference parse is not ready: a span can only
become a quote once the text is there, so it waits here and becomes a ``GoldAnchor`` (a
highlight of the place it names) when it is.
"""

from __future__ import annotations

import posixpath
import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from evalsets.pure.formats.legalbench import match_path

__all__ = [
    "ImportRecord",
    "PendingImportLabel",
    "PendingLabelStatus",
    "Release",
    "ReleaseFile",
    "ReleaseItem",
    "ReleaseStatus",
]


class ReleaseStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Release(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    evalset = models.ForeignKey(
        "evalsets.EvalSet", on_delete=models.CASCADE, related_name="releases"
    )
    version = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    #: When the snapshot was taken (in the request that made the release) and when the files
    #: were done.
    frozen_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    resolver_version = models.CharField(max_length=32)
    #: Item states included; ``["approved"]`` unless an owner explicitly chose more.
    include_states = models.JSONField(default=list)
    includes_unapproved = models.BooleanField(default=False)
    formats = models.JSONField(default=list)
    #: Parser whose resolved spans became each item's ``gold``; empty for anchors only.
    gold_parser = models.CharField(max_length=64, blank=True)
    #: Or per document kind: ``{kind: parser}``, where ``"reference"`` is each document's
    #: reference parse; kinds not named carry no gold.
    gold_parsers = models.JSONField(default=dict, blank=True)
    #: ``{source_id: {"parse", "parser", "parser_version"}}`` actually used for gold/texts.
    parses_used = models.JSONField(default=dict, blank=True)
    #: The ``_evalset`` header written: id, version, source, meta.
    header = models.JSONField(default=dict, blank=True)
    #: ``{source_id: parse pk}``: the parse whose text every file reads for each document of
    #: the workspace (BEIR's corpus holds them all), chosen when the release was made.
    texts = models.JSONField(default=dict, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=16, choices=ReleaseStatus.choices, default=ReleaseStatus.QUEUED
    )
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    #: Release-wide notes for people (what was included and what could not be carried).
    notes = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    #: How many times its build was found abandoned (its worker killed, its host lost) and
    #: taken over; past ``releases.MAX_BUILD_INTERRUPTIONS`` it fails instead.
    interruptions = models.PositiveIntegerField(default=0)
    #: How many times writing its files failed in storage (a full disk): the build is tried
    #: again later, and fails once ``GROUNDWORK_RELEASE_STORAGE_TRIES`` were spent.
    storage_failures = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["evalset_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["evalset", "version"], name="release_version_unique"),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ReleaseStatus]),
                name="release_status_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.evalset} v{self.version}"

    @property
    def percent(self) -> int:
        if self.status == ReleaseStatus.READY:
            return 100
        if not self.progress_total:
            return 0
        return min(100, int(100 * self.progress_done / self.progress_total))


class ReleaseItem(models.Model):
    """One item as it was released: context-grid's ``EvalItem.to_dict()``, never changed."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    item_id = models.CharField(max_length=128)
    state = models.CharField(max_length=20)
    data = models.JSONField()
    #: Where each anchor lies in the parse the release's files use, one ``[start, end]`` or
    #: ``null`` per anchor (``bridge.anchor_span``), frozen with ``data`` so every format
    #: places evidence where it was chosen instead of searching for the quote again.
    positions = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["release_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["release", "item_id"], name="release_item_once"),
            models.UniqueConstraint(fields=["release", "position"], name="release_item_position"),
        ]

    def __str__(self) -> str:
        return f"{self.release}/{self.item_id}"


def release_folder(release: Release) -> str:
    """The storage folder holding a release's files and nothing else."""
    return f"releases/{release.evalset.workspace.slug}/{release.evalset.slug}/{release.public_id}"


def release_upload_to(instance: ReleaseFile, filename: str) -> str:
    return posixpath.join(release_folder(instance.release), filename)


class ReleaseFile(models.Model):
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="files")
    format = models.CharField(max_length=32)
    file = models.FileField(upload_to=release_upload_to, max_length=300)
    filename = models.CharField(max_length=255)
    media_type = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField(default=0)
    #: ``ExportNotes``: what the format could not carry, in words and as counts.
    notes = models.JSONField(default=list, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    rows = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["release_id", "format"]
        constraints = [
            models.UniqueConstraint(fields=["release", "format"], name="release_file_per_format"),
        ]

    def __str__(self) -> str:
        return self.filename


class ImportRecord(models.Model):
    """Who imported which file into which set, and what it did."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    evalset = models.ForeignKey(
        "evalsets.EvalSet", on_delete=models.CASCADE, related_name="imports"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    filename = models.CharField(max_length=255)
    format = models.CharField(max_length=32)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["evalset_id", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.filename} into {self.evalset}"


class PendingLabelStatus(models.TextChoices):
    WAITING = "waiting", "Waiting for its document"
    ATTACHED = "attached", "Attached"
    FAILED = "failed", "Does not fit the document"


class PendingLabelQuerySet(models.QuerySet):
    def waiting_for(self, document) -> PendingLabelQuerySet:
        """Labels waiting for ``document``: those that name it, and spans (no context) whose
        corpus path means it by the rule the import matched paths with
        (``formats.legalbench.match_path``: exact, else the one document it is a path
        suffix of), so a span waiting for ``cuad/x.txt`` attaches when ``x.txt`` arrives."""
        waiting = self.filter(workspace=document.workspace_id, status=PendingLabelStatus.WAITING)
        paths = (
            waiting.filter(context="")
            .exclude(source_id=document.source_id)
            .values_list("source_id", flat=True)
            .distinct()
        )
        meant: list[str] = []
        if paths:
            names = list(document.workspace.documents.values_list("source_id", flat=True))
            meant = [path for path in paths if match_path(path, names)[0] == document.source_id]
        return waiting.filter(Q(source_id=document.source_id) | Q(context="", source_id__in=meant))


class PendingImportLabel(models.Model):
    """An imported label waiting for its document's text to become a quote.

    Without ``context``, ``start``/``end`` count characters in the document (LegalBench-RAG)
    and ``quote``, when set, is the text they must hold. With ``context`` (deepset), they
    count characters in that passage, which is found in the document to place the quote.
    """

    workspace = models.ForeignKey(
        "evalsets.Workspace", on_delete=models.CASCADE, related_name="pending_labels"
    )
    item = models.ForeignKey(
        "evalsets.EvalItem", on_delete=models.CASCADE, related_name="pending_labels"
    )
    source_id = models.CharField(max_length=255)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    grade = models.PositiveSmallIntegerField(default=2)
    line = models.PositiveIntegerField(null=True, blank=True)
    context = models.TextField(blank=True)
    #: SHA-256 of ``context`` (empty without one), so one label per passage is enforced.
    context_digest = models.CharField(max_length=64, blank=True, default="")
    quote = models.TextField(blank=True)
    status = models.CharField(
        max_length=16, choices=PendingLabelStatus.choices, default=PendingLabelStatus.WAITING
    )
    message = models.TextField(blank=True)
    anchor = models.ForeignKey(
        "evalsets.GoldAnchor", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = PendingLabelQuerySet.as_manager()

    class Meta:
        ordering = ["item_id", "source_id", "start"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "source_id", "start", "end", "context_digest"],
                name="pending_label_once_per_context",
            ),
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="pending_span_ordered"),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in PendingLabelStatus]),
                name="pending_label_status_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.item}: {self.source_id}[{self.start}:{self.end}] {self.status}"
