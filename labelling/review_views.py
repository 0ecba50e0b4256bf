"""The reviewer's pages: a keyboard-first review queue and the eval set's dashboard.

The review page renders every item waiting for review with its anchors in context, so the
reviewer decides without a round-trip per item; ``static/js/review.js`` sends the decision to
the API (which holds every rule: four eyes, row versions, legal transitions).
"""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from evalsets import dashboard, review
from evalsets.api.permissions import may
from evalsets.api.review_views import WorkflowViewSet
from evalsets.models import (
    FOUND_STATUSES,
    AnchorResolution,
    AssignmentKind,
    Comment,
    EvalItem,
    EvalSet,
    GoldAnchor,
    ItemState,
    ParseVersion,
    Role,
)
from labelling.permissions import requires

#: The review page renders at most this many items; the rest follow on the next visit.
PAGE_ITEMS = 200
#: Characters of context shown each side of a quote.
CONTEXT = 160


def _scope(request: HttpRequest, ws: str, set_slug: str):
    membership = request.membership
    evalset = get_object_or_404(EvalSet, workspace=membership.workspace, slug=set_slug)
    return membership, evalset


def _in_context(anchor: GoldAnchor, texts: dict[int, str], reference: dict[int, int]) -> dict:
    """Prefix, quote and suffix: from the document's reference parse where the anchor is found
    there, else the context stored when it was highlighted."""
    ref_parse = reference.get(anchor.document_id)
    for res in anchor.resolutions.all():
        if res.parse_id == ref_parse and res.status in FOUND_STATUSES and ref_parse in texts:
            text = texts[ref_parse]
            return {
                "prefix": text[max(0, res.start - CONTEXT) : res.start],
                "quote": text[res.start : res.end],
                "suffix": text[res.end : res.end + CONTEXT],
                "where": "reference parse",
            }
    return {
        "prefix": anchor.prefix,
        "quote": anchor.quote,
        "suffix": anchor.suffix,
        "where": "as highlighted" if anchor.reference_parse_id else "typed quote, not located",
    }


@require_safe
@requires(Role.VIEWER)
def review_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership, evalset = _scope(request, ws, set_slug)
    state = request.GET.get("state", ItemState.SUBMITTED)
    if state not in ItemState.values:
        raise Http404(f"no state {state!r}")
    resolutions = AnchorResolution.objects.select_related("parse").defer("parse__text", "detail")
    anchors = GoldAnchor.objects.prefetch_related(Prefetch("resolutions", queryset=resolutions))
    comments = Comment.objects.select_related("author").order_by("created_at", "id")
    mine = request.GET.get("queue") == "mine"
    queryset = EvalItem.objects.filter(evalset=evalset, state=state)
    if mine:
        queryset = queryset.filter(
            assignments__user=request.user,
            assignments__kind=AssignmentKind.REVIEW,
            assignments__done_at__isnull=True,
        )
    items = list(
        queryset.select_related("author")
        .prefetch_related(
            Prefetch("anchors", queryset=anchors), Prefetch("comments", queryset=comments)
        )
        .order_by("updated_at", "id")[:PAGE_ITEMS]
    )
    document_ids = {a.document_id for item in items for a in item.anchors.all() if a.document_id}
    reference_parses = ParseVersion.objects.filter(
        document__in=document_ids, is_reference=True
    ).only("pk", "document_id", "text")
    texts = {p.pk: p.text for p in reference_parses}
    reference = {p.document_id: p.pk for p in reference_parses}
    can_review = may(membership, WorkflowViewSet, "approve")
    cards = []
    for item in items:
        barred = request.user.pk in review.writers(item)
        cards.append(
            {
                "item": item,
                "can_approve": can_review and not barred and item.state == ItemState.SUBMITTED,
                "barred": barred,
                "anchors": [
                    {"anchor": a, "context": _in_context(a, texts, reference)}
                    for a in item.anchors.all()
                ],
            }
        )
    return render(
        request,
        "review/review.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "membership": membership,
            "can_review": can_review,
            "cards": cards,
            "state": state,
            "mine": mine,
            "states": ItemState.choices,
            "truncated": len(items) == PAGE_ITEMS,
        },
    )


@require_safe
@requires(Role.VIEWER)
def dashboard_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership, evalset = _scope(request, ws, set_slug)
    data = dashboard.evalset_dashboard(evalset)
    return render(
        request,
        "review/dashboard.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "data": data,
            "charts": dashboard.charts(data),
        },
    )
