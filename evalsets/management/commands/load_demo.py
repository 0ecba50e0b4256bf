"""Load a small demo workspace so ``make run`` opens on something to label.

Idempotent: running it again changes nothing. Everything after the demo users goes through
the services and the review workflow, the same way a user's invitations, uploads, highlights
and submissions do.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand
from django.db import transaction

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import ingest
from evalsets.documents import services as documents_services
from evalsets.models import ParseVersion, Role, Workspace
from evalsets.review import workflow
from evalsets.workspaces import services as workspaces_services

PASSWORD = "groundwork"

PAGES = [
    "Employee Handbook\n\n"
    "1. Leave\n\n"
    "Employees accrue 1.5 days of leave per month. Leave not taken by the end of the "
    "calendar year may be carried over, up to a maximum of five days.\n\n"
    "Requests for leave of more than ten consecutive working days must be approved by "
    "the head of department at least four weeks in advance.\n",
    "2. Remote work\n\n"
    "Staff may work remotely for up to three days a week, provided their team agrees a "
    "shared office day. The company reimburses up to 40 euros a month for home internet.\n\n"
    "Remote work from another country is limited to 30 days in any twelve-month period, "
    "because of tax and social-security rules.\n",
    "3. Expenses\n\n"
    "Expense claims must be filed within 60 days of the purchase, with an itemised receipt. "
    "Claims above 500 euros need a second approver from the finance team.\n\n"
    "Travel is booked through the official portal; first-class fares are not reimbursed.\n",
]

# What another pipeline makes of the same file: ligatures, words broken across lines,
# a running header on every page, and spaces lost between some words.
OTHER_PAGES = [
    page.replace("fi", "\ufb01")
    .replace("calendar year", "calen-\ndar year")
    .replace("head of department", "headofdepartment")
    for page in PAGES
]

ITEMS = [
    (
        "q1",
        "How much leave do employees accrue per month?",
        "numeric",
        "1.5 days",
        "Employees accrue 1.5 days of leave per month.",
    ),
    (
        "q2",
        "How many unused leave days can be carried over?",
        "numeric",
        "Five",
        "up to a maximum of five days",
    ),
    (
        "q3",
        "How long may staff work remotely from another country?",
        "factoid",
        "30 days",
        "Remote work from another country is limited to 30 days in any twelve-month period",
    ),
    (
        "q4",
        "Who approves expense claims above 500 euros?",
        "factoid",
        None,
        "Claims above 500 euros need a second approver from the finance team.",
    ),
    ("q5", "Does the company pay for gym memberships?", "unanswerable", None, None),
]


class Command(BaseCommand):
    help = "Create the demo workspace, users, document, parses and eval set (idempotent)."

    def handle(self, *args, **options):
        if Workspace.objects.filter(slug="demo").exists():
            self.stdout.write("Demo workspace already loaded.")
            return
        with transaction.atomic():
            self._load()
        self.stdout.write(self.style.SUCCESS("Loaded the demo workspace 'demo'."))

    def _user(self, username: str, **extra):
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username, defaults=extra)
        if created:
            user.set_password(PASSWORD)
            user.save()
        return user

    def _load(self) -> None:
        owner = self._user("owner", is_staff=True, is_superuser=True)
        annotator = self._user("annotator")
        reviewer = self._user("reviewer")
        workspace = workspaces_services.workspace_create(
            user=owner, slug="demo", name="Demo handbook"
        )
        for member, role in ((annotator, Role.ANNOTATOR), (reviewer, Role.REVIEWER)):
            invitation = workspaces_services.member_invite(
                workspace=workspace, username=member.username, role=role, by=owner
            )
            workspaces_services.invitation_accept(invitation=invitation, user=member)

        text = "\n".join(PAGES)
        upload = SimpleUploadedFile("handbook.txt", text.encode(), content_type="text/plain")
        document, _ = documents_services.document_upload(
            workspace=workspace, user=owner, upload=upload
        )
        for parse in ParseVersion.objects.filter(document=document):
            claimed = ingest.claim_parse(parse.pk)
            if claimed is not None:
                ingest.run_parse(claimed)
        other = "\n".join(OTHER_PAGES)
        starts, offset = [], 0
        for page in OTHER_PAGES:
            starts.append(offset)
            offset += len(page) + 1
        documents_services.parse_version_add(
            document=document,
            parser="their-pipeline",
            parser_version="2.1",
            text=other,
            page_starts=starts,
        )
        reference = document.parses.get(is_reference=True)

        evalset = anchoring_services.evalset_create(
            workspace=workspace, user=owner, slug="handbook-quiz", name="Handbook quiz"
        )
        for item_id, question, qtype, answer, quote in ITEMS:
            item = anchoring_services.item_create(
                evalset=evalset,
                user=annotator,
                item_id=item_id,
                question=question,
                qtype=qtype,
                answer=answer,
            )
            # Assignments are the owner's to make (evalsets.access.ASSIGN).
            item = anchoring_services.item_update(
                item=item, user=owner, row_version=item.row_version, assignee=annotator
            )
            if quote:
                start = reference.text.index(quote)
                anchoring_services.anchor_create_from_highlight(
                    item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
                )
        workflow.item_submit(item=evalset.items.get(item_id="q1"), user=annotator)
