"""The owner's pages: members and invitations, assignments and queues, parser settings.

Like every page they only read (through each domain's ``selectors``) and render; the forms and
buttons on them call the same API the rest of the app uses (``static/js/owner.js``), so the
rules (the last owner stays, who may be assigned what, which parsers read which kind) and
their wording live once, in the services and ``evalsets.access``. What a member may do on a
page is asked of the one table of roles (``evalsets.access.allows``); a control the state
forbids is shown disabled with the reason the API would give.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from evalsets import access
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.documents import ingest
from evalsets.models import AssignmentKind, Role
from evalsets.pure import parsers
from evalsets.pure.guidelines import MAX_GUIDELINES_CHARS, render_guidelines
from evalsets.review import selectors as review_selectors
from evalsets.workspaces import selectors as workspaces_selectors
from labelling.permissions import requires


@require_safe
@requires(Role.VIEWER)
def members_page(request: HttpRequest, ws: str) -> HttpResponse:
    membership = request.membership
    workspace = membership.workspace
    is_owner = access.allows(membership, "member", "create")
    listed = workspaces_selectors.members(workspace)
    for member in listed:
        member.locked_reason = (
            access.last_owner_refusal(member.user.username, workspace.slug)
            if member.last_owner
            else ""
        )
    return render(
        request,
        "owner/members.html",
        {
            "membership": membership,
            "workspace": workspace,
            "members": listed,
            "invitations": workspaces_selectors.pending_invitations(workspace) if is_owner else [],
            "roles": Role.choices,
            "is_owner": is_owner,
        },
    )


@require_safe
@requires(Role.VIEWER)
def assignments_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    queues = review_selectors.assignment_queues(evalset)
    workers = {
        kind: [q["membership"] for q in queues if q["membership"].allows(access.WORK[kind])]
        for kind in AssignmentKind.values
    }
    return render(
        request,
        "owner/assignments.html",
        {
            "membership": membership,
            "workspace": membership.workspace,
            "evalset": evalset,
            "queues": queues,
            "annotators": workers[AssignmentKind.ANNOTATE],
            "reviewers": workers[AssignmentKind.REVIEW],
            "items": anchoring_selectors.item_ids(evalset),
            "can_assign": access.allows(membership, "assignment", "create"),
        },
    )


@require_safe
@requires(Role.VIEWER)
def settings_page(request: HttpRequest, ws: str) -> HttpResponse:
    membership = request.membership
    workspace = membership.workspace
    kinds = []
    for kind in parsers.DEFAULT_PARSERS:
        running, reference = ingest.parser_names_for(workspace, kind)
        kinds.append(
            {
                "kind": kind,
                "parsers": [
                    {"name": p.name, "version": p.version, "runs": p.name in running}
                    for p in parsers.parsers_for(kind)
                ],
                "reference": reference,
            }
        )
    return render(
        request,
        "owner/settings.html",
        {
            "membership": membership,
            "workspace": workspace,
            "kinds": kinds,
            "can_edit": access.allows(membership, "workspace", "partial_update"),
        },
    )


@require_safe
@requires(Role.VIEWER)
def evalset_settings_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    """An eval set's guidelines (Markdown) and its list of question types: owners edit them
    through the set's API (PATCH), everyone else reads them."""
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    return render(
        request,
        "owner/evalset_settings.html",
        {
            "membership": membership,
            "workspace": membership.workspace,
            "evalset": evalset,
            "guidelines_html": render_guidelines(evalset.guidelines),
            "max_guidelines_chars": MAX_GUIDELINES_CHARS,
            "can_edit": access.allows(membership, "evalset", "partial_update"),
        },
    )
