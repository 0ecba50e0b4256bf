"""Writes to eval sets, items and anchors, and confirming a resolution. Anchors are
resolved in every parse in the background (``evalsets.anchoring.resolution``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from evalsets import access, idempotency, queue, validation, written
from evalsets.anchoring import resolution
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import (
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemState,
    Membership,
    ParseStatus,
    ParseVersion,
    ReleaseFile,
    ResolutionStatus,
    Workspace,
)
from evalsets.pure import guidelines as guidelines_rules
from evalsets.pure import resolver
from evalsets.review import audit, workflow
from evalsets.review import selectors as review_selectors

ITEM_EDITABLE_FIELDS = ("question", "qtype", "answer", "meta", "assignee")


def workspace_resolve_all(*, workspace: Workspace) -> int:
    """Queue re-resolution of every ready parse (after a resolver upgrade)."""
    count = ParseVersion.objects.filter(
        document__workspace=workspace, status=ParseStatus.READY
    ).count()
    queue.after_commit("resolve_workspace", workspace.pk)
    return count


# -- eval sets and items --------------------------------------------------------------------


@transaction.atomic
def evalset_create(
    *, workspace: Workspace, user, slug: str, name: str = "", meta: dict | None = None
) -> EvalSet:
    if EvalSet.objects.filter(workspace=workspace, slug=slug).exists():
        raise Conflict(
            f"an eval set called {slug!r} already exists in {workspace.slug!r}", field="id"
        )
    return EvalSet.objects.create(
        workspace=workspace, slug=slug, name=name or slug, meta=meta or {}, created_by=user
    )


@transaction.atomic
def evalset_update(
    *,
    evalset: EvalSet,
    name: str | None = None,
    meta: dict | None = None,
    guidelines: str | None = None,
    qtypes: list[str] | None = None,
) -> EvalSet:
    if qtypes is not None:
        qtypes, problem = guidelines_rules.clean_qtypes(qtypes)
        if problem:
            raise InvalidInput(problem, field="qtypes")
        evalset.qtypes = qtypes
    if name is not None:
        evalset.name = name
    if meta is not None:
        evalset.meta = meta
    if guidelines is not None:
        evalset.guidelines = guidelines
    evalset.save()
    return evalset


#: The question type "Mark as unanswerable" sets: allowed whatever the set's list says.
UNANSWERABLE = "unanswerable"


def check_qtype(evalset: EvalSet, qtype: str | None) -> None:
    """A set with a list of question types takes only those (or none, or unanswerable)."""
    if not qtype or not evalset.qtypes or qtype in evalset.qtypes or qtype == UNANSWERABLE:
        return
    allowed = ", ".join(repr(q) for q in evalset.qtypes)
    raise InvalidInput(
        f"question type {qtype[:64]!r} is not one of this set's types: {allowed}", field="qtype"
    )


@transaction.atomic
def evalset_delete(*, evalset: EvalSet) -> None:
    """Delete a set with its items, anchors and releases. The release files leave storage
    once the deletion has committed: exports of confidential documents must not linger."""
    files = [row.file for row in ReleaseFile.objects.filter(release__evalset=evalset)]
    evalset.delete()
    for file in files:
        transaction.on_commit(partial(file.storage.delete, file.name))


def _check_assignee(evalset: EvalSet, assignee, user) -> None:
    """Only whoever may assign work (``access.ASSIGN``) sets an assignee, and only a member."""
    access.check_user(
        user=user,
        workspace=evalset.workspace,
        needed=access.ASSIGN,
        what="setting assignee",
        field="assignee",
    )
    if (
        assignee is not None
        and not Membership.objects.filter(workspace=evalset.workspace_id, user=assignee).exists()
    ):
        raise InvalidInput(
            f"{assignee.username!r} is not a member of {evalset.workspace.slug!r}",
            field="assignee",
        )


@transaction.atomic
def item_create(
    *,
    evalset: EvalSet,
    user,
    item_id: str,
    question: str,
    qtype: str | None = None,
    answer: str | None = None,
    meta: dict | None = None,
    assignee=None,
) -> EvalItem:
    item_id = validation.check_item_id(item_id)
    question = validation.check_question(item_id, question)
    check_qtype(evalset, qtype)
    if assignee is not None:
        _check_assignee(evalset, assignee, user)
    if EvalItem.objects.filter(evalset=evalset, item_id=item_id).exists():
        raise Conflict(validation.duplicate_item_message(item_id, evalset.slug), field="id")
    item = EvalItem.objects.create(
        evalset=evalset,
        item_id=item_id,
        question=question,
        qtype=qtype or None,
        answer=answer,
        meta=meta or {},
        author=user,
        assignee=assignee,
    )
    audit.record_item_created(item=item, user=user)
    idempotency.record("item", item.pk)
    return item


def item_update(*, item: EvalItem, user, row_version: int, **changes: Any) -> EvalItem:
    """Apply ``changes`` if nobody wrote the item since ``row_version`` was read; else 409."""
    unknown = set(changes) - set(ITEM_EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"cannot change {', '.join(sorted(unknown))} here")
    if "question" in changes:
        validation.check_question(item.item_id, changes["question"])
    if "assignee" in changes and getattr(changes["assignee"], "pk", None) != item.assignee_id:
        _check_assignee(item.evalset, changes["assignee"], user)
    if "qtype" in changes:
        changes["qtype"] = changes["qtype"] or None
        # A type given before the set had its list stays while nobody changes it.
        if changes["qtype"] != item.qtype:
            check_qtype(item.evalset, changes["qtype"])
    if _unchanged(item, changes):
        return item  # nothing to write: no new row version, no history entry
    before = audit.snapshot(item, changes)
    with transaction.atomic():
        workflow.check_editable(item)
        updated = EvalItem.objects.filter(pk=item.pk, row_version=row_version).update(
            row_version=F("row_version") + 1, **changes
        )
        if updated == 0:
            _raise_stale(item, row_version)
        item.refresh_from_db()
        audit.record_item_edited(item=item, user=user, before=before, fields=changes)
    return item


def _unchanged(item: EvalItem, changes: dict[str, Any]) -> bool:
    """True when every value sent is the item's own already: a save of an untouched form."""
    for name, value in changes.items():
        if name == "assignee":
            if getattr(value, "pk", value) != item.assignee_id:
                return False
        elif getattr(item, name) != value:
            return False
    return True


def _raise_stale(item: EvalItem, row_version: int) -> None:
    current = EvalItem.objects.filter(pk=item.pk).first()
    if current is None:
        raise Conflict(f"eval item {item.item_id!r} was deleted by someone else")
    changed = [
        name
        for name in ("question", "qtype", "answer", "meta", "assignee_id", "state")
        if getattr(current, name) != getattr(item, name)
    ]
    raise Conflict(
        f"eval item {item.item_id!r} changed since you read it (you sent row_version "
        f"{row_version}, it is now {current.row_version}); reload it and apply your edit again",
        field="row_version",
        extra={
            "current_row_version": current.row_version,
            "changed": changed,
            # Who did what since (the editor's conflict view names them).
            "changes": review_selectors.changes_since(current, row_version),
        },
    )


def item_touch(*, item: EvalItem) -> None:
    """Bump the row version: an anchor changed, so a reviewer's view of the item is stale."""
    EvalItem.objects.filter(pk=item.pk).update(row_version=F("row_version") + 1)


@transaction.atomic
def item_delete(*, item: EvalItem, user=None) -> None:
    """Delete an item (and its anchors); an approved one must be reopened first, as for edits."""
    workflow.check_editable(item, "deleted")
    audit.record_item_deleted(item=item, user=user)
    item.delete()


# -- anchors ---------------------------------------------------------------------------------


#: The texts this process made highlights in most recently. Annotators highlight in
#: the same few documents over and over, and asking the database for a slice of a long text
#: costs it the whole text each time (SQLite reads and decodes all 2 MB of a 1,000-page
#: parse to cut 100 characters: 2-10 ms of the anchor-create request). Keyed like the
#: resolver's (id, length, last update), so a parse written again is read again.
highlight_texts = resolution.PreparedCache(
    budget="GROUNDWORK_HIGHLIGHT_CACHE_CHARS", size=len, unit=1
)


def _parse_text(parse: ParseVersion) -> str:
    """The parse's whole text, from this process's copy when it has one."""
    if "text" not in parse.get_deferred_fields():
        return parse.text
    text = highlight_texts.get(parse)
    if text is None:
        text = ParseVersion.objects.filter(pk=parse.pk).values_list("text", flat=True).get()
        highlight_texts.put(parse, text)
    return text


def _without_spaces_around(text: str, start: int, end: int, offset: int = 0) -> tuple[int, int]:
    """The selection ``start``..``end`` with the whitespace at its ends left out: a stray
    space is not evidence. ``text`` is the parse's text from ``offset`` on."""
    while start < end and text[start - offset].isspace():
        start += 1
    while end > start and text[end - 1 - offset].isspace():
        end -= 1
    return start, end


def _highlighted(parse: ParseVersion, start: int, end: int) -> dict:
    """What a selection in a parse quotes, with where and its context (read only)."""
    deferred = "text" in parse.get_deferred_fields()
    length = parse.text_length if deferred else len(parse.text)
    validation.check_span(start, end, length)
    # Only the part that matters: from the highlight's page (or its prefix, if that reaches
    # further back) to just past its end. Trimming below only moves start forward.
    offset = max(0, min(parse.page_begin(start), start - resolver.CONTEXT_CHARS))
    text = _parse_text(parse)[offset : min(length, end + resolver.CONTEXT_CHARS)]
    start, end = _without_spaces_around(text, start, end, offset)
    quote = validation.check_quote(text[start - offset : end - offset])
    return {
        "quote": quote,
        "page_hint": parse.page_of(start),
        "occurrence": resolver.occurrence_at(
            text, quote, start - offset, begin=parse.page_begin(start) - offset
        ),
        "ref_start": start,
        "ref_end": end,
        "prefix": text[max(0, start - resolver.CONTEXT_CHARS) - offset : start - offset],
        "suffix": text[end - offset : end + resolver.CONTEXT_CHARS - offset],
    }


def highlight_of(*, parse: ParseVersion, start: int, end: int) -> dict:
    """What a highlight of ``[start, end)`` in ``parse`` stores (quote, page, occurrence on
    that page, offsets, context), without writing: an import shows it in its preview and
    then writes the same with ``anchor_create_from_highlight``."""
    return _highlighted(parse, start, end)


def _in_reference(document: Document, highlighted: dict) -> tuple[ParseVersion, dict] | None:
    """A highlight in another parse as the reference parse has it, when the resolver places
    it there exactly or normalised; None when it cannot tell."""
    reference = (
        ParseVersion.objects.filter(document=document, is_reference=True, status=ParseStatus.READY)
        .defer("text")
        .first()
    )
    if reference is None:
        return None
    found = resolution.prepared(reference).resolve(
        highlighted["quote"],
        occurrence=highlighted["occurrence"],
        page_hint=highlighted["page_hint"],
        prefix=highlighted["prefix"],
        suffix=highlighted["suffix"],
    )
    if found.status not in (resolver.EXACT, resolver.NORMALISED) or found.span is None:
        return None
    try:
        return reference, _highlighted(reference, found.start, found.end)
    except InvalidInput:
        return None


def _suggested(suggested: dict | None, parse: ParseVersion, highlighted: dict) -> dict | None:
    """What the anchor records of the suggested passage it started from: refused unless the
    passage is in the highlighted parse and the highlight overlaps it (a person trims a
    suggestion; a highlight elsewhere was not made from it)."""
    if not suggested:
        return None
    if str(suggested["parse"]) != str(parse.public_id):
        raise InvalidInput(
            "the suggested passage is in another parse than the highlight", field="suggested"
        )
    if not (
        suggested["start"] < highlighted["ref_end"] and highlighted["ref_start"] < suggested["end"]
    ):
        raise InvalidInput(
            "the highlight does not overlap the suggested passage; save it without "
            "'suggested', or select inside the passage",
            field="suggested",
        )
    return {
        "parse": str(parse.public_id),
        "start": suggested["start"],
        "end": suggested["end"],
        "page": parse.page_of(suggested["start"]),
        "via": suggested.get("via") or "suggestions",
        "rank": suggested.get("rank"),
    }


def anchor_create_from_highlight(
    *,
    item: EvalItem,
    user,
    parse: ParseVersion,
    start: int,
    end: int,
    grade: int = 2,
    suggested: dict | None = None,
) -> GoldAnchor:
    """Turn a selection in a parse into an anchor: the server takes the quote and context.

    The quote and its context are read before the write transaction opens, so that holds
    only the writes: on SQLite it holds the database's one write lock.

    A selection made in another parse than the reference (the PDF view reads the pdfium
    parse) is placed in the reference by the resolver; when it lands there exactly or
    normalised, the anchor is written as if selected there (the reference's quote, page,
    occurrence and context), so it is the anchor the text view would have made. Otherwise it
    keeps the selected parse's words, and the workers resolve them like any quote.
    """
    if parse.document.workspace_id != item.evalset.workspace_id:
        raise InvalidInput("that parse is not in this workspace", field="parse")
    if parse.status != ParseStatus.READY:
        raise Conflict(f"that parse is {parse.status}, not ready; wait for it", field="parse")
    validation.check_grade(grade)
    highlighted = _highlighted(parse, start, end)
    provenance = _suggested(suggested, parse, highlighted)
    highlighted_in = parse
    if not parse.is_reference:
        placed = _in_reference(parse.document, highlighted)
        if placed is not None:
            highlighted_in, highlighted = placed
    with transaction.atomic():
        # locks the item's row (an approval waits for us) and bumps its version
        version = _touch_editable(item)
        anchor = GoldAnchor(
            item=item,
            source_id=parse.document.source_id,
            document=parse.document,
            grade=grade,
            reference_parse=highlighted_in,
            created_by=user,
            suggested=provenance,
            **highlighted,
        )
        written.insert(anchor)
        _anchor_created(anchor, user=user, version=version, touched=True)
    return anchor


def _touch_editable(item: EvalItem) -> int | None:
    """``workflow.check_editable`` and ``item_touch`` in one statement, for the anchor create
    every annotator makes many times a minute: the row is locked and its version bumped by
    the UPDATE, whose RETURNING says whether the item was approved (then the 409 rolls the
    bump back with the caller's transaction). The version before the bump, as
    ``check_editable`` returns it (None when the row is gone)."""
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {q(EvalItem._meta.db_table)} SET {q('row_version')} = {q('row_version')} + 1"
            f" WHERE {q('id')} = %s RETURNING {q('state')}, {q('row_version')}",
            [item.pk],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    state, version = row
    if state == ItemState.APPROVED:
        raise Conflict(workflow.locked_message(item.item_id), field="state", extra={"state": state})
    return version - 1


@transaction.atomic
def anchor_create_typed(
    *,
    item: EvalItem,
    user,
    source_id: str,
    quote: str,
    grade: int = 2,
    page_hint: int | None = None,
    occurrence: int = 0,
    allow_pending: bool = False,
    prefix: str = "",
    suffix: str = "",
) -> GoldAnchor:
    """An anchor typed in (or imported): a quote and the file it comes from, with the text
    around it when the caller has it (an undone deletion puts the context back)."""
    version = workflow.check_editable(item)  # locked: its version is ours to bump
    quote = validation.check_quote(quote)
    validation.check_grade(grade)
    validation.check_occurrence(occurrence)
    validation.check_page_hint(page_hint)
    source_id = (source_id or "").strip()
    if not source_id:
        raise InvalidInput("a gold anchor needs the source_id of its document", field="source_id")
    document = Document.objects.filter(
        workspace=item.evalset.workspace_id, source_id=source_id
    ).first()
    if document is None and not allow_pending:
        raise InvalidInput(
            f"no document {source_id!r} in workspace {item.evalset.workspace.slug!r}; "
            "upload it first",
            field="source_id",
        )
    anchor = GoldAnchor.objects.create(
        item=item,
        source_id=source_id,
        document=document,
        quote=quote,
        grade=grade,
        page_hint=page_hint,
        occurrence=occurrence,
        prefix=prefix[-resolver.CONTEXT_CHARS :] if prefix else "",
        suffix=suffix[: resolver.CONTEXT_CHARS],
        created_by=user,
    )
    _anchor_created(anchor, user=user, version=version)
    return anchor


def _anchor_created(
    anchor: GoldAnchor, *, user, version: int | None, touched: bool = False
) -> None:
    """What follows every new anchor, inside its transaction: the item is touched (unless
    ``_touch_editable`` did already), the event recorded with the item's row version
    (``version``, locked by ``check_editable``, plus one), and the anchor queued for
    resolution once this commits (if it names a document)."""
    if not touched:
        item_touch(item=anchor.item)
    audit.record_anchor(
        anchor=anchor,
        kind="anchor_created",
        user=user,
        grade=anchor.grade,
        row_version=None if version is None else version + 1,
        **({"suggested": anchor.suggested} if anchor.suggested else {}),
    )
    resolution.resolution_request(anchor=anchor)
    idempotency.record("anchor", anchor.pk)


@transaction.atomic
def anchor_update_grade(*, anchor: GoldAnchor, grade: int, user=None) -> GoldAnchor:
    """Set the anchor's grade; its current grade changes nothing (no new row version of the
    item, no history entry), so a repeated or retried save is not a change someone made."""
    validation.check_grade(grade)
    workflow.check_editable(anchor.item)
    before = anchor.grade
    if before == grade:
        return anchor
    anchor.grade = grade
    anchor.save(update_fields=["grade"])
    item_touch(item=anchor.item)
    audit.record_anchor(
        anchor=anchor,
        kind="anchor_grade_changed",
        user=user,
        changes={"grade": {"before": before, "after": grade}},
    )
    return anchor


@transaction.atomic
def anchor_delete(*, anchor: GoldAnchor, user=None) -> None:
    item = anchor.item
    workflow.check_editable(item)
    anchor.delete()
    item_touch(item=item)
    audit.record_anchor(anchor=anchor, kind="anchor_deleted", user=user)


@transaction.atomic
def resolution_confirm(
    *,
    anchor: GoldAnchor,
    parse: ParseVersion,
    user,
    start: int | None = None,
    end: int | None = None,
) -> AnchorResolution:
    """Place ``anchor`` in ``parse`` by hand: the ``confirmed`` tier, which a re-run of the
    resolver never overwrites.

    Without ``start``/``end`` it confirms the candidate the resolver offered (a ``not_found``
    whose closest passage kept too little of the quote, or fell just below the fuzzy bar);
    with them it records the span a person selected in that parse (a correction, allowed
    whatever the resolver said). Spaces at either end of the selection are trimmed off.
    """
    workflow.check_editable(anchor.item)
    if parse.document_id is None or parse.document_id != anchor.document_id:
        raise InvalidInput(
            f"that parse is not a parse of {anchor.source_id!r}, the anchor's document",
            field="parse",
        )
    if parse.status != ParseStatus.READY:
        raise Conflict(f"that parse is {parse.status}, not ready; wait for it", field="parse")
    current = (
        AnchorResolution.objects.select_for_update().filter(anchor=anchor, parse=parse).first()
    )
    offered = (current.detail or {}) if current is not None else {}
    corrected = start is not None or end is not None
    if not corrected:
        start, end = offered.get("offered_start"), offered.get("offered_end")
        if start is None or end is None:
            raise Conflict(
                "the resolver offered no candidate in this parse to confirm; select the "
                "passage in the parse and send its start and end instead",
                field="start",
            )
    if start is None or end is None:
        raise InvalidInput("send both start and end, or neither to confirm", field="end")
    text = parse.text
    validation.check_span(start, end, len(text))
    start, end = _without_spaces_around(text, start, end)
    if start == end:
        raise InvalidInput("the selected span holds only spaces; select the passage", field="start")
    how = "corrected by hand" if corrected else "candidate confirmed"
    detail = {
        "reason": "corrected" if corrected else "confirmed",
        "detail": f"{how} by {getattr(user, 'username', 'someone')}",
        "page": parse.page_of(start),
        "offered_start": offered.get("offered_start"),
        "offered_end": offered.get("offered_end"),
        "previous_status": current.status if current is not None else None,
    }
    row, _ = AnchorResolution.objects.update_or_create(
        anchor=anchor,
        parse=parse,
        defaults={
            "status": ResolutionStatus.CONFIRMED,
            "start": start,
            "end": end,
            "score": 1.0,
            "candidates": 1,
            "detail": detail,
            "resolver_version": "",
            "confirmed_by": user,
            "confirmed_at": timezone.now(),
        },
    )
    item_touch(item=anchor.item)
    audit.record_anchor(
        anchor=anchor,
        kind="anchor_confirmed",
        user=user,
        parse=str(parse.public_id),
        parser=parse.parser,
        start=start,
        end=end,
        corrected=corrected,
    )
    return row
