"""An invitation in the browser: nobody joins a workspace until they accept."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.models import Membership
from evalsets.workspaces import services as workspaces_services
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_invitee_accepts_on_the_home_page_and_the_workspace_appears(
    page, live_server, workspace, owner, make_user
):
    newbie = make_user("newbie")
    workspaces_services.member_invite(
        workspace=workspace, username="newbie", role="reviewer", by=owner
    )

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
    workspaces_services.member_invite(
        workspace=workspace, username="newbie", role="viewer", by=owner
    )

    log_in(page, live_server, "newbie", PASSWORD)
    page.get_by_role("region", name="Invitations").get_by_role("button", name="Decline").click()

    expect(page.get_by_role("region", name="Invitations")).to_have_count(0)
    expect(page.get_by_text("You are not a member of any workspace yet.")).to_be_visible()
    assert not Membership.objects.filter(user=newbie).exists()


def test_an_answer_clicked_before_the_page_script_runs_is_not_lost(
    page, live_server, workspace, owner, make_user
):
    # on a slow connection the buttons are drawn before home.js arrives: a click then must
    # wait for the script, not go nowhere
    newbie = make_user("newbie")
    workspaces_services.member_invite(
        workspace=workspace, username="newbie", role="viewer", by=owner
    )
    held: list = []
    page.route("**/js/home.js", lambda route: held.append(route))

    log_in(page, live_server, "newbie", PASSWORD)
    decline = page.get_by_role("region", name="Invitations").get_by_role("button", name="Decline")
    for _ in range(500):  # until the page asks for its script (the route holds it)
        if held:
            break
        page.wait_for_timeout(10)
    assert held, "home.js was never requested"
    # drawn, and the script not there: a click now would go nowhere, so none is taken
    expect(decline).to_be_disabled()
    expect(page.get_by_role("region", name="Invitations").get_by_role("button")).to_have_count(2)
    held[0].continue_()
    decline.click()

    expect(page.get_by_role("region", name="Invitations")).to_have_count(0)
    assert not Membership.objects.filter(user=newbie).exists()
