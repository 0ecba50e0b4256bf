"""Imports: any registered format back into a new or existing eval set, previewed first.

``import_plan`` reads the file with its format's reader and compares every item with what
the set holds (matched by id, field by field), without writing anything: the preview. It
says what would be created, updated (each change with its old and new value), left
unchanged or refused (with file, line, item and field) and which labels wait for a file
that is not in the workspace yet. ``import_commit`` locks the set, makes the plan once and
writes it in one transaction, or nothing at all; importing the same file again finds every
item unchanged and writes nothing.

**An import changes only what its format carries** (``CARRIES``, also the table in docs/formats.md):
a deepset file has no qtype, grades or page hints, so it never touches them. Anchors are
added, never removed, and an incoming anchor that is the same evidence as a stored one is
that anchor: same document and the same span in the document's reference parse (for
deepset, whose ``text`` is the answer inside the evidence, a span inside the other), or,
when either cannot be placed, the same quote and occurrence. A stored anchor lies where a
release says it does (its highlight, or its found resolution in the reference parse), so
our own files re-imported into their set find every anchor. Page hint and grade are how an
anchor is described, not which evidence it is; a carried grade that differs is a change.
deepset files without ``question_id`` (ids made from the questions) match items by
question; BEIR judgements the item's anchors already make, and deepset filters spelled as
a scalar where a one-value list is stored, are not changes.

**A label the reader placed is stored as the highlight of its place** (``PlacedAnchor``):
a deepset context or a LegalBench-RAG span names one copy of its quote, and the anchor is
written as a highlight there would be (page, occurrence on the page, prefix and suffix,
reference offsets), so it resolves to that copy in every parse; pending labels attach the
same way. A new anchor the reference parse cannot place is a warning in the preview.

A file's review (context-grid's ``meta.reviewed``, plus ``reviewed_by`` and
``reviewed_at``) approves the item when an owner imports it, with an audit entry saying so;
those keys are not kept in the item's meta. A label whose file is missing stays pending: a
complete anchor (a quote) is stored with no document and attaches when the file is
uploaded; a span or a deepset label (a quote placed through its context) is kept as a
``PendingImportLabel`` until the file's reference parse is ready.

**A preview runs in a web process, so it reads with a budget** (``read_budget``, from the
``GROUNDWORK_IMPORT_MAX_*`` settings): the first problems are kept with their text, an error
past them stops the reading and warnings past them are only counted; a file of more lines,
questions or anchors than the limits is refused whole. Each refusal is a 400 that names the
setting, its value and the line, with the problems found before it stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any

import contextgrid as cg
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Q

from evalsets import dberrors, queue, validation
from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.errors import Conflict, GroundworkError, InvalidInput, limit_named
from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ImportRecord,
    ItemState,
    Membership,
    ParseStatus,
    ParseVersion,
    PendingImportLabel,
    PendingLabelStatus,
    Role,
    Workspace,
)
from evalsets.pure import resolver
from evalsets.pure.archive import ArchiveTooLarge
from evalsets.pure.formats import (
    FORMATS,
    BudgetExceeded,
    HasProblems,
    ImportResult,
    PendingLabel,
    Problem,
    ReadBudget,
    guess_format,
)
from evalsets.releases.services import ParseTexts
from evalsets.review import workflow

log = logging.getLogger(__name__)

#: Item fields an import may set, in the order changes are listed.
ITEM_FIELDS = ("question", "qtype", "answer")
#: The review as a release writes it into ``meta`` (context-grid's ``assess()`` reads
#: ``reviewed``); read back into the item's state, never stored in its meta.
REVIEW_KEYS = ("reviewed", "reviewed_by", "reviewed_at")


@dataclass(frozen=True, slots=True)
class Carries:
    """What one format can tell an import about an item; everything else is left alone.

    ``fields`` are replaced on existing items, ``new_only`` set on new items only. ``meta``
    is ``None`` when the whole ``meta`` is carried (replaced, review keys aside), otherwise
    the only keys that are. ``same_evidence`` is ``"span"`` (the same span) or
    ``"inside"`` (one span inside the other: deepset's answer inside the evidence, or the
    evidence inside a retrieval passage).
    """

    fields: tuple[str, ...] = ("question",)
    new_only: tuple[str, ...] = ()
    meta: tuple[str, ...] | None = ()
    anchors: bool = False
    grade: bool = False
    review: bool = False
    same_evidence: str = "span"
    #: Fields of ``fields`` a record may leave out (``None``): it then says nothing about
    #: them, and an existing item keeps its value.
    optional: tuple[str, ...] = ()

    def narrowed(self, absent: set[str]) -> Carries:
        """What this particular file carries: without the fields it has no column for."""
        meta = self.meta
        if "meta" in absent:
            meta = ()
        elif meta is not None:
            meta = tuple(key for key in meta if key not in absent)
        return replace(
            self,
            fields=tuple(f for f in self.fields if f not in absent),
            new_only=tuple(f for f in self.new_only if f not in absent),
            meta=meta,
            anchors=self.anchors and "anchors" not in absent,
            grade=self.grade and "grade" not in absent,
            review=self.review and meta is None,
        )


_CONTEXT_GRID = Carries(fields=ITEM_FIELDS, meta=None, anchors=True, grade=True, review=True)
_DEEPSET = Carries(new_only=("answer",), meta=("filters",), anchors=True, same_evidence="inside")

#: Per format, what an import carries into an existing set (docs/formats.md shows this table).
CARRIES: dict[str, Carries] = {
    "contextgrid-jsonl": _CONTEXT_GRID,
    "contextgrid-csv": _CONTEXT_GRID,
    "deepset-qa": _DEEPSET,
    "deepset-retrieval": _DEEPSET,
    "deepset-rag": Carries(),
    "beir": Carries(meta=("gold_documents",)),
    "legalbench-rag": Carries(
        fields=("question", "answer"),
        optional=("answer",),
        meta=("legalbench_spans",),
        anchors=True,
    ),
}


def _plain(value: Any) -> Any:
    """``value`` as it comes back from a JSON column (tuples become lists)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def _digest(context: str) -> str:
    return hashlib.sha256(context.encode("utf-8")).hexdigest() if context else ""


@dataclass
class PendingRow:
    """A ``PendingImportLabel`` to write: a span, or a quote's place in its context."""

    source_id: str
    start: int
    end: int
    grade: int
    line: int | None
    context: str = ""
    quote: str = ""

    @property
    def key(self) -> tuple:
        return (self.source_id, self.start, self.end, _digest(self.context))


@dataclass
class PlannedItem:
    item_id: str
    action: str  # create / update / unchanged
    fields: dict[str, Any]
    changes: list[dict[str, Any]] = field(default_factory=list)
    new_anchors: list[cg.GoldAnchor] = field(default_factory=list)
    anchor_changes: list[dict[str, Any]] = field(default_factory=list)
    new_pending: list[PendingRow] = field(default_factory=list)
    approve: dict[str, str] | None = None
    current: EvalItem | None = None

    @property
    def changed(self) -> list[str]:
        return [change["field"] for change in self.changes]

    @property
    def writes(self) -> bool:
        return bool(
            self.changes
            or self.new_anchors
            or self.anchor_changes
            or self.new_pending
            or self.approve
        )

    def to_dict(self) -> dict[str, Any]:
        state = None
        if self.approve is not None:
            old = self.current.state if self.current is not None else ItemState.DRAFT
            state = {"old": old, "new": ItemState.APPROVED, **self.approve}
        return {
            "id": self.item_id,
            "question": self.fields["question"],
            "changed": self.changed,
            "changes": self.changes,
            "anchors_added": [a.to_dict() for a in self.new_anchors],
            "anchors_changed": [
                {k: v for k, v in change.items() if k != "pk"} for change in self.anchor_changes
            ],
            "pending_spans_added": len(self.new_pending),
            "state": state,
        }


@dataclass
class ImportPlan(HasProblems):
    format: str
    filename: str
    evalset: str
    new_set: bool
    token: str
    result: ImportResult
    carries: Carries
    #: The format was guessed from the file (none was chosen): the preview says so.
    guessed: bool = False
    items: list[PlannedItem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)

    def of(self, action: str) -> list[PlannedItem]:
        return [p for p in self.items if p.action == action]

    def counts(self) -> dict[str, int]:
        errors, warnings = self.errors, self.warnings
        shown = settings.GROUNDWORK_IMPORT_MAX_PROBLEMS
        unlisted = self.result.unlisted
        return {
            "create": len(self.of("create")),
            "update": len(self.of("update")),
            "unchanged": len(self.of("unchanged")),
            "refused": len(errors),
            "warnings": len(warnings) + unlisted,
            "pending": len(self.pending),
            "lines_read": self.result.lines_read,
            "not_listed": unlisted + max(0, len(errors) - shown) + max(0, len(warnings) - shown),
        }

    def problem_dicts(self, problems: list[Problem]) -> list[dict[str, Any]]:
        return problem_dicts(problems, self.filename)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "format_guessed": self.guessed,
            "filename": self.filename,
            "evalset": self.evalset,
            "new_set": self.new_set,
            "token": self.token,
            "can_commit": not self.errors,
            "counts": self.counts(),
            "carries": carried_fields(self.carries),
            "create": [p.to_dict() for p in self.of("create")],
            "update": [p.to_dict() for p in self.of("update")],
            "unchanged": [p.item_id for p in self.of("unchanged")],
            "refused": self.problem_dicts(self.errors),
            "warnings": self.problem_dicts(self.warnings),
            "pending": self.pending,
            "matched_files": self.result.matches,
        }


def problem_dicts(problems: list[Problem], filename: str) -> list[dict[str, Any]]:
    """The first ``GROUNDWORK_IMPORT_MAX_PROBLEMS`` problems as an answer lists them."""
    return [
        {
            "line": p.line,
            "item": p.item,
            "field": p.field,
            "message": p.message,
            "hint": p.hint,
            "severity": p.severity,
            "text": p.describe(filename),
        }
        for p in problems[: settings.GROUNDWORK_IMPORT_MAX_PROBLEMS]
    ]


def read_budget() -> ReadBudget:
    """How much of one file an import reads (``GROUNDWORK_IMPORT_MAX_*``)."""
    return ReadBudget(
        max_problems=settings.GROUNDWORK_IMPORT_MAX_PROBLEMS,
        max_lines=settings.GROUNDWORK_IMPORT_MAX_LINES,
        max_items=settings.GROUNDWORK_IMPORT_MAX_ITEMS,
    )


#: The setting behind each ``ReadBudget`` field, for the answer that names it.
BUDGET_SETTINGS = {
    "max_problems": "GROUNDWORK_IMPORT_MAX_PROBLEMS",
    "max_lines": "GROUNDWORK_IMPORT_MAX_LINES",
    "max_items": "GROUNDWORK_IMPORT_MAX_ITEMS",
}


def _refuse_past_budget(exc: BudgetExceeded) -> InvalidInput:
    """The 400 for a file past its budget: the limit, the line, and what was found before."""
    result = exc.result
    name = BUDGET_SETTINGS[exc.limit]
    value = getattr(result.budget, exc.limit)
    return InvalidInput(
        f"{exc.message} ({name}={value:,}); nothing was imported",
        field="file",
        extra={
            **limit_named(name, value, line=exc.line),
            "problems": problem_dicts(result.problems, result.filename),
            "counts": {
                "problems_listed": min(len(result.problems), result.budget.max_problems),
                "lines_read": result.lines_read,
                "items_read": len(result.items),
            },
        },
    )


def _check_anchor_count(result: ImportResult) -> None:
    """Refuse a file of more anchors and labels than ``GROUNDWORK_IMPORT_MAX_ANCHORS``: the
    plan places each one in its document's reference parse, so they set the preview's cost
    (a few bytes of JSON each, where a question costs a line)."""
    limit = settings.GROUNDWORK_IMPORT_MAX_ANCHORS
    count = sum(len(item.anchors) for item in result.items) + len(result.pending)
    if count > limit:
        raise InvalidInput(
            f"{result.filename} holds {count:,} anchors and labels, past the limit of "
            f"{limit:,} for one import (GROUNDWORK_IMPORT_MAX_ANCHORS); split the file and "
            "import each part; nothing was imported",
            field="file",
            extra=limit_named("GROUNDWORK_IMPORT_MAX_ANCHORS", limit),
        )


def carried_fields(carries: Carries) -> list[str]:
    """What a preview says the file will change, in words of the item's fields."""
    names = [*carries.fields, *(f"{name} (new items)" for name in carries.new_only)]
    if carries.meta is None:
        names.append("meta")
    names += [f"meta.{key}" for key in carries.meta or ()]
    if carries.anchors:
        names.append("anchors (added)")
    if carries.grade:
        names.append("anchor grades")
    if carries.review:
        names.append("review")
    return names


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
        return FORMATS[fmt].reader(
            data, filename=filename, documents=texts, evalset_id=evalset_id, budget=read_budget()
        )
    except (ArchiveTooLarge, BudgetExceeded):
        raise  # the refusals a reader lets through: the whole file is refused
    except Exception as exc:  # readers never raise on bad input; if one does, say so, no 500
        log.exception("the %s reader raised on %s", fmt, filename)
        result = ImportResult(format=fmt, filename=filename)
        result.add(
            f"{filename} could not be read as {FORMATS[fmt].label}: {exc}",
            hint="Check that the format chosen matches the file.",
        )
        return result


def _check_upload(data: bytes, filename: str) -> None:
    validation.check_upload_size(len(data), filename, settings.GROUNDWORK_MAX_UPLOAD_BYTES)


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
            validation.check_source_id(anchor.source_id)
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
    validation.check_storable(label.context, "context")
    validation.check_storable(label.expected, "answer")
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


@dataclass(frozen=True, slots=True)
class StoredAnchor:
    """A stored anchor as the planner compares it with incoming ones."""

    pk: int
    public_id: str
    source_id: str
    quote: str
    grade: int
    page_hint: int | None
    occurrence: int
    prefix: str = ""
    suffix: str = ""
    #: Where it lies in its document's reference parse as a release writes it (the
    #: highlight itself, or its found resolution there); ``None``: not known yet.
    span: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class PlacedAnchor:
    """An incoming anchor its reader placed in the document's reference parse (a deepset
    context, a LegalBench-RAG span), described as a highlight of that place describes it:
    the reference's quote, page, occurrence on the page and context. It is written as that
    highlight, so it resolves to the copy the file meant in every parse."""

    source_id: str
    quote: str
    grade: int
    page_hint: int | None
    occurrence: int
    prefix: str
    suffix: str
    parse: ParseVersion
    span: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "quote": self.quote,
            "grade": self.grade,
            "page_hint": self.page_hint,
            "occurrence": self.occurrence,
        }


class Evidence:
    """Tells whether two anchors are the same evidence, by where they lie in the reference
    parse of their document (see the module docstring for the rule)."""

    def __init__(
        self, workspace: Workspace, places: dict[cg.GoldAnchor, tuple[int, int]] | None = None
    ) -> None:
        self.workspace = workspace
        self.places = places or {}
        self._parses: dict[str, ParseVersion | None] = {}
        self._found: dict[tuple, Any] = {}

    def _reference(self, source_id: str) -> ParseVersion | None:
        if source_id not in self._parses:
            self._parses[source_id] = (
                ParseVersion.objects.filter(
                    document__workspace=self.workspace,
                    document__source_id=source_id,
                    is_reference=True,
                    status=ParseStatus.READY,
                )
                .select_related("document")
                .defer("text")
                .first()
            )
        return self._parses[source_id]

    def placed(self, anchor: cg.GoldAnchor) -> cg.GoldAnchor | PlacedAnchor:
        """``anchor`` as the highlight of the place its reader found for it (``places``), or
        of the copy its whole-document occurrence names; as it came when neither says."""
        parse = self._reference(anchor.source_id)
        place = self.places.get(anchor)
        if place is None and parse is not None:
            place = self._copy_named(anchor, parse)
        if place is None or parse is None:
            return anchor
        try:
            highlighted = anchoring_services.highlight_of(parse=parse, start=place[0], end=place[1])
        except InvalidInput:
            return anchor
        return PlacedAnchor(
            source_id=anchor.source_id,
            quote=highlighted["quote"],
            grade=anchor.grade,
            page_hint=highlighted["page_hint"],
            occurrence=highlighted["occurrence"],
            prefix=highlighted["prefix"],
            suffix=highlighted["suffix"],
            parse=parse,
            span=(highlighted["ref_start"], highlighted["ref_end"]),
        )

    @staticmethod
    def _copy_named(anchor: cg.GoldAnchor, parse: ParseVersion) -> tuple[int, int] | None:
        """The verbatim copy an anchor without a page hint names by its ``occurrence``,
        counted over the whole document as context-grid's reader counts it (and as our
        release files write it). None for an anchor with a page hint, a quote with one copy
        (the resolver finds it as it is) or fewer copies than the occurrence asks for."""
        if anchor.page_hint is not None:
            return None
        text = resolution.prepared(parse).text
        copies = resolver.find_all(text, anchor.quote, limit=max(anchor.occurrence, 1))
        if len(copies) < 2 or anchor.occurrence >= len(copies):
            return None
        start = copies[anchor.occurrence]
        return start, start + len(anchor.quote)

    def resolved(self, anchor: Any) -> Any:
        """The resolver's answer for ``anchor`` in its reference parse; ``None`` without one."""
        prefix, suffix = getattr(anchor, "prefix", ""), getattr(anchor, "suffix", "")
        key = (anchor.source_id, anchor.quote, anchor.occurrence, anchor.page_hint, prefix, suffix)
        if key not in self._found:
            parse = self._reference(anchor.source_id)
            self._found[key] = (
                resolution.prepared(parse).resolve(
                    anchor.quote,
                    occurrence=anchor.occurrence,
                    page_hint=anchor.page_hint,
                    prefix=prefix,
                    suffix=suffix,
                )
                if parse is not None
                else None
            )
        return self._found[key]

    def span(self, anchor: StoredAnchor | PlacedAnchor | cg.GoldAnchor) -> tuple[int, int] | None:
        """Where ``anchor`` lies in its document's reference parse; ``None`` if unplaceable.
        A placed or stored place is that place; anything else is resolved."""
        known = getattr(anchor, "span", None)
        if known is not None:
            return known
        found = self.resolved(anchor)
        return found.span if found is not None else None

    def unplaced(self, anchor: Any) -> str:
        """Why a new anchor cannot be placed in its document's reference parse ("" when it
        can, or its document has no reference parse yet to say)."""
        if isinstance(anchor, PlacedAnchor):
            return ""
        found = self.resolved(anchor)
        if found is None or found.span is not None:
            return ""
        if found.status == "ambiguous":
            return (
                f"its quote appears {found.candidates} times in {anchor.source_id!r} and "
                "nothing in the file says which copy it means"
            )
        return f"its quote was not found in {anchor.source_id!r} ({found.status})"

    def same(self, one: Any, two: Any, rule: str) -> bool:
        """Whether ``one`` and ``two`` are the same evidence under ``rule`` (``Carries``)."""
        if one.source_id != two.source_id:
            return False
        quote_one, quote_two = one.quote.strip(), two.quote.strip()
        if (quote_one, one.occurrence, one.page_hint) == (quote_two, two.occurrence, two.page_hint):
            return True
        first, second = self.span(one), self.span(two)
        if first is None or second is None:
            return (
                first is None
                and second is None
                and quote_one == quote_two
                and one.occurrence == two.occurrence
            )
        if rule == "inside":
            return (first[0] <= second[0] and second[1] <= first[1]) or (
                second[0] <= first[0] and first[1] <= second[1]
            )
        return first == second


class SeenEvidence:
    """Anchors kept so far, indexed by each equality ``Evidence.same`` tests, so a new anchor
    is looked up rather than compared with every kept one (an item of 40,000 anchors used to
    cost 800 million comparisons). ``find`` answers what a scan in order would: the first
    kept anchor that is the same evidence. Only the ``inside`` rule's containment is still
    asked of ``Evidence.same`` one by one, and only of placed anchors on the same document.
    """

    def __init__(self, evidence: Evidence, rule: str) -> None:
        self.evidence = evidence
        self.rule = rule
        self.kept: list[Any] = []
        self.by_key: dict[tuple, int] = {}
        self.placed: dict[str, list[int]] = {}

    def _keys(self, anchor: Any) -> tuple[tuple[int, int] | None, list[tuple]]:
        quote = anchor.quote.strip()
        keys: list[tuple] = [
            ("as given", anchor.source_id, quote, anchor.occurrence, anchor.page_hint)
        ]
        span = self.evidence.span(anchor)
        if span is None:
            keys.append(("unplaced", anchor.source_id, quote, anchor.occurrence))
        elif self.rule != "inside":
            keys.append(("span", anchor.source_id, span))
        return span, keys

    def add(self, anchor: Any) -> None:
        index = len(self.kept)
        self.kept.append(anchor)
        span, keys = self._keys(anchor)
        for key in keys:
            self.by_key.setdefault(key, index)
        if span is not None and self.rule == "inside":
            self.placed.setdefault(anchor.source_id, []).append(index)

    def find(self, anchor: Any) -> Any | None:
        span, keys = self._keys(anchor)
        found = [self.by_key[key] for key in keys if key in self.by_key]
        if span is not None and self.rule == "inside":
            found += [
                index
                for index in self.placed.get(anchor.source_id, [])
                if self.evidence.same(self.kept[index], anchor, self.rule)
            ]
        return self.kept[min(found)] if found else None


@dataclass
class Existing:
    """What the set holds, loaded once per plan: items, their anchors, their pending labels."""

    items: dict[str, EvalItem] = field(default_factory=dict)
    anchors: dict[int, list[StoredAnchor]] = field(default_factory=dict)
    pending: dict[int, set[tuple]] = field(default_factory=dict)

    _questions: dict[str, list[str]] | None = None

    def by_question(self, question: str) -> list[str]:
        """Ids of the items asking ``question`` (spaces around it aside), oldest first."""
        if self._questions is None:
            self._questions = {}
            for found in sorted(self.items.values(), key=lambda i: (i.created_at, i.pk)):
                self._questions.setdefault(found.question.strip(), []).append(found.item_id)
        return self._questions.get(question.strip(), [])

    @classmethod
    def load(cls, evalset: EvalSet | None) -> Existing:
        found = cls()
        if evalset is None:
            return found
        found.items = {i.item_id: i for i in EvalItem.objects.filter(evalset=evalset)}
        columns = [
            "pk",
            "public_id",
            "source_id",
            "quote",
            "grade",
            "page_hint",
            "occurrence",
            "prefix",
            "suffix",
        ]
        rows = GoldAnchor.objects.filter(item__evalset=evalset).values_list(
            "item_id", *columns, "reference_parse_id", "ref_start", "ref_end"
        )
        spans = _reference_spans(evalset)
        for item_pk, pk, public_id, *rest, parse_pk, start, end in rows:
            span = (start, end) if parse_pk in spans["parses"] and start is not None else None
            found.anchors.setdefault(item_pk, []).append(
                StoredAnchor(pk, str(public_id), *rest, span=span or spans["found"].get(pk))
            )
        labels = PendingImportLabel.objects.filter(item__evalset=evalset).values_list(
            "item_id", "source_id", "start", "end", "context_digest"
        )
        for item_pk, *key in labels:
            found.pending.setdefault(item_pk, set()).add(tuple(key))
        return found


def _reference_spans(evalset: EvalSet) -> dict[str, Any]:
    """The reference parses of the set's documents (``parses``) and where each anchor was
    found in them (``found``, anchor pk to span): where a release says its evidence is."""
    parses = set(
        ParseVersion.objects.filter(
            document__workspace=evalset.workspace_id, is_reference=True, status=ParseStatus.READY
        ).values_list("pk", flat=True)
    )
    rows = AnchorResolution.objects.filter(
        anchor__item__evalset=evalset, parse__in=parses, status__in=FOUND_STATUSES
    ).values_list("anchor_id", "start", "end")
    return {"parses": parses, "found": {pk: (start, end) for pk, start, end in rows}}


def _plan_pending(
    result: ImportResult, plan: ImportPlan, documents: set[str]
) -> tuple[dict[str, list[PendingRow]], dict[str, list[cg.GoldAnchor]]]:
    """The reader's pending labels, by item: rows to store, and complete anchors to add."""
    rows: dict[str, list[PendingRow]] = {}
    anchors: dict[str, list[cg.GoldAnchor]] = {}
    if not plan.carries.anchors:
        return rows, anchors
    for label in result.pending:
        if label.span is None and label.anchor is not None:
            anchors.setdefault(label.item, []).append(label.anchor)
        elif label.span is not None:
            quote = label.expected or (label.anchor.quote if label.anchor is not None else "")
            rows.setdefault(label.item, []).append(
                PendingRow(
                    label.file_name,
                    label.span[0],
                    label.span[1],
                    label.grade,
                    label.line,
                    context=label.context,
                    quote=quote,
                )
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
    return rows, anchors


def _meta(old: dict[str, Any] | None, given: dict[str, Any], carries: Carries) -> dict[str, Any]:
    """The item's meta after the import: the file's (whole, or only the keys it carries)."""
    if carries.meta is None:
        return _plain({k: v for k, v in given.items() if k not in REVIEW_KEYS})
    meta = {k: v for k, v in (old or {}).items() if k not in carries.meta}
    for key in carries.meta:
        if key not in given:
            continue
        kept = (old or {}).get(key)
        same = key == "filters" and _filter_values(kept) == _filter_values(given[key])
        meta[key] = kept if same else given[key]
    return _plain(meta)


def _filter_values(filters: Any) -> Any:
    """deepset filters as sets of values per key: a key given once holds one value, so
    ``{"lang": "en"}`` and ``{"lang": ["en"]}`` say the same (the file cannot tell them
    apart; the stored spelling is kept)."""
    if not isinstance(filters, dict):
        return filters
    return {
        key: _plain(value if isinstance(value, list) else [value]) for key, value in filters.items()
    }


def _judged_elsewhere(meta: dict[str, Any], stored: list[StoredAnchor]) -> dict[str, Any]:
    """``meta`` without the BEIR judgements the item's anchors already make: a document
    judged with the highest grade of the item's anchors on it is what a release writes for
    them, not news to keep beside them."""
    judged = meta.get("gold_documents")
    if not judged or not stored or not isinstance(judged, list):
        return meta
    best: dict[str, int] = {}
    for anchor in stored:
        best[anchor.source_id] = max(best.get(anchor.source_id, 0), anchor.grade)
    rest = [
        pair
        for pair in judged
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and best.get(pair[0]) == pair[1])
    ]
    out = {key: value for key, value in meta.items() if key != "gold_documents"}
    if rest:
        out["gold_documents"] = rest
    return out


def _file_fields(
    item: cg.EvalItem, current: EvalItem | None, carries: Carries, meta: dict[str, Any]
) -> dict[str, Any]:
    """The values the file gives: every field of a new item, the carried ones of another
    (an optional one only when the record gives it). ``meta`` is the item's, as given."""
    given = {"question": item.question, "qtype": item.qtype or None, "answer": item.answer}
    if current is None:
        fields = {
            name: given[name] if name in carries.fields + carries.new_only else None
            for name in ITEM_FIELDS
        }
        fields["meta"] = _meta(None, meta, carries)
        return fields
    fields = {
        name: given[name]
        for name in carries.fields
        if not (name in carries.optional and given[name] is None)
    }
    if carries.meta != ():
        fields["meta"] = _meta(current.meta, meta, carries)
    return fields


def _changes(current: EvalItem, fields: dict[str, Any]) -> list[dict[str, Any]]:
    """Every field whose value the file changes, with its old and new value."""
    changes = []
    for name, new in fields.items():
        old = _plain(getattr(current, name))
        if old != _plain(new):
            changes.append({"field": name, "old": old, "new": _plain(new)})
    return changes


def _plan_anchors(
    incoming: list[cg.GoldAnchor], stored: list[StoredAnchor], carries: Carries, evidence: Evidence
) -> tuple[list[cg.GoldAnchor], list[dict[str, Any]]]:
    """Anchors that are new evidence, and carried grades of known evidence that differ."""
    added: list[cg.GoldAnchor] = []
    regraded: list[dict[str, Any]] = []
    rule = carries.same_evidence
    known_ones, added_ones = SeenEvidence(evidence, rule), SeenEvidence(evidence, rule)
    for anchor in stored:
        known_ones.add(anchor)
    for anchor in incoming:
        known = known_ones.find(anchor)
        if known is None:
            if added_ones.find(anchor) is None:
                added.append(anchor)
                added_ones.add(anchor)
            continue
        done = any(change["pk"] == known.pk for change in regraded)
        if carries.grade and known.grade != anchor.grade and not done:
            regraded.append(
                {
                    "pk": known.pk,
                    "anchor": known.public_id,
                    "source_id": known.source_id,
                    "quote": known.quote,
                    "field": "grade",
                    "old": known.grade,
                    "new": anchor.grade,
                }
            )
    return added, regraded


def _review(item: cg.EvalItem, current: EvalItem | None, carries: Carries) -> dict[str, str] | None:
    """The review the file records for an item that is not approved yet, or ``None``."""
    if not carries.review or not item.meta.get("reviewed"):
        return None
    if current is not None and current.state == ItemState.APPROVED:
        return None
    return {
        "reviewed_by": str(item.meta.get("reviewed_by") or ""),
        "reviewed_at": str(item.meta.get("reviewed_at") or ""),
    }


def _plan_item(
    item: cg.EvalItem,
    item_id: str,
    plan: ImportPlan,
    existing: Existing,
    evidence: Evidence,
    pending: list[PendingRow],
    extra: list[cg.GoldAnchor],
) -> PlannedItem | None:
    """One item's plan, or ``None`` with a problem when it is approved and would change."""
    carries = plan.carries
    current = existing.items.get(item_id)
    stored = existing.anchors.get(current.pk, []) if current is not None else []
    fields = _file_fields(item, current, carries, _judged_elsewhere(dict(item.meta), stored))
    planned = PlannedItem(item_id, "create" if current is None else "update", fields)
    planned.current = current
    if current is not None:
        planned.changes = _changes(current, fields)
    given = [evidence.placed(anchor) for anchor in item.anchors] if carries.anchors else []
    incoming = [*given, *extra] if carries.anchors else []
    planned.new_anchors, planned.anchor_changes = _plan_anchors(incoming, stored, carries, evidence)
    known = set(existing.pending.get(current.pk, set())) if current is not None else set()
    for row in pending:
        if row.key not in known:
            known.add(row.key)
            planned.new_pending.append(row)
    planned.approve = _review(item, current, carries)
    if current is None:
        return planned
    if not planned.writes:
        planned.action = "unchanged"
    elif current.state == ItemState.APPROVED:
        what = planned.changed + (["anchors"] if planned.new_anchors or planned.new_pending else [])
        what += ["anchor grades"] if planned.anchor_changes else []
        plan.problems.append(
            Problem(
                None,
                item_id,
                "state",
                f"eval item {item_id!r} is approved, and this file changes it ({', '.join(what)})",
                "error",
                "An owner must reopen it first, or leave it out of the file.",
            )
        )
        return None
    return planned


def _matched_by_question(
    item: cg.EvalItem, item_id: str, existing: Existing, plan: ImportPlan
) -> str:
    """The id of the set's item asking the same question, for a file whose ids were made
    from its questions (deepset without ``question_id``); ``item_id`` when none does."""
    if item_id in existing.items:
        return item_id
    same = existing.by_question(item.question)
    if len(same) > 1:
        plan.problems.append(
            Problem(
                plan.result.lines.get(item.id),
                same[0],
                "question",
                f"{len(same)} items of the set ask this question ({', '.join(same[:5])}) and "
                f"the file has no question_id to say which it means; it was matched to "
                f"{same[0]!r}, the oldest.",
                "warning",
                "Add a question_id column to match items by id.",
            )
        )
    return same[0] if same else item_id


def _warn_unplaced(planned: PlannedItem, evidence: Evidence, plan: ImportPlan) -> None:
    """A warning for each new anchor its reference parse cannot place: it would be stored,
    and shown as needing a person, never silently."""
    for anchor in planned.new_anchors:
        why = evidence.unplaced(anchor)
        if why:
            plan.problems.append(
                Problem(
                    plan.result.lines.get(planned.item_id),
                    planned.item_id,
                    "anchors",
                    f"the anchor quoting {anchor.quote[:60]!r} cannot be placed: {why}. It "
                    "is imported and waits for a person to place it.",
                    "warning",
                    "Give its page_hint and occurrence, or place it by hand after the import.",
                )
            )


def _is_owner(workspace: Workspace, user: Any) -> bool:
    return Membership.objects.filter(workspace=workspace, user=user, role=Role.OWNER).exists()


def _warn_about_gold(result: ImportResult, plan: ImportPlan) -> None:
    with_gold = sum(1 for item in result.items if item.gold)
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


def import_plan(
    *,
    workspace: Workspace,
    evalset: EvalSet | None,
    evalset_id: str,
    data: bytes,
    filename: str,
    fmt: str | None = None,
    user: Any = None,
) -> ImportPlan:
    """What importing ``data`` would do, without writing anything.

    ``user``, when given, is who would import: a file's review approves items only when an
    owner imports it (otherwise each such item gets a warning and stays as it is).
    """
    _check_upload(data, filename)
    guessed = not (fmt or "").strip()
    try:
        fmt = choose_format(fmt, data, filename)
        result = _read(fmt, data, filename, workspace, evalset_id)
    except ArchiveTooLarge as exc:
        raise InvalidInput(
            f"{exc.message}; it was refused, nothing was imported", field="file"
        ) from None
    except BudgetExceeded as exc:
        raise _refuse_past_budget(exc) from None
    _check_anchor_count(result)
    plan = ImportPlan(
        format=fmt,
        filename=filename,
        evalset=evalset_id,
        new_set=evalset is None,
        token=set_fingerprint(evalset),
        result=result,
        carries=CARRIES[fmt].narrowed(result.absent),
        guessed=guessed,
        problems=list(result.problems),
    )
    plan.problems.extend(_storable_problems(result))
    existing = Existing.load(evalset)
    documents = set(
        Document.objects.filter(workspace=workspace).values_list("source_id", flat=True)
    )
    pending_rows, pending_anchors = _plan_pending(result, plan, documents)
    evidence = Evidence(workspace, result.places)
    may_approve = user is None or _is_owner(workspace, user)
    for item in result.items:
        item_id = _check_item(item, plan.problems, result.lines.get(item.id))
        if item_id is None:
            continue
        if "id" in result.absent:
            item_id = _matched_by_question(item, item_id, existing, plan)
        if plan.carries.anchors:
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
        planned = _plan_item(
            item,
            item_id,
            plan,
            existing,
            evidence,
            pending_rows.get(item.id, []),
            pending_anchors.get(item.id, []),
        )
        if planned is None:
            continue
        _warn_unplaced(planned, evidence, plan)
        if planned.approve is not None and not may_approve:
            planned.approve = None
            plan.problems.append(
                Problem(
                    None,
                    item_id,
                    "meta.reviewed",
                    "the file says this item was reviewed, but only an owner's import "
                    "approves it; it stays as it is.",
                    "warning",
                )
            )
            if planned.action == "update" and not planned.writes:
                planned.action = "unchanged"
        plan.items.append(planned)
    _warn_about_gold(result, plan)
    return plan


# -- committing ---------------------------------------------------------------------------------


def _lock(evalset: EvalSet) -> EvalSet:
    nowait = connection.features.has_select_for_update_nowait
    try:
        return EvalSet.objects.select_for_update(nowait=nowait).get(pk=evalset.pk)
    except OperationalError as error:
        if not dberrors.transient(error):
            raise
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

    The set is locked first and the plan made once, under the lock. ``token`` is the
    preview's; when the set changed since that preview (another import, an edit), the
    commit is refused with 409 and the caller previews again.
    """
    try:
        with transaction.atomic():
            if evalset is not None:
                evalset = _lock(evalset)
                evalset_id = evalset.slug
            plan = import_plan(
                workspace=workspace,
                evalset=evalset,
                evalset_id=evalset_id,
                data=data,
                filename=filename,
                fmt=fmt,
                user=user,
            )
            if evalset is not None and token and token != plan.token:
                raise Conflict(
                    f"eval set {evalset.slug!r} changed since the preview (another import "
                    "or an edit was saved); preview the file again before importing it",
                    field="token",
                    extra={"token": plan.token},
                )
            if plan.errors:
                _refuse(plan)
            if evalset is None:
                evalset = _create_set(workspace, user, evalset_id, name, plan)
            _apply(plan, evalset, user)
            record = ImportRecord.objects.create(
                evalset=evalset,
                created_by=user,
                filename=filename[:255],
                format=plan.format,
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                counts=plan.counts(),
                warnings=[
                    p.describe(filename)
                    for p in plan.warnings[: settings.GROUNDWORK_IMPORT_MAX_PROBLEMS]
                ],
            )
    except IntegrityError as error:
        if not dberrors.unique_race(error):
            raise
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
    evalset = anchoring_services.evalset_create(
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
    for planned in plan.items:
        if planned.action == "unchanged":
            continue
        try:
            _apply_item(planned, evalset, user, plan.filename)
        except GroundworkError as exc:
            raise type(exc)(
                f"eval item {planned.item_id!r}: {exc.message}; nothing was imported",
                field=exc.field,
                extra=exc.extra,
            ) from None
    documents = {row.source_id for planned in plan.items for row in planned.new_pending}
    # A span whose file is here and parsed was read as an anchor; one whose file is here
    # but still parsing waits for the parse: try now, and the parse hook tries again.
    for document in Document.objects.filter(workspace=evalset.workspace, source_id__in=documents):
        queue.after_commit("attach_pending_labels", document.pk)


def _apply_item(planned: PlannedItem, evalset: EvalSet, user, filename: str) -> None:
    fields = planned.fields
    item = planned.current
    if item is None:
        item = anchoring_services.item_create(
            evalset=evalset,
            user=user,
            item_id=planned.item_id,
            question=fields["question"],
            qtype=fields["qtype"],
            answer=fields["answer"],
            meta=fields["meta"],
        )
    elif planned.changes:
        item = anchoring_services.item_update(
            item=item,
            user=user,
            row_version=item.row_version,
            **{name: fields[name] for name in planned.changed},
        )
    for anchor in planned.new_anchors:
        if isinstance(anchor, PlacedAnchor):
            anchoring_services.anchor_create_from_highlight(
                item=item,
                user=user,
                parse=anchor.parse,
                start=anchor.span[0],
                end=anchor.span[1],
                grade=anchor.grade,
            )
            continue
        anchoring_services.anchor_create_typed(
            item=item,
            user=user,
            source_id=anchor.source_id,
            quote=anchor.quote,
            grade=anchor.grade,
            page_hint=anchor.page_hint,
            occurrence=anchor.occurrence,
            allow_pending=True,
        )
    for change in planned.anchor_changes:
        stored = GoldAnchor.objects.select_related("item").get(pk=change["pk"])
        anchoring_services.anchor_update_grade(anchor=stored, grade=change["new"], user=user)
    for row in planned.new_pending:
        PendingImportLabel.objects.create(
            workspace=evalset.workspace,
            item=item,
            source_id=row.source_id,
            start=row.start,
            end=row.end,
            grade=row.grade,
            line=row.line,
            context=row.context,
            context_digest=_digest(row.context),
            quote=row.quote,
            imported_by=user,
        )
    if planned.new_pending:
        anchoring_services.item_touch(item=item)
    if planned.approve is not None:
        workflow.item_approve_imported(item=item, user=user, filename=filename, **planned.approve)


# -- pending labels -------------------------------------------------------------------------


def reference_parse_running(document: Document) -> bool:
    return document.parses.filter(
        is_reference=True, status__in=[ParseStatus.QUEUED, ParseStatus.PARSING]
    ).exists()


def pending_labels_attach(*, document: Document) -> int | None:
    """Turn waiting imported labels on ``document`` into anchors quoting its reference text.

    A span (LegalBench-RAG) is sliced from the text and must hold the quote it came with; a
    deepset label is placed through its context, so a repeated quote gets the copy the label
    meant. Each becomes the highlight of that place (quote, page, occurrence on the page and
    context), as it would have had the file been there at import. Labels are found by the
    rule the import matched files with (``PendingImportLabel.objects.waiting_for``). Returns
    how many were attached, or ``None`` when the reference parse is not ready yet (nothing
    done). Idempotent: attached and failed labels are not touched again. A label that does
    not fit the text is marked failed with the reason, never dropped silently; one whose
    place had to be guessed is attached with a message saying so. Call it when a
    document's reference parse becomes ready.
    """
    waiting = PendingImportLabel.objects.waiting_for(document)
    if not waiting.exists():
        return 0
    parse = (
        document.parses.filter(is_reference=True, status=ParseStatus.READY)
        .select_related("document")
        .first()
    )
    if parse is None:
        return None
    attached = 0
    with transaction.atomic():
        labels = waiting.select_for_update().select_related("item__evalset__workspace")
        for label in labels:
            try:
                start, end, note = _label(label).span_in(parse.text)
                created = _attached_anchor(label, parse, start, end)
            except (cg.EvalSetError, GroundworkError) as exc:
                label.status = PendingLabelStatus.FAILED
                label.message = str(exc)
                label.save(update_fields=["status", "message", "updated_at"])
                continue
            label.status = PendingLabelStatus.ATTACHED
            label.anchor = created
            label.message = note
            label.save(update_fields=["status", "anchor", "message", "updated_at"])
            attached += 1
    return attached


def _label(label: PendingImportLabel) -> PendingLabel:
    return PendingLabel(
        line=label.line,
        item=label.item.item_id,
        file_name=label.source_id,
        would_create="",
        span=(label.start, label.end),
        grade=label.grade,
        context=label.context,
        expected="" if label.context else label.quote,
    )


def _attached_anchor(
    label: PendingImportLabel, parse: ParseVersion, start: int, end: int
) -> GoldAnchor:
    """The item's anchor for the evidence at ``[start, end)`` of ``parse``: the one it
    already has (highlighted or found there, or described the same way), or a new highlight."""
    highlighted = anchoring_services.highlight_of(parse=parse, start=start, end=end)
    source_id = parse.document.source_id
    start, end = highlighted["ref_start"], highlighted["ref_end"]
    found_there = Q(
        resolutions__parse=parse,
        resolutions__start=start,
        resolutions__end=end,
        resolutions__status__in=FOUND_STATUSES,
    )
    same = label.item.anchors.filter(source_id=source_id).filter(
        Q(reference_parse=parse, ref_start=start, ref_end=end)
        | found_there
        | Q(
            quote=highlighted["quote"],
            page_hint=highlighted["page_hint"],
            occurrence=highlighted["occurrence"],
        )
    )
    found = same.first()
    if found is not None:
        return found
    return anchoring_services.anchor_create_from_highlight(
        item=label.item,
        user=label.imported_by,
        parse=parse,
        start=start,
        end=end,
        grade=label.grade,
    )
