"""Role order, the refusal sentence, and field rules held by the services whatever the path.

The API's answers per role are in ``test_security_matrix.py``; these call the services the
way an import, a command or a future endpoint would, and expect the same rules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse

from evalsets import access
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.errors import Conflict, Forbidden
from evalsets.models import EvalItem, ItemState, Role
from evalsets.review import selectors as review_selectors
from evalsets.review import workflow
from labelling.permissions import requires
from tests.test_security_matrix import ROUTES, UNDECLARED

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("role", "other", "expected"),
    [
        (Role.OWNER, Role.REVIEWER, True),
        (Role.REVIEWER, Role.ANNOTATOR, True),
        (Role.ANNOTATOR, Role.VIEWER, True),
        (Role.ANNOTATOR, Role.ANNOTATOR, True),
        (Role.VIEWER, Role.ANNOTATOR, False),
        (Role.ANNOTATOR, Role.REVIEWER, False),
        (Role.REVIEWER, Role.OWNER, False),
        (Role.ANNOTATOR, "owner", False),
    ],
)
def test_a_role_is_at_least_the_roles_below_it_and_itself(role, other, expected):
    assert role.at_least(other) is expected


def test_an_annotator_setting_an_assignee_is_told_only_an_owner_may(client_for, item, annotator):
    response = client_for(annotator).patch(
        f"/api/workspaces/acme/evalsets/quiz/items/{item.item_id}/",
        {"row_version": item.row_version, "assignee": "ann"},
        format="json",
    )
    assert response.status_code == 403
    message = "your role in 'acme' is annotator; setting assignee needs the owner role or above"
    assert response.json()["detail"] == message
    assert response.json()["errors"] == {"assignee": [message]}


def test_a_service_call_cannot_set_an_assignee_for_an_annotator(evalset, annotator, reviewer):
    with pytest.raises(Forbidden, match="setting assignee needs the owner role"):
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id="q9", question="Q?", assignee=reviewer
        )
    assert not EvalItem.objects.filter(item_id="q9").exists()


def test_an_owner_sets_an_assignee_through_the_service(evalset, owner, reviewer):
    item = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="q9", question="Q?", assignee=reviewer
    )
    assert item.assignee == reviewer


def test_a_service_call_cannot_make_an_annotators_parse_the_reference(document, annotator):
    with pytest.raises(Forbidden, match="make_reference needs the owner role"):
        documents_services.parse_version_add(
            document=document, user=annotator, parser="mine", text="x", make_reference=True
        )
    assert document.parses.get(is_reference=True).parser == "plaintext"


def test_the_system_may_choose_the_reference_parse(document):
    parse = documents_services.parse_version_add(
        document=document, user=None, parser="mine", text="x", make_reference=True
    )
    assert parse.is_reference


def test_an_approved_item_is_deleted_only_after_it_is_reopened(item, owner):
    EvalItem.objects.filter(pk=item.pk).update(state=ItemState.APPROVED)
    with pytest.raises(Conflict, match="an owner must reopen it before it is deleted"):
        anchoring_services.item_delete(item=item, user=owner)
    assert EvalItem.objects.filter(pk=item.pk).exists()

    workflow.item_reopen(item=item, user=owner)
    anchoring_services.item_delete(item=item, user=owner)
    assert not EvalItem.objects.filter(pk=item.pk).exists()


def test_asking_for_review_work_needs_the_reviewer_role(evalset, annotator, reviewer):
    with pytest.raises(Forbidden, match="is annotator; this needs the reviewer role"):
        review_selectors.queue(evalset=evalset, user=annotator, role="review")
    assert list(review_selectors.queue(evalset=evalset, user=reviewer, role="review")) == []


def test_a_page_needing_a_role_sends_strangers_to_log_in_outsiders_404_and_low_roles_403(
    workspace, owner, viewer, outsider, rf
):
    @requires(Role.OWNER)
    def page(request, ws):
        return HttpResponse(f"hello {request.membership.role}")

    def visit(user):
        request = rf.get("/w/acme/secret/")
        request.user = user
        return page(request, ws="acme")

    assert visit(AnonymousUser())["Location"].startswith("/login/")
    with pytest.raises(Http404):
        visit(outsider)
    with pytest.raises(PermissionDenied, match="is viewer; this needs the owner role or above"):
        visit(viewer)
    assert visit(owner).content == b"hello owner"
    assert page.required_role == Role.OWNER


# -- one table of roles, read by the API and the pages --------------------------------------


def test_an_action_the_table_does_not_name_is_refused(workspace, owner):
    membership = owner.memberships.get(workspace=workspace)

    assert access.allows(membership, "document", "destroy")
    with pytest.raises(access.Undeclared):
        access.allows(membership, "document", "publish")
    with pytest.raises(access.Undeclared):
        access.required_role("no-such-resource", "get")


def test_every_api_view_names_a_row_of_the_table():
    views = [
        getattr(callback, "cls", None) or callback.view_class
        for name, (_route, callback) in ROUTES.items()
        if name not in UNDECLARED and (hasattr(callback, "cls") or hasattr(callback, "view_class"))
    ]
    rows = access.ROLES
    unnamed = sorted({v.__name__ for v in views if getattr(v, "resource", None) not in rows})

    assert views and not unnamed, unnamed


def test_the_pages_read_roles_from_the_table_not_from_api_views():
    pages = Path(__file__).resolve().parent.parent / "labelling"
    imported = {
        node.module
        for source in pages.glob("*.py")
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    }

    assert not {m for m in imported if m.startswith("evalsets.") and ".api" in m}
