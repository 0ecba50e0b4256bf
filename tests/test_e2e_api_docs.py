"""The API docs render from the app alone, under the Content-Security-Policy."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
#: Both renderers read the whole schema in the browser: slow on a busy two-core machine.
RENDERED = 30_000


def _only_the_live_server(page, live_server) -> list[str]:
    """Refuse every request that leaves the app; return the list of those refused."""
    refused: list[str] = []

    def route(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    return refused


def test_swagger_ui_renders_the_operations_with_no_network_but_the_app(page, live_server):
    refused = _only_the_live_server(page, live_server)

    page.goto(f"{live_server.url}/api/docs/")

    expect(page.locator(".opblock-summary-path").first).to_be_visible(timeout=RENDERED)
    expect(page.locator(".opblock").filter(has_text="/api/auth/token/").first).to_be_visible(
        timeout=RENDERED
    )
    assert refused == []


def test_redoc_renders_the_operations_with_no_network_but_the_app(page, live_server):
    refused = _only_the_live_server(page, live_server)
    # Redoc's one outside reference, its maker's logo on a CDN, is refused by the policy.
    logo = "https://cdn.redoc.ly/"
    page.csp_expected.append(logo)

    with page.expect_console_message(lambda message: logo in message.text):
        page.goto(f"{live_server.url}/api/redoc/")
        expect(page.get_by_text("/api/auth/token/").first).to_be_attached(timeout=RENDERED)
        title = page.get_by_role("heading", name="Groundwork API").first
        expect(title).to_be_visible(timeout=RENDERED)

    assert refused == []
