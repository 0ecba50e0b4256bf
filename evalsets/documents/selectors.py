"""Reads of documents and parses."""

from __future__ import annotations

import functools

from django.db import connection
from django.db.models import (
    Prefetch,
    Q,
    QuerySet,
)
from django.shortcuts import get_object_or_404

from evalsets import validation, written
from evalsets.anchoring.selectors import anchors_for
from evalsets.errors import InvalidInput
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    GoldAnchor,
    ParseStatus,
    ParseVersion,
)
from evalsets.review import blind


def document_in(workspace, source_id: str) -> Document:
    """The workspace's document ``source_id`` (with its parses), or 404."""
    return get_object_or_404(documents(workspace), source_id=source_id)


def keys_no_url_can_carry() -> list[tuple[str, str, str, str]]:
    """Documents and items stored before such keys were refused whose ``source_id`` or id
    holds a part a browser rewrites (``validation.url_key_problem``), as ``(workspace,
    "document" or "item in <set>", key, why)``. The database narrows the rows to those that
    could hold one; Python decides."""
    found = []
    empty_part = Q(source_id__startswith="/") | Q(source_id__endswith="/")
    documents = Document.objects.filter(
        _could_hold_a_rewritten_part("source_id") | empty_part | Q(source_id__contains="//")
    ).values_list("workspace__slug", "source_id")
    for workspace, key in documents.iterator():
        if problem := validation.url_key_problem(key):
            found.append((workspace, "document", key, problem))
    items = EvalItem.objects.filter(_could_hold_a_rewritten_part("item_id")).values_list(
        "evalset__workspace__slug", "evalset__slug", "item_id"
    )
    for workspace, evalset, key in items.iterator():
        if problem := validation.url_key_problem(key):
            found.append((workspace, f"item in {evalset}", key, problem))
    return found


def _could_hold_a_rewritten_part(field: str) -> Q:
    """A dot or ``%2e`` starting a part, or a backslash anywhere."""
    return (
        Q(**{f"{field}__startswith": "."})
        | Q(**{f"{field}__contains": "/."})
        | Q(**{f"{field}__istartswith": "%2e"})
        | Q(**{f"{field}__icontains": "/%2e"})
        | Q(**{f"{field}__contains": "\\"})
    )


def documents(workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("parses", queryset=ParseVersion.objects.defer("text"))
    )


def documents_with_anchor_counts(workspace, *, reader) -> list[Document]:
    """The workspace's documents with their parses, who uploaded each, and ``anchor_count``:
    the anchors ``reader`` (a membership) may see (``blind.visible_anchor_count``)."""
    return list(
        documents(workspace)
        .select_related("uploaded_by")
        .annotate(anchor_count=blind.visible_anchor_count("document", reader))
    )


def parses(document) -> QuerySet[ParseVersion]:
    return ParseVersion.objects.filter(document=document).select_related("document")


def pdf_view_parse(document: Document, parser: str = "pdfium") -> ParseVersion | None:
    """The parse behind the PDF view: the newest ``parser`` parse of the document (ready or
    not, so the page can say why the view is not there yet), its text left in the database."""
    return (
        ParseVersion.objects.filter(document=document, parser=parser)
        .defer("text")
        .order_by("-created_at", "-id")
        .first()
    )


def parse_in_workspace(workspace, public_id) -> ParseVersion:
    """A parse of one of the workspace's documents, or a 400 naming the field.

    Every column but the text (megabytes; a highlight cuts its part from the process's copy,
    see the anchoring services), and its document as far as a highlight needs it (id,
    workspace, source id; any other field is read when asked for). Read by a query written
    out: the ORM took a millisecond of CPU to build it, a tenth of an anchor create."""
    prepared = ParseVersion._meta.get_field("public_id").get_db_prep_value(public_id, connection)
    fields = written.concrete(ParseVersion, leaving=("text",))
    found = written.first(ParseVersion, fields, _parse_in_workspace_sql(), [prepared, workspace.pk])
    if found is None:
        raise InvalidInput(f"no parse {str(public_id)!r} in this workspace", field="parse")
    parse, (workspace_id, source_id) = found
    parse.document = Document.from_db(
        parse._state.db,
        ["id", "workspace_id", "source_id"],
        [parse.document_id, workspace_id, source_id],
    )
    return parse


@functools.cache
def _parse_in_workspace_sql() -> str:
    q = connection.ops.quote_name
    columns = written.select_list(
        ParseVersion, "p", written.concrete(ParseVersion, leaving=("text",))
    )
    return (
        f"SELECT {columns}, d.{q('workspace_id')}, d.{q('source_id')} "
        f"FROM {q(ParseVersion._meta.db_table)} p "
        f"JOIN {q(Document._meta.db_table)} d ON p.{q('document_id')} = d.{q('id')} "
        f"WHERE p.{q('public_id')} = %s AND d.{q('workspace_id')} = %s"
    )


# -- the item page ------------------------------------------------------------------------------


def documents_to_highlight(workspace) -> list[Document]:
    """The workspace's documents whose reference parse is ready to be read and highlighted."""
    return [
        doc
        for doc in documents(workspace)
        if any(p.is_reference and p.status == ParseStatus.READY for p in doc.parses.all())
    ]


# -- the document page --------------------------------------------------------------------------


def document_anchors(document: Document, *, reader) -> QuerySet[GoldAnchor]:
    """Every anchor on ``document`` that ``reader`` (a membership) may see
    (``anchors_for``), in reading order, with its item (and set) and its resolutions: three
    queries whatever the count."""
    return (
        anchors_for(reader)
        .filter(document=document)
        .select_related("item__evalset")
        .order_by("ref_start", "id")
    )


def document_delete_impact(document: Document) -> dict[str, int]:
    """What deleting ``document`` removes (parses, resolutions) and leaves waiting (anchors)."""
    anchors = GoldAnchor.objects.filter(document=document)
    return {
        "parses": ParseVersion.objects.filter(document=document).count(),
        "resolutions": AnchorResolution.objects.filter(parse__document=document).count(),
        "anchors": anchors.count(),
        "items": anchors.values("item").distinct().count(),
    }
