"""Who may do what on every URL the app serves: one table, checked against the URL conf.

``ROUTES`` walks ``get_resolver()`` recursively. Every route it finds must have a row in
``MATRIX`` (or be in ``SKIPPED`` with a reason), and the row must list exactly the HTTP
methods the view serves. Each method's rule says what each role, a member of another
workspace and an anonymous visitor get, against real objects in workspace ``acme``:

- a member below the role a write needs gets 403 (naming the role, from the API);
- a member of another workspace gets 404 for anything in ``acme``, never a hint it exists;
- an anonymous visitor gets 401/403 from the API and a redirect to the log-in page elsewhere.

A new endpoint without a row fails ``test_every_url_has_a_row_in_the_matrix`` by name.
Each actor's request runs in a savepoint that is rolled back, so one actor's delete does not
change what the next one sees.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ObjectDoesNotExist
from django.core.files.base import ContentFile
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from evalsets import access
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import renditions
from evalsets.documents import services as documents_services
from evalsets.models import Document, EvalItem, Membership, Role
from evalsets.review import assignments, workflow
from evalsets.workspaces import services as workspaces_services
from tests.conftest import PASSWORD
from tests.world import PDF_SOURCE_ID, RUN_FILE, World, create_user, import_file, upload

OWNER, REVIEWER, ANNOTATOR, VIEWER = "owner", "reviewer", "annotator", "viewer"
ROLES = (OWNER, REVIEWER, ANNOTATOR, VIEWER)  # highest first
ACTORS = (*ROLES, "outsider", "anonymous")
#: Anonymous and refused: 401 or 403 from the API, a redirect to /login/ from a page.
REFUSED = "refused"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

#: Routes deliberately left out of the matrix, and why.
SKIPPED = {
    "admin/": "Django's admin: staff-only by Django's own checks; no app model is registered",
    "api/schema/": "the public OpenAPI description; it holds no workspace data",
    "api/docs/": "the public Swagger UI page for that description; no workspace data",
    "api/redoc/": "the public Redoc page for that description; no workspace data",
}


def _walk(patterns, prefix: str = ""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if any(route.startswith(skipped) for skipped in SKIPPED):
            continue
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, route)
        else:
            assert isinstance(pattern, URLPattern)
            yield route, pattern


def _routes() -> dict[str, tuple[str, object]]:
    routes: dict[str, tuple[str, object]] = {}
    for route, pattern in _walk(get_resolver().url_patterns):
        assert pattern.name, f"the route {route!r} has no name, so no matrix row can name it"
        assert pattern.name not in routes, f"two routes are named {pattern.name!r}"
        routes[pattern.name] = (route, pattern.callback)
    return routes


ROUTES = _routes()


def _served_methods(callback) -> set[str] | None:
    """The methods a DRF or class-based view serves; None for a function view."""
    actions = getattr(callback, "actions", None)
    if actions:
        return {method.upper() for method in actions if method.upper() in METHODS}
    view_class = getattr(callback, "view_class", None)
    if view_class is None:
        return None
    return {
        method.upper()
        for method in view_class.http_method_names
        if method.upper() in METHODS and hasattr(view_class, method)
    }


# -- the rules -------------------------------------------------------------------------------


def members(least: str, ok: int) -> dict[str, object]:
    """Roles at or above ``least`` get ``ok``; lower roles 403; others 404; anonymous refused."""
    rank = ROLES.index(least)
    expect: dict[str, object] = {role: ok if ROLES.index(role) <= rank else 403 for role in ROLES}
    expect["outsider"] = 404
    expect["anonymous"] = REFUSED
    return expect


def signed_in(ok: int) -> dict[str, object]:
    """Anyone logged in (it is about themselves, not a workspace); anonymous refused."""
    return {**{actor: ok for actor in ACTORS}, "anonymous": REFUSED}


def public(code: int) -> dict[str, object]:
    return {actor: code for actor in ACTORS}


@dataclass(frozen=True)
class Rule:
    expect: dict[str, object]
    body: Callable[[World], dict] | None = None
    multipart: bool = False
    query: str = ""
    kwargs: dict | None = None  # URL keywords that differ from World.kwargs
    setup: Callable[[World], None] | None = None  # runs once, before the actors


def _submit_q1(world: World) -> None:
    workflow.item_submit(item=world.item, user=world.users[ANNOTATOR])
    world.item.refresh_from_db()


def _markdown_document(world: World) -> None:
    """A Markdown document with a ready reference parse: it has a view as it looks."""
    if world.workspace.documents.filter(source_id="notes.md").exists():
        return
    source = b"# Notes\n\nThe view as it looks.\n"
    document = Document(
        workspace=world.workspace, source_id="notes.md", sha256="1" * 64, size=len(source)
    )
    document.file.save("notes.md", ContentFile(source), save=False)
    document.kind = "markdown"
    document.save()
    parse = documents_services.parse_version_add(
        document=document,
        parser="markdown-it",
        parser_version="4",
        text="Notes\n\nThe view as it looks.",
        page_starts=[0],
        origin="parsed",
    )
    # The worker builds the view after commit; this test's transaction never commits.
    renditions.rendition_build(parse=parse)


def _overlapped_q5(world: World) -> None:
    """``q5``: annotated blind by ann and anya (overlap 2), both finished: ready to adjudicate."""
    anya = get_user_model().objects.filter(username="anya").first() or create_user("anya")
    Membership.objects.get_or_create(
        workspace=world.workspace, user=anya, defaults={"role": Role.ANNOTATOR}
    )
    item = anchoring_services.item_create(
        evalset=world.evalset, user=world.users[OWNER], item_id="q5", question="Leave per month?"
    )
    assignments.assignments_create(
        evalset=world.evalset,
        by=world.users[OWNER],
        usernames=["ann", "anya"],
        kind="annotate",
        item_ids=["q5"],
        overlap=2,
    )
    for user, quote in ((world.users[ANNOTATOR], "1.5 days of leave"), (anya, "per month")):
        anchoring_services.anchor_create_typed(
            item=item, user=user, source_id="handbook.txt", quote=quote
        )
        workflow.item_submit(item=item, user=user)
    world.kwargs["q5_row_version"] = EvalItem.objects.get(pk=item.pk).row_version


def _row_version(world: World) -> int:
    world.item.refresh_from_db()
    return world.item.row_version


def _invite(username: str) -> Callable[[World], None]:
    def setup(world: World) -> None:
        workspaces_services.member_invite(
            workspace=world.workspace, username=username, role=VIEWER, by=world.users[OWNER]
        )

    return setup


#: Only the invitee (the outsider, invited) may answer an invitation; for anyone else it is
#: missing, as it is for a workspace nobody holds.
def invitee(ok: int) -> dict[str, object]:
    return {**{role: 404 for role in ROLES}, "outsider": ok, "anonymous": REFUSED}


PAGE = Rule(members(VIEWER, 200))
READ = Rule(members(VIEWER, 200))

MATRIX: dict[str, dict[str, Rule]] = {
    # -- pages ---------------------------------------------------------------------------------
    "home": {"GET": Rule(signed_in(200))},
    "login": {
        "GET": Rule(public(200)),
        # A wrong password re-renders the form (the rate limit is tested in test_login_limit).
        "POST": Rule(public(200), body=lambda w: {"username": "olive", "password": "wrong"}),
    },
    "logout": {"POST": Rule(public(302))},
    "healthz": {"GET": Rule(public(200))},
    "readyz": {"GET": Rule(public(200))},
    # Off unless GROUNDWORK_METRICS is on (tests/test_operability.py serves it).
    "metrics": {"GET": Rule(public(404))},
    "labels-css": {"GET": Rule(public(200))},
    "workspace": {"GET": PAGE},
    "document": {"GET": PAGE},
    "document-frame": {"GET": Rule(signed_in(200))},
    "evalset": {"GET": PAGE},
    "item": {"GET": PAGE},
    # Redirects a member to the next item in their queue, or to the set's page when none waits.
    "queue-next": {"GET": Rule(members(VIEWER, 302))},
    "review-page": {"GET": PAGE},
    # Comparing the blind versions of an overlapped item is a reviewer's page.
    "adjudication-page": {"GET": Rule(members(REVIEWER, 200))},
    "dashboard-page": {"GET": PAGE},
    "evalset-releases": {"GET": PAGE},
    "members-page": {"GET": PAGE},
    "settings-page": {"GET": PAGE},
    "assignments-page": {"GET": PAGE},
    "evalset-settings": {"GET": PAGE},
    "evalset-import": {"GET": PAGE},
    "evalset-experiments": {"GET": PAGE},
    "experiment": {"GET": PAGE},
    # -- API: auth and workspaces --------------------------------------------------------------
    "api-token": {
        "POST": Rule(public(200), body=lambda w: {"username": "olive", "password": PASSWORD})
    },
    "workspace-list": {
        "GET": Rule(signed_in(200)),
        "POST": Rule(signed_in(201), body=lambda w: {"slug": "fresh-ws", "name": "Fresh"}),
    },
    "workspace-detail": {
        "GET": READ,
        "PATCH": Rule(members(OWNER, 200), body=lambda w: {"name": "Acme Corp"}),
    },
    "workspace-resolve": {"POST": Rule(members(OWNER, 202))},
    "workspace-pending": {"GET": READ},
    "member-list": {
        "GET": READ,
        "POST": Rule(members(OWNER, 201), body=lambda w: {"username": "newbie", "role": "viewer"}),
    },
    "workspace-invitation-list": {"GET": Rule(members(OWNER, 200), setup=_invite("newbie"))},
    "workspace-invitation-detail": {
        "DELETE": Rule(members(OWNER, 204), kwargs={"username": "newbie"}, setup=_invite("newbie"))
    },
    "invitation-list": {"GET": Rule(signed_in(200))},
    "invitation-accept": {"POST": Rule(invitee(200), setup=_invite("otto"))},
    "invitation-decline": {"POST": Rule(invitee(204), setup=_invite("otto"))},
    "member-detail": {
        "GET": READ,
        "PATCH": Rule(members(OWNER, 200), body=lambda w: {"role": "annotator"}),
        "DELETE": Rule(members(OWNER, 204)),
    },
    # -- documents and parses ------------------------------------------------------------------
    "document-list": {
        "GET": READ,
        "POST": Rule(
            members(ANNOTATOR, 201),
            body=lambda w: {"file": upload("notes.txt", b"Some new notes about leave.\n")},
            multipart=True,
        ),
    },
    "document-detail": {"GET": READ, "DELETE": Rule(members(OWNER, 204))},
    "document-reparse": {"POST": Rule(members(ANNOTATOR, 202))},
    "document-anchors": {"GET": READ},
    "parse-list": {
        "GET": READ,
        "POST": Rule(
            members(ANNOTATOR, 201),
            body=lambda w: {"parser": "mine", "text": "Employee Handbook", "page_starts": [0]},
        ),
    },
    "parse-detail": {"GET": READ, "DELETE": Rule(members(OWNER, 204))},
    "parse-reference": {"POST": Rule(members(OWNER, 200))},
    "parse-pages": {"GET": Rule(members(VIEWER, 200), query="?from=1&to=2")},
    "document-pdf": {"GET": Rule(members(VIEWER, 200), kwargs={"doc": PDF_SOURCE_ID})},
    "pdf-page-image": {"GET": Rule(members(VIEWER, 200), kwargs={"doc": PDF_SOURCE_ID})},
    "pdf-page-text": {"GET": Rule(members(VIEWER, 200), kwargs={"doc": PDF_SOURCE_ID})},
    "document-rendered": {
        "GET": Rule(members(VIEWER, 200), setup=_markdown_document, kwargs={"doc": "notes.md"})
    },
    "parse-search": {"GET": Rule(members(VIEWER, 200), query="?q=leave")},
    # -- eval sets, items, anchors ----------------------------------------------------------------
    "evalset-list": {
        "GET": READ,
        "POST": Rule(members(OWNER, 201), body=lambda w: {"id": "quiz2", "name": "Quiz 2"}),
    },
    "evalset-detail": {
        "GET": READ,
        "PATCH": Rule(members(OWNER, 200), body=lambda w: {"name": "Renamed"}),
        "DELETE": Rule(members(OWNER, 204)),
    },
    "item-list": {
        "GET": READ,
        "POST": Rule(members(ANNOTATOR, 201), body=lambda w: {"id": "q9", "question": "Why?"}),
    },
    "item-detail": {
        "GET": READ,
        "PUT": Rule(
            members(ANNOTATOR, 200),
            body=lambda w: {"question": "How much leave?", "row_version": _row_version(w)},
        ),
        "PATCH": Rule(
            members(ANNOTATOR, 200),
            body=lambda w: {"answer": "1.5 days", "row_version": _row_version(w)},
        ),
        "DELETE": Rule(members(ANNOTATOR, 204)),
    },
    "anchor-list": {
        "GET": READ,
        "POST": Rule(
            members(ANNOTATOR, 201),
            body=lambda w: {"source_id": "handbook.txt", "quote": "Remote work", "grade": 2},
        ),
    },
    "anchor-compare": {"GET": READ},
    "anchor-detail": {
        "GET": READ,
        "PATCH": Rule(members(ANNOTATOR, 200), body=lambda w: {"grade": 1}),
        "DELETE": Rule(members(ANNOTATOR, 204)),
    },
    "anchor-confirm": {
        "POST": Rule(
            members(ANNOTATOR, 200),
            body=lambda w: {"parse": str(w.other_parse.public_id), "start": 0, "end": 8},
        ),
    },
    # -- review --------------------------------------------------------------------------------
    "item-submit": {"POST": Rule(members(ANNOTATOR, 200), body=lambda w: {})},
    "item-approve": {
        "POST": Rule(
            members(REVIEWER, 200),
            setup=_submit_q1,
            body=lambda w: {"row_version": _row_version(w)},
        )
    },
    "item-request-changes": {
        "POST": Rule(
            members(REVIEWER, 200),
            setup=_submit_q1,
            body=lambda w: {"row_version": _row_version(w), "comment": "Quote the whole line."},
        )
    },
    "item-reopen": {
        "POST": Rule(members(OWNER, 200), kwargs={"item": "q2"}, body=lambda w: {"reason": "x"})
    },
    "item-adjudication": {
        "GET": Rule(members(REVIEWER, 200)),
        "POST": Rule(
            members(REVIEWER, 200),
            setup=_overlapped_q5,
            kwargs={"item": "q5"},
            body=lambda w: {"row_version": w.kwargs.get("q5_row_version", 1), "pick": "ann"},
        ),
    },
    "item-comments": {
        "GET": READ,
        "POST": Rule(members(ANNOTATOR, 201), body=lambda w: {"body": "Looks right."}),
    },
    "item-history": {"GET": READ},
    "assignment-list": {
        "GET": READ,
        "POST": Rule(
            members(OWNER, 201),
            body=lambda w: {"users": ["ann"], "kind": "annotate", "items": ["q1"]},
        ),
    },
    "assignment-detail": {"DELETE": Rule(members(OWNER, 204))},
    "next-item": {"GET": Rule(members(ANNOTATOR, 200), query="?role=annotate")},
    "evalset-dashboard": {"GET": READ},
    # -- the inbox, the changes feed and the checks before saving ---------------------------------
    "inbox": {"GET": Rule(signed_in(200))},
    "inbox-read": {"POST": Rule(signed_in(200), body=lambda w: {})},
    "workspace-changes": {"GET": Rule(members(VIEWER, 200), query="?set=quiz&item=q1&after=0")},
    "similar-questions": {
        "POST": Rule(members(VIEWER, 200), body=lambda w: {"question": "How much leave?"})
    },
    # -- workspace search and suggested evidence ---------------------------------------------------
    "workspace-search": {"GET": Rule(members(VIEWER, 200), query="?q=leave")},
    "item-suggestions": {"GET": Rule(members(VIEWER, 200))},
    # -- releases and imports --------------------------------------------------------------------
    "release-list": {
        "GET": READ,
        "POST": Rule(members(OWNER, 202), body=lambda w: {"formats": ["contextgrid-jsonl"]}),
    },
    "release-detail": {"GET": READ},
    "release-file": {"GET": READ},
    "release-compare": {"GET": READ},
    "import-preview": {
        "POST": Rule(
            members(OWNER, 200),
            body=lambda w: {"file": upload("set.jsonl", import_file())},
            multipart=True,
        )
    },
    "import-commit": {
        "POST": Rule(
            members(OWNER, 201),
            body=lambda w: {"file": upload("set.jsonl", import_file())},
            multipart=True,
        )
    },
    "new-import-preview": {
        "POST": Rule(
            members(OWNER, 200),
            body=lambda w: {"file": upload("set.jsonl", import_file()), "evalset": "fresh"},
            multipart=True,
        )
    },
    "new-import-commit": {
        "POST": Rule(
            members(OWNER, 201),
            body=lambda w: {"file": upload("set.jsonl", import_file()), "evalset": "fresh"},
            multipart=True,
        )
    },
    # -- experiments and uploaded runs -------------------------------------------------------
    "experiment-list": {
        "GET": READ,
        "POST": Rule(
            members(REVIEWER, 202),
            body=lambda w: {
                "release": 1,
                "parsers": ["plaintext"],
                "chunkers": ["recursive:64"],
                "retrievers": ["bm25"],
            },
        ),
    },
    "experiment-detail": {"GET": READ},
    "experiment-cancel": {"POST": Rule(members(REVIEWER, 409))},  # an uploaded run is complete
    "experiment-rerun": {"POST": Rule(members(REVIEWER, 409))},  # and is scored once
    "experiment-misses": {"GET": READ},
    "experiment-compare": {"GET": Rule(members(VIEWER, 200), query="?left=0&right=0")},
    "experiment-gate": {"GET": Rule(members(VIEWER, 200), query="?baseline=0")},
    "experiment-results": {"GET": Rule(members(VIEWER, 200), kwargs={"fmt": "csv"})},
    "run-preview": {
        "POST": Rule(
            members(REVIEWER, 200),
            body=lambda w: {"release": 1, "file": upload("run.jsonl", RUN_FILE)},
            multipart=True,
        )
    },
    "run-commit": {
        "POST": Rule(
            members(REVIEWER, 201),
            body=lambda w: {"release": 1, "file": upload("run.jsonl", RUN_FILE)},
            multipart=True,
        )
    },
}


# -- running a rule --------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    cache.clear()  # login limits and throttles live in the cache
    yield
    cache.clear()


def url_for(world: World, name: str, rule: Rule | None = None) -> str:
    route, _ = ROUTES[name]
    names = re.findall(r"<(?:\w+:)?(\w+)>", route)
    values = {**world.kwargs, **((rule.kwargs or {}) if rule else {})}
    return reverse(name, kwargs={key: values[key] for key in names}) + (rule.query if rule else "")


def request(world: World, actor: str, method: str, url: str, rule: Rule | None):
    data = rule.body(world) if rule and rule.body else None
    if url.startswith("/api/"):
        client = APIClient()
        if actor != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[actor]}")
        fmt = "multipart" if rule and rule.multipart else "json"
        response = getattr(client, method.lower())(url, data, format=fmt)
    else:
        client = Client()
        if actor != "anonymous":
            client.force_login(world.users[actor])
        response = getattr(client, method.lower())(url, data or {})
    if getattr(response, "streaming", False):
        # Read it through: the test client then closes it without ending the DB connection
        # (calling response.close() here would fire request_finished and close it).
        b"".join(response.streaming_content)
    return response


def _least_role(rule: Rule) -> str:
    """The lowest role the rule lets through."""
    return [role for role in ROLES if rule.expect[role] != 403][-1]


def _matches(expected: object, response, url: str) -> bool:
    if expected == REFUSED:
        if url.startswith("/api/"):
            return response.status_code in (401, 403)
        return response.status_code == 302 and response["Location"].startswith("/login/")
    return response.status_code == expected


def _describe(response) -> str:
    if response.status_code in (301, 302):
        return f"{response.status_code} -> {response['Location']}"
    detail = ""
    if response.get("Content-Type", "").startswith("application/json"):
        try:
            detail = str(response.json().get("detail", ""))[:120]
        except (ValueError, AttributeError):
            detail = ""
    return f"{response.status_code} {detail}".strip()


# -- the tests -----------------------------------------------------------------------------------


def test_every_url_has_a_row_in_the_matrix():
    missing = sorted(
        f"{name} ({route})" for name, (route, _) in ROUTES.items() if name not in MATRIX
    )
    assert not missing, "URLs with no rule in MATRIX: " + ", ".join(missing)
    stale = sorted(set(MATRIX) - set(ROUTES))
    assert not stale, "MATRIX rows for URLs the app no longer serves: " + ", ".join(stale)


def test_every_skipped_route_exists_and_has_a_reason():
    all_routes = [str(p.pattern) for p in get_resolver().url_patterns]
    api = next(p for p in get_resolver().url_patterns if str(p.pattern) == "api/")
    all_routes += ["api/" + str(p.pattern) for p in api.url_patterns]
    for prefix, reason in SKIPPED.items():
        assert any(route.startswith(prefix) for route in all_routes), f"nothing at {prefix}"
        assert len(reason) > 20


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_the_matrix_lists_exactly_the_methods_each_view_serves(name):
    _, callback = ROUTES[name]
    served = _served_methods(callback)
    if served is None:  # a function view: test_other_methods_are_refused covers it
        assert set(MATRIX[name]) <= {"GET", "POST"}
        return
    assert set(MATRIX[name]) == served, f"{name} serves {sorted(served)}"


CASES = [(name, method) for name in sorted(MATRIX) for method in MATRIX[name]]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "method"), CASES, ids=[f"{m} {n}" for n, m in CASES])
def test_each_actor_gets_what_the_matrix_says(world, name, method):
    rule = MATRIX[name][method]
    assert set(rule.expect) == set(ACTORS)
    if rule.setup:
        rule.setup(world)
    url = url_for(world, name, rule)
    wrong = []
    for actor in ACTORS:
        with transaction.atomic():
            response = request(world, actor, method, url, rule)
            transaction.set_rollback(True)
        expected = rule.expect[actor]
        if not _matches(expected, response, url):
            wrong.append(f"  {actor:<10} expected {expected}, got {_describe(response)}")
        elif expected == 403 and url.startswith("/api/"):
            needed = f"this needs the {_least_role(rule)} role or above"
            if needed not in response.json()["detail"]:
                wrong.append(f"  {actor:<10} 403 should say {needed!r}: {_describe(response)}")
    assert not wrong, f"{method} {url}:\n" + "\n".join(wrong)


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(MATRIX))
def test_other_methods_are_refused_with_405(world, name):
    url = url_for(world, name, None)
    others = [m for m in METHODS if m not in MATRIX[name]]
    wrong = []
    for method in others:
        with transaction.atomic():
            response = request(world, OWNER, method, url, None)
            transaction.set_rollback(True)
        if response.status_code != 405:
            wrong.append(f"  {method} -> {_describe(response)}")
    assert not wrong, f"{url} answers methods it does not list:\n" + "\n".join(wrong)


@pytest.mark.django_db
def test_a_refused_role_is_told_which_role_it_needs(world):
    response = request(
        world, VIEWER, "DELETE", url_for(world, "document-detail"), Rule(members(OWNER, 204))
    )
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "your role in 'acme' is viewer; this needs the owner role or above"
    )


@pytest.mark.django_db
def test_an_outsider_cannot_tell_a_real_workspace_from_a_missing_one(world):
    real = request(world, "outsider", "GET", url_for(world, "item-detail"), None)
    world.kwargs["ws"] = "no-such-workspace"
    missing = request(world, "outsider", "GET", url_for(world, "item-detail"), None)
    assert real.status_code == missing.status_code == 404
    assert real.json() == missing.json()


@pytest.mark.django_db
def test_uploaded_files_are_not_served_from_the_media_url_to_anyone(world, client):
    stored = world.document.file.name
    assert stored  # documents/acme/<sha>/...
    for who in (None, world.users[OWNER]):
        web = Client()
        if who is not None:
            web.force_login(who)
        assert web.get(f"/media/{stored}").status_code == 404


# -- every view declares its roles -----------------------------------------------------------

#: Routes with no role declaration, and why. Any other view without one fails the next test.
UNDECLARED = {
    "login": "the log-in page itself, before anyone is signed in",
    "logout": "ends whatever session there is; it touches no workspace data",
    "healthz": "a liveness probe for the proxy; it reads no data",
    "readyz": "a readiness probe: which of database, broker and storage answer; no data",
    "metrics": "counts and queue depths for Prometheus, behind its own switch and token",
    "labels-css": "the colours of workflow states and statuses; no workspace data",
    "api-token": "exchanges a password for a token, before anyone is signed in",
}


def _declared_actions(callback) -> tuple[set[str], set[str]]:
    """(the actions or methods a view serves, those its declaration names)."""
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    declared = set(access.ROLES.get(getattr(view_class, "resource", None), {}))
    actions = getattr(callback, "actions", None)
    if actions:  # a DRF viewset: one declaration per action
        return set(actions.values()), declared
    served = {m for m in view_class.http_method_names if m.upper() in METHODS}
    return {m for m in served if hasattr(view_class, m)}, declared


def test_every_view_and_action_declares_the_role_it_needs():
    missing = []
    for name, (route, callback) in sorted(ROUTES.items()):
        if name in UNDECLARED:
            continue
        if getattr(callback, "cls", None) or getattr(callback, "view_class", None):
            served, declared = _declared_actions(callback)
            missing += [f"{name} ({route}): {action}" for action in sorted(served - declared)]
        elif not hasattr(callback, "required_role"):
            missing.append(f"{name} ({route}): the page has no @requires")
    assert not missing, "views with no declared role:\n  " + "\n  ".join(missing)
    stale = sorted(set(UNDECLARED) - set(ROUTES))
    assert not stale, "UNDECLARED names routes the app no longer serves: " + ", ".join(stale)


# -- pages offer what the API allows -----------------------------------------------------------

#: The write controls each page shows, per role, from the roles paragraph of docs/api.md.
PAGE_FLAGS = {
    # (page, flag): roles that see it
    ("workspace", "can_write"): {OWNER, REVIEWER, ANNOTATOR},  # upload
    ("workspace", "is_owner"): {OWNER},  # new eval set
    ("evalset", "can_write"): {OWNER, REVIEWER, ANNOTATOR},  # new item
    ("evalset", "can_import"): {OWNER},
    ("item", "can_write"): {OWNER, REVIEWER, ANNOTATOR},
    ("review-page", "can_review"): {OWNER, REVIEWER},
    ("evalset-releases", "is_owner"): {OWNER},  # create a release
    ("evalset-import", "is_owner"): {OWNER},
    ("members-page", "is_owner"): {OWNER},  # invite, change roles, remove, withdraw
    ("settings-page", "can_edit"): {OWNER},  # parser settings
    ("assignments-page", "can_assign"): {OWNER},
    ("item", "can_reopen"): {OWNER},
    ("item", "can_delete"): {OWNER, REVIEWER, ANNOTATOR},
    ("document", "can_delete_document"): {OWNER},
    ("workspace", "can_retry"): {OWNER, REVIEWER, ANNOTATOR},
    ("workspace", "can_delete"): {OWNER},
    ("workspace", "can_manage"): {OWNER},
    ("review-page", "can_reopen"): {OWNER},
}


@pytest.mark.django_db
@pytest.mark.parametrize(("page", "flag"), sorted(PAGE_FLAGS))
def test_each_page_offers_a_role_exactly_what_the_api_lets_it_do(world, page, flag):
    wrong = []
    for role in ROLES:
        response = request(world, role, "GET", url_for(world, page), None)
        assert response.status_code == 200
        if bool(response.context[flag]) != (role in PAGE_FLAGS[page, flag]):
            wrong.append(f"  {role}: {flag} is {response.context[flag]}")
    assert not wrong, f"{page}:\n" + "\n".join(wrong)


# -- fields and actions whose rule is finer than their URL's -----------------------------------

#: What a request to write one field (or to take one action) does, per role:
WRITES = "writes"  # 2xx, and the value sent is stored
IGNORED = "ignored"  # 2xx, but the field is not the caller's to set: nothing changes
#: ... or an HTTP status (403: the role is too low; 409: refused for everyone in that state),
#: and then nothing is stored either.


@dataclass(frozen=True)
class FieldRule:
    expect: dict[str, object]  # role -> WRITES, IGNORED or a refusal status
    method: str
    url: str  # a route name
    body: Callable[[World], dict]
    written: Callable[[World], bool] | None  # whether the value sent was stored
    kwargs: dict | None = None
    query: str = ""
    setup: Callable[[World], None] | None = None


def roles_from(least: str, ok: object, below: int = 403) -> dict[str, object]:
    """Roles at or above ``least`` get ``ok``; those below get ``below``."""
    return {role: ok if ROLES.index(role) <= ROLES.index(least) else below for role in ROLES}


def _approved_anchor(world: World) -> str:
    return str(world.approved.anchors.get().public_id)


def _item(world: World, item_id: str):
    return world.evalset.items.filter(item_id=item_id).first()


def _assign_q1_to_ann(world: World) -> None:
    type(world.item).objects.filter(pk=world.item.pk).update(assignee=world.users[ANNOTATOR])


def _approved_version(world: World) -> int:
    world.approved.refresh_from_db()
    return world.approved.row_version


NEW_PARSE = {"parser": "mine", "text": "Employee Handbook", "page_starts": [0]}

#: The expected tables are written from the roles paragraph of docs/api.md, not read from the code.
FIELD_MATRIX: dict[str, FieldRule] = {
    # Choosing the reference parse is an owner's, by the /reference/ action or on upload.
    "make_reference on a new parse": FieldRule(
        roles_from(OWNER, WRITES),
        "POST",
        "parse-list",
        body=lambda w: {**NEW_PARSE, "make_reference": True},
        written=lambda w: w.document.parses.get(parser="mine").is_reference,
    ),
    "is_reference on a new parse": FieldRule(
        roles_from(ANNOTATOR, IGNORED),
        "POST",
        "parse-list",
        body=lambda w: {**NEW_PARSE, "is_reference": True},
        written=lambda w: w.document.parses.get(parser="mine").is_reference,
    ),
    # Assigning work is an owner's, through assignments or an item's assignee.
    "assignee on a new item": FieldRule(
        roles_from(OWNER, WRITES),
        "POST",
        "item-list",
        body=lambda w: {"id": "q9", "question": "Why?", "assignee": "ann"},
        written=lambda w: _item(w, "q9") is not None and _item(w, "q9").assignee_id is not None,
    ),
    "assignee on an item edit": FieldRule(
        roles_from(OWNER, WRITES),
        "PATCH",
        "item-detail",
        body=lambda w: {"assignee": "rita", "row_version": _row_version(w)},
        written=lambda w: _item(w, "q1").assignee_id == w.users[REVIEWER].pk,
    ),
    "clearing an item's assignee": FieldRule(
        roles_from(OWNER, WRITES),
        "PATCH",
        "item-detail",
        setup=_assign_q1_to_ann,
        body=lambda w: {"assignee": None, "row_version": _row_version(w)},
        written=lambda w: _item(w, "q1").assignee_id is None,
    ),
    "the current assignee sent back with an edit": FieldRule(
        roles_from(ANNOTATOR, WRITES),
        "PATCH",
        "item-detail",
        setup=_assign_q1_to_ann,
        body=lambda w: {"assignee": "ann", "answer": "1.5", "row_version": _row_version(w)},
        written=lambda w: _item(w, "q1").answer == "1.5",
    ),
    # The workflow alone moves an item's state; the author is whoever created it.
    "state on an item edit": FieldRule(
        roles_from(ANNOTATOR, IGNORED),
        "PATCH",
        "item-detail",
        body=lambda w: {"state": "approved", "row_version": _row_version(w)},
        written=lambda w: _item(w, "q1").state == "approved",
    ),
    "author on a new item": FieldRule(
        roles_from(ANNOTATOR, IGNORED),
        "POST",
        "item-list",
        body=lambda w: {"id": "q9", "question": "Why?", "author": "newbie"},
        written=lambda w: _item(w, "q9").author.username == "newbie",
    ),
    "a stale row_version on an item edit": FieldRule(
        roles_from(ANNOTATOR, 409),
        "PATCH",
        "item-detail",
        body=lambda w: {"answer": "stale", "row_version": _row_version(w) - 1},
        written=lambda w: _item(w, "q1").answer == "stale",
    ),
    # An approved item refuses every change, whoever asks, until an owner reopens it.
    "editing an approved item": FieldRule(
        roles_from(ANNOTATOR, 409),
        "PATCH",
        "item-detail",
        kwargs={"item": "q2"},
        body=lambda w: {"answer": "changed", "row_version": _approved_version(w)},
        written=lambda w: _item(w, "q2").answer == "changed",
    ),
    "deleting an approved item": FieldRule(
        roles_from(ANNOTATOR, 409),
        "DELETE",
        "item-detail",
        kwargs={"item": "q2"},
        body=lambda w: {},
        written=lambda w: _item(w, "q2") is None,
    ),
    "adding an anchor to an approved item": FieldRule(
        roles_from(ANNOTATOR, 409),
        "POST",
        "anchor-list",
        kwargs={"item": "q2"},
        body=lambda w: {"source_id": "handbook.txt", "quote": "Remote work"},
        written=lambda w: w.approved.anchors.count() == 2,
    ),
    "regrading an approved item's anchor": FieldRule(
        roles_from(ANNOTATOR, 409),
        "PATCH",
        "anchor-detail",
        kwargs={"item": "q2", "anchor": "approved"},
        body=lambda w: {"grade": 0},
        written=lambda w: w.approved.anchors.get().grade == 0,
    ),
    "deleting an approved item's anchor": FieldRule(
        roles_from(ANNOTATOR, 409),
        "DELETE",
        "anchor-detail",
        kwargs={"item": "q2", "anchor": "approved"},
        body=lambda w: {},
        written=lambda w: not w.approved.anchors.exists(),
    ),
    # Each kind of queued work needs the role that does it.
    "the next item to annotate": FieldRule(
        roles_from(ANNOTATOR, WRITES),
        "GET",
        "next-item",
        query="?role=annotate",
        body=lambda w: {},
        written=None,
    ),
    "the next item to review": FieldRule(
        roles_from(REVIEWER, WRITES),
        "GET",
        "next-item",
        query="?role=review",
        body=lambda w: {},
        written=None,
    ),
    # Owners alone: parser settings, roles (one's own too), what a release includes.
    "parser_settings of the workspace": FieldRule(
        roles_from(OWNER, WRITES),
        "PATCH",
        "workspace-detail",
        body=lambda w: {"parser_settings": {"reference": {"pdf": "pdfminer"}}},
        written=lambda w: type(w.workspace).objects.get(pk=w.workspace.pk).parser_settings != {},
    ),
    "a member's role": FieldRule(
        roles_from(OWNER, WRITES),
        "PATCH",
        "member-detail",
        kwargs={"username": "ann"},
        body=lambda w: {"role": "reviewer"},
        written=lambda w: w.workspace.memberships.get(user__username="ann").role == "reviewer",
    ),
    "unapproved items in a release": FieldRule(
        roles_from(OWNER, WRITES),
        "POST",
        "release-list",
        body=lambda w: {"formats": ["contextgrid-jsonl"], "include_states": ["draft"]},
        written=lambda w: w.evalset.releases.filter(includes_unapproved=True).exists(),
    ),
}


def _field_url(world: World, rule: FieldRule) -> str:
    kwargs = dict(rule.kwargs or {})
    if kwargs.get("anchor") == "approved":
        kwargs["anchor"] = _approved_anchor(world)
    return url_for(world, rule.url, Rule(expect={}, kwargs=kwargs, query=rule.query))


def _outcome(response, written: bool | None) -> object:
    if response.status_code >= 300:
        return response.status_code
    if written is None:
        return WRITES
    return WRITES if written else IGNORED


def test_the_field_matrix_lists_every_role():
    for what, rule in FIELD_MATRIX.items():
        assert set(rule.expect) == set(ROLES), what


@pytest.mark.django_db
@pytest.mark.parametrize("what", sorted(FIELD_MATRIX))
def test_each_role_may_write_a_field_exactly_as_declared(world, what):
    rule = FIELD_MATRIX[what]
    if rule.setup:
        rule.setup(world)
    wrong = []
    for role in ROLES:
        with transaction.atomic():
            url = _field_url(world, rule)
            response = request(world, role, rule.method, url, Rule(expect={}, body=rule.body))
            refused = response.status_code >= 300
            written = rule.written(world) if rule.written and not refused else None
            stored_anyway = refused and rule.written is not None and _stored(world, rule)
            transaction.set_rollback(True)
        got = _outcome(response, written)
        if got != rule.expect[role]:
            wrong.append(f"  {role:<10} expected {rule.expect[role]}, got {_describe(response)}")
        elif stored_anyway:
            wrong.append(f"  {role:<10} was refused ({got}) but the value was stored")
        elif got == 403 and "role or above" not in response.json()["detail"]:
            wrong.append(f"  {role:<10} 403 should name the role needed: {_describe(response)}")
    assert not wrong, f"{what} ({rule.method} {rule.url}):\n" + "\n".join(wrong)


def _stored(world: World, rule: FieldRule) -> bool:
    try:
        return bool(rule.written(world))
    except (AttributeError, ObjectDoesNotExist):
        return False  # the object the value would sit on does not exist: nothing stored


def test_every_route_names_an_eval_set_argument_set_slug():
    shadowing = sorted(
        name
        for name, (route, _callback) in ROUTES.items()
        if "set" in re.findall(r"<(?:\w+:)?(\w+)>", route)
    )

    assert not shadowing, "routes naming an argument `set`: " + ", ".join(shadowing)
