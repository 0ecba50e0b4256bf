"""The JSON shape of an item (with its anchors and their resolutions) and of a release.

The API answers with these shapes and the pages embed them for their scripts, which then
replace them with the API's answers: one function per shape, so a script reads the same
object from either. The API's serializers declare the fields (for the schema) and call these
to render; ``tests/test_api_representation.py`` checks they render exactly what DRF's own
field-by-field code would. Values are plain JSON: ids and times as strings, times in ISO 8601
in the current time zone with ``Z`` for UTC, as DRF writes them.

Each function reads only what the selectors have loaded (``selectors.with_anchors`` for items,
``selectors.releases_of`` for releases), so a list costs no query per row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone

from evalsets.anchoring.portability import item_portability
from evalsets.models import AnchorResolution, EvalItem, GoldAnchor
from evalsets.models.releases import Release, ReleaseFile


def iso_time(value: datetime | None) -> str | None:
    """``value`` in ISO 8601 in the current time zone, ``Z`` for UTC (DRF's rendering)."""
    if value is None:
        return None
    if timezone.is_aware(value):
        value = value.astimezone(timezone.get_current_timezone())
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _username(user) -> str | None:
    return None if user is None else user.username


def resolution_data(resolution: AnchorResolution) -> dict:
    """Where one anchor lies in one parse, naming the parse (never its text)."""
    parse = resolution.parse
    return {
        "parse": str(parse.public_id),
        "parser": _text(parse.parser),
        "parser_version": _text(parse.parser_version),
        "status": _text(resolution.status),
        "start": _int(resolution.start),
        "end": _int(resolution.end),
        "score": None if resolution.score is None else float(resolution.score),
        "candidates": _int(resolution.candidates),
        "detail": resolution.detail,
        "resolver_version": _text(resolution.resolver_version),
    }


def highlight(anchor: GoldAnchor) -> dict | None:
    """Where the anchor was highlighted in its reference parse; None for a typed quote."""
    if anchor.reference_parse_id is None:
        return None
    return {
        "parse": str(anchor.reference_parse.public_id),
        "start": anchor.ref_start,
        "end": anchor.ref_end,
    }


def is_pending(anchor: GoldAnchor) -> bool:
    """True while the quoted file is not in the workspace yet."""
    return anchor.document_id is None


def anchor_data(anchor: GoldAnchor) -> dict:
    """An anchor with where it was highlighted and its resolution in each parse."""
    return {
        "id": str(anchor.public_id),
        "source_id": _text(anchor.source_id),
        "quote": _text(anchor.quote),
        "grade": _int(anchor.grade),
        "page_hint": _int(anchor.page_hint),
        "occurrence": _int(anchor.occurrence),
        "highlight": highlight(anchor),
        "prefix": _text(anchor.prefix),
        "suffix": _text(anchor.suffix),
        "pending": is_pending(anchor),
        "resolutions": [resolution_data(r) for r in anchor.prefetched_resolutions],
        "suggested": anchor.suggested or None,
        # Who made it: on an overlapped item each annotator's version is told apart by it.
        "created_by": _username(anchor.created_by) if anchor.created_by_id else None,
        "created_at": iso_time(anchor.created_at),
    }


def item_data(item: EvalItem) -> dict:
    """An item with its anchors, as the editor and the item API show it."""
    anchors = item.prefetched_anchors
    return {
        "id": _text(item.item_id),
        "question": _text(item.question),
        "qtype": _text(item.qtype),
        "answer": _text(item.answer),
        "meta": item.meta,
        "state": _text(item.state),
        "author": _username(item.author),
        "assignee": _username(item.assignee),
        "row_version": _int(item.row_version),
        "is_answerable": bool(anchors),
        "is_portable": bool(anchors),
        # Per parse version seen: how many of this item's anchors it found.
        "portability": item_portability(item),
        "anchors": [anchor_data(a) for a in anchors],
        "created_at": iso_time(item.created_at),
        "updated_at": iso_time(item.updated_at),
    }


def release_file_url(file: ReleaseFile) -> str:
    release = file.release
    return reverse(
        "release-file",
        kwargs={
            "ws": release.evalset.workspace.slug,
            "set_slug": release.evalset.slug,
            "version": release.version,
            "fmt": file.format,
        },
    )


def release_url(release: Release) -> str:
    evalset = release.evalset
    return reverse(
        "release-detail",
        kwargs={"ws": evalset.workspace.slug, "set_slug": evalset.slug, "version": release.version},
    )


def release_file_data(file: ReleaseFile) -> dict:
    """One format's file of a release, with the URL that downloads it."""
    return {
        "format": _text(file.format),
        "filename": _text(file.filename),
        "media_type": _text(file.media_type),
        "size": _int(file.size),
        "sha256": _text(file.sha256),
        "rows": _int(file.rows),
        "notes": file.notes,
        "counts": file.counts,
        "url": release_file_url(file),
    }


def release_data(release: Release) -> dict:
    """A release: how far its build is, what it holds, its files and its URL."""
    return {
        "evalset": _text(release.evalset.slug),
        "version": _int(release.version),
        "status": _text(release.status),
        "percent": _int(release.percent),
        "progress_done": _int(release.progress_done),
        "progress_total": _int(release.progress_total),
        "created_by": _username(release.created_by),
        "created_at": iso_time(release.created_at),
        "frozen_at": iso_time(release.frozen_at),
        "finished_at": iso_time(release.finished_at),
        "resolver_version": _text(release.resolver_version),
        "include_states": release.include_states,
        "includes_unapproved": bool(release.includes_unapproved),
        "formats": release.formats,
        "gold_parser": _text(release.gold_parser),
        "gold_parsers": release.gold_parsers or {},
        "parses_used": release.parses_used,
        "item_count": _int(release.item_count),
        "notes": release.notes,
        "error": _text(release.error),
        "files": [release_file_data(f) for f in release.files.all()],
        "url": release_url(release),
    }
