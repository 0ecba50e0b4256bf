"""Web pages for releases and imports: server-rendered shells that static/js/releases.js drives.

The pages hold no logic of their own: they read what the forms need (formats, parsers, how
many items are in each state) and hand the API's URLs to the script, which creates releases,
polls their build and previews and commits imports through the same API everyone else uses.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from evalsets import releases, selectors
from evalsets.api.release_serializers import ReleaseSerializer
from evalsets.formats import FORMATS
from evalsets.models import ItemState, ParseStatus, ParseVersion, Release


def _evalset_for(request: HttpRequest, ws: str, set: str):
    membership = selectors.membership_for(request.user, ws)
    evalset = get_object_or_404(selectors.evalsets(membership.workspace), slug=set)
    return membership, evalset


@require_safe
@login_required
def releases_page(request: HttpRequest, ws: str, set: str) -> HttpResponse:
    membership, evalset = _evalset_for(request, ws, set)
    listed = (
        Release.objects.filter(evalset=evalset)
        .select_related("evalset__workspace", "created_by")
        .prefetch_related("files")
    )
    parsers = sorted(
        ParseVersion.objects.filter(
            document__workspace=membership.workspace, status=ParseStatus.READY
        )
        .values_list("parser", flat=True)
        .distinct()
    )
    counts = releases.release_states(evalset)
    formats = [
        {
            "slug": slug,
            "label": FORMATS[slug].label,
            "default": slug.startswith("contextgrid") and FORMATS[slug].for_evaluation,
        }
        for slug in releases.exportable_formats()
    ]
    others = [
        {"value": s, "label": ItemState(s).label, "count": counts[s]}
        for s in ItemState.values
        if s != ItemState.APPROVED
    ]
    kwargs = {"ws": ws, "set": set}
    return render(
        request,
        "releases/releases.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "is_owner": membership.allows("owner"),
            "formats": formats,
            "parsers": parsers,
            "approved": counts[ItemState.APPROVED],
            "other_states": others,
            "releases_data": ReleaseSerializer(listed, many=True).data,
            "api_releases": reverse("release-list", kwargs=kwargs),
            "import_url": reverse("evalset-import", kwargs=kwargs),
        },
    )


@require_safe
@login_required
def import_page(request: HttpRequest, ws: str, set: str) -> HttpResponse:
    membership, evalset = _evalset_for(request, ws, set)
    kwargs = {"ws": ws, "set": set}
    return render(
        request,
        "releases/import.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "is_owner": membership.allows("owner"),
            "formats": [(slug, f.label) for slug, f in FORMATS.items() if f.reader is not None],
            "api_preview": reverse("import-preview", kwargs=kwargs),
            "api_commit": reverse("import-commit", kwargs=kwargs),
            "releases_url": reverse("evalset-releases", kwargs=kwargs),
        },
    )
