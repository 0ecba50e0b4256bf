"""Server-rendered pages for annotators: home, workspace, eval set, item editor, document view.

Each page view declares the role it needs (``@requires``, ``labelling.permissions``), which
resolves the caller's membership first (a 404 for anyone who is not a member, so another
workspace's pages look exactly like missing ones) onto ``request.membership``; the view reads
through the domains' ``selectors`` only, inside that workspace, and renders (an object a script
needs is embedded in the API's shape by ``evalsets.releases.representations``, never by an API
serializer). Writes go through the JSON API from the page's script, so the rules and error
messages live in one place; the scripts read the API too (the document page's anchors and
item search).
"""

from __future__ import annotations

from csp.decorators import csp
from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_safe

from evalsets import access
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.documents import ingest, renditions
from evalsets.documents import selectors as documents_selectors
from evalsets.models import AssignmentKind, ItemState, ParseStatus, Role
from evalsets.pure.guidelines import render_guidelines
from evalsets.releases import representations
from evalsets.review import blind, workflow
from evalsets.review import selectors as review_selectors
from evalsets.validation import MAX_QUESTION_CHARS
from evalsets.workspaces import selectors as workspaces_selectors
from labelling.labels import LABELS
from labelling.permissions import requires

ITEMS_PER_PAGE = 100


def progress(counts: dict[str, int]) -> dict:
    """Counts per state and the percentages a stacked progress bar draws."""
    total = sum(counts.values())
    out: dict = {state.value: counts.get(state.value, 0) for state in ItemState}
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


def _with_progress(evalsets: list) -> list:
    counts = anchoring_selectors.state_counts(evalsets)
    for evalset in evalsets:
        evalset.progress = progress(counts[evalset.pk])
    return evalsets


@require_safe
@requires(access.SIGNED_IN)
def home(request: HttpRequest) -> HttpResponse:
    memberships = workspaces_selectors.memberships_with_counts(request.user)
    workspaces = [m.workspace for m in memberships]
    assigned, recent = review_selectors.items_for_person(request.user, workspaces)
    notifications = review_selectors.inbox(request.user)
    for note in notifications:
        note.words = LABELS["notifications"][note.kind]["words"]
    return render(
        request,
        "labelling/home.html",
        {
            "memberships": memberships,
            "invitations": workspaces_selectors.invitations_for(request.user),
            "evalsets": _with_progress(anchoring_selectors.evalsets_of(workspaces)),
            "assigned": assigned,
            "queues": review_selectors.queues_of(request.user, workspaces),
            "recent": recent,
            "notifications": notifications,
        },
    )


@require_safe
@requires(Role.VIEWER)
def workspace_page(request: HttpRequest, ws: str) -> HttpResponse:
    membership = request.membership
    workspace = membership.workspace
    documents = documents_selectors.documents_with_anchor_counts(workspace, reader=membership)
    for doc in documents:
        statuses = [p.status for p in doc.parses.all()]
        doc.failed = ParseStatus.FAILED in statuses
        doc.failed_upload = bool(statuses) and set(statuses) == {ParseStatus.FAILED}
        # A parse that ran out of time is retried with the slow parse queue's time, or not at
        # all once it had that: the row says which before anyone presses Retry.
        failed = [p for p in doc.parses.all() if p.status == ParseStatus.FAILED]
        plans = {p.pk: ingest.retry_plan(p) for p in failed}
        doc.retried_slower = [p.parser for p in failed if plans[p.pk] == ingest.RETRY_SLOWER]
        doc.not_retried = [p.parser for p in failed if plans[p.pk] == ingest.RETRY_REFUSED]
        doc.slow_timeout = settings.GROUNDWORK_PARSE_SLOW_TIMEOUT_S
    can_delete = access.allows(membership, "document", "destroy")
    return render(
        request,
        "labelling/workspace.html",
        {
            "membership": membership,
            "workspace": workspace,
            "documents": documents,
            "evalsets": _with_progress(anchoring_selectors.evalsets_with_counts(workspace)),
            "can_write": access.allows(membership, "document", "create"),
            "can_retry": access.allows(membership, "document", "reparse"),
            "can_delete": can_delete,
            "delete_refusal": ""
            if can_delete
            else access.refusal(
                workspace.slug,
                membership.role,
                access.required_role("document", "destroy"),
                "removing a document",
            ),
            "is_owner": access.allows(membership, "evalset", "create"),
            "can_manage": access.allows(membership, "member", "create"),
            "backlog": workspaces_selectors.background_backlog(workspace),
        },
    )


@require_safe
@requires(Role.VIEWER)
def evalset_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    state = request.GET.get("state", "")
    qtype = request.GET.get("qtype", "")
    q = request.GET.get("q", "").strip()[:200]
    items = anchoring_selectors.item_list(evalset, reader=membership, state=state, qtype=qtype, q=q)
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "membership": membership,
        "workspace": membership.workspace,
        "evalset": evalset,
        "page": page,
        "state": state,
        "qtype": qtype,
        "q": q,
        "states": ItemState.choices,
        "qtypes": anchoring_selectors.qtype_suggestions(evalset),
        "next_id": anchoring_selectors.next_item_id(evalset),
        "progress": progress(anchoring_selectors.state_counts([evalset])[evalset.pk]),
        "can_write": access.allows(membership, "item", "create"),
        "can_import": access.allows(membership, "import", "post"),
        "max_question_chars": MAX_QUESTION_CHARS,
    }
    if request.headers.get("X-Partial") == "items":
        return render(request, "labelling/_items_table.html", context)
    return render(request, "labelling/evalset.html", context)


@require_safe
@requires(Role.VIEWER)
def item_page(request: HttpRequest, ws: str, set_slug: str, item_id: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    (item,) = anchoring_selectors.with_anchors(
        [get_object_or_404(anchoring_selectors.items(evalset), item_id=item_id)], reader=membership
    )
    # "Highlight evidence in" opens on the item's own document (its first evidence's), not
    # on whichever comes first in the alphabet.
    own_document = next((a.source_id for a in item.prefetched_anchors), "")
    refusals = workflow.refusals(item.item_id)
    can_delete = access.allows(membership, "item", "destroy")
    stream = review_selectors.stream(
        evalset=evalset, user=request.user, role=AssignmentKind.ANNOTATE, item=item
    )
    return render(
        request,
        "labelling/item.html",
        {
            "membership": membership,
            "workspace": membership.workspace,
            "evalset": evalset,
            "item": item,
            "item_json": representations.item_data(item),
            "qtypes": anchoring_selectors.qtype_suggestions(evalset),
            "guidelines_html": render_guidelines(evalset.guidelines),
            "guidelines_set": evalset.slug,
            "documents": documents_selectors.documents_to_highlight(membership.workspace),
            "can_write": access.allows(membership, "item", "partial_update"),
            "threads": review_selectors.comment_threads(item),
            "events": review_selectors.recent_events(item, reader=membership),
            "works_blind": blind.works_blind(item, membership),
            "own_document": own_document,
            "live_after": review_selectors.last_change(membership.workspace),
            "max_question_chars": MAX_QUESTION_CHARS,
            "refusals": refusals,
            "now": refusals[item.state],
            "can_reopen": access.allows(membership, "workflow", "reopen"),
            "can_delete": can_delete,
            "delete_impact": anchoring_selectors.item_delete_impact(item) if can_delete else None,
            "stream": stream if stream["total"] else None,
        },
    )


@require_safe
@requires(Role.VIEWER)
def queue_next(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    """Open the next item waiting for me in this set: an item to annotate (``?role=annotate``,
    the default; the one after ``?after=`` when given), or my review queue
    (``?role=review``). When nothing waits, say so on the set's page."""
    role = request.GET.get("role", AssignmentKind.ANNOTATE)
    if role not in AssignmentKind.values:
        raise Http404(f"no queue {role!r}")
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    after = evalset.items.filter(item_id=request.GET.get("after", "")).first()
    stream = review_selectors.stream(evalset=evalset, user=request.user, role=role, item=after)
    if stream["next"] is None:
        messages.info(
            request, f"Nothing waits for you to {role} in {evalset.slug}: your queue is done."
        )
        return redirect("evalset", ws, set_slug)
    if role == AssignmentKind.REVIEW:
        target = reverse("review-page", args=[ws, set_slug])
        return redirect(f"{target}?state=submitted&queue=mine")
    return redirect("item", ws, set_slug, stream["next"])


def _pdf_view_config(document) -> dict | None:
    """Whether the PDF view can open for this document, and if not, why (None: not a PDF)."""
    if document.kind != "pdf":
        return None
    parse = documents_selectors.pdf_view_parse(document)
    if parse is None:
        reason = "this PDF has no pdfium parse; reparse it to draw its pages"
    elif parse.status != ParseStatus.READY:
        reason = f"the pdfium parse is {parse.status}" + (f": {parse.error}" if parse.error else "")
    elif not parse.char_boxes:
        reason = "the pdfium parse has no character boxes; reparse the document"
    else:
        reason = ""
    # The parse the view's text layer (and so its search) reads.
    backing = str(parse.public_id) if parse is not None and not reason else None
    return {"available": not reason, "reason": reason, "parse": backing}


@require_safe
@requires(Role.VIEWER)
def document_page(request: HttpRequest, ws: str, doc: str) -> HttpResponse:
    membership = request.membership
    document = documents_selectors.document_in(membership.workspace, doc)
    parses = list(document.parses.all())
    reference = next((p for p in parses if p.is_reference), None)
    wanted = request.GET.get("parse")
    shown = next((p for p in parses if str(p.public_id) == wanted), None) if wanted else None
    if wanted and shown is None:
        raise Http404("no such parse of this document")
    shown = shown or reference
    if shown is not None and shown.status == ParseStatus.READY:
        # Page starts and the length only: the text arrives a few pages at a time.
        page_starts, length = shown.page_begins, shown.text_length
    else:
        page_starts, length = [0], 0
    can_delete = access.allows(membership, "document", "destroy")
    sets = list(anchoring_selectors.evalsets(membership.workspace).values_list("slug", flat=True))
    asked_set = request.GET.get("set", "")
    chosen_set = asked_set or (sets[0] if sets else "")
    chosen_set = chosen_set if chosen_set in sets else (sets[0] if sets else "")
    worked_on = (
        anchoring_selectors.evalset_in(membership.workspace, chosen_set) if chosen_set else None
    )
    # The page's script reads the anchors and the items to attach to from the API.
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
            {
                "id": str(p.public_id),
                "parser": p.parser,
                "version": p.parser_version,
                "status": p.status,
                # why it failed, for the highlight's tooltip (a reason for people, no trace)
                "error": p.error if p.status == ParseStatus.FAILED else "",
            }
            for p in parses
        ],
        "sets": sets,
        "set": chosen_set,
        # The annotations panel lists this set's questions, or every set's when none is asked.
        "panel_set": asked_set if asked_set in sets else "",
        "item": request.GET.get("item", ""),
        "can_write": access.allows(membership, "anchor", "create"),
        "rendered": _rendered_config(request, document, shown),
        # Why an approved item is not offered for new evidence (ITEM_ID: the item's id).
        "locked_reason": workflow.locked_message("ITEM_ID", "given new evidence"),
        "pdf": _pdf_view_config(document),
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
            "live_after": review_selectors.last_change(membership.workspace),
            "guidelines_html": render_guidelines(worked_on.guidelines) if worked_on else "",
            "guidelines_set": chosen_set,
            "can_delete_document": can_delete,
            "delete_impact": documents_selectors.document_delete_impact(document)
            if can_delete
            else None,
        },
    )


def _rendered_config(request: HttpRequest, document, shown) -> dict | None:
    """The view "as it looks": offered for HTML, Markdown and Word documents when
    the reference parse is shown, and chosen unless ``?view=text`` asks for the parse's text."""
    if shown is None or not shown.is_reference or shown.status != ParseStatus.READY:
        return None
    if not renditions.has_rendered_view(document):
        return None

    def href(view: str) -> str:
        query = request.GET.copy()
        query["view"] = view
        return "?" + query.urlencode()

    return {
        "active": request.GET.get("view") != "text",
        "parser": shown.parser,
        "rendered_href": href("rendered"),
        "text_href": href("text"),
    }


#: The rendered view's frame may load our stylesheet and ``data:`` images, nothing else; it
#: runs no script (no script-src, and the iframe's sandbox has no allow-scripts).
FRAME_POLICY = {
    "default-src": ["'none'"],
    "style-src": ["'self'"],
    "img-src": ["data:"],
    "base-uri": ["'none'"],
    "form-action": ["'none'"],
    "frame-ancestors": ["'self'"],
    "sandbox": ["allow-same-origin"],
}


@require_safe
@requires(access.SIGNED_IN)
@xframe_options_sameorigin
@csp(FRAME_POLICY)
def document_frame(request: HttpRequest) -> HttpResponse:
    """The empty, script-less page the rendered view draws a document into (see rendered.js)."""
    return render(request, "labelling/document_frame.html")


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for a proxy or orchestrator: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
