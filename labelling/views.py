"""Server-rendered pages for annotators and reviewers."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from evalsets.models import EvalItem, Membership


@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = (
        Membership.objects.filter(user=request.user)
        .select_related("workspace")
        .annotate(
            documents=Count("workspace__documents", distinct=True),
            evalsets=Count("workspace__evalsets", distinct=True),
        )
    )
    assigned = (
        EvalItem.objects.filter(assignee=request.user)
        .exclude(state="approved")
        .select_related("evalset__workspace")
        .order_by("-updated_at")[:20]
    )
    recent = (
        EvalItem.objects.filter(Q(author=request.user))
        .select_related("evalset__workspace")
        .order_by("-updated_at")[:10]
    )
    return render(
        request,
        "labelling/home.html",
        {"memberships": memberships, "assigned": assigned, "recent": recent},
    )


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for a proxy or orchestrator: the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})
