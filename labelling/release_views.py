"""Web pages for releases and imports: server-rendered shells that static/js/releases.js drives.

The pages hold no logic of their own: they read what the forms need (formats, parsers, how many
items are in each state), embed the releases in the API's shape
(``evalsets.releases.representations``) and hand the API's URLs to the script, which creates
releases, polls their build and previews and commits imports through the same API everyone else
uses.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from evalsets import access
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.models import ItemState, Role
from evalsets.pure.formats import FORMATS
from evalsets.releases import representations
from evalsets.releases import selectors as releases_selectors
from evalsets.releases import services as releases_services
from evalsets.workspaces import selectors as workspaces_selectors
from labelling.permissions import requires


@require_safe
@requires(Role.VIEWER)
def releases_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    listed = releases_selectors.releases_of(evalset)
    parsers = workspaces_selectors.ready_parsers_by_kind(membership.workspace)
    counts = releases_services.release_states(evalset)
    formats = [
        {
            "slug": slug,
            "label": FORMATS[slug].label,
            "default": slug.startswith("contextgrid") and FORMATS[slug].for_evaluation,
        }
        for slug in releases_services.exportable_formats()
    ]
    others = [
        {"value": s, "label": ItemState(s).label, "count": counts[s]}
        for s in ItemState.values
        if s != ItemState.APPROVED
    ]
    kwargs = {"ws": ws, "set_slug": set_slug}
    return render(
        request,
        "releases/releases.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "is_owner": access.allows(membership, "release", "post"),
            "formats": formats,
            "gold_kinds": [{"kind": k, "parsers": names} for k, names in parsers.items()],
            "reference": releases_services.REFERENCE,
            "approved": counts[ItemState.APPROVED],
            "nothing_to_release": releases_services.nothing_to_release(
                evalset.slug, [ItemState.APPROVED]
            ),
            "other_states": others,
            "releases_data": [representations.release_data(r) for r in listed],
            "api_releases": reverse("release-list", kwargs=kwargs),
            "import_url": reverse("evalset-import", kwargs=kwargs),
        },
    )


@require_safe
@requires(Role.VIEWER)
def import_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    kwargs = {"ws": ws, "set_slug": set_slug}
    return render(
        request,
        "releases/import.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "is_owner": access.allows(membership, "import", "post"),
            "formats": [(slug, f.label) for slug, f in FORMATS.items() if f.reader is not None],
            "api_preview": reverse("import-preview", kwargs=kwargs),
            "api_commit": reverse("import-commit", kwargs=kwargs),
            "releases_url": reverse("evalset-releases", kwargs=kwargs),
        },
    )
