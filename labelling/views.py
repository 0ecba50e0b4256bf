"""Server-rendered pages for annotators: home, workspace, eval set, item editor, document view.

Each page view declares the role it needs (``@requires``, ``labelling.permissions``), which
resolves the caller's membership first (a 404 for anyone who is not a member, so another
workspace's pages look exactly like missing ones) onto ``request.membership``; the view reads
only through that workspace. Writes go through the JSON API from the page's small script,
so the rules and error messages live in one place. The two ``.json`` views are partials the
scripts fetch: item search for the highlight popover, and a document's anchors.
"""

from __future__ import annotations

from contextgrid import QuestionType
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from evalsets import access, selectors
from evalsets.api.permissions import may
from evalsets.api.release_views import ImportCommitView
from evalsets.api.serializers import ItemSerializer
from evalsets.api.views import AnchorViewSet, DocumentViewSet, EvalSetViewSet, ItemViewSet
from evalsets.models import (
    AnchorResolution,
    Comment,
    Document,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemEvent,
    ItemState,
    Membership,
    ParseStatus,
    ResolutionStatus,
    Role,
)
from labelling.permissions import requires

ITEMS_PER_PAGE = 100
SEARCH_RESULTS = 20

#: What the badges say; context-grid's ``not_found`` reads "lost" to a person.
BADGE = {s.value: s.label.lower() for s in ResolutionStatus}


def _progress(counts: dict[str, int]) -> dict:
    """Counts per state and the percentages a stacked progress bar draws."""
    total = sum(counts.values())
    out = {state.value: counts.get(state.value, 0) for state in ItemState}
    out["total"] = total
    for state in ItemState:
        out[f"{state.value}_pct"] = round(100 * out[state.value] / total, 1) if total else 0
    # Where each drawn segment starts, in the bar's order: the bar is SVG, so it needs no
    # inline style (which the Content-Security-Policy refuses).
    start = 0.0
    for state in ("approved", "submitted", "changes_requested"):
        out[f"{state}_x"] = round(start, 1)
        start += out[f"{state}_pct"]
    return out


def _set_progress(evalsets) -> dict[int, dict]:
    """Progress of each eval set, in one query."""
    rows = (
        EvalItem.objects.filter(evalset__in=evalsets)
        .values("evalset", "state")
        .annotate(n=Count("id"))
    )
    counts: dict[int, dict[str, int]] = {}
    for row in rows:
        counts.setdefault(row["evalset"], {})[row["state"]] = row["n"]
    return {evalset.pk: _progress(counts.get(evalset.pk, {})) for evalset in evalsets}


@require_safe
@requires(access.SIGNED_IN)
def home(request: HttpRequest) -> HttpResponse:
    memberships = list(
        Membership.objects.filter(user=request.user)
        .select_related("workspace")
        .annotate(
            documents=Count("workspace__documents", distinct=True),
            evalsets=Count("workspace__evalsets", distinct=True),
        )
    )
    workspaces = [m.workspace for m in memberships]
    sets = list(EvalSet.objects.filter(workspace__in=workspaces).select_related("workspace"))
    progress = _set_progress(sets)
    for evalset in sets:
        evalset.progress = progress[evalset.pk]
    mine = EvalItem.objects.filter(evalset__workspace__in=workspaces).select_related(
        "evalset__workspace"
    )
    assigned = mine.filter(assignee=request.user).exclude(state="approved").order_by("-updated_at")
    recent = mine.filter(Q(author=request.user)).order_by("-updated_at")
    return render(
        request,
        "labelling/home.html",
        {
            "memberships": memberships,
            "invitations": selectors.invitations_for(request.user),
            "evalsets": sets,
            "assigned": assigned[:20],
            "recent": recent[:10],
        },
    )


@require_safe
@requires(Role.VIEWER)
def workspace_page(request: HttpRequest, ws: str) -> HttpResponse:
    membership = request.membership
    workspace = membership.workspace
    documents = selectors.documents(workspace).select_related("uploaded_by")
    sets = list(selectors.evalsets(workspace).annotate(item_count=Count("items")))
    progress = _set_progress(sets)
    for evalset in sets:
        evalset.progress = progress[evalset.pk]
    return render(
        request,
        "labelling/workspace.html",
        {
            "membership": membership,
            "workspace": workspace,
            "documents": documents,
            "evalsets": sets,
            "can_write": may(membership, DocumentViewSet, "create"),
            "is_owner": may(membership, EvalSetViewSet, "create"),
        },
    )


def _evalset_for(request: HttpRequest, ws: str, set_slug: str) -> tuple[Membership, EvalSet]:
    membership = request.membership
    evalset = get_object_or_404(selectors.evalsets(membership.workspace), slug=set_slug)
    return membership, evalset


def _qtype_suggestions(evalset: EvalSet) -> list[str]:
    used = (
        EvalItem.objects.filter(evalset=evalset, qtype__isnull=False)
        .values_list("qtype", flat=True)
        .distinct()
    )
    return sorted(set(QuestionType.ALL) | set(used))


def _next_item_id(evalset: EvalSet) -> str:
    """``q<n>`` one past the highest ``q<n>`` in the set: a suggestion, freely changed."""
    highest = 0
    for item_id in EvalItem.objects.filter(evalset=evalset).values_list("item_id", flat=True):
        if item_id[:1] == "q" and item_id[1:].isdigit():
            highest = max(highest, int(item_id[1:]))
    return f"q{highest + 1}"


@require_safe
@requires(Role.VIEWER)
def evalset_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership, evalset = _evalset_for(request, ws, set_slug)
    state = request.GET.get("state", "")
    qtype = request.GET.get("qtype", "")
    items = (
        EvalItem.objects.filter(evalset=evalset)
        .select_related("author", "assignee")
        .annotate(anchor_count=Count("anchors"))
        .order_by("created_at", "id")
    )
    if state:
        items = items.filter(state=state)
    if qtype == "(none)":
        items = items.filter(qtype__isnull=True)
    elif qtype:
        items = items.filter(qtype=qtype)
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "membership": membership,
        "workspace": membership.workspace,
        "evalset": evalset,
        "page": page,
        "state": state,
        "qtype": qtype,
        "states": ItemState.choices,
        "qtypes": _qtype_suggestions(evalset),
        "next_id": _next_item_id(evalset),
        "progress": _set_progress([evalset])[evalset.pk],
        "can_write": may(membership, ItemViewSet, "create"),
        "can_import": may(membership, ImportCommitView, "post"),
    }
    if request.headers.get("X-Partial") == "items":
        return render(request, "labelling/_items_table.html", context)
    return render(request, "labelling/evalset.html", context)


@require_safe
@requires(Role.VIEWER)
def item_search(request: HttpRequest, ws: str, set_slug: str) -> JsonResponse:
    """Items of a set whose id or question contains ``q``, for the highlight popover."""
    _, evalset = _evalset_for(request, ws, set_slug)
    query = request.GET.get("q", "").strip()
    items = EvalItem.objects.filter(evalset=evalset)
    if query:
        items = items.filter(Q(item_id__icontains=query) | Q(question__icontains=query))
    rows = items.order_by("-updated_at").values("item_id", "question", "state", "qtype")
    return JsonResponse(
        {
            "items": [
                {
                    "id": row["item_id"],
                    "question": row["question"],
                    "state": row["state"],
                    "qtype": row["qtype"],
                }
                for row in rows[:SEARCH_RESULTS]
            ],
            "next_id": _next_item_id(evalset),
        }
    )


@require_safe
@requires(Role.VIEWER)
def item_page(request: HttpRequest, ws: str, set_slug: str, item_id: str) -> HttpResponse:
    membership, evalset = _evalset_for(request, ws, set_slug)
    (item,) = selectors.with_anchors([get_object_or_404(selectors.items(evalset), item_id=item_id)])
    documents = [
        doc
        for doc in selectors.documents(membership.workspace)
        if any(p.is_reference and p.status == ParseStatus.READY for p in doc.parses.all())
    ]
    return render(
        request,
        "labelling/item.html",
        {
            "membership": membership,
            "workspace": membership.workspace,
            "evalset": evalset,
            "item": item,
            "item_json": ItemSerializer(item).data,
            "qtypes": _qtype_suggestions(evalset),
            "documents": documents,
            "can_write": may(membership, ItemViewSet, "partial_update"),
            "threads": _comment_threads(item),
            "events": ItemEvent.objects.filter(item=item).order_by("-at", "-id")[:200],
        },
    )


def _comment_threads(item: EvalItem) -> list[dict]:
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


def _document_anchors(document: Document) -> list[dict]:
    """Every anchor on the document, with its item and where it lies in each parse.

    Read as plain rows, two queries whatever the count: a labelled document carries hundreds
    of anchors, and this is on every open of the document page.
    """
    placed: dict[int, list[dict]] = {}
    for anchor_id, parse, parser, version, status, start, end in (
        AnchorResolution.objects.filter(anchor__document=document)
        .order_by("anchor_id", "parse_id")
        .values_list(
            "anchor_id",
            "parse__public_id",
            "parse__parser",
            "parse__parser_version",
            "status",
            "start",
            "end",
        )
    ):
        placed.setdefault(anchor_id, []).append(
            {
                "parse": str(parse),
                "parser": parser,
                "parser_version": version,
                "status": status,
                "badge": BADGE.get(status, status),
                "start": start,
                "end": end,
            }
        )
    rows = (
        GoldAnchor.objects.filter(document=document)
        .order_by("ref_start", "id")
        .values_list(
            "pk",
            "public_id",
            "item__evalset__slug",
            "item__item_id",
            "item__question",
            "item__state",
            "grade",
            "quote",
            "page_hint",
            "reference_parse__public_id",
            "ref_start",
            "ref_end",
        )
    )
    return [
        {
            "id": str(public_id),
            "set": evalset,
            "item": item,
            "question": question,
            "state": state,
            "grade": grade,
            "quote": quote,
            "page_hint": page_hint,
            "highlight": (
                {"parse": str(reference), "start": ref_start, "end": ref_end}
                if reference is not None
                else None
            ),
            "resolutions": placed.get(pk, []),
        }
        for (
            pk,
            public_id,
            evalset,
            item,
            question,
            state,
            grade,
            quote,
            page_hint,
            reference,
            ref_start,
            ref_end,
        ) in rows
    ]


def _document_for(request: HttpRequest, ws: str, source_id: str) -> tuple[Membership, Document]:
    membership = request.membership
    document = get_object_or_404(selectors.documents(membership.workspace), source_id=source_id)
    return membership, document


@require_safe
@requires(Role.VIEWER)
def document_anchors(request: HttpRequest, ws: str) -> JsonResponse:
    """The anchors on ``?doc=<source_id>``, refreshed by the document view after a save."""
    _, document = _document_for(request, ws, request.GET.get("doc", ""))
    return JsonResponse({"anchors": _document_anchors(document)})


@require_safe
@requires(Role.VIEWER)
def document_page(request: HttpRequest, ws: str, doc: str) -> HttpResponse:
    membership, document = _document_for(request, ws, doc)
    parses = list(document.parses.all())
    reference = next((p for p in parses if p.is_reference), None)
    wanted = request.GET.get("parse")
    shown = next((p for p in parses if str(p.public_id) == wanted), None) if wanted else None
    if wanted and shown is None:
        raise Http404("no such parse of this document")
    shown = shown or reference
    if shown is not None and shown.status == ParseStatus.READY:
        # Page starts and the length only: the text arrives a few pages at a time.
        page_starts, length = shown.page_starts or [0], shown.text_length
    else:
        page_starts, length = [0], 0
    sets = list(selectors.evalsets(membership.workspace).values_list("slug", flat=True))
    chosen_set = request.GET.get("set") or (sets[0] if sets else "")
    config = {
        "workspace": membership.workspace.slug,
        "document": document.source_id,
        "parse": str(shown.public_id) if shown else None,
        "parse_ready": bool(shown and shown.status == ParseStatus.READY),
        "is_reference": bool(shown and shown.is_reference),
        "reference": str(reference.public_id) if reference else None,
        "page_starts": page_starts,
        "length": length,
        "parses": [
            {"id": str(p.public_id), "parser": p.parser, "version": p.parser_version}
            for p in parses
        ],
        "sets": sets,
        "set": chosen_set if chosen_set in sets else (sets[0] if sets else ""),
        "item": request.GET.get("item", ""),
        "can_write": may(membership, AnchorViewSet, "create"),
        "anchors": _document_anchors(document),
    }
    return render(
        request,
        "labelling/document.html",
        {
            "membership": membership,
            "workspace": membership.workspace,
            "document": document,
            "parses": parses,
            "shown": shown,
            "config": config,
        },
    )


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for a proxy or orchestrator: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
