"""The owner's pages and the disabled-with-reason controls, server side (no browser needed).

Members, assignments and parser settings are pages over the same API and services; what a
member may not do, or what the item's state forbids, is shown disabled with the API's own
sentence. Also the fixes that need no browser: the release form's gold spans
per document kind, ``make run PORT=...``. (The plain-text parser's own version is helper
docview's change, with its test in ``tests/test_parsers.py``.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.test import Client

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import ingest
from evalsets.documents import services as documents_services
from evalsets.models import Document, Invitation, ItemState, Membership, ParseStatus, Role
from evalsets.review import assignments, workflow
from evalsets.workspaces import services as workspaces_services
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def web():
    def make(user) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def approved(item, annotator, reviewer, reference):
    start = HANDBOOK.index("Remote work")
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + 11
    )
    item.refresh_from_db()
    item, _ = workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    return workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)


OWNER_PAGES = ["/w/acme/members/", "/w/acme/settings/", "/w/acme/sets/quiz/assignments/"]


@pytest.mark.parametrize("url", OWNER_PAGES)
def test_the_owners_pages_open_for_any_member_and_are_a_404_for_an_outsider(
    web, viewer, outsider, evalset, url
):
    assert web(viewer).get(url).status_code == 200
    assert web(outsider).get(url).status_code == 404
    assert web(None).get(url)["Location"].startswith("/login/")


# -- members -------------------------------------------------------------------------------------


def test_the_members_page_lists_members_and_invitations_with_their_roles(web, owner, workspace):
    workspaces_services.member_invite(
        workspace=workspace, username="newbie", role="reviewer", by=owner
    )
    body = web(owner).get("/w/acme/members/").content.decode()
    for name in ("olive", "rita", "ann", "vic"):
        assert f'data-member="{name}"' in body
    assert 'data-invitation="newbie"' in body
    assert "invited" in body and "Withdraw" in body


def test_the_last_owners_role_and_removal_are_disabled_with_the_apis_reason(web, owner, workspace):
    body = web(owner).get("/w/acme/members/").content.decode()
    row = body[body.index('data-member="olive"') : body.index('data-member="rita"')]
    assert row.count(" disabled") == 3  # the role select, Change role, Remove
    assert "&#x27;olive&#x27; is the last owner of &#x27;acme&#x27;" in row
    other = body[body.index('data-member="rita"') :]
    assert "last owner" not in other.split("</tr>")[0]


def test_a_second_owner_makes_the_first_one_removable(web, owner, reviewer, workspace):
    workspaces_services.member_change_role(
        membership=Membership.objects.get(user=reviewer, workspace=workspace), role=Role.OWNER
    )
    body = web(owner).get("/w/acme/members/").content.decode()
    assert "is the last owner" not in body


def test_a_non_owner_sees_the_members_but_no_controls(web, annotator, owner, workspace):
    workspaces_services.member_invite(
        workspace=workspace, username="newbie", role="viewer", by=owner
    )
    body = web(annotator).get("/w/acme/members/").content.decode()
    assert 'data-member="olive"' in body
    assert "Change role" not in body and "Invite" not in body
    assert "newbie" not in body  # pending invitations are the owners' business


def test_an_invitation_by_e_mail_reaches_whoever_holds_that_address(
    client_for, owner, workspace, make_user
):
    response = client_for(owner).post(
        "/api/workspaces/acme/members/",
        {"username": "Ann.Smith@Example.org", "role": "annotator"},
        format="json",
    )
    assert response.status_code == 201
    holder = make_user("asmith")
    holder.email = "ann.smith@example.org"
    holder.save()
    answer = client_for(holder).post("/api/invitations/acme/accept/")
    assert answer.status_code == 200
    assert Membership.objects.get(user=holder, workspace=workspace).role == "annotator"
    assert not Invitation.objects.exists()


# -- assignments --------------------------------------------------------------------------------


def test_the_assignments_page_shows_each_persons_open_queue(web, owner, annotator, item):
    assignments.assignments_create(
        evalset=item.evalset, by=owner, usernames=["ann"], kind="annotate"
    )
    body = web(owner).get("/w/acme/sets/quiz/assignments/").content.decode()
    ann = body[body.index('data-queue="ann"') :].split("</tr>")[0]
    assert 'data-assignment="q1"' in ann and "Unassign" in ann
    assert "Assign annotators" in body and 'name="overlap"' in body


def test_a_viewer_sees_the_queues_but_no_assign_form(web, viewer, owner, item):
    assignments.assignments_create(
        evalset=item.evalset, by=owner, usernames=["ann"], kind="annotate"
    )
    body = web(viewer).get("/w/acme/sets/quiz/assignments/").content.decode()
    assert 'data-assignment="q1"' in body
    assert "Assign annotators" not in body and "Unassign" not in body


def test_the_dashboards_assign_with_overlap_links_to_the_assignments_page(web, owner, item):
    body = web(owner).get("/w/acme/sets/quiz/dashboard/").content.decode()
    assert 'href="/w/acme/sets/quiz/assignments/"' in body


# -- item, review and document pages: state and role -------------------------------------------


def test_an_approved_items_save_is_disabled_with_the_reason_and_an_owner_gets_reopen(
    web, owner, approved
):
    body = web(owner).get("/w/acme/sets/quiz/items/q1/").content.decode()
    save = body[body.index("data-save") : body.index(">Save<")]
    assert "disabled" in save
    assert workflow.locked_message("q1").replace("'", "&#x27;") in body
    reopen = body[body.index("data-reopen") : body.index(">Reopen<")]
    assert "disabled" not in reopen


def test_an_approved_items_open_document_for_more_evidence_is_disabled_with_the_reason(
    web, owner, approved
):
    body = web(owner).get("/w/acme/sets/quiz/items/q1/").content.decode()
    opener = body[body.index("data-open-document") : body.index(">Open document<")]
    assert "disabled" in opener
    assert 'aria-describedby="why-save"' in opener
    assert workflow.locked_message("q1").replace("'", "&#x27;") in body


def test_a_draft_items_open_document_is_offered(web, annotator, item, reference):
    body = web(annotator).get("/w/acme/sets/quiz/items/q1/").content.decode()
    opener = body[body.index("data-open-document") : body.index(">Open document<")]
    assert "disabled" not in opener


def test_a_submitted_items_submit_is_disabled_with_the_reason(web, annotator, item):
    workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    body = web(annotator).get("/w/acme/sets/quiz/items/q1/").content.decode()
    submit = body[body.index("data-submit-review") : body.index(">Submit for review<")]
    assert "disabled" in submit
    reason = workflow.illegal_message("q1", ItemState.SUBMITTED, "submit")
    assert reason.replace("'", "&#x27;") in body
    save = body[body.index("data-save") : body.index(">Save<")]
    assert "disabled" not in save  # a submitted item can still be edited


def test_a_draft_items_reopen_is_disabled_and_only_owners_see_it(web, owner, annotator, item):
    body = web(owner).get("/w/acme/sets/quiz/items/q1/").content.decode()
    reopen = body[body.index("data-reopen") : body.index(">Reopen<")]
    assert "disabled" in reopen
    assert "only an approved item can be reopened" in body
    assert "data-reopen" not in web(annotator).get("/w/acme/sets/quiz/items/q1/").content.decode()


def test_deleting_an_item_first_lists_what_goes_with_it(web, owner, approved):
    workflow.item_reopen(item=approved, user=owner)
    body = web(owner).get("/w/acme/sets/quiz/items/q1/").content.decode()
    dialog = body[body.index('id="delete-item-dialog"') :].split("</dialog>")[0]
    assert "1 anchor " in dialog
    assert "resolution" in dialog and "comment" in dialog and "assignment" in dialog


def test_the_review_page_offers_owners_reopen_on_approved_items(web, owner, reviewer, approved):
    page = "/w/acme/sets/quiz/review/?state=approved"
    assert "data-reopen" in web(owner).get(page).content.decode()
    body = web(reviewer).get(page).content.decode()
    assert "data-reopen" not in body
    assert "only a submitted item can be approved" in body  # why Approve is disabled


def test_the_review_page_says_four_eyes_is_why_an_author_cannot_approve(
    web, annotator, reviewer, item, workspace
):
    Membership.objects.filter(user=annotator, workspace=workspace).update(role=Role.REVIEWER)
    workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    body = web(annotator).get("/w/acme/sets/quiz/review/").content.decode()
    assert "someone else must approve it (four eyes)" in body


def test_deleting_a_document_first_lists_its_parses_and_the_anchors_left_waiting(
    web, owner, annotator, approved
):
    body = web(owner).get("/w/acme/documents/handbook.txt").content.decode()
    dialog = body[body.index('id="delete-document-dialog"') :].split("</dialog>")[0]
    assert "1 parse of it" in dialog
    assert "1 anchor (in 1 item)" in dialog
    assert (
        "data-delete-document"
        not in web(annotator).get("/w/acme/documents/handbook.txt").content.decode()
    )


# -- failed uploads ------------------------------------------------------------------------------


def test_a_failed_upload_offers_retry_and_remove_and_says_why_remove_is_disabled(
    web, owner, annotator, failed_upload
):
    body = web(owner).get("/w/acme/").content.decode()
    row = body[body.index('data-doc="broken.txt"') :].split("</tr>")[0]
    assert ">Retry<" in row and ">Remove<" in row
    row = web(annotator).get("/w/acme/").content.decode()
    row = row[row.index('data-doc="broken.txt"') :].split("</tr>")[0]
    assert ">Retry<" in row
    assert "removing a document needs the owner role" in row


def test_retry_of_a_parser_that_timed_out_says_it_reads_it_on_the_slow_queue_with_more_time(
    web, owner, failed_upload, settings
):
    settings.GROUNDWORK_PARSE_SLOW_TIMEOUT_S = 780
    failed_upload.parses.update(error_code="timeout", error="took longer than 300 s")
    body = web(owner).get("/w/acme/").content.decode()
    row = body[body.index('data-doc="broken.txt"') :].split("</tr>")[0]
    assert "plaintext ran out of time: Retry reads it on the slow parse queue" in row
    assert "with up to 780 s" in row and "Retry anyway?" not in row


def test_retry_of_a_parser_that_had_the_slow_queues_time_says_it_stays_failed(
    web, owner, failed_upload, settings
):
    settings.GROUNDWORK_PARSE_SLOW_TIMEOUT_S = 780
    failed_upload.parses.update(
        error_code="timeout",
        error="took longer than 780 s",
        diagnostics={ingest.TIMED_OUT: {"limit": "total", "seconds": 780}},
    )
    body = web(owner).get("/w/acme/").content.decode()
    row = body[body.index('data-doc="broken.txt"') :].split("</tr>")[0]
    assert "plaintext ran out of the most time a parse gets: Retry leaves it failed" in row


def test_retry_of_a_parse_that_failed_otherwise_asks_nothing(web, owner, failed_upload):
    body = web(owner).get("/w/acme/").content.decode()
    row = body[body.index('data-doc="broken.txt"') :].split("</tr>")[0]
    assert "timed out" not in row and ">Retry<" in row


def test_retrying_queues_the_failed_parse_again(failed_upload, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        queued = ingest.document_reparse(document=failed_upload)
    assert [p.parser for p in queued] == ["plaintext"]
    parse = failed_upload.parses.get()
    assert parse.status == ParseStatus.READY and parse.text == "abc"


# -- settings and workspaces ---------------------------------------------------------------------


def test_the_settings_page_shows_which_parsers_run_and_the_reference(web, owner, workspace):
    workspaces_services.workspace_update(
        workspace=workspace,
        parser_settings={"parsers": {"pdf": ["pdfminer"]}, "reference": {"pdf": "pdfminer"}},
    )
    body = web(owner).get("/w/acme/settings/").content.decode()
    pdf = body[body.index('data-kind="pdf"') :].split("</tr>")[0]
    assert 'value="pdfminer" checked' in pdf and 'value="pypdf" checked' not in pdf
    assert 'data-reference-of="pdf" value="pdfminer" checked' in pdf
    assert "Save settings" in body


def test_the_home_page_offers_to_create_a_workspace(web, annotator, workspace):
    body = web(annotator).get("/").content.decode()
    assert "Create a workspace" in body and 'data-url="/api/workspaces/"' in body


# -- fixes seen on the way ------------------------------------------------------------------------


def test_the_dashboards_tables_scroll_inside_a_box_that_says_so(web, owner, item):
    body = web(owner).get("/w/acme/sets/quiz/dashboard/").content.decode()
    assert body.count('class="table-scroll"') >= 1
    assert "js/tables.js" in body


def test_make_run_takes_a_port():
    out = subprocess.run(
        ["make", "-n", "run", "PORT=8001"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert "rundev 127.0.0.1:8001" in out


@pytest.fixture
def mixed_corpus(workspace, reviewer, annotator, evalset, django_capture_on_commit_callbacks):
    """A PDF and a text file, each with two ready parses; one approved item with evidence
    in both."""
    with django_capture_on_commit_callbacks(execute=True):
        return _mixed_corpus(workspace, reviewer, annotator, evalset)


def _mixed_corpus(workspace, reviewer, annotator, evalset):
    docs = {}
    for source_id, kind, parsers in (
        ("report.pdf", "pdf", ("pypdf", "pdfminer")),
        ("notes.txt", "text", ("plaintext", "their-pipeline")),
    ):
        doc = Document(
            workspace=workspace, source_id=source_id, sha256=source_id.ljust(64, "0"), size=9
        )
        doc.file.save(source_id, ContentFile(HANDBOOK.encode()), save=False)
        doc.kind = kind
        doc.save()
        for name in parsers:
            documents_services.parse_version_add(
                document=doc, parser=name, text=HANDBOOK, origin="parsed"
            )
        docs[kind] = doc
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="m1", question="Leave?"
    )
    start = HANDBOOK.index("Remote work")
    for doc in docs.values():
        anchoring_services.anchor_create_from_highlight(
            item=item,
            user=annotator,
            parse=doc.parses.get(is_reference=True),
            start=start,
            end=start + 11,
        )
    item.refresh_from_db()
    item, _ = workflow.item_submit(item=item, user=annotator, row_version=item.row_version)
    workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)
    return docs


def test_the_release_form_lists_each_parser_once_per_kind_of_document(web, owner, mixed_corpus):
    body = web(owner).get("/w/acme/sets/quiz/releases/").content.decode()
    text = body[body.index('data-gold-kind="text"') :].split("</select>")[0]
    pdf = body[body.index('data-gold-kind="pdf"') :].split("</select>")[0]
    assert text.count('value="plaintext"') == 1 and "pdfminer" not in text
    assert pdf.count('value="pdfminer"') == 1 and "plaintext" not in pdf
    assert "reference parse" in text


@pytest.fixture
def release_with(client_for, owner, django_capture_on_commit_callbacks):
    def make(gold_parsers: dict) -> dict:
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(owner).post(
                "/api/workspaces/acme/evalsets/quiz/releases/",
                {"formats": ["contextgrid-jsonl"], "gold_parsers": gold_parsers},
                format="json",
            )
        assert response.status_code == 202, response.json()
        return client_for(owner).get(response.json()["url"]).json()

    return make


def test_gold_spans_by_default_come_from_each_documents_reference_parse(release_with, mixed_corpus):
    release = release_with({"pdf": "reference", "text": "reference"})
    assert release["status"] == "ready", release
    assert {k: v["gold"] for k, v in release["parses_used"].items()} == {
        "notes.txt": True,
        "report.pdf": True,
    }
    assert release["gold_parsers"] == {"pdf": "reference", "text": "reference"}


def test_gold_spans_per_kind_take_the_chosen_parser_of_each_kind(release_with, mixed_corpus):
    release = release_with({"pdf": "pdfminer", "text": "reference"})
    used = release["parses_used"]
    assert used["report.pdf"]["parser"] == "pdfminer" and used["report.pdf"]["gold"]
    assert used["notes.txt"]["parser"] == "plaintext" and used["notes.txt"]["gold"]


def test_a_gold_parser_that_does_not_read_that_kind_is_refused_with_the_choices(
    client_for, owner, mixed_corpus
):
    response = client_for(owner).post(
        "/api/workspaces/acme/evalsets/quiz/releases/",
        {"formats": ["contextgrid-jsonl"], "gold_parsers": {"text": "pdfminer"}},
        format="json",
    )
    assert response.status_code == 400
    body = response.json()
    assert "no text document" in body["detail"] and "plaintext" in body["detail"]
    assert "gold_parsers" in body["errors"]


def test_with_nothing_approved_create_release_is_disabled_with_the_apis_reason(web, owner, item):
    body = web(owner).get("/w/acme/sets/quiz/releases/").content.decode()
    button = body[body.index("data-create-release") : body.index(">Create release<")]
    assert "disabled" in button
    assert "eval set &#x27;quiz&#x27; has no approved items to release" in body


def test_with_an_approved_item_create_release_is_enabled(web, owner, approved):
    body = web(owner).get("/w/acme/sets/quiz/releases/").content.decode()
    button = body[body.index("data-create-release") : body.index(">Create release<")]
    assert "disabled" not in button
