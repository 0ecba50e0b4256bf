"""What pages and the API read: every read that crosses relations, in one place.

Each list costs a fixed number of queries however long it grows (``tests/test_query_counts.py``
counts them at 5 and 25 items), and no read of a page loads a parse's whole text: a parse can
be megabytes, and a page needs a window of it (``reference_windows``). Pages
(``labelling/``), the API (``evalsets/api/``), the dashboard's figures and the review
services' checks (four eyes, what changed since a version) call these; writes go through
``services`` and ``review``.
"""

from __future__ import annotations

from collections.abc import Iterable

from contextgrid import QuestionType
from django.contrib.auth import get_user_model
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
from django.http import Http404
from django.shortcuts import get_object_or_404

from evalsets import access, sweep, validation
from evalsets.errors import InvalidInput
from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    AssignmentKind,
    Comment,
    Document,
    EvalItem,
    EvalSet,
    EventKind,
    GoldAnchor,
    Invitation,
    ItemAssignment,
    ItemEvent,
    ItemState,
    Membership,
    Notification,
    ParseStatus,
    ParseVersion,
    Release,
    Role,
)
from evalsets.portability import reference_span

#: Item fields whose edit makes the editor one of the item's writers (four eyes).
CONTENT_FIELDS = ("question", "qtype", "answer")
ANCHOR_EVENTS = (
    EventKind.ANCHOR_CREATED,
    EventKind.ANCHOR_GRADE_CHANGED,
    EventKind.ANCHOR_DELETED,
)

# -- who may see it: the caller's membership, and objects inside that workspace, or 404 --------


def membership_for(user, workspace_slug: str) -> Membership:
    """The caller's membership in the workspace, or 404 (never a hint that it exists)."""
    if not user or not user.is_authenticated:
        raise Http404("no such workspace")
    # One row at most (one membership per user and workspace): no ORDER BY, no user join.
    membership = (
        Membership.objects.select_related("workspace")
        .filter(workspace__slug=workspace_slug, user=user)
        .order_by()[:1]
    )
    membership = next(iter(membership), None)
    if membership is None:
        raise Http404("no such workspace")
    membership.user = user
    return membership


def evalset_in(workspace, slug: str) -> EvalSet:
    """The workspace's eval set ``slug``, or 404."""
    return get_object_or_404(evalsets(workspace), slug=slug)


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


def invitations_naming(name: str) -> QuerySet[Invitation]:
    """The invitations to ``name``: a user name exactly; an e-mail address whatever the case
    of its ASCII letters, and nothing else folded (``validation.address_key``)."""
    if "@" not in name:
        return Invitation.objects.filter(username=name)
    # The database's case-insensitive match finds every candidate (it folds at least ASCII
    # case); the exact key then decides, so no database's wider folding lets one through.
    key = validation.address_key(name)
    candidates = Invitation.objects.filter(username__iexact=name).values_list("pk", "username")
    return Invitation.objects.filter(
        pk__in=[pk for pk, held in candidates if validation.address_key(held) == key]
    )


def invitations_for(user) -> QuerySet[Invitation]:
    """The invitations waiting for ``user``'s answer: to their username, or to their e-mail
    address (an owner may invite by either)."""
    invited = Invitation.objects.filter(username=user.get_username())
    if getattr(user, "email", ""):
        invited = invited | invitations_naming(user.email)
    return invited.select_related("workspace", "invited_by")


def invitation_for(user, workspace_slug: str) -> Invitation:
    """``user``'s invitation to the workspace, or 404 (the same whether or not it exists)."""
    invitation = invitations_for(user).filter(workspace__slug=workspace_slug).first()
    if invitation is None:
        raise Http404("no such invitation")
    return invitation


def documents(workspace) -> QuerySet[Document]:
    return Document.objects.filter(workspace=workspace).prefetch_related(
        Prefetch("parses", queryset=ParseVersion.objects.defer("text"))
    )


def documents_with_anchor_counts(workspace) -> list[Document]:
    """The workspace's documents with their parses, who uploaded each, and ``anchor_count``."""
    return list(
        documents(workspace).select_related("uploaded_by").annotate(anchor_count=Count("anchors"))
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
    """Anchors with their rows in every parse as the list ``prefetched_resolutions``."""
    return (
        GoldAnchor.objects.select_related("reference_parse")
        .defer(*(f"reference_parse__{name}" for name in PARSE_BULK))
        .prefetch_related(_resolutions_prefetch())
    )


def with_resolutions(anchor: GoldAnchor) -> GoldAnchor:
    """An anchor just written, as ``anchors_with_resolutions`` would read it, without reading
    it again: only its rows in every parse are read (none yet unless tasks run in-process)."""
    prefetch_related_objects([anchor], _resolutions_prefetch())
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


def with_anchors(items: Iterable[EvalItem]) -> list[EvalItem]:
    """``items`` with their anchors (and those anchors' resolutions) as ``prefetched_anchors``.

    Only items that have anchors are queried for them, so a page of fresh drafts costs no
    query at all; Django skips objects that already carry the ``to_attr`` list.
    """
    items = list(items)
    for item in items:
        if not getattr(item, "has_anchors", True):
            item.prefetched_anchors = []
    prefetch_related_objects(
        items,
        Prefetch("anchors", queryset=anchors_with_resolutions(), to_attr="prefetched_anchors"),
    )
    return items


def parse_in_workspace(workspace, public_id) -> ParseVersion:
    """A parse of one of the workspace's documents, or a 400 naming the field."""
    parse = (
        ParseVersion.objects.select_related("document")
        .defer("text")  # megabytes; a highlight cuts its part from the process's copy (services)
        .filter(public_id=public_id, document__workspace=workspace)
        .first()
    )
    if parse is None:
        raise InvalidInput(f"no parse {str(public_id)!r} in this workspace", field="parse")
    return parse


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
    evalset: EvalSet, *, state: str = "", qtype: str = "", q: str = ""
) -> QuerySet[EvalItem]:
    """The eval set page's items, oldest first, each with ``anchor_count``; ``qtype`` may be
    ``(none)`` for items without one; ``q`` keeps those with its words (``search_items``)."""
    listed = (
        evalset.items.select_related("author", "assignee")
        .defer(*_user_columns_not_shown("author", "assignee"))
        .annotate(anchor_count=Count("anchors"))
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
    """context-grid's suggested question types and every type the set already uses."""
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


# -- the home and workspace pages ---------------------------------------------------------------


def memberships_with_counts(user) -> list[Membership]:
    """The user's memberships, each with its workspace's ``documents`` and ``evalsets``."""
    return list(
        Membership.objects.filter(user=user)
        .select_related("workspace")
        .annotate(
            documents=Count("workspace__documents", distinct=True),
            evalsets=Count("workspace__evalsets", distinct=True),
        )
    )


def evalsets_of(workspaces: Iterable) -> list[EvalSet]:
    return list(EvalSet.objects.filter(workspace__in=list(workspaces)).select_related("workspace"))


def assigned_to(username: str) -> Q:
    """Items assigned to the person named ``username``: as the item's ``assignee`` or through
    an annotate assignment (with overlap the single ``assignee`` names only the first of
    several annotators)."""
    annotating = ItemAssignment.objects.filter(
        item=OuterRef("pk"), user__username=username, kind=AssignmentKind.ANNOTATE
    )
    return Q(assignee__username=username) | Q(Exists(annotating))


def items_for_person(user, workspaces: Iterable) -> tuple[list[EvalItem], list[EvalItem]]:
    """``(assigned, recent)``: the open items assigned to ``user`` (newest change first, 20
    at most) and the other items they wrote (10 at most), in these workspaces: an item shows
    once, under "assigned" while it is open there."""
    mine = EvalItem.objects.filter(evalset__workspace__in=list(workspaces)).select_related(
        "evalset__workspace"
    )
    assigned = list(
        mine.filter(assigned_to(user.username))
        .exclude(state=ItemState.APPROVED)
        .order_by("-updated_at")[:20]
    )
    recent = mine.filter(author=user).exclude(pk__in=[item.pk for item in assigned])
    return assigned, list(recent.order_by("-updated_at")[:10])


# -- the inbox ----------------------------------------------------------------------------------

#: The most notifications the home page and ``/api/inbox/`` list at once.
INBOX_LIMIT = 50


def _notifications_of(user) -> QuerySet[Notification]:
    # Only from workspaces the person is still in: a former member reads nothing of theirs.
    return Notification.objects.filter(recipient=user, workspace__memberships__user=user)


def inbox(user, *, unread_only: bool = False, limit: int = INBOX_LIMIT) -> list[Notification]:
    """``user``'s notifications, newest first, each with its workspace and (while it exists)
    its item: one query however many."""
    listed = _notifications_of(user).select_related("workspace", "item")
    if unread_only:
        listed = listed.filter(read_at__isnull=True)
    return list(listed.order_by("-created_at", "-id")[:limit])


def unread_count(user) -> int:
    """How many of ``user``'s notifications are unread (the header's count)."""
    if not user or not user.is_authenticated:
        return 0
    return _notifications_of(user).filter(read_at__isnull=True).count()


def evalsets_with_counts(workspace) -> list[EvalSet]:
    return list(evalsets(workspace).annotate(item_count=Count("items")))


# -- the releases page --------------------------------------------------------------------------


def releases_of(evalset: EvalSet) -> QuerySet[Release]:
    return (
        Release.objects.filter(evalset=evalset)
        .select_related("evalset__workspace", "created_by")
        .prefetch_related("files")
    )


def ready_parsers_by_kind(workspace) -> dict[str, list[str]]:
    """Per document kind in the workspace, the parsers with a ready parse of one of them (a
    release's gold spans come from one per kind). Ordered on the selected columns only: the
    model's own ordering would add columns to DISTINCT and repeat names."""
    out: dict[str, list[str]] = {}
    pairs = (
        ParseVersion.objects.filter(document__workspace=workspace, status=ParseStatus.READY)
        .order_by("document__kind", "parser")
        .values_list("document__kind", "parser")
        .distinct()
    )
    for kind, parser in pairs:
        out.setdefault(kind, []).append(parser)
    return out


# -- the item page ------------------------------------------------------------------------------


def documents_to_highlight(workspace) -> list[Document]:
    """The workspace's documents whose reference parse is ready to be read and highlighted."""
    return [
        doc
        for doc in documents(workspace)
        if any(p.is_reference and p.status == ParseStatus.READY for p in doc.parses.all())
    ]


def comment_threads(item: EvalItem) -> list[dict]:
    """The item's comments as threads (a top-level comment and its replies, oldest first).

    A comment on an anchor carries where that anchor was highlighted, so the page can jump
    straight to it in the document.
    """
    comments = list(
        Comment.objects.filter(item=item)
        .select_related("author", "anchor__document", "parent")
        .order_by("created_at", "id")
    )
    by_parent: dict[int | None, list[Comment]] = {}
    for comment in comments:
        by_parent.setdefault(comment.parent_id, []).append(comment)

    def replies(comment: Comment) -> list[Comment]:
        found, queue = [], list(by_parent.get(comment.pk, []))
        while queue:
            reply = queue.pop(0)
            found.append(reply)
            queue.extend(by_parent.get(reply.pk, []))
        return found

    known = {c.pk for c in comments}
    roots = [c for c in comments if c.parent_id is None or c.parent_id not in known]
    return [{"comment": root, "replies": replies(root)} for root in roots]


def recent_events(item: EvalItem, limit: int = 200) -> list[ItemEvent]:
    return list(ItemEvent.objects.filter(item=item).order_by("-at", "-id")[:limit])


# -- the document page --------------------------------------------------------------------------


def document_anchors(document: Document) -> QuerySet[GoldAnchor]:
    """Every anchor on ``document`` in reading order, with its item (and set) and its
    resolutions: three queries whatever the count."""
    return (
        anchors_with_resolutions()
        .filter(document=document)
        .select_related("item__evalset")
        .order_by("ref_start", "id")
    )


# -- the audit trail and four eyes --------------------------------------------------------------


def history(*, workspace, evalset_slug: str, item_id: str) -> QuerySet[ItemEvent]:
    """Every event of one item, oldest first, whether or not the item still exists."""
    return ItemEvent.objects.filter(
        workspace=workspace, evalset_slug=evalset_slug, item_key=item_id
    ).order_by("at", "id")


#: The most changes one poll of ``/changes/`` answers (a page far behind reloads instead).
CHANGES_LIMIT = 50


def last_change(workspace) -> int:
    """The id of the workspace's latest audit event (0 if none): where a page's polling starts."""
    latest = ItemEvent.objects.filter(workspace=workspace).order_by("-id").values_list("id")[:1]
    return next((row[0] for row in latest), 0)


def changes_after(
    workspace,
    *,
    after: int,
    evalset_slug: str = "",
    item_key: str = "",
    source_id: str = "",
    limit: int = CHANGES_LIMIT,
) -> list[ItemEvent]:
    """The workspace's audit events after event ``after``, oldest first: those of one item
    (``evalset_slug`` and ``item_key``), or the anchor changes on one document (``source_id``).
    One query; the pages poll it."""
    events = ItemEvent.objects.filter(workspace=workspace, id__gt=after)
    if item_key:
        events = events.filter(evalset_slug=evalset_slug, item_key=item_key)
    if source_id:
        events = events.filter(kind__in=ANCHOR_EVENTS, data__source_id=source_id)
    return list(events.order_by("id")[:limit])


def changes_since(item: EvalItem, row_version: int) -> list[dict]:
    """What happened to ``item`` after the reader saw ``row_version``."""
    out = []
    for event in ItemEvent.objects.filter(item=item).order_by("at", "id"):
        seen = event.data.get("row_version")
        if seen is not None and seen > row_version:
            entry = {"kind": event.kind, "by": event.actor_name, "at": event.at.isoformat()}
            if event.kind == EventKind.EDITED:
                entry["fields"] = sorted(event.data.get("changes", {}))
            if event.anchor_uuid:
                entry["anchor"] = str(event.anchor_uuid)
                entry["quote"] = event.data.get("quote")
            out.append(entry)
    return out


def writers_of(items: Iterable[EvalItem]) -> dict[int, set[int]]:
    """For each item, the users who wrote it: its author, whoever edited its question, answer
    or type, and whoever created, regraded or deleted one of its anchors. Two queries for any
    number of items."""
    items = list(items)
    ids: dict[int, set[int]] = {
        item.pk: ({item.author_id} if item.author_id else set()) for item in items
    }
    for item_pk, user_pk in GoldAnchor.objects.filter(
        item__in=items, created_by__isnull=False
    ).values_list("item", "created_by"):
        ids[item_pk].add(user_pk)
    for item_pk, kind, actor, data in ItemEvent.objects.filter(
        item__in=items, actor__isnull=False, kind__in=[EventKind.EDITED, *ANCHOR_EVENTS]
    ).values_list("item", "kind", "actor", "data"):
        if kind != EventKind.EDITED or set(data.get("changes", {})) & set(CONTENT_FIELDS):
            ids[item_pk].add(actor)
    return ids


def writers(item: EvalItem) -> set[int]:
    """The users who wrote ``item`` (see ``writers_of``)."""
    return writers_of([item])[item.pk]


def queue(*, evalset: EvalSet, user, role: str) -> QuerySet[ItemAssignment]:
    """My open assignments in ``evalset`` whose item is waiting for that kind of work.

    Asking for a kind of work needs the role that does it (``access.WORK``), as being
    assigned it does.
    """
    if role == AssignmentKind.ANNOTATE:
        waiting = Q(item__state__in=[ItemState.DRAFT, ItemState.CHANGES_REQUESTED])
    elif role == AssignmentKind.REVIEW:
        waiting = Q(item__state=ItemState.SUBMITTED)
    else:
        raise InvalidInput(f"role must be annotate or review, got {role!r}", field="role")
    access.check_user(
        user=user, workspace=evalset.workspace, needed=access.WORK[role], what="this", field="role"
    )
    return (
        ItemAssignment.objects.filter(
            waiting, item__evalset=evalset, user=user, kind=role, done_at__isnull=True
        )
        .select_related("item")
        .order_by("item__created_at", "item__id")
    )


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


def review_items(
    evalset: EvalSet, *, user, state: str, mine: bool, limit: int, context: int
) -> list[EvalItem]:
    """The items in ``state`` (only those assigned to ``user`` for review when ``mine``),
    oldest change first, at most ``limit``, each with its anchors (resolutions read through
    ``reference_windows(context)``), its comments and ``writers`` (``writers_of``)."""
    anchors = GoldAnchor.objects.prefetch_related(
        Prefetch("resolutions", queryset=reference_windows(context))
    )
    comments = Comment.objects.select_related("author").order_by("created_at", "id")
    listed = evalset.items.filter(state=state)
    if mine:
        listed = listed.filter(
            assignments__user=user,
            assignments__kind=AssignmentKind.REVIEW,
            assignments__done_at__isnull=True,
        )
    items = list(
        listed.select_related("author")
        .defer(*_user_columns_not_shown("author"))
        .prefetch_related(
            Prefetch("anchors", queryset=anchors), Prefetch("comments", queryset=comments)
        )
        .order_by("updated_at", "id")[:limit]
    )
    who_wrote = writers_of(items)
    for item in items:
        item.writers = who_wrote[item.pk]
    return items


# -- the owner's pages ---------------------------------------------------------------------------


def members(workspace) -> list[Membership]:
    """The workspace's members, owners first, each knowing whether they are its last owner."""
    order = Case(*(When(role=r, then=Value(i)) for i, r in enumerate(Role.values)))
    listed = list(
        Membership.objects.filter(workspace=workspace)
        .select_related("user", "workspace")
        .order_by(order, "user__username")
    )
    owners = sum(1 for m in listed if m.role == Role.OWNER)
    for membership in listed:
        membership.last_owner = membership.role == Role.OWNER and owners == 1
    return listed


def pending_invitations(workspace) -> QuerySet[Invitation]:
    return workspace.invitations.select_related("invited_by").order_by("username")


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


def document_delete_impact(document: Document) -> dict[str, int]:
    """What deleting ``document`` removes (parses, resolutions) and leaves waiting (anchors)."""
    anchors = GoldAnchor.objects.filter(document=document)
    return {
        "parses": ParseVersion.objects.filter(document=document).count(),
        "resolutions": AnchorResolution.objects.filter(parse__document=document).count(),
        "anchors": anchors.count(),
        "items": anchors.values("item").distinct().count(),
    }


def assignment_queues(evalset: EvalSet) -> list[dict]:
    """Each member's queue in ``evalset``: open and done assignments of each kind, by person.

    Two queries for any number of people and assignments.
    """
    people = {
        m.user_id: {"membership": m, "annotate": [], "review": [], "done": 0}
        for m in members(evalset.workspace)
    }
    rows = (
        ItemAssignment.objects.filter(item__evalset=evalset)
        .select_related("item")
        .order_by("item__created_at", "item__id")
    )
    for row in rows:
        person = people.get(row.user_id)
        if person is None:  # no longer a member: their assignments no longer count
            continue
        if row.done_at is None:
            person[row.kind].append(row)
        else:
            person["done"] += 1
    return list(people.values())


def background_backlog(workspace) -> dict:
    """What waits in the background in ``workspace`` and how fast it drains (a fixed handful
    of counts; ``evalsets.sweep.pending_summary``), for the workspace page's panel."""
    return sweep.pending_summary(workspace=workspace)
