"""Every page is sent with the Content-Security-Policy, and none needs inline script or style.

The pages are every GET route of the permission matrix (so a new page is walked without
anyone adding it here), plus the API docs, the log-in page's error and lock-out states.
Each HTML answer must carry the policy and contain no ``<script>`` without ``src`` (other than
JSON data blocks, which a browser does not run), no ``on...=`` handler and no ``style``
attribute; the browser tests then prove the policy holds in Chromium.
"""

from __future__ import annotations

import pytest
from django.test import Client
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from evalsets.workspaces import services as workspaces_services
from tests.conftest import PASSWORD
from tests.test_security_matrix import MATRIX, ROUTES, request, url_for

pytestmark = pytest.mark.django_db

REQUIRED = {
    "default-src": {"'self'"},
    "script-src": {"'self'"},
    "style-src": {"'self'"},
    "object-src": {"'none'"},
    "base-uri": {"'self'"},
    "frame-ancestors": {"'none'"},
    "form-action": {"'self'"},
    "img-src": {"'self'", "data:"},
}
#: Pages whose own policy widens style-src (and only that, plus workers), with the reason.
WIDER_STYLE = {"/api/redoc/": "Redoc writes <style> elements at run time (styled-components)"}
#: Pages with a stricter policy of their own: no script at all, images only from data: URLs,
#: framed only by our own pages (the rendered view's frame, labelling.views.FRAME_POLICY).
STRICTER = {
    "/document-frame/": {
        "default-src": {"'none'"},
        "style-src": {"'self'"},
        "img-src": {"data:"},
        "base-uri": {"'none'"},
        "form-action": {"'none'"},
        "frame-ancestors": {"'self'"},
        "sandbox": {"allow-same-origin"},
    }
}

#: Routes with a GET that are not pages: /metrics is off (404) unless switched on, and
#: Prometheus's text format when on (tests/test_operability.py serves it).
NOT_PAGES = {"metrics"}
PAGES = sorted(name for name, rule in MATRIX.items() if "GET" in rule and name not in NOT_PAGES)


def policy(response) -> dict[str, set[str]]:
    header = response.get("Content-Security-Policy", "")
    directives: dict[str, set[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            directives[words[0]] = set(words[1:])
    return directives


def inline_code(html: str) -> list[str]:
    """Inline scripts (other than JSON data), event-handler and style attributes in ``html``."""
    found = []
    for node in HTMLParser(html).css("*"):
        attributes = node.attributes
        is_data = attributes.get("type") == "application/json"
        if node.tag == "script" and "src" not in attributes and not is_data:
            found.append(f"inline <script>: {node.text()[:60]!r}")
        for name in attributes:
            if name.lower().startswith("on"):
                found.append(f"<{node.tag} {name}=...>")
            if name.lower() == "style":
                found.append(f"<{node.tag} style={attributes[name]!r}>")
    return found


def assert_strict(response, url: str) -> None:
    directives = policy(response)
    if url in STRICTER:
        assert directives == STRICTER[url], url
        assert not inline_code(response.content.decode()), url
        return
    for directive, sources in REQUIRED.items():
        if directive == "style-src" and url in WIDER_STYLE:
            assert sources <= directives.get(directive, set()), url
            continue
        assert directives.get(directive) == sources, (
            f"{url}: {directive} is {directives.get(directive)}, expected {sources}"
        )
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-eval'" not in directives["script-src"]
    if response.get("Content-Type", "").startswith("text/html"):
        html = response.content.decode()
        problems = inline_code(html)
        if url in WIDER_STYLE:
            problems = [p for p in problems if "style=" not in p]
        assert not problems, f"{url}: " + "; ".join(problems)


@pytest.mark.parametrize("name", PAGES)
def test_every_page_carries_the_policy_and_has_no_inline_code(world, name):
    rule = MATRIX[name]["GET"]
    if rule.setup:
        rule.setup(world)
    url = url_for(world, name, rule)
    actor = "owner" if rule.expect["owner"] not in (302, "refused") else "anonymous"
    response = request(world, actor, "GET", url, rule)

    assert response.status_code < 400, f"{url} answered {response.status_code}"
    assert_strict(response, url)


@pytest.mark.parametrize("url", ["/api/docs/", "/api/docs/?script=", "/api/redoc/", "/api/schema/"])
def test_the_api_docs_carry_the_policy_and_load_nothing_from_elsewhere(url):
    response = Client().get(url)

    assert response.status_code == 200
    assert_strict(response, url.split("?")[0])
    body = response.content.decode()
    if response["Content-Type"].startswith("text/html"):
        assert "http://" not in body and "https://" not in body, "no CDN: every file is ours"


def test_the_log_in_page_with_an_error_and_locked_out_has_no_inline_code(settings, world):
    settings.GROUNDWORK_LOGIN_ATTEMPTS = 2
    client = Client()
    wrong = client.post("/login/", {"username": "ann", "password": "wrong"})
    locked = client.post("/login/", {"username": "ann", "password": PASSWORD + "x"})

    assert wrong.status_code == 200 and locked.status_code == 429
    for response in (wrong, locked):
        assert_strict(response, "/login/")


def test_the_walker_finds_inline_code_of_each_kind():
    html = (
        '<script>alert(1)</script><script type="application/json">{}</script>'
        '<button onclick="x()">b</button><span style="width:1px"></span>'
        '<script src="/a.js"></script>'
    )
    found = inline_code(html)

    assert len(found) == 3
    assert any("inline <script>" in f for f in found)
    assert any("onclick" in f for f in found)
    assert any("style=" in f for f in found)


def test_every_route_with_a_page_is_walked():
    assert {"home", "workspace", "document", "evalset", "item", "dashboard-page"} <= set(PAGES)
    assert set(PAGES) <= set(ROUTES)


def test_the_home_page_with_invitations_has_no_inline_code(world):
    workspaces_services.member_invite(
        workspace=world.workspace, username="newbie", role="viewer", by=world.users["owner"]
    )
    client = Client()
    client.force_login(world.users["owner"].__class__.objects.get(username="newbie"))

    response = client.get("/")

    assert b"data-invitation" in response.content
    assert_strict(response, "/")
