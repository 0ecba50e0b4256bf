"""Documents, their parses and the ranges a parse is done in."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Substr

from evalsets.models.workspaces import Workspace
from evalsets.pure.textpages import page_begin, page_begins, page_of


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
    #: has not started yet (``evalsets.anchoring.resolution``): set by a conditional update,
    #: so a burst of anchors queues one message, not one each; cleared by the task as it starts.
    resolve_queued_at = models.DateTimeField(null=True, blank=True)
    #: The ``resolve_document`` task resolving this document now, and when it last said so: a
    #: lease like a parse's, so one task at a time does the work
    #: (``evalsets.anchoring.resolution``).
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
