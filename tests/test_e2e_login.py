"""Logging in through the browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_a_member_logs_in_and_sees_their_workspace_and_role(page, live_server, workspace):
    log_in(page, live_server, "ann", PASSWORD)
    expect(page.get_by_role("heading", name="Your workspaces")).to_be_visible()
    row = page.get_by_role("row").filter(has_text="acme")
    expect(row).to_contain_text("annotator")


def test_a_wrong_password_says_so_and_stays_on_the_login_page(page, live_server, workspace):
    log_in(page, live_server, "ann", "wrong")
    expect(page.get_by_role("alert")).to_contain_text("didn't match")
