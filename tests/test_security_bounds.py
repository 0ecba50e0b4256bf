"""What an attacker could do with small inputs that are not about heavy work.

Keys that URLs carry never hold a part a browser rewrites, and the front end sends nothing to
such a URL; no text reaches a database lookup it cannot be stored in; invitations by e-mail
match exactly, and a workspace or an invitee holds a bounded number of them. (User names on
the two ways in are in ``test_login_limit.py``, production settings in ``test_settings.py``.)
"""

from __future__ import annotations

import io
import re
from importlib import import_module
from pathlib import Path

import pytest
from contextgrid.core.evalset import EvalItem as CgItem
from contextgrid.core.evalset import EvalSet as CgSet
from contextgrid.core.evalset import GoldAnchor as CgAnchor
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter, SlugConverter, UUIDConverter
from playwright.sync_api import expect

from evalsets import validation
from evalsets.api.storable import StorableInput
from evalsets.errors import InvalidInput
from evalsets.models import Document, EvalItem, EvalSet, ParseStatus
from evalsets.pure.formats import get_format
from tests.browser import log_in
from tests.conftest import PASSWORD

WS = "/api/workspaces/acme"

#: Parts of a URL path a browser rewrites before sending it, written as keys could hold them.
REWRITTEN = [
    "..",
    ".",
    "%2e%2e",
    ".%2E",
    "%2e",
    "../../acme/evalsets/quiz",
    "a/../b",
    "a/./b",
    "a/%2e%2e/b",
    "a/..",
    "a\\b",
    "..\\..\\acme",
]
#: Source ids with an empty part: proxies merge the slashes, so they name another path.
EMPTY_PARTS = ["a//b", "/a", "a/", "/"]
#: Keys that look close to those and are fine.
FINE = ["a.b", "...", "..a", "a..", ".hidden", "reports/2024.pdf", "%2e%2ex", "q.1", "v1.2/..x"]


# -- keys that URLs carry --------------------------------------------------------------------


def _walk(patterns, prefix=""):
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if route.startswith("admin/"):
            continue
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, route)
        else:
            assert isinstance(pattern, URLPattern)
            yield route, pattern


#: Every URL parameter that is free text, and the check its writer applies. A slug, UUID or
#: number cannot hold a dot segment; anything else must be here.
CHECKED_KEYS = {
    "doc": validation.check_source_id,
    "item": validation.check_item_id,
    "item_id": validation.check_item_id,
    "username": validation.check_invitee_name,
}
SAFE_CONVERTERS = (SlugConverter, UUIDConverter, IntConverter)


def test_every_free_text_url_parameter_is_a_key_whose_writer_refuses_rewritten_parts():
    unchecked = sorted(
        f"{route} <{name}>"
        for route, pattern in _walk(get_resolver().url_patterns)
        for name, converter in pattern.pattern.converters.items()
        if not isinstance(converter, SAFE_CONVERTERS) and name not in CHECKED_KEYS
    )
    assert unchecked == []


@pytest.mark.parametrize("check", sorted(CHECKED_KEYS.values(), key=lambda f: f.__name__))
@pytest.mark.parametrize("key", [k for k in REWRITTEN if "/" not in k])
def test_each_key_check_refuses_a_part_a_browser_rewrites(check, key):
    with pytest.raises(InvalidInput) as refused:
        check(key)
    assert "browser" in refused.value.message


@pytest.mark.parametrize("key", REWRITTEN + EMPTY_PARTS)
def test_a_source_id_with_a_rewritten_or_empty_part_is_refused(key):
    with pytest.raises(InvalidInput) as refused:
        validation.check_source_id(key)
    assert refused.value.field == "source_id"


@pytest.mark.parametrize("key", FINE)
def test_keys_with_dots_inside_a_part_are_fine(key):
    assert validation.check_source_id(key) == key
    if "/" not in key:
        assert validation.check_item_id(key) == key


@pytest.mark.django_db
def test_an_upload_named_to_climb_out_of_its_url_is_refused_and_the_set_stays(
    client_for, annotator, evalset
):
    response = client_for(annotator).post(
        f"{WS}/documents/",
        {
            "file": SimpleUploadedFile("x.txt", b"\xff\xfe not text"),
            "source_id": "../../acme/evalsets/quiz",
        },
        format="multipart",
    )

    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == ["source_id"]
    assert "a browser removes from a URL" in body["errors"]["source_id"][0]
    assert not Document.objects.exists()
    assert EvalSet.objects.filter(slug="quiz").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("item_id", ["..", ".", "%2E%2e", "a\\b"])
def test_an_item_id_a_browser_would_rewrite_is_refused(client_for, annotator, evalset, item_id):
    response = client_for(annotator).post(
        f"{WS}/evalsets/quiz/items/", {"id": item_id, "question": "Why?"}, format="json"
    )

    assert response.status_code == 400
    assert "id" in response.json()["errors"]
    assert not EvalItem.objects.exists()


@pytest.mark.django_db
def test_an_import_naming_such_an_item_or_document_cannot_be_committed(client_for, owner, evalset):
    items = (
        CgItem(id="..", question="Where?", anchors=(CgAnchor("a.txt", "here"),)),
        CgItem(id="q2", question="Where?", anchors=(CgAnchor("../a.txt", "here"),)),
    )
    out = io.BytesIO()
    header = CgSet(id="quiz", items=items, version=1, source="t", meta={})
    get_format("contextgrid-jsonl").writer(header, iter(items), out)

    response = client_for(owner).post(
        f"{WS}/evalsets/quiz/imports/preview/",
        {"file": SimpleUploadedFile("set.jsonl", out.getvalue())},
        format="multipart",
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["can_commit"] is False
    assert sorted(p["field"] for p in body["refused"]) == ["id", "source_id"]


STATIC_JS = Path(__file__).resolve().parent.parent / "static" / "js"
#: Requests sent around ``Groundwork.request``, each to a URL no stored id is part of.
OWN_PAGE_FETCHES = [
    "discussion.js",  # window.location.pathname: the page itself, for its comments
    "evalset.js",  # the page's own URL with a filter query, for its items table
]


def test_every_script_sends_its_requests_through_the_guarded_request_function():
    senders = sorted(
        path.name
        for path in STATIC_JS.rglob("*.js")
        if path.name != "api.js"
        for line in path.read_text().splitlines()
        if re.search(r"\bfetch\(|XMLHttpRequest|sendBeacon|EventSource", line)
    )
    assert senders == OWN_PAGE_FETCHES


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_an_old_row_whose_id_climbs_out_of_its_url_sends_nothing_when_removed(
    page, live_server, workspace, evalset
):
    # Stored before such ids were refused: the Remove button must not reach another URL.
    source_id = "../../acme/evalsets/quiz"
    doc = Document(workspace=workspace, source_id=source_id, sha256="e" * 64, size=3, kind="text")
    doc.file.save("old.txt", ContentFile(b"abc"), save=False)
    doc.save()
    doc.parses.create(parser="plaintext", status=ParseStatus.FAILED, error="unreadable")
    sent = []
    page.on("request", lambda r: sent.append((r.method, r.url)) if "/api/" in r.url else None)

    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    row = page.locator("tr[data-doc]").filter(has_text="acme/evalsets/quiz")
    row.get_by_role("button", name="Remove").click()
    page.get_by_role("dialog").get_by_role("button", name="Remove", exact=True).click()

    expect(row).to_contain_text("no URL can carry")
    assert [m for m, _ in sent if m == "DELETE"] == []
    assert EvalSet.objects.filter(slug="quiz").exists()
    assert Document.objects.filter(source_id=source_id).exists()


# -- names and text before any lookup ----------------------------------------------------------


def _storable_serializers() -> list[type]:
    # Importing the views imports every serializer the API uses.
    import_module("evalsets.api.urls")
    found, stack = set(), [StorableInput]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                stack.append(sub)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


@pytest.mark.django_db
@pytest.mark.parametrize("serializer", _storable_serializers(), ids=lambda c: c.__qualname__)
def test_no_input_field_queries_the_database_with_text_it_cannot_store(
    serializer, workspace, django_assert_num_queries
):
    for name, field in serializer(context={"workspace": workspace}).fields.items():
        if field.read_only:
            continue
        checked = serializer(data={name: "ann\x00"}, context={"workspace": workspace})
        with django_assert_num_queries(0):
            assert not checked.is_valid()
        assert "NUL" in str(checked.errors[name]), (name, checked.errors)


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["post", "patch"])
def test_a_nul_in_an_assignee_is_a_400_naming_it(client_for, owner, item, method):
    url = f"{WS}/evalsets/quiz/items/"
    body = {"id": "q2", "question": "Why?", "assignee": "ann\x00"}
    if method == "patch":
        url, body = f"{url}q1/", {"row_version": item.row_version, "assignee": "ann\x00"}

    response = getattr(client_for(owner), method)(url, body, format="json")

    assert response.status_code == 400
    assert "NUL" in response.json()["errors"]["assignee"][0]


# -- invitations ---------------------------------------------------------------------------------


def _invite(client, name: str, ws: str = "acme"):
    return client.post(
        f"/api/workspaces/{ws}/members/", {"username": name, "role": "viewer"}, format="json"
    )


@pytest.mark.django_db
def test_an_email_invitation_reaches_only_that_address_whatever_a_database_folds(
    client_for, owner, workspace, django_user_model
):
    # PostgreSQL's UPPER makes the dotless i (U+0131) an I: a case-insensitive match there
    # took this invitation for someone else's address.
    assert _invite(client_for(owner), "kira@example.com").status_code == 201
    other = django_user_model.objects.create_user("other", email="k\u0131ra@example.com")
    same = django_user_model.objects.create_user("kira", email="KIRA@Example.com")

    assert client_for(other).get("/api/invitations/").json()["results"] == []
    assert client_for(other).post("/api/invitations/acme/accept/").status_code == 404
    assert [
        i["workspace"] for i in client_for(same).get("/api/invitations/").json()["results"]
    ] == ["acme"]
    assert client_for(same).post("/api/invitations/acme/accept/").status_code == 200


@pytest.mark.django_db
def test_an_address_that_differs_in_a_dotless_i_is_not_already_a_member(
    client_for, owner, workspace, django_user_model
):
    member = django_user_model.objects.create_user("kira", email="k\u0131ra@example.com")
    workspace.memberships.create(user=member, role="viewer")

    assert _invite(client_for(owner), "kira@example.com").status_code == 201
    assert _invite(client_for(owner), "K\u0131RA@example.com").status_code == 409


@pytest.mark.django_db
def test_a_workspace_holds_a_bounded_number_of_open_invitations(client_for, owner, settings):
    settings.GROUNDWORK_MAX_OPEN_INVITATIONS_PER_WORKSPACE = 2
    client = client_for(owner)
    client.post("/api/workspaces/", {"slug": "acme", "name": "Acme"}, format="json")
    assert [_invite(client, n).status_code for n in ("a1", "a2")] == [201, 201]

    refused = _invite(client, "a3")
    again = client.post(
        "/api/workspaces/acme/members/", {"username": "a2", "role": "annotator"}, format="json"
    )

    assert refused.status_code == 409
    body = refused.json()
    assert body["limit"] == {"setting": "GROUNDWORK_MAX_OPEN_INVITATIONS_PER_WORKSPACE", "value": 2}
    assert "workspace 'acme' has 2 open invitations" in body["errors"]["username"][0]
    assert again.status_code == 201 and again.json()["role"] == "annotator"


@pytest.mark.django_db
def test_an_invitee_holds_a_bounded_number_of_open_invitations_whatever_the_spelling(
    client_for, make_user, settings
):
    settings.GROUNDWORK_MAX_OPEN_INVITATIONS_PER_INVITEE = 2
    owners = [client_for(make_user(f"owner{n}")) for n in range(3)]
    for n, client in enumerate(owners):
        client.post("/api/workspaces/", {"slug": f"w{n}", "name": "x"}, format="json")

    first = _invite(owners[0], "Kira@example.com", "w0")
    second = _invite(owners[1], "KIRA@example.com", "w1")
    third = _invite(owners[2], "kira@example.com", "w2")

    assert (first.status_code, second.status_code, third.status_code) == (201, 201, 409)
    assert third.json()["limit"]["setting"] == "GROUNDWORK_MAX_OPEN_INVITATIONS_PER_INVITEE"
    assert "'kira@example.com' has 2 open invitations" in third.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["..", ".", "a/b", "a\\b"])
def test_an_invitation_to_a_name_no_url_can_carry_is_refused(client_for, owner, workspace, name):
    response = _invite(client_for(owner), name)

    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["username"]
    assert not workspace.invitations.exists()


@pytest.mark.django_db
def test_the_rows_stored_before_the_check_are_listed_and_fail_the_deployment_check(
    workspace, evalset, item
):
    for source_id in ("../../acme/evalsets/quiz", "a\\b", "docs//x.txt", "fine/.hidden.txt"):
        Document.objects.create(
            workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0")[:64]
        )
    EvalItem.objects.create(evalset=evalset, item_id="%2E%2e", question="Old?")
    out = io.StringIO()

    with pytest.raises(CommandError, match="4 key"):
        call_command("find_unaddressable_keys", stdout=out)

    listed = out.getvalue()
    for shown in (
        "'../../acme/evalsets/quiz'",
        "'a\\\\b'",
        "'docs//x.txt'",
        "item in quiz '%2E%2e'",
    ):
        assert shown in listed, listed
    assert "hidden" not in listed and "'q1'" not in listed


@pytest.mark.django_db
def test_with_no_such_rows_the_deployment_check_passes(workspace, document, item):
    out = io.StringIO()
    call_command("find_unaddressable_keys", stdout=out)
    assert "Every document and item key can be carried by a URL." in out.getvalue()
