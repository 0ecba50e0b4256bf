"""The reviewer's pages: a keyboard-first review queue and the eval set's dashboard.

The review page renders every item waiting for review with its anchors in context, so the
reviewer decides without a round-trip per item; ``static/js/review.js`` sends the decision to
the API (which holds every rule: four eyes, row versions, legal transitions). Reads come from
``evalsets.review.selectors.review_items`` (a fixed number of queries for any number of items), the
dashboard's figures from ``evalsets.review.dashboard`` and its drawing from ``labelling.charts``.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from evalsets import access
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.models import ItemState, Role
from evalsets.pure.guidelines import render_guidelines
from evalsets.review import adjudication, dashboard, workflow
from evalsets.review import selectors as review_selectors
from labelling import charts
from labelling.labels import GRADE_WORDS
from labelling.permissions import requires

#: The review page renders at most this many items; the rest follow on the next visit.
PAGE_ITEMS = 200
#: Characters of context shown each side of a quote.
CONTEXT = 160


@require_safe
@requires(Role.VIEWER)
def review_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    state = request.GET.get("state", ItemState.SUBMITTED)
    if state not in ItemState.values:
        raise Http404(f"no state {state!r}")
    mine = request.GET.get("queue") == "mine"
    items = review_selectors.review_items(
        evalset, membership=membership, state=state, mine=mine, limit=PAGE_ITEMS, context=CONTEXT
    )
    can_review = access.allows(membership, "workflow", "approve")
    places = review_selectors.pdf_places(a for item in items for a in item.anchors.all())
    cards = []
    for item in items:
        barred = request.user.pk in item.writers
        illegal = workflow.illegal_message(item.item_id, item.state, "approve")
        cards.append(
            {
                "item": item,
                "can_approve": can_review and not barred and item.state == ItemState.SUBMITTED,
                "barred": barred,
                # Why Approve / Request changes are disabled (the API's words), if they are.
                "why_not": illegal or (workflow.four_eyes_message(item.item_id) if barred else ""),
                "why_not_changes": workflow.illegal_message(
                    item.item_id, item.state, "request_changes"
                ),
                "anchors": [
                    {
                        "anchor": a,
                        "context": anchoring_selectors.anchor_in_context(a),
                        "pdf": places.get(a.pk),
                    }
                    for a in item.anchors.all()
                ],
                "can_adjudicate": can_review and item.blind and item.state == ItemState.SUBMITTED,
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
            "can_reopen": access.allows(membership, "workflow", "reopen"),
            "cards": cards,
            "state": state,
            "mine": mine,
            "states": ItemState.choices,
            "truncated": len(items) == PAGE_ITEMS,
            # The set's guidelines, as the item page and the document view show them.
            "guidelines_html": render_guidelines(evalset.guidelines),
            "guidelines_set": evalset.slug,
        },
    )


@require_safe
@requires(Role.REVIEWER)
def adjudication_page(request: HttpRequest, ws: str, set_slug: str, item_id: str) -> HttpResponse:
    """An overlapped item's versions side by side, with their agreement; the reviewer picks
    one or merges (``static/js/adjudicate.js`` sends it to the API, which holds the rules)."""
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    item = get_object_or_404(evalset.items.all(), item_id=item_id)
    data = adjudication.versions(item, user=request.user)
    for version in [*data["versions"], {"anchors": data["others"]}]:
        for row in version["anchors"]:
            row["grade_words"] = GRADE_WORDS.get(row["grade"], "")
    return render(
        request,
        "review/adjudicate.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "membership": membership,
            "item": item,
            "data": data,
            "guidelines_html": render_guidelines(evalset.guidelines),
            "guidelines_set": evalset.slug,
        },
    )


@require_safe
@requires(Role.VIEWER)
def dashboard_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    data = dashboard.evalset_dashboard(evalset)
    return render(
        request,
        "review/dashboard.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "data": data,
            "charts": charts.charts(data),
        },
    )
