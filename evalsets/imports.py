"""Imports: any registered format back into a new or existing eval set, previewed first.

``import_plan`` reads the file with its format's reader and compares every item with what
the set holds (matched by id, field by field), without writing anything: the preview. It
says what would be created, updated, left unchanged or refused (with file, line, item and
field) and which labels wait for a file that is not in the workspace yet. ``import_commit``
makes the same plan again with the set's row locked and writes it in one transaction, or
nothing at all; importing the same file again finds every item unchanged and writes nothing.

Anchors are added, never removed: a file that carries one anchor per row (CSV) must not
delete evidence an annotator added. A label whose file is missing stays pending: a complete
anchor (a quote) is stored with no document and attaches when the file is uploaded; an
offset-pinned span (LegalBench-RAG) is kept as a ``PendingImportLabel`` until the file's
reference parse is ready, then its quote is taken from that text.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import contextgrid as cg
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction

from evalsets import services, validation
from evalsets.archive import ArchiveTooLarge
from evalsets.errors import Conflict, GroundworkError, InvalidInput
from evalsets.formats import FORMATS, ImportResult, PendingLabel, Problem, guess_format
from evalsets.models import (
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ImportRecord,
    ItemState,
    ParseStatus,
    PendingImportLabel,
    PendingLabelStatus,
    Workspace,
)
from evalsets.releases import ParseTexts

log = logging.getLogger(__name__)

SCALAR_FIELDS = ("question", "qtype", "answer", "meta")
PROBLEMS_SHOWN = 200


def _anchor_key(source_id: str, quote: str, grade: int, page_hint, occurrence: int) -> tuple:
    return (source_id, quote, int(grade), page_hint, int(occurrence))


def _cg_anchor_key(anchor: cg.GoldAnchor) -> tuple:
    return _anchor_key(
        anchor.source_id, anchor.quote, anchor.grade, anchor.page_hint, anchor.occurrence
    )


def _plain(value: Any) -> Any:
    """``value`` as it comes back from a JSON column (tuples become lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


@dataclass
class PlannedItem:
    item_id: str
    action: str  # create / update / unchanged
    fields: dict[str, Any]
    changed: list[str] = field(default_factory=list)
    new_anchors: list[cg.GoldAnchor] = field(default_factory=list)
    new_spans: list[tuple[str, int, int, int, int | None]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "question": self.fields["question"],
            "changed": self.changed,
            "anchors_added": [a.to_dict() for a in self.new_anchors],
            "pending_spans_added": len(self.new_spans),
        }


@dataclass
class ImportPlan:
    format: str
    filename: str
    evalset: str
    new_set: bool
    token: str
    result: ImportResult
    items: list[PlannedItem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if not p.is_error]

    def of(self, action: str) -> list[PlannedItem]:
        return [p for p in self.items if p.action == action]

    def counts(self) -> dict[str, int]:
        return {
            "create": len(self.of("create")),
            "update": len(self.of("update")),
            "unchanged": len(self.of("unchanged")),
            "refused": len(self.errors),
            "warnings": len(self.warnings),
            "pending": len(self.pending),
        }

    def problem_dicts(self, problems: list[Problem]) -> list[dict[str, Any]]:
        return [
            {
                "line": p.line,
                "item": p.item,
                "field": p.field,
                "message": p.message,
                "hint": p.hint,
                "severity": p.severity,
                "text": p.describe(self.filename),
            }
            for p in problems[:PROBLEMS_SHOWN]
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "filename": self.filename,
            "evalset": self.evalset,
            "new_set": self.new_set,
            "token": self.token,
            "can_commit": not self.errors,
            "counts": self.counts(),
            "create": [p.to_dict() for p in self.of("create")],
            "update": [p.to_dict() for p in self.of("update")],
            "unchanged": [p.item_id for p in self.of("unchanged")],
            "refused": self.problem_dicts(self.errors),
            "warnings": self.problem_dicts(self.warnings),
            "pending": self.pending,
        }


# -- reading -----------------------------------------------------------------------------------


def reference_texts(workspace: Workspace) -> ParseTexts:
    """``source_id -> text`` of every document whose reference parse is ready."""
    rows = Document.objects.filter(
        workspace=workspace, parses__is_reference=True, parses__status=ParseStatus.READY
    ).values_list("source_id", "parses__pk")
    return ParseTexts(dict(rows))


def choose_format(fmt: str | None, data: bytes, filename: str) -> str:
    fmt = (fmt or "").strip()
    readable = [slug for slug, f in FORMATS.items() if f.reader is not None]
    if not fmt:
        fmt = guess_format(data, filename) or ""
        if not fmt:
            raise InvalidInput(
                f"cannot tell which format {filename!r} is; choose one of {', '.join(readable)}",
                field="format",
            )
    if fmt not in readable:
        raise InvalidInput(
            f"cannot import format {fmt!r}; choose one of {', '.join(readable)}", field="format"
        )
    return fmt


def _read(fmt: str, data: bytes, filename: str, workspace, evalset_id: str) -> ImportResult:
    texts = reference_texts(workspace) if FORMATS[fmt].needs_documents else None
    try:
        return FORMATS[fmt].reader(data, filename=filename, documents=texts, evalset_id=evalset_id)
    except ArchiveTooLarge:
        raise  # the one refusal a reader lets through: the whole file is refused
    except Exception as exc:  # readers never raise on bad input; if one does, say so, no 500
        log.exception("the %s reader raised on %s", fmt, filename)
        result = ImportResult(format=fmt, filename=filename)
        result.add(
            f"{filename} could not be read as {FORMATS[fmt].label}: {exc}",
            hint="Check that the format chosen matches the file.",
        )
        return result


def _check_upload(data: bytes, filename: str) -> None:
    limit = settings.GROUNDWORK_MAX_UPLOAD_BYTES
    if len(data) > limit:
        raise InvalidInput(
            f"{filename!r} is {len(data) / 2**20:.1f} MB; the limit is {limit / 2**20:.1f} MB",
            field="file",
        )


# -- planning ----------------------------------------------------------------------------------


def set_fingerprint(evalset: EvalSet | None) -> str:
    """Changes whenever an item or pending label in the set is written: the preview token."""
    if evalset is None:
        return "new"
    digest = hashlib.sha256()
    rows = EvalItem.objects.filter(evalset=evalset).order_by("item_id")
    for item_id, row_version in rows.values_list("item_id", "row_version").iterator():
        digest.update(f"{item_id}\x00{row_version}\x01".encode())
    pending = PendingImportLabel.objects.filter(item__evalset=evalset).count()
    digest.update(f"pending:{pending}".encode())
    return digest.hexdigest()[:32]


def _check_item(item: cg.EvalItem, problems: list[Problem], line: int | None) -> str | None:
    """The item's id when Groundwork can hold it; otherwise a located problem and ``None``."""
    try:
        item_id = validation.check_item_id(item.id)
        validation.check_question(item_id, item.question)
        if item.qtype is not None and len(item.qtype) > 64:
            raise InvalidInput("qtype must be at most 64 characters", field="qtype")
        _check_storable_item(item)
        for anchor in item.anchors:
            validation.check_quote(anchor.quote)
            validation.check_grade(anchor.grade)
            validation.check_occurrence(anchor.occurrence)
            validation.check_page_hint(anchor.page_hint)
            if len(anchor.source_id) > 255:
                raise InvalidInput("source_id must be at most 255 characters", field="source_id")
    except InvalidInput as exc:
        problems.append(
            Problem(line, item.id, exc.field, exc.message, "error", "This item was not imported.")
        )
        return None
    return item_id


def _check_storable_item(item: cg.EvalItem) -> None:
    """Every text, JSON and integer an item carries fits the columns it will be written to."""
    for name in ("id", "question", "qtype", "answer"):
        value = getattr(item, name)
        if value is not None:
            validation.check_storable(str(value), name)
    validation.check_storable_json(item.meta, "meta")
    for anchor in item.anchors:
        _check_storable_anchor(anchor)


def _check_storable_anchor(anchor: cg.GoldAnchor) -> None:
    validation.check_storable(anchor.source_id, "source_id")
    validation.check_storable(anchor.quote, "quote")
    for name in ("grade", "page_hint", "occurrence"):
        value = getattr(anchor, name)
        if value is not None:
            validation.check_storable(value, name, validation.column_range(GoldAnchor, name))


def _check_storable_pending(label: PendingLabel) -> None:
    validation.check_storable(label.item, "id")
    validation.check_storable(label.file_name, "file_name")
    if label.anchor is not None:
        _check_storable_anchor(label.anchor)
    for name, value in (("start", (label.span or (0, 0))[0]), ("end", (label.span or (0, 0))[1])):
        validation.check_storable(value, name, validation.column_range(PendingImportLabel, name))
    validation.check_storable(label.grade, "grade", validation.column_range(GoldAnchor, "grade"))


def _check_storable_header(result: ImportResult) -> None:
    """The set's own id, source, version and meta, as the header (or the format) gives them."""
    header = result.header
    if header is not None:
        validation.check_storable(header.id, "id")
        validation.check_storable(header.source, "source")
        validation.check_storable(
            header.version, "version", validation.column_range(EvalSet, "version")
        )
        validation.check_storable_json(dict(header.meta), "meta")
    else:
        validation.check_storable(result.source, "source")
        validation.check_storable_json(result.meta, "meta")


def _storable_problems(result: ImportResult) -> list[Problem]:
    """Located errors for the set's header and the pending labels no database could hold."""
    problems = []
    try:
        _check_storable_header(result)
    except InvalidInput as exc:
        problems.append(
            Problem(
                1 if result.header else None,
                None,
                exc.field,
                exc.message,
                "error",
                "Fix the eval set's header; nothing was imported.",
            )
        )
    for label in result.pending:
        try:
            _check_storable_pending(label)
        except InvalidInput as exc:
            problems.append(
                Problem(
                    label.line,
                    label.item,
                    exc.field,
                    exc.message,
                    "error",
                    "This label was not imported.",
                )
            )
    return problems


def _fields(item: cg.EvalItem) -> dict[str, Any]:
    return {
        "question": item.question,
        "qtype": item.qtype or None,
        "answer": item.answer,
        "meta": _plain(dict(item.meta)),
    }


def import_plan(
    *,
    workspace: Workspace,
    evalset: EvalSet | None,
    evalset_id: str,
    data: bytes,
    filename: str,
    fmt: str | None = None,
) -> ImportPlan:
    """What importing ``data`` would do, without writing anything."""
    _check_upload(data, filename)
    try:
        fmt = choose_format(fmt, data, filename)
        result = _read(fmt, data, filename, workspace, evalset_id)
    except ArchiveTooLarge as exc:
        raise InvalidInput(
            f"{exc.message}; it was refused, nothing was imported", field="file"
        ) from None
    plan = ImportPlan(
        format=fmt,
        filename=filename,
        evalset=evalset_id,
        new_set=evalset is None,
        token=set_fingerprint(evalset),
        result=result,
        problems=list(result.problems),
    )
    plan.problems.extend(_storable_problems(result))

    existing: dict[str, EvalItem] = {}
    anchor_keys: dict[int, set[tuple]] = {}
    span_keys: dict[int, set[tuple]] = {}
    if evalset is not None:
        existing = {i.item_id: i for i in EvalItem.objects.filter(evalset=evalset)}
        for row in GoldAnchor.objects.filter(item__evalset=evalset).values_list(
            "item_id", "source_id", "quote", "grade", "page_hint", "occurrence"
        ):
            anchor_keys.setdefault(row[0], set()).add(_anchor_key(*row[1:]))
        for row in PendingImportLabel.objects.filter(item__evalset=evalset).values_list(
            "item_id", "source_id", "start", "end"
        ):
            span_keys.setdefault(row[0], set()).add(tuple(row[1:]))
    documents = set(
        Document.objects.filter(workspace=workspace).values_list("source_id", flat=True)
    )

    pending_anchors: dict[str, list[cg.GoldAnchor]] = {}
    pending_spans: dict[str, list[tuple[str, int, int, int, int | None]]] = {}
    for label in result.pending:
        if label.anchor is not None:
            pending_anchors.setdefault(label.item, []).append(label.anchor)
        elif label.span is not None:
            pending_spans.setdefault(label.item, []).append(
                (label.file_name, label.span[0], label.span[1], label.grade, label.line)
            )
        plan.pending.append(
            {
                "item": label.item,
                "file_name": label.file_name,
                "line": label.line,
                "would_create": label.would_create,
                "reason": "not uploaded yet"
                if label.file_name not in documents
                else "uploaded, but its reference parse is not ready yet",
            }
        )

    with_gold = 0
    for item in result.items:
        item_id = _check_item(item, plan.problems, result.lines.get(item.id))
        if item_id is None:
            continue
        if item.gold:
            with_gold += 1
        anchors = list(item.anchors)
        for anchor in pending_anchors.get(item.id, []):
            if anchor not in anchors:
                anchors.append(anchor)
        for anchor in item.anchors:
            if anchor.source_id not in documents:
                plan.pending.append(
                    {
                        "item": item_id,
                        "file_name": anchor.source_id,
                        "line": None,
                        "would_create": f"anchor on {anchor.source_id!r} quoting "
                        f"{anchor.quote[:80]!r}",
                        "reason": "not uploaded yet",
                    }
                )
        fields = _fields(item)
        current = existing.get(item_id)
        if current is None:
            keys: set[tuple] = set()
            spans: set[tuple] = set()
            action, changed = "create", []
        else:
            keys = anchor_keys.get(current.pk, set())
            spans = span_keys.get(current.pk, set())
            changed = [
                name for name in SCALAR_FIELDS if _plain(getattr(current, name)) != fields[name]
            ]
        new_anchors = []
        for anchor in anchors:
            key = _cg_anchor_key(anchor)
            if key not in keys:
                keys = keys | {key}
                new_anchors.append(anchor)
        new_spans = []
        for span in pending_spans.get(item.id, []):
            if span[:3] not in spans:
                spans = spans | {span[:3]}
                new_spans.append(span)
        if current is not None:
            action = "update" if changed or new_anchors or new_spans else "unchanged"
            if action == "update" and current.state == ItemState.APPROVED:
                what = changed + (["anchors"] if new_anchors or new_spans else [])
                plan.problems.append(
                    Problem(
                        None,
                        item_id,
                        "state",
                        f"eval item {item_id!r} is approved, and this file changes it "
                        f"({', '.join(what)})",
                        "error",
                        "An owner must reopen it first, or leave it out of the file.",
                    )
                )
                continue
        plan.items.append(PlannedItem(item_id, action, fields, changed, new_anchors, new_spans))

    if with_gold:
        noun = "item carries" if with_gold == 1 else "items carry"
        plan.problems.append(
            Problem(
                None,
                None,
                "gold",
                f"{with_gold} {noun} gold spans (offsets into one parse); Groundwork keeps "
                "the anchors and resolves them in every parse, so the spans were not imported.",
                "warning",
                "Items with spans but no anchors arrive without evidence.",
            )
        )
    return plan


# -- committing ---------------------------------------------------------------------------------


def _lock(evalset: EvalSet) -> EvalSet:
    nowait = connection.features.has_select_for_update_nowait
    try:
        return EvalSet.objects.select_for_update(nowait=nowait).get(pk=evalset.pk)
    except OperationalError:
        raise Conflict(
            f"another import into {evalset.slug!r} is being written right now; "
            "preview again when it has finished",
            field="evalset",
        ) from None
    except EvalSet.DoesNotExist:
        raise Conflict(f"eval set {evalset.slug!r} was deleted", field="evalset") from None


def _refuse(plan: ImportPlan) -> None:
    errors = plan.errors
    first = errors[0].describe(plan.filename)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    raise InvalidInput(
        f"{plan.filename} has {len(errors)} error(s), so nothing was imported: {first}{more}",
        field="file",
        extra={"problems": plan.problem_dicts(errors), "counts": plan.counts()},
    )


def import_commit(
    *,
    workspace: Workspace,
    user,
    evalset: EvalSet | None,
    evalset_id: str,
    data: bytes,
    filename: str,
    fmt: str | None = None,
    token: str | None = None,
    name: str = "",
) -> tuple[EvalSet, ImportPlan, ImportRecord]:
    """Write the plan for ``data`` in one transaction; refuse it all if anything is wrong.

    ``token`` is the preview's; when the set changed since that preview (another import, an
    edit), the commit is refused with 409 and the caller previews again.
    """
    try:
        with transaction.atomic():
            if evalset is None:
                plan = import_plan(
                    workspace=workspace,
                    evalset=None,
                    evalset_id=evalset_id,
                    data=data,
                    filename=filename,
                    fmt=fmt,
                )
                if plan.errors:
                    _refuse(plan)
                evalset = _create_set(workspace, user, evalset_id, name, plan)
            else:
                evalset = _lock(evalset)
                plan = import_plan(
                    workspace=workspace,
                    evalset=evalset,
                    evalset_id=evalset.slug,
                    data=data,
                    filename=filename,
                    fmt=fmt,
                )
                if token and token != plan.token:
                    raise Conflict(
                        f"eval set {evalset.slug!r} changed since the preview (another import "
                        "or an edit was saved); preview the file again before importing it",
                        field="token",
                        extra={"token": plan.token},
                    )
                if plan.errors:
                    _refuse(plan)
            _apply(plan, evalset, user)
            record = ImportRecord.objects.create(
                evalset=evalset,
                created_by=user,
                filename=filename[:255],
                format=plan.format,
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                counts=plan.counts(),
                warnings=[p.describe(filename) for p in plan.warnings[:PROBLEMS_SHOWN]],
            )
    except IntegrityError:
        raise Conflict(
            f"eval set {evalset_id!r} was written by someone else at the same moment; "
            "preview again and retry",
            field="evalset",
        ) from None
    return evalset, plan, record


def _create_set(workspace, user, slug: str, name: str, plan: ImportPlan) -> EvalSet:
    from django.core.validators import validate_slug

    try:
        validate_slug(slug)
    except Exception:
        raise InvalidInput(
            f"{slug!r} is not a valid eval-set id: use letters, digits, '-' and '_'",
            field="evalset",
        ) from None
    result = plan.result
    header = result.header
    evalset = services.evalset_create(
        workspace=workspace,
        user=user,
        slug=slug,
        name=name,
        meta=_plain(dict(header.meta)) if header else _plain(result.meta),
    )
    evalset.source = (header.source if header else result.source)[:100]
    evalset.version = max(1, header.version if header else 1)
    evalset.save(update_fields=["source", "version"])
    return evalset


def _apply(plan: ImportPlan, evalset: EvalSet, user) -> None:
    current = {i.item_id: i for i in EvalItem.objects.filter(evalset=evalset)}
    for planned in plan.items:
        if planned.action == "unchanged":
            continue
        try:
            _apply_item(planned, current.get(planned.item_id), evalset, user)
        except GroundworkError as exc:
            raise type(exc)(
                f"eval item {planned.item_id!r}: {exc.message}; nothing was imported",
                field=exc.field,
                extra=exc.extra,
            ) from None
    documents = {source_id for planned in plan.items for source_id, *_ in planned.new_spans}
    # A span whose file is here and parsed was read as an anchor; one whose file is here
    # but still parsing waits for the parse: try now, and the parse hook tries again.
    for document in Document.objects.filter(workspace=evalset.workspace, source_id__in=documents):
        transaction.on_commit(lambda pk=document.pk: _queue_attach(pk))


def _apply_item(planned: PlannedItem, item: EvalItem | None, evalset: EvalSet, user) -> None:
    fields = planned.fields
    if item is None:
        item = services.item_create(
            evalset=evalset,
            user=user,
            item_id=planned.item_id,
            question=fields["question"],
            qtype=fields["qtype"],
            answer=fields["answer"],
            meta=fields["meta"],
        )
    elif planned.changed:
        item = services.item_update(
            item=item,
            user=user,
            row_version=item.row_version,
            **{name: fields[name] for name in planned.changed},
        )
    for anchor in planned.new_anchors:
        services.anchor_create_typed(
            item=item,
            user=user,
            source_id=anchor.source_id,
            quote=anchor.quote,
            grade=anchor.grade,
            page_hint=anchor.page_hint,
            occurrence=anchor.occurrence,
            allow_pending=True,
        )
    for source_id, start, end, grade, line in planned.new_spans:
        PendingImportLabel.objects.create(
            workspace=evalset.workspace,
            item=item,
            source_id=source_id,
            start=start,
            end=end,
            grade=grade,
            line=line,
            imported_by=user,
        )
    if planned.new_spans:
        services.item_touch(item=item)


def _queue_attach(document_id: int) -> None:
    from evalsets.release_tasks import attach_pending_labels

    attach_pending_labels.delay(document_id)


# -- pending labels -------------------------------------------------------------------------


def reference_parse_running(document: Document) -> bool:
    return document.parses.filter(
        is_reference=True, status__in=[ParseStatus.QUEUED, ParseStatus.PARSING]
    ).exists()


def pending_labels_attach(*, document: Document) -> int | None:
    """Turn waiting imported spans on ``document`` into anchors quoting its reference text.

    Returns how many were attached, or ``None`` when the reference parse is not ready yet
    (nothing done). Idempotent: attached and failed labels are not touched again. A span
    that does not fit the text is marked failed with the reason, never dropped silently.
    Call it when a document's reference parse becomes ready.
    """
    waiting = PendingImportLabel.objects.filter(
        workspace=document.workspace_id,
        source_id=document.source_id,
        status=PendingLabelStatus.WAITING,
    )
    if not waiting.exists():
        return 0
    parse = document.parses.filter(is_reference=True, status=ParseStatus.READY).first()
    if parse is None:
        return None
    attached = 0
    with transaction.atomic():
        labels = waiting.select_for_update().select_related("item__evalset__workspace")
        for label in labels:
            from evalsets.formats import PendingLabel

            pending = PendingLabel(
                line=label.line,
                item=label.item.item_id,
                file_name=label.source_id,
                would_create="",
                span=(label.start, label.end),
                grade=label.grade,
            )
            try:
                anchor = pending.attach(parse.text)
                created = services.anchor_create_typed(
                    item=label.item,
                    user=label.imported_by,
                    source_id=label.source_id,
                    quote=anchor.quote,
                    grade=anchor.grade,
                    occurrence=anchor.occurrence,
                )
            except (cg.EvalSetError, GroundworkError) as exc:
                label.status = PendingLabelStatus.FAILED
                label.message = str(exc)
                label.save(update_fields=["status", "message", "updated_at"])
                continue
            label.status = PendingLabelStatus.ATTACHED
            label.anchor = created
            label.message = ""
            label.save(update_fields=["status", "anchor", "message", "updated_at"])
            attached += 1
    return attached


def pending_for(evalset: EvalSet) -> list[dict[str, Any]]:
    """The set's imported labels still waiting (or failed), for pages and the API."""
    rows = PendingImportLabel.objects.filter(item__evalset=evalset).exclude(
        status=PendingLabelStatus.ATTACHED
    )
    return [
        {
            "item": label.item.item_id,
            "file_name": label.source_id,
            "span": [label.start, label.end],
            "status": label.status,
            "message": label.message,
        }
        for label in rows.select_related("item")
    ]
