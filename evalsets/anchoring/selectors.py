"""Reads of eval sets, items and anchors with their resolutions."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from celery import current_app as celery_app
from contextgrid import QuestionType
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
    prefetch_related_objects,
)
from django.db.models.functions import Greatest, Substr
from django.shortcuts import get_object_or_404

from evalsets import written
from evalsets.anchoring.portability import reference_span
from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    AssignmentKind,
    Comment,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemAssignment,
    ItemState,
)
from evalsets.review import blind

#: Item fields whose edit makes the editor one of the item's writers (four eyes).
CONTENT_FIELDS = ("question", "qtype", "answer")


def evalset_in(workspace, slug: str) -> EvalSet:
    """The workspace's eval set ``slug``, or 404."""
    return get_object_or_404(evalsets(workspace), slug=slug)


def item_in_set(workspace, set_slug: str, item_id: str) -> EvalItem | None:
    """The workspace's item ``item_id`` of set ``set_slug`` with its set, or None: every
    anchor request reads both. The item whole; its set's id, workspace and slug (any other
    field of the set is read when asked for). Read by a query written out: the ORM took
    more CPU to build it than an anchor create spends on its writes."""
    params = [workspace.pk, set_slug, item_id]
    found = written.first(EvalItem, written.concrete(EvalItem), _item_in_set_sql(), params)
    if found is None:
        return None
    item, _rest = found
    item.evalset = EvalSet.from_db(
        item._state.db, ["id", "workspace_id", "slug"], [item.evalset_id, workspace.pk, set_slug]
    )
    item.evalset.workspace = workspace
    return item


@functools.cache
def _item_in_set_sql() -> str:
    q = connection.ops.quote_name
    columns = written.select_list(EvalItem, "i", written.concrete(EvalItem))
    return (
        f"SELECT {columns} FROM {q(EvalItem._meta.db_table)} i "
        f"JOIN {q(EvalSet._meta.db_table)} s ON i.{q('evalset_id')} = s.{q('id')} "
        f"WHERE s.{q('workspace_id')} = %s AND s.{q('slug')} = %s AND i.{q('item_id')} = %s"
    )


def evalsets(workspace) -> QuerySet[EvalSet]:
    if workspace is None:
        return EvalSet.objects.none()
    # Through the workspace's own manager, so every set knows its workspace without a query.
    return workspace.evalsets.all()


#: A parse's columns that a list of anchors never shows: its text can be megabytes and its
#: page starts thousands of numbers, once per anchor row.
PARSE_BULK = ("text", "page_starts", "error")


def _resolutions_prefetch() -> Prefetch:
    """An anchor's rows in every parse, as the list ``prefetched_resolutions``.

    A plain list (``to_attr``), not the related manager's cache: Django builds a filtered
    queryset per parent object for the latter, which costs more than the query itself.
    """
    return Prefetch(
        "resolutions",
        queryset=AnchorResolution.objects.select_related("parse").defer(
            *(f"parse__{name}" for name in PARSE_BULK)
        ),
        to_attr="prefetched_resolutions",
    )


def anchors_with_resolutions() -> QuerySet[GoldAnchor]:
    """Anchors with their rows in every parse as the list ``prefetched_resolutions``, and
    who made each (``created_by``: its id and username only)."""
    return (
        GoldAnchor.objects.select_related("reference_parse", "created_by")
        .defer(
            *(f"reference_parse__{name}" for name in PARSE_BULK),
            *_user_columns_not_shown("created_by"),
        )
        .prefetch_related(_resolutions_prefetch())
    )


def anchors_for(membership) -> QuerySet[GoldAnchor]:
    """``anchors_with_resolutions`` less those ``membership`` may not see on an item worked
    blind (``blind.visible_anchors``; ``None``: the system, which sees everything)."""
    return blind.visible_anchors(anchors_with_resolutions(), membership)


def with_resolutions(anchor: GoldAnchor) -> GoldAnchor:
    """An anchor just written, as ``anchors_with_resolutions`` would read it, without reading
    it again. Its rows in every parse are read only when tasks run in-process (they were
    written at its commit); with workers, its resolution was only queued at that commit, so
    it has none yet and the query would cost every create for an empty list."""
    if celery_app.conf.task_always_eager:
        prefetch_related_objects([anchor], _resolutions_prefetch())
    else:
        anchor.prefetched_resolutions = []
    return anchor


def _user_columns_not_shown(*relations: str) -> list[str]:
    """Every column of the user model but its id and username, under each relation: a list
    of items shows who wrote and holds each, not their password hash or last login."""
    return [
        f"{relation}__{field.attname}"
        for relation in relations
        for field in get_user_model()._meta.concrete_fields
        if field.attname not in ("id", "username")
    ]


def items(evalset) -> QuerySet[EvalItem]:
    """A set's items, each knowing whether it has any anchors (``has_anchors``).

    Pass the ones you show through ``with_anchors``, which attaches their anchors.
    """
    # Through the set's own manager, so every item knows its set without a join.
    return (
        evalset.items.select_related("author", "assignee")
        .defer(*_user_columns_not_shown("author", "assignee"))
        .annotate(has_anchors=Exists(GoldAnchor.objects.filter(item=OuterRef("pk"))))
    )


def with_anchors(items: Iterable[EvalItem], *, reader) -> list[EvalItem]:
    """``items`` with the anchors ``reader`` (a membership) may see, and those anchors'
    resolutions, as ``prefetched_anchors`` (``anchors_for``).

    Only items that have anchors are queried for them, so a page of fresh drafts costs no
    query at all; Django skips objects that already carry the ``to_attr`` list.
    """
    items = list(items)
    for item in items:
        if not getattr(item, "has_anchors", True):
            item.prefetched_anchors = []
    prefetch_related_objects(
        items,
        Prefetch("anchors", queryset=anchors_for(reader), to_attr="prefetched_anchors"),
    )
    return items


# -- lists of items and eval sets ---------------------------------------------------------------


def state_counts(evalsets: Iterable[EvalSet]) -> dict[int, dict[str, int]]:
    """Items per workflow state in each eval set (every state present, zeros included)."""
    evalsets = list(evalsets)
    counts: dict[int, dict[str, int]] = {
        evalset.pk: {state.value: 0 for state in ItemState} for evalset in evalsets
    }
    for evalset_id, state, n in (
        EvalItem.objects.filter(evalset__in=evalsets)
        .values_list("evalset", "state")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts[evalset_id][state] = n
    return counts


def item_list(
    evalset: EvalSet, *, reader, state: str = "", qtype: str = "", q: str = ""
) -> QuerySet[EvalItem]:
    """The eval set page's items, oldest first, each with ``anchor_count`` (the anchors
    ``reader``, a membership, may see: ``blind.visible_anchor_count``) and its
    ``annotators`` (every annotate assignment, so an overlapped item names each person);
    ``qtype`` may be ``(none)`` for items without one; ``q`` keeps those with its words
    (``search_items``)."""
    annotating = (
        ItemAssignment.objects.filter(kind=AssignmentKind.ANNOTATE)
        .select_related("user")
        .order_by("user__username")
    )
    listed = (
        evalset.items.select_related("author", "assignee")
        .defer(*_user_columns_not_shown("author", "assignee"))
        .annotate(anchor_count=blind.visible_anchor_count("item", reader))
        .prefetch_related(Prefetch("assignments", queryset=annotating, to_attr="annotators"))
        .order_by("created_at", "id")
    )
    if state:
        listed = listed.filter(state=state)
    if qtype == "(none)":
        listed = listed.filter(qtype__isnull=True)
    elif qtype:
        listed = listed.filter(qtype=qtype)
    return search_items(listed, q)


def questions_of(evalset: EvalSet, *, exclude: str = "") -> list[tuple[str, str]]:
    """``(item id, question)`` of every item in the set but ``exclude``: one query."""
    return list(
        evalset.items.exclude(item_id=exclude).order_by("id").values_list("item_id", "question")
    )


def qtype_suggestions(evalset: EvalSet) -> list[str]:
    """The set's own list of question types when an owner keeps one; else context-grid's
    suggested types and every type the set already uses."""
    if evalset.qtypes:
        return list(evalset.qtypes)
    used = evalset.items.filter(qtype__isnull=False).values_list("qtype", flat=True).distinct()
    return sorted(set(QuestionType.ALL) | set(used))


def next_item_id(evalset: EvalSet) -> str:
    """``q<n>`` one past the highest ``q<n>`` in the set: a suggestion, freely changed."""
    highest = 0
    for item_id in evalset.items.filter(item_id__startswith="q").values_list("item_id", flat=True):
        if item_id[:1] == "q" and item_id[1:].isdigit():
            highest = max(highest, int(item_id[1:]))
    return f"q{highest + 1}"


#: Words of a search past this many are ignored (each one is a condition on three columns).
SEARCH_WORDS = 10


def search_items(items: QuerySet[EvalItem], words: str) -> QuerySet[EvalItem]:
    """Items holding every word of ``words`` (any case), each in its id, question or answer."""
    for word in words.split()[:SEARCH_WORDS]:
        items = items.filter(
            Q(item_id__icontains=word) | Q(question__icontains=word) | Q(answer__icontains=word)
        )
    return items


def evalsets_of(workspaces: Iterable) -> list[EvalSet]:
    return list(EvalSet.objects.filter(workspace__in=list(workspaces)).select_related("workspace"))


def evalsets_with_counts(workspace) -> list[EvalSet]:
    return list(evalsets(workspace).annotate(item_count=Count("items")))


# -- the review page ----------------------------------------------------------------------------


def reference_windows(context: int) -> QuerySet[AnchorResolution]:
    """Resolutions with their parse's name (never its text) and, where the anchor was found
    in its document's reference parse, ``window``: the text from ``context`` characters
    before the span to ``context`` after it, cut by the database, starting at ``window_from``.
    """
    window_from = Greatest(F("start") - context, Value(0))
    in_reference = Q(parse__is_reference=True, status__in=FOUND_STATUSES)
    return (
        AnchorResolution.objects.select_related("parse")
        .defer("detail", *(f"parse__{name}" for name in PARSE_BULK))
        .annotate(
            window_from=Case(
                When(in_reference, then=window_from), default=None, output_field=IntegerField()
            ),
            window=Case(
                When(
                    in_reference,
                    then=Substr("parse__text", window_from + 1, F("end") + context - window_from),
                ),
                default=None,
                output_field=TextField(),
            ),
        )
    )


def anchor_in_context(anchor: GoldAnchor) -> dict[str, str]:
    """Prefix, quote and suffix: from the reference parse where the anchor was found there
    (its resolutions read through ``reference_windows``), else the context stored when it
    was highlighted."""
    span = reference_span(anchor, anchor.resolutions.all())
    res = span.resolution if span is not None else None
    if res is not None and getattr(res, "window", None) is not None:
        start, end = res.start - res.window_from, res.end - res.window_from
        return {
            "prefix": res.window[:start],
            "quote": res.window[start:end],
            "suffix": res.window[end:],
            "where": "reference parse",
        }
    return {
        "prefix": anchor.prefix,
        "quote": anchor.quote,
        "suffix": anchor.suffix,
        "where": "as highlighted" if anchor.reference_parse_id else "typed quote, not located",
    }


def item_ids(evalset: EvalSet) -> list[str]:
    """The set's item ids in the set's order (the assign form's list)."""
    return list(
        EvalItem.objects.filter(evalset=evalset)
        .order_by("created_at", "id")
        .values_list("item_id", flat=True)
    )


def item_delete_impact(item: EvalItem) -> dict[str, int]:
    """What deleting ``item`` removes with it, counted for the confirm step."""
    return {
        "anchors": GoldAnchor.objects.filter(item=item).count(),
        "resolutions": AnchorResolution.objects.filter(anchor__item=item).count(),
        "comments": Comment.objects.filter(item=item).count(),
        "assignments": ItemAssignment.objects.filter(item=item).count(),
    }
