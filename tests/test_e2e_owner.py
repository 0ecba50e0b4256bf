"""An owner runs a team in Chromium, without the API: members, assignments, reopening,
deleting with what goes with it said first, parser settings, a new workspace, failed uploads.
And the fixes a browser shows: controls the state forbids are disabled with the
reason, wide tables say they scroll, upload notes stay until dismissed, gold spans per kind.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.models import (
    Document,
    EvalItem,
    Invitation,
    ItemAssignment,
    Membership,
    ParseStatus,
    Workspace,
)
from evalsets.review import workflow
from tests.browser import log_in, shot
from tests.conftest import HANDBOOK, PASSWORD
from tests.test_e2e_annotate import select

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def approved(item, annotator, reviewer, reference):
    start = HANDBOOK.index("Remote work")
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + 11
    )
    item.refresh_from_db()
    item, _ = workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    return workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)


def confirm(page, name: str) -> None:
    """Press the confirm step's button (a modal dialog that says what happens)."""
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name=name, exact=True).click()


# -- members -------------------------------------------------------------------------------------


def test_an_owner_invites_changes_a_role_removes_a_member_and_withdraws_an_invitation(
    page, live_server, workspace, owner, make_user
):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    page.get_by_role("link", name="Members").click()

    me = page.locator('tr[data-member="olive"]')
    expect(me.get_by_role("button", name="Remove")).to_be_disabled()
    expect(me).to_contain_text("'olive' is the last owner of 'acme'; make someone else an owner")

    page.get_by_label("Username or e-mail").fill("newbie")
    page.get_by_label("Role", exact=True).select_option("reviewer")
    page.get_by_role("button", name="Invite").click()
    expect(page.locator("[data-owner-note]")).to_contain_text(
        "Invited newbie as reviewer; they join when they accept on their home page."
    )
    expect(page.locator('tr[data-invitation="newbie"]')).to_contain_text("invited")
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "members.png", full_page=True)

    rita = page.locator('tr[data-member="rita"]')
    rita.get_by_label("Role of rita").select_option("owner")
    rita.get_by_role("button", name="Change role").click()
    expect(page.locator('tr[data-member="rita"] [data-role]')).to_have_text("Owner")
    # Two owners now: the first one is no longer the last.
    expect(
        page.locator('tr[data-member="olive"]').get_by_role("button", name="Remove")
    ).to_be_enabled()

    page.locator('tr[data-member="vic"]').get_by_role("button", name="Remove").click()
    confirm(page, "Remove")
    expect(page.locator('tr[data-member="vic"]')).to_have_count(0)

    page.locator('tr[data-invitation="newbie"]').get_by_role("button", name="Withdraw").click()
    expect(page.locator('tr[data-invitation="newbie"]')).to_have_count(0)
    assert not Invitation.objects.exists()
    assert not Membership.objects.filter(user__username="vic").exists()
    assert Membership.objects.get(user__username="rita").role == "owner"


def test_an_invitation_to_someone_already_here_says_so_beside_the_field(
    page, live_server, workspace
):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/members/")
    page.get_by_label("Username or e-mail").fill("ann")
    page.get_by_role("button", name="Invite").click()
    expect(page.locator('[data-error-for="username"]')).to_contain_text(
        "'ann' is already a member of 'acme'; change their role instead"
    )


# -- assignments --------------------------------------------------------------------------------


def test_an_owner_assigns_items_with_overlap_and_sees_each_persons_queue(
    page, live_server, item, owner, make_user, workspace
):
    second = make_user("bea")
    Membership.objects.create(workspace=workspace, user=second, role="annotator")
    anchoring_services.item_create(
        evalset=item.evalset, user=owner, item_id="q2", question="Remote?"
    )

    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/dashboard/")
    page.get_by_role("link", name="Assign items with overlap").click()

    form = page.get_by_role("form", name="Assign annotators")
    form.locator('input[name="users"][value="ann"]').check()
    form.locator('input[name="users"][value="bea"]').check()
    form.get_by_label("Overlap").fill("2")
    form.get_by_role("button", name="Assign to annotate").click()
    expect(page.locator("[data-owner-note]")).to_contain_text("Assigned 4 item(s)")
    for person in ("ann", "bea"):
        queue = page.locator(f'tr[data-queue="{person}"]')
        expect(queue.locator("[data-assignment]")).to_have_count(2)

    review = page.get_by_role("form", name="Assign a reviewer")
    review.locator('input[name="users"][value="rita"]').check()
    review.get_by_role("button", name="Assign to review").click()
    expect(page.locator('tr[data-queue="rita"] [data-assignment]')).to_have_count(2)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "assignments.png", full_page=True)

    page.get_by_role("button", name="Unassign q1 from bea").click()
    expect(page.locator('tr[data-queue="bea"] [data-assignment]')).to_have_count(1)
    assert ItemAssignment.objects.filter(kind="annotate").count() == 3


# -- reopen, and state-forbidden controls ---------------------------------------------------------


def test_an_owner_reopens_an_approved_item_from_its_page_and_can_edit_it_again(
    page, live_server, approved
):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    save = page.get_by_role("button", name="Save", exact=True)
    expect(save).to_be_disabled()
    expect(page.locator("#why-save")).to_contain_text(
        "eval item 'q1' is approved; an owner must reopen it"
    )
    expect(page.get_by_role("button", name="Remove this evidence")).to_be_disabled()

    page.get_by_role("button", name="Reopen").click()
    confirm(page, "Reopen")
    expect(page.locator("[data-owner-note]")).to_contain_text("Reopened q1")
    expect(page.locator("[data-state]")).to_have_text("Draft")
    expect(page.get_by_role("button", name="Save", exact=True)).to_be_enabled()
    expect(page.get_by_role("button", name="Reopen")).to_be_disabled()
    expect(page.get_by_role("button", name="Remove this evidence")).to_be_enabled()
    page.get_by_label("Answer").fill("1.5 days")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_have_text("Saved.")
    assert EvalItem.objects.get(item_id="q1").answer == "1.5 days"


def test_an_owner_reopens_an_approved_item_from_the_review_page(page, live_server, approved):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/review/?state=approved")
    card = page.locator("#review-q1")
    expect(card.locator("[data-approve]")).to_be_disabled()
    expect(card).to_contain_text("only a submitted item can be approved")
    card.get_by_role("button", name="Reopen").click()
    confirm(page, "Reopen")
    expect(page.locator("[data-owner-note]")).to_contain_text("Reopened q1")
    assert EvalItem.objects.get(item_id="q1").state == "draft"


def test_after_submitting_the_submit_button_is_disabled_with_the_reason(
    page, live_server, item, reference
):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    submit = page.get_by_role("button", name="Submit for review")
    submit.click()
    expect(page.locator("[data-state]")).to_have_text("Submitted")
    expect(submit).to_be_disabled()
    expect(page.locator("#why-submit")).to_contain_text(
        "only a draft item or one with changes requested can be submitted"
    )
    expect(page.get_by_role("button", name="Save", exact=True)).to_be_enabled()


def test_the_highlight_popover_shows_an_approved_item_disabled_with_the_reason(
    page, live_server, approved
):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employees accrue")
    select(page, (1, "Employees accrue"), (1, "per month."))
    popover = page.get_by_role("dialog", name="Attach to a question")
    option = popover.locator('[data-item="q1"]')
    expect(option).to_have_attribute("aria-disabled", "true")
    expect(option).to_contain_text("eval item 'q1' is approved; an owner must reopen it")
    option.dispatch_event("click")  # Playwright will not click a disabled option; a person may
    expect(popover.locator('[data-pop-error="non_field_errors"]')).to_contain_text(
        "before it is given new evidence"
    )


# -- deleting, with what goes with it said first -------------------------------------------------


def test_an_owner_deletes_an_item_after_reading_what_goes_with_it(
    page, live_server, approved, owner
):
    workflow.item_reopen(item=approved, user=owner)
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    page.get_by_role("button", name="Delete item…").click()
    dialog = page.get_by_role("dialog", name="Delete item q1?")
    expect(dialog.locator("[data-delete-impact]")).to_contain_text("1 anchor (its evidence)")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert EvalItem.objects.filter(item_id="q1").exists()

    page.get_by_role("button", name="Delete item…").click()
    dialog.get_by_role("button", name="Delete item", exact=True).click()
    expect(page).to_have_url(f"{live_server.url}/w/acme/sets/quiz/")
    expect(page.locator("[data-owner-note]")).to_contain_text("Deleted q1")
    assert not EvalItem.objects.filter(item_id="q1").exists()


def test_an_owner_deletes_a_document_after_reading_what_goes_with_it(page, live_server, approved):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt")
    page.get_by_role("button", name="Delete document…").click()
    dialog = page.get_by_role("dialog", name="Delete handbook.txt?")
    expect(dialog).to_contain_text("1 parse of it")
    expect(dialog).to_contain_text("1 anchor (in 1 item) keep their quotes and wait")
    dialog.get_by_role("button", name="Delete document").click()
    expect(page).to_have_url(f"{live_server.url}/w/acme/")
    expect(page.locator("[data-owner-note]")).to_contain_text("Deleted handbook.txt")
    assert not Document.objects.exists()


# -- settings, workspaces, failed uploads --------------------------------------------------------


def test_an_owner_changes_which_parsers_read_pdfs(page, live_server, workspace):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    page.get_by_role("link", name="Settings").click()
    pdf = page.locator('tr[data-kind="pdf"]')
    pdf.locator('[data-parser-of="pdf"][value="pypdf"]').uncheck()
    pdf.locator('[data-reference-of="pdf"][value="pdfminer"]').check()
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("[data-owner-note]")).to_contain_text("Settings saved")
    workspace.refresh_from_db()
    assert workspace.parser_settings["parsers"]["pdf"] == ["pdfminer", "pdfium"]
    assert workspace.parser_settings["reference"]["pdf"] == "pdfminer"

    pdf = page.locator('tr[data-kind="pdf"]')
    pdf.locator('[data-parser-of="pdf"][value="pdfminer"]').uncheck()
    pdf.locator('[data-parser-of="pdf"][value="pdfium"]').uncheck()
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator('[data-error-for="parser_settings"]')).to_contain_text(
        "parser_settings.parsers.pdf must list at least one of"
    )


def test_anyone_creates_a_workspace_from_the_home_page_and_owns_it(page, live_server, make_user):
    make_user("solo")
    log_in(page, live_server, "solo", PASSWORD)
    page.get_by_label("Short name (in its address)").fill("legal")
    page.get_by_label("Name", exact=True).fill("Legal team")
    page.get_by_role("button", name="Create workspace").click()
    expect(page).to_have_url(f"{live_server.url}/w/legal/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Legal team")
    assert Workspace.objects.get(slug="legal").memberships.get().role == "owner"


def test_a_failed_upload_is_retried_from_the_workspace_page(
    page, live_server, background, failed_upload
):
    # ``background`` first: with a real worker it points media storage at the worker's
    # folder, so the upload's file must be saved after it.
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    row = page.locator('tr[data-doc="broken.txt"]')
    expect(row.get_by_role("button", name="Remove")).to_be_disabled()
    expect(row).to_contain_text("removing a document needs the owner role")
    row.get_by_role("button", name="Retry").click()
    expect(page.locator('tr[data-doc="broken.txt"] [data-status="ready"]')).to_be_visible()
    assert failed_upload.parses.get().status == ParseStatus.READY


def test_an_owner_removes_a_failed_upload(page, live_server, failed_upload):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    page.locator('tr[data-doc="broken.txt"]').get_by_role("button", name="Remove").click()
    confirm(page, "Remove")
    expect(page.locator('tr[data-doc="broken.txt"]')).to_have_count(0)
    assert not Document.objects.exists()


# -- fixes seen on the way ------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1024, 1366])
def test_the_dashboards_wide_table_says_it_scrolls(page, live_server, item, width):
    page.set_viewport_size({"width": width, "height": 800})
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/dashboard/")
    people = page.get_by_role("region", name="People (table)")
    expect(people).to_have_class(re.compile(r"\boverflowing\b.*\bmore-right\b"))
    expect(page.locator("[data-scroll-hint]").first).to_contain_text("scroll it sideways")
    people.evaluate("box => { box.scrollLeft = box.scrollWidth; }")
    expect(people).to_have_class(re.compile(r"\bmore-left\b"))


def test_upload_notes_stay_until_dismissed_and_a_renamed_copy_says_it_is_not_added(
    page, live_server, document, background, tmp_path
):
    copy = tmp_path / "handbook-copy.txt"
    copy.write_text(HANDBOOK)
    stored = Document.objects.get()
    stored.sha256 = hashlib.sha256(HANDBOOK.encode()).hexdigest()
    stored.save()

    page.clock.install()
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    page.locator("[data-file-input]").set_input_files(str(copy))
    note = page.locator(".uploads li")
    expect(note).to_contain_text(
        "not added: its bytes are identical to handbook.txt, already here, so it is that "
        "document and nothing is stored as handbook-copy.txt"
    )
    page.clock.run_for(60_000)
    expect(note).to_be_visible()
    note.get_by_role("button", name="Dismiss").click()
    expect(note).to_have_count(0)
    assert Document.objects.count() == 1


def test_a_release_from_the_form_writes_gold_spans_from_each_documents_reference_parse(
    page, live_server, approved, background
):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/releases/")
    gold = page.get_by_label("text documents")
    expect(gold).to_have_value("reference")
    expect(gold.locator("option")).to_have_count(3)  # reference, plaintext, none
    page.get_by_role("button", name="Create release").click()
    expect(page.locator("#release-rows")).to_contain_text("gold: text reference")
