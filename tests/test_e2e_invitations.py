"""An invitation in the browser: nobody joins a workspace until they accept."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets import services
from evalsets.models import Membership
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_invitee_accepts_on_the_home_page_and_the_workspace_appears(
    page, live_server, workspace, owner, make_user
):
    newbie = make_user("newbie")
    services.member_invite(workspace=workspace, username="newbie", role="reviewer", by=owner)

    log_in(page, live_server, "newbie", PASSWORD)
    invitations = page.get_by_role("region", name="Invitations")
    expect(invitations).to_contain_text("acme")
    expect(page.get_by_role("row").filter(has_text="acme")).to_have_count(0)
    invitations.get_by_role("button", name="Accept").click()

    expect(page.get_by_role("row").filter(has_text="acme")).to_contain_text("reviewer")
    expect(page.get_by_role("region", name="Invitations")).to_have_count(0)
    assert Membership.objects.get(user=newbie, workspace=workspace).role == "reviewer"


def test_an_invitee_declines_and_stays_out(page, live_server, workspace, owner, make_user):
    newbie = make_user("newbie")
    services.member_invite(workspace=workspace, username="newbie", role="viewer", by=owner)

    log_in(page, live_server, "newbie", PASSWORD)
    page.get_by_role("region", name="Invitations").get_by_role("button", name="Decline").click()

    expect(page.get_by_role("region", name="Invitations")).to_have_count(0)
    expect(page.get_by_text("You are not a member of any workspace yet.")).to_be_visible()
    assert not Membership.objects.filter(user=newbie).exists()
