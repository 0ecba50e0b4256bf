"""From an uploaded file to queued parse versions, and from a queued parse to text.

This is the Django side of ``evalsets.parsers``: it decides which parsers run for a
workspace, records one ``ParseVersion`` row per parser, and runs each parser in a child
process so a file that hangs a parser or eats all memory ends as a failed parse with a
reason a person can read, while the worker lives on.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evalsets import parsers
from evalsets.errors import InvalidInput
from evalsets.models import Document, ParseStatus, ParseVersion, Workspace

log = logging.getLogger(__name__)

#: How often a running parse writes its progress, at most.
PROGRESS_INTERVAL_S = 0.5


def sniff_upload(upload: UploadedFile) -> str:
    """The kind of file (``pdf``, ``docx``, ``html``, ``markdown``, ``text``), by content."""
    data = upload.read()
    upload.seek(0)
    try:
        return parsers.sniff(data, upload.name or "")
    except parsers.ParseError as error:
        raise InvalidInput(f"{upload.name!r}: {error.reason}", field="file") from None


def parser_names_for(workspace: Workspace, kind: str) -> tuple[list[str], str | None]:
    """The parsers this workspace runs on ``kind`` files, and which one is the reference."""
    chosen = (workspace.parser_settings or {}).get("parsers", {}).get(kind)
    names = list(chosen) if chosen else list(parsers.DEFAULT_PARSERS.get(kind, []))
    reference = (workspace.parser_settings or {}).get("reference", {}).get(kind)
    if reference not in names:
        reference = parsers.DEFAULT_REFERENCE.get(kind)
    if reference not in names:
        reference = names[0] if names else None
    return names, reference


def queue_parses(document: Document) -> list[ParseVersion]:
    """One queued parse version per parser not yet run at its current version.

    Must run inside the caller's transaction; the tasks are sent when it commits.
    """
    names, reference = parser_names_for(document.workspace, document.kind)
    has_reference = document.parses.filter(is_reference=True).exists()
    queued = []
    for name in names:
        parser = parsers.get_parser(name)
        parse, created = ParseVersion.objects.get_or_create(
            document=document,
            parser=name,
            parser_version=parser.version,
            defaults={"origin": "parsed", "status": ParseStatus.QUEUED},
        )
        if not created:
            continue
        if not has_reference and name == reference:
            parse.is_reference = True
            parse.save(update_fields=["is_reference"])
            has_reference = True
        queued.append(parse)
    from evalsets import sweep, tasks

    for parse in queued:
        transaction.on_commit(lambda pk=parse.pk: sweep.enqueue(tasks.parse_version, pk))
    return queued


def claim_parse(parse_id: int) -> ParseVersion | None:
    """Mark a queued (or interrupted) parse as parsing; None when it is gone or done.

    A conditional update, so two workers handed the same task cannot both run it, and a
    redelivered task after a worker died picks up a parse left ``parsing``.
    """
    claimed = ParseVersion.objects.filter(
        Q(status=ParseStatus.QUEUED) | Q(status=ParseStatus.PARSING), pk=parse_id
    ).update(status=ParseStatus.PARSING, progress_done=0, updated_at=timezone.now())
    if not claimed:
        return None
    return ParseVersion.objects.select_related("document").filter(pk=parse_id).first()


def run_parse(parse: ParseVersion) -> ParseVersion:
    """Parse the document's file with ``parse.parser``; record text or a readable failure."""
    document = parse.document
    try:
        with document.file.open("rb") as handle:
            data = handle.read()
    except (FileNotFoundError, ValueError):
        return _fail(
            parse, "missing", "The uploaded file is no longer in storage; upload it again."
        )

    last_write = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last_write[0] >= PROGRESS_INTERVAL_S or done >= total:
            last_write[0] = now
            ParseVersion.objects.filter(pk=parse.pk).update(
                progress_done=done, progress_total=total, updated_at=timezone.now()
            )

    try:
        result = parsers.parse_isolated(
            parse.parser,
            data,
            timeout_s=settings.GROUNDWORK_PARSE_TIMEOUT_S,
            memory_mb=settings.GROUNDWORK_PARSE_MEMORY_MB,
            max_pages=settings.GROUNDWORK_MAX_PAGES,
            progress=progress,
        )
    except parsers.ParseError as error:
        return _fail(parse, error.code, error.reason)
    except Exception:  # the worker must live and the user must get words, not a trace
        log.exception("parser %s crashed on document %s", parse.parser, document.pk)
        return _fail(
            parse,
            "crashed",
            f"The {parse.parser} parser failed on this file; the other parses are unaffected.",
        )
    total = len(result.page_starts)
    ParseVersion.objects.filter(pk=parse.pk).update(
        text=result.text,
        text_length=len(result.text),
        page_starts=result.page_starts,
        diagnostics=result.meta,  # failed and empty pages, the encoding: kept, and shown
        status=ParseStatus.READY,
        error="",
        error_code="",
        progress_done=total,
        progress_total=total,
        updated_at=timezone.now(),
    )
    parse.refresh_from_db()
    return parse


def _fail(parse: ParseVersion, code: str, reason: str) -> ParseVersion:
    ParseVersion.objects.filter(pk=parse.pk).update(
        status=ParseStatus.FAILED, error=reason, error_code=code, updated_at=timezone.now()
    )
    parse.refresh_from_db()
    return parse


@transaction.atomic
def document_reparse(*, document: Document) -> list[ParseVersion]:
    """Queue parsers whose current version has not read this document yet.

    Old parse versions stay: anchors were resolved against them.
    """
    return queue_parses(document)
