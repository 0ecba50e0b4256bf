"""The permission matrix: every review endpoint x each role, an outsider and another workspace.

The item under review was written by someone else (``wendy``), so four eyes never decides a
cell here; roles do. Another workspace's objects answer 404, never 403, so their existence
does not leak.
"""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.models import EvalItem, Membership, Role
from evalsets.review import assignments
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

ROLES = ["owner", "reviewer", "annotator", "viewer", "outsider", "anonymous"]


def _expect(owner, reviewer, annotator, viewer):
    return {
        "owner": owner,
        "reviewer": reviewer,
        "annotator": annotator,
        "viewer": viewer,
        "outsider": 404,
        # Session authentication comes first, so DRF answers a stranger with 403.
        "anonymous": 403,
    }


OK_ALL = _expect(200, 200, 200, 200)
ITEM = "items/q1/"

# (name, method, path under the eval set, body, state the item starts in, expected per role)
MATRIX = [
    ("submit", "post", f"{ITEM}submit/", {}, "draft", _expect(200, 200, 200, 403)),
    ("approve", "post", f"{ITEM}approve/", "rv", "submitted", _expect(200, 200, 403, 403)),
    (
        "request-changes",
        "post",
        f"{ITEM}request-changes/",
        "rv+comment",
        "submitted",
        _expect(200, 200, 403, 403),
    ),
    ("reopen", "post", f"{ITEM}reopen/", {}, "approved", _expect(200, 403, 403, 403)),
    ("comments list", "get", f"{ITEM}comments/", None, "draft", OK_ALL),
    ("comment", "post", f"{ITEM}comments/", {"body": "hi"}, "draft", _expect(201, 201, 201, 403)),
    ("history", "get", f"{ITEM}history/", None, "draft", OK_ALL),
    ("assignments list", "get", "assignments/", None, "draft", OK_ALL),
    (
        "assign",
        "post",
        "assignments/",
        {"users": ["wendy"], "kind": "annotate"},
        "draft",
        _expect(201, 403, 403, 403),
    ),
    ("unassign", "delete", "assignments/{assignment}/", None, "draft", _expect(204, 403, 403, 403)),
    ("next annotate", "get", "next/?role=annotate", None, "draft", _expect(200, 200, 200, 403)),
    ("next review", "get", "next/?role=review", None, "draft", _expect(200, 200, 403, 403)),
    ("dashboard", "get", "dashboard/", None, "draft", OK_ALL),
]


def _setup_set(workspace, creator, writer):
    evalset = anchoring_services.evalset_create(workspace=workspace, user=creator, slug="quiz")
    item = anchoring_services.item_create(evalset=evalset, user=writer, item_id="q1", question="Q?")
    assignment = assignments.assignments_create(
        evalset=evalset, by=creator, usernames=[writer.username], kind="annotate"
    )["created"][0]
    return item, assignment


@pytest.fixture
def world(workspace, owner, outsider, make_user):
    wendy = make_user("wendy")
    Membership.objects.create(workspace=workspace, user=wendy, role=Role.ANNOTATOR)
    item, assignment = _setup_set(workspace, owner, wendy)
    # The same eval set, item and assignment in the outsider's workspace.
    elsewhere = Membership.objects.get(user=outsider).workspace
    other_item, other_assignment = _setup_set(elsewhere, outsider, outsider)
    return {
        "acme": (item, assignment),
        "elsewhere": (other_item, other_assignment),
        "writer": wendy,
    }


def _move_to(item, state: str) -> None:
    EvalItem.objects.filter(pk=item.pk).update(state=state)


def _call(client, method, ws, path, body, item, assignment):
    url = f"/api/workspaces/{ws}/evalsets/quiz/{path.format(assignment=assignment.public_id)}"
    if body == "rv":
        body = {"row_version": EvalItem.objects.get(pk=item.pk).row_version}
    elif body == "rv+comment":
        body = {"row_version": EvalItem.objects.get(pk=item.pk).row_version, "comment": "fix"}
    if method == "get":
        return client.get(url)
    return getattr(client, method)(url, body, format="json")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("name", "method", "path", "body", "state", "expected"),
    MATRIX,
    ids=[row[0] for row in MATRIX],
)
def test_the_permission_matrix(
    client_for,
    world,
    owner,
    reviewer,
    annotator,
    viewer,
    outsider,
    role,
    name,
    method,
    path,
    body,
    state,
    expected,
):
    users = {
        "owner": owner,
        "reviewer": reviewer,
        "annotator": annotator,
        "viewer": viewer,
        "outsider": outsider,
        "anonymous": None,
    }
    item, assignment = world["acme"]
    _move_to(item, state)
    before = EvalItem.objects.get(pk=item.pk)
    response = _call(client_for(users[role]), method, "acme", path, body, item, assignment)
    assert response.status_code == expected[role], (role, name, response.content)
    if expected[role] >= 400:
        after = EvalItem.objects.get(pk=item.pk)
        assert (after.state, after.row_version) == (before.state, before.row_version)
    if expected[role] == 403 and role != "anonymous":
        assert "role" in response.json()["detail"]


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "state", "expected"),
    MATRIX,
    ids=[row[0] for row in MATRIX],
)
def test_a_member_of_one_workspace_gets_404_from_anothers_identical_set(
    client_for, world, owner, name, method, path, body, state, expected
):
    item, assignment = world["elsewhere"]
    _move_to(item, state)
    response = _call(client_for(owner), method, "elsewhere", path, body, item, assignment)
    assert response.status_code == 404, (name, response.content)


@pytest.mark.parametrize("page", ["review", "dashboard"])
@pytest.mark.parametrize(
    ("username", "expected"),
    [("olive", 200), ("rita", 200), ("ann", 200), ("vic", 200), ("otto", 404)],
)
def test_the_review_pages_are_for_members_only(client, world, page, username, expected):
    client.login(username=username, password=PASSWORD)
    assert client.get(f"/w/acme/sets/quiz/{page}/").status_code == expected


@pytest.mark.parametrize("page", ["review", "dashboard"])
def test_the_review_pages_send_strangers_to_log_in(client, world, page):
    response = client.get(f"/w/acme/sets/quiz/{page}/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
