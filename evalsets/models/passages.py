"""Passages of each document's reference parse: what workspace search and suggestions rank."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from evalsets.models.documents import Document, ParseVersion
from evalsets.models.workspaces import Workspace


class Passage(models.Model):
    """A page or a paragraph window of one reference parse (``pure/passages.py`` cuts them).

    ``workspace`` is the document's, kept on the row so every search filters on one indexed
    column and never reaches another workspace's text. ``terms`` are the passage's words as
    the ranking reads them (lowered, stemmed, stop words out, space-separated), written once
    by the worker that cut the passage, so building a workspace's index reads no raw text.
    Removed with its parse (and so with its document); a re-parse replaces them.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="passages")
    parse = models.ForeignKey(ParseVersion, on_delete=models.CASCADE, related_name="passages")
    #: The page (from 1) the passage starts on.
    page = models.PositiveIntegerField()
    #: Code points in the parse's text, as a highlight's.
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    terms = models.TextField(blank=True)
    #: With the embedding extra on (``GROUNDWORK_SEARCH_EMBEDDINGS``): the passage's unit
    #: sentence vector, 384 float32 little-endian, written by ``embed_passages`` after the
    #: passage; empty until then (and always, with the extra off).
    vector = models.BinaryField(null=True, blank=True)

    class Meta:
        ordering = ["parse_id", "start"]
        indexes = [models.Index(fields=["workspace", "id"], name="passage_workspace")]
        constraints = [
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="passage_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id} p{self.page} [{self.start}:{self.end}]"
