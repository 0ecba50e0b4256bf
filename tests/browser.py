"""Real Chromium for browser tests, driven by Playwright against Django's live server.

Debian's ``chromium`` is used (never a tool's own browser download), headless, with the flags
this machine needs. Tests marked ``e2e`` skip where it is missing, except in CI.

Screenshots (`shot`) are kept only when ``GROUNDWORK_SHOTS`` names a folder:
``GROUNDWORK_SHOTS=docs make test-e2e`` redraws the pictures in docs/ that come from these
tests; a plain run leaves the checkout as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("GROUNDWORK_CHROMIUM", "/usr/bin/chromium")
SHOTS = os.environ.get("GROUNDWORK_SHOTS")
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"needs Chromium at {CHROMIUM} (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls that fixtures
    # make here are plain synchronous code, so tell Django that is fine.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield chromium
        chromium.close()


# Reports each Content-Security-Policy violation the page sees; an init script runs before
# the page's own and is not itself subject to the policy.
REPORT_CSP_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolation(`${event.violatedDirective} blocked ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile || event.documentURI}:${event.lineNumber}`);
});
"""


@pytest.fixture
def page(browser):
    """A fresh page; the test fails if anything on it breaks the Content-Security-Policy."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    violations: list[str] = []

    def report(text: str) -> None:
        violations.append(text)

    def console(message) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    context.expose_function("__cspViolation", report)
    context.add_init_script(REPORT_CSP_VIOLATIONS)
    page = context.new_page()
    page.on("console", console)
    page.csp_expected = []  # a test may name blocked URLs it expects (and asserts) to be blocked
    yield page
    context.close()
    violations = [v for v in violations if not any(url in v for url in page.csp_expected)]
    if violations:
        pytest.fail("the page broke its Content-Security-Policy:\n" + "\n".join(violations))


def log_in(page, live_server, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def shot(page, name: str, *, full_page: bool = False) -> None:
    """Keep a screenshot of `page` as `name` in the ``GROUNDWORK_SHOTS`` folder, if one is set."""
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=full_page)


#: axe-core as npm installed it (package.json; ``make test-e2e`` runs ``npm ci`` first).
AXE = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
#: WCAG 2.1 A and AA, the level the product promises.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
RUN_AXE = """async (tags) => {
  const result = await window.axe.run(document, { runOnly: { type: "tag", values: tags } });
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.help} at `
      + v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
}"""


def axe_violations(page) -> list[str]:
    """The serious and critical WCAG 2.1 AA violations axe-core finds on the page as it is.

    axe's source is evaluated through the DevTools protocol (as Playwright's ``evaluate``
    does), not added as a script element, so the page's Content-Security-Policy stays as
    strict as it is and still holds for the page's own scripts.
    """
    if not AXE.exists():  # a skip is a failure in CI (tests/conftest.py)
        pytest.skip(f"needs axe-core at {AXE} (npm ci; make test-e2e runs it)")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    return page.evaluate(RUN_AXE, AXE_TAGS)
