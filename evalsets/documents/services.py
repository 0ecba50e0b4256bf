"""Writes to documents and parses: upload, delete, add a parse, make it the reference.
Parsing itself runs in the background (``evalsets.documents.ingest``).
"""

from __future__ import annotations

import hashlib
from functools import partial

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from evalsets import access, dberrors, queue, validation
from evalsets.documents import ingest, pdfview, renditions
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import (
    Document,
    GoldAnchor,
    ParseStatus,
    ParseVersion,
    PendingImportLabel,
    Workspace,
)
from evalsets.passages import services as passages_services
from evalsets.workspaces import quotas

# -- documents and parses ---------------------------------------------------------------


def _sha256_of(upload: UploadedFile) -> str:
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return digest.hexdigest()


def document_upload(
    *, workspace: Workspace, user, upload: UploadedFile, source_id: str | None = None
) -> tuple[Document, bool]:
    """Store ``upload`` once and queue its parses; the same bytes again return the first copy.

    Returns ``(document, created)``.
    """
    validation.check_upload_size(upload.size, upload.name, settings.GROUNDWORK_MAX_UPLOAD_BYTES)
    if upload.size == 0:
        raise InvalidInput(f"{upload.name!r} is empty", field="file")
    source_id = (source_id or upload.name or "").strip()
    if not source_id:
        raise InvalidInput(
            "a document needs a source_id (its file name by default)", field="source_id"
        )
    validation.check_source_id(source_id)

    sha256 = _sha256_of(upload)
    existing = Document.objects.filter(workspace=workspace, sha256=sha256).first()
    if existing is not None:
        return existing, False
    if Document.objects.filter(workspace=workspace, source_id=source_id).exists():
        raise Conflict(
            f"a different file is already stored as {source_id!r}; "
            "choose another source_id or delete that document first",
            field="source_id",
        )
    # Checked here before the file is stored, and again below under the lock, where it holds.
    _check_document_room(workspace, upload)
    kind = ingest.sniff_upload(upload)
    document = Document(
        workspace=workspace,
        source_id=source_id,
        sha256=sha256,
        size=upload.size,
        kind=kind,
        uploaded_by=user,
    )
    _store_upload(document, upload)
    try:
        with transaction.atomic():
            quotas.lock_workspace(workspace)
            _check_document_room(workspace, upload)
            document.save()
            ingest.queue_parses(document)
            _attach_pending_anchors(document)
    except BaseException as error:
        # No row points at the stored file (a racing upload won, or the write failed):
        # remove it now rather than leave it to the sweep (sweep.orphan_files).
        document.file.storage.delete(document.file.name)
        if not dberrors.unique_race(error):
            raise
        # Another upload of the same file won the race: that copy is the document.
        existing = Document.objects.filter(workspace=workspace, sha256=sha256).first()
        if existing is None:
            raise Conflict(f"{source_id!r} was uploaded at the same moment; try again") from None
        return existing, False
    return document, True


def _store_upload(document: Document, upload: UploadedFile) -> None:
    """Store the upload's bytes as ``document``'s file, before any row is written.

    A write that storage refuses part-way (a full disk) raises ``OSError``, which the API
    answers 507 "storage is full, nothing was saved"; what it had written is removed here
    first, so no partial or empty file is left for a later reader. A complete copy of the
    same bytes under that name (another upload of this file that won) is left alone.
    """
    name = document.file.field.generate_filename(document, upload.name or document.sha256)
    try:
        document.file.save(upload.name or document.sha256, upload, save=False)
    except OSError:
        storage = document.file.storage
        try:
            if storage.exists(name) and storage.size(name) < upload.size:
                storage.delete(name)
        except OSError:
            pass  # left to the sweep's orphan clean-up (sweep.orphan_files)
        raise


def _check_document_room(workspace: Workspace, upload: UploadedFile) -> None:
    quotas.check_document_count(workspace)
    quotas.check_room(workspace, upload.size, f"storing {upload.name!r}", field="file")


def _attach_pending_anchors(document: Document) -> None:
    """Anchors imported before their file arrived point at it now.

    Imported spans (``PendingImportLabel``) need the file's text to become quotes; the
    reference parse is rarely ready at upload, so they are attached by a task queued on
    commit (which waits for the parse), and again when the reference parse becomes ready.
    """
    GoldAnchor.objects.filter(
        item__evalset__workspace=document.workspace_id,
        source_id=document.source_id,
        document__isnull=True,
    ).update(document=document)
    if PendingImportLabel.objects.waiting_for(document).exists():
        queue.after_commit("attach_pending_labels", document.pk)


@transaction.atomic
def document_delete(*, document: Document) -> None:
    """Delete a document, its parses and their resolutions; anchors keep their quotes.

    Anchors on the document become pending again (they still name its ``source_id``), so
    re-uploading the file re-attaches and re-resolves them. Background tasks that were queued
    for it find nothing and return.
    """
    file = document.file
    boxes = [p.char_boxes for p in document.parses.exclude(char_boxes="")]
    page_images = pdfview.document_key(document)  # its id, which delete() clears
    rendered = renditions.document_dir(document)
    document.delete()
    if file:
        transaction.on_commit(lambda: file.storage.delete(file.name))
    for box_file in boxes:
        transaction.on_commit(partial(box_file.storage.delete, box_file.name))
    transaction.on_commit(partial(pdfview.forget, page_images))
    transaction.on_commit(partial(renditions.forget, rendered))


@transaction.atomic
def parse_version_add(
    *,
    document: Document,
    parser: str,
    text: str,
    page_starts: list[int] | None = None,
    parser_version: str = "",
    origin: str = "uploaded",
    make_reference: bool = False,
    user=None,
) -> ParseVersion:
    """Add a finished parse (a user's own pipeline output, say) and resolve anchors in it.

    ``make_reference`` is choosing the reference parse, which needs ``access.CHOOSE_REFERENCE``
    from ``user`` (None: the system). A document with no reference yet takes this parse as its
    reference, whoever adds it.
    """
    parser = (parser or "").strip()
    if not parser:
        raise InvalidInput("a parse needs the name of the parser that made it", field="parser")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("a parse needs some text", field="text")
    page_starts = validation.check_page_starts(
        [0] if page_starts is None else page_starts, len(text)
    )
    parser_version = (parser_version or "").strip()
    if make_reference:
        access.check_user(
            user=user,
            workspace=document.workspace,
            needed=access.CHOOSE_REFERENCE,
            what="make_reference",
            field="make_reference",
        )
    if ParseVersion.objects.filter(
        document=document, parser=parser, parser_version=parser_version
    ).exists():
        raise Conflict(
            f"{document.source_id!r} already has a parse by {parser!r} "
            f"version {parser_version or '(none)'!r}; give this one another parser_version",
            field="parser_version",
        )
    quotas.lock_workspace(document.workspace)
    quotas.check_room(
        document.workspace, len(text), f"a parse of {len(text):,} characters", field="text"
    )
    has_reference = document.parses.filter(is_reference=True).exists()
    if make_reference and has_reference:
        document.parses.filter(is_reference=True).update(is_reference=False)
    parse = ParseVersion.objects.create(
        document=document,
        parser=parser,
        parser_version=parser_version,
        origin=origin,
        text=text,
        page_starts=page_starts,
        status=ParseStatus.READY,
        is_reference=make_reference or not has_reference,
    )
    queue.after_commit("resolve_parse", parse.pk)
    renditions.rendition_request(parse=parse)
    if parse.is_reference:
        passages_services.index_request(parse=parse)
    return parse


@transaction.atomic
def parse_make_reference(*, parse: ParseVersion) -> ParseVersion:
    if parse.status != ParseStatus.READY:
        raise Conflict(
            f"only a ready parse can be the reference; this one is {parse.status}", field="parse"
        )
    ParseVersion.objects.filter(document=parse.document_id, is_reference=True).update(
        is_reference=False
    )
    ParseVersion.objects.filter(pk=parse.pk).update(is_reference=True)
    parse.is_reference = True
    # Imported spans quote the reference text: a new reference may let waiting ones attach.
    queue.after_commit("attach_pending_labels", parse.document_id)
    renditions.rendition_request(parse=parse)  # the view as it looks, aligned to this parse
    passages_services.index_request(parse=parse)  # search reads the reference's passages
    return parse


@transaction.atomic
def parse_delete(*, parse: ParseVersion) -> None:
    if parse.is_reference and parse.document.parses.exclude(pk=parse.pk).exists():
        raise Conflict(
            "this is the reference parse annotators read; make another parse the reference first"
        )
    boxes = parse.char_boxes
    rendered = renditions.parse_dir(parse.document, parse)
    parse.delete()
    transaction.on_commit(partial(renditions.forget, rendered))
    if boxes:
        transaction.on_commit(partial(boxes.storage.delete, boxes.name))
