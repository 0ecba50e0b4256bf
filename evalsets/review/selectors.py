"""Reads for review: assignments, queues, comments, history, changes and the inbox."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
)

from evalsets import access
from evalsets.anchoring.selectors import (
    CONTENT_FIELDS,
    _user_columns_not_shown,
    reference_windows,
)
from evalsets.errors import InvalidInput
from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    AssignmentKind,
    Comment,
    EvalItem,
    EvalSet,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemEvent,
    ItemState,
    Notification,
    ParseVersion,
)
from evalsets.pure.textpages import page_of
from evalsets.review import blind
from evalsets.workspaces.selectors import members

ANCHOR_EVENTS = (
    EventKind.ANCHOR_CREATED,
    EventKind.ANCHOR_GRADE_CHANGED,
    EventKind.ANCHOR_DELETED,
)


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


def recent_events(item: EvalItem, *, reader, limit: int = 200) -> list[ItemEvent]:
    """The item's latest events that ``reader`` (a membership) may see (``blind``)."""
    events = blind.visible_events(ItemEvent.objects.filter(item=item), reader)
    return list(events.order_by("-at", "-id")[:limit])


# -- the audit trail and four eyes --------------------------------------------------------------


def history(*, workspace, evalset_slug: str, item_id: str, reader) -> QuerySet[ItemEvent]:
    """Every event of one item that ``reader`` (a membership) may see (``blind``), oldest
    first, whether or not the item still exists."""
    events = ItemEvent.objects.filter(
        workspace=workspace, evalset_slug=evalset_slug, item_key=item_id
    )
    return blind.visible_events(events, reader).order_by("at", "id")


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
    reader=None,
    limit: int = CHANGES_LIMIT,
) -> list[ItemEvent]:
    """The workspace's audit events after event ``after``, oldest first: those of one item
    (``evalset_slug`` and ``item_key``), or the anchor changes on one document (``source_id``),
    less those ``reader`` (a membership; None: the system) may not see. One query; the pages
    poll it."""
    events = ItemEvent.objects.filter(workspace=workspace, id__gt=after)
    if item_key:
        events = events.filter(evalset_slug=evalset_slug, item_key=item_key)
    if source_id:
        events = events.filter(kind__in=ANCHOR_EVENTS, data__source_id=source_id)
    return list(blind.visible_events(events, reader).order_by("id")[:limit])


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
    waiting = _waiting_for(role)
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


def _waiting_for(role: str) -> Q:
    """The item states in which an assignment of ``role`` still has work to do."""
    if role == AssignmentKind.ANNOTATE:
        return Q(item__state__in=[ItemState.DRAFT, ItemState.CHANGES_REQUESTED])
    if role == AssignmentKind.REVIEW:
        return Q(item__state=ItemState.SUBMITTED)
    raise InvalidInput(f"role must be annotate or review, got {role!r}", field="role")


def open_assignments() -> Q:
    """Assignments with work left: not done, and not a review of an item already approved
    (approved by someone else, or before it was assigned, it has nothing left to review)."""
    return Q(done_at__isnull=True) & ~Q(kind=AssignmentKind.REVIEW, item__state=ItemState.APPROVED)


def stream(*, evalset: EvalSet, user, role: str, item: EvalItem | None = None) -> dict:
    """Where ``item`` stands in ``user``'s stream of ``role`` work in ``evalset``.

    ``position`` (1-based, None when the item is not in it) and ``total`` count every item
    assigned to them for that work, done or not, so "3 of 12" stays put as they work;
    ``left`` is how many still wait, and ``next`` the item id to open after this one (the
    first waiting one after it, else the first waiting one before it; None when none waits).
    """
    rows = list(
        ItemAssignment.objects.filter(item__evalset=evalset, user=user, kind=role)
        .annotate(waiting=ExpressionWrapper(_waiting_for(role), output_field=BooleanField()))
        .order_by("item__created_at", "item__id")
        .values_list("item__item_id", "done_at", "waiting")
    )
    ids = [item_id for item_id, _, _ in rows]
    here = ids.index(item.item_id) if item is not None and item.item_id in ids else -1
    waiting = [(n, i) for n, (i, done_at, open_) in enumerate(rows) if done_at is None and open_]
    upcoming = [i for n, i in waiting if n > here] + [i for n, i in waiting if n < here]
    return {
        "role": role,
        "position": here + 1 if here >= 0 else None,
        "total": len(ids),
        "left": len(waiting),
        "next": upcoming[0] if upcoming else None,
    }


def queues_of(user, workspaces: Iterable) -> list[dict]:
    """``user``'s streams with work waiting in these workspaces: for each eval set and kind
    of work, ``{"evalset", "role", "left"}``, in set order. Two queries."""
    waiting = _waiting_for(AssignmentKind.ANNOTATE) & Q(kind=AssignmentKind.ANNOTATE) | (
        _waiting_for(AssignmentKind.REVIEW) & Q(kind=AssignmentKind.REVIEW)
    )
    counts = (
        ItemAssignment.objects.filter(
            waiting,
            user=user,
            done_at__isnull=True,
            item__evalset__workspace__in=list(workspaces),
        )
        .values_list("item__evalset", "kind")
        .annotate(left=Count("id"))
    )
    left = {(evalset_pk, kind): n for evalset_pk, kind, n in counts}
    sets = EvalSet.objects.filter(pk__in={pk for pk, _ in left}).select_related("workspace")
    return [
        {"evalset": evalset, "role": role, "left": left[(evalset.pk, role)]}
        for evalset in sets.order_by("workspace__slug", "slug")
        for role in AssignmentKind.values
        if (evalset.pk, role) in left
    ]


def review_items(
    evalset: EvalSet, *, membership, state: str, mine: bool, limit: int, context: int
) -> list[EvalItem]:
    """The items in ``state`` (only those assigned to the member for review when ``mine``),
    oldest change first, at most ``limit``, each with the anchors the member may see
    (``blind``; resolutions read through ``reference_windows(context)``), its comments,
    ``writers`` (``writers_of``) and ``blind`` (overlapped and not adjudicated yet)."""
    user = membership.user
    anchors = blind.visible_anchors(
        GoldAnchor.objects.select_related("created_by")
        .defer(*_user_columns_not_shown("created_by"))
        .prefetch_related(Prefetch("resolutions", queryset=reference_windows(context))),
        membership,
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
        .annotate(blind=Exists(blind.blind_items().filter(pk=OuterRef("pk"))))
        .prefetch_related(
            Prefetch("anchors", queryset=anchors), Prefetch("comments", queryset=comments)
        )
        .order_by("updated_at", "id")[:limit]
    )
    who_wrote = writers_of(items)
    for item in items:
        item.writers = who_wrote[item.pk]
    return items


#: The parser whose parse carries the character boxes the PDF view draws from.
PDF_PARSER = "pdfium"


def pdf_places(anchors: Iterable[GoldAnchor]) -> dict[int, dict]:
    """Where each anchor lies on its PDF, for the review card's picture of the page: for an
    anchor found in a ``pdfium`` parse, ``{"parse", "page", "start", "end"}`` (offsets in that
    parse). Its resolutions must be prefetched with their parse (``reference_windows``);
    the pages of every parse named are read in one query, their text never."""
    found: dict[int, AnchorResolution] = {}
    for anchor in anchors:
        for res in anchor.resolutions.all():
            if res.parse.parser == PDF_PARSER and res.status in FOUND_STATUSES and res.end:
                found[anchor.pk] = res
                break
    starts = dict(
        ParseVersion.objects.filter(pk__in={r.parse_id for r in found.values()}).values_list(
            "pk", "page_starts"
        )
    )
    return {
        pk: {
            "parse": str(res.parse.public_id),
            "page": page_of(starts.get(res.parse_id), res.start),
            "start": res.start,
            "end": res.end,
        }
        for pk, res in found.items()
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
        .annotate(is_open=ExpressionWrapper(open_assignments(), output_field=BooleanField()))
        .select_related("item")
        .order_by("item__created_at", "item__id")
    )
    for row in rows:
        person = people.get(row.user_id)
        if person is None:  # no longer a member: their assignments no longer count
            continue
        if row.is_open:
            person[row.kind].append(row)
        else:
            person["done"] += 1
    return list(people.values())
