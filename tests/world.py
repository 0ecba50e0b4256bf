"""One of everything in workspace ``acme``, so every URL the app serves has a real object.

The security tests (permission matrix, CSRF) share one world per test module (the ``world``
fixture in ``tests/conftest.py``): the users and workspace of the conftest fixtures, a second
parse besides the reference one, items in each workflow state they need, an anchor, a comment,
an assignment, two built releases. ``World.kwargs`` fills every URL keyword with a real value.

The builders of the conftest's base objects (users, ``acme``, the handbook, ``quiz``, ``q1``)
live here too, so the per-test fixtures and the shared world make the very same objects.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field

from contextgrid import EvalItem as CgItem
from contextgrid import EvalSet as CgSet
from contextgrid import GoldAnchor as CgAnchor
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.experiments import services as experiments_services
from evalsets.models import Document, EvalItem, ItemAssignment, ItemState, Membership, Role
from evalsets.pure.formats import get_format
from evalsets.pure.parsers import PARSERS
from evalsets.releases import services as releases_services
from evalsets.review import assignments, comments
from evalsets.workspaces import services as workspaces_services
from tests.documents import make_pdf

RELEASE_FORMAT = "contextgrid-jsonl"
#: A team's retrieval run for the released item q2, its chunk placed by its text alone.
RUN_FILE = (
    b'{"question_id": "q2", "retrieved": [{"source_id": "handbook.txt", '
    b'"text": "Remote work is limited to 30 days a year."}]}\n'
)

PASSWORD = "correct horse battery"

HANDBOOK = (
    "Employee Handbook\n\nEmployees accrue 1.5 days of leave per month. "
    "Leave may be carried over.\n"
    "Remote work is limited to 30 days a year.\n"
    "Employees accrue 1.5 days of leave per month.\n"
)


def create_user(username: str):
    return get_user_model().objects.create_user(username=username, password=PASSWORD)


def create_outsider(make_user):
    """``otto``: a member of another workspace, and of nothing in ``acme``."""
    user = make_user("otto")
    workspaces_services.workspace_create(user=user, slug="elsewhere", name="Elsewhere")
    return user


def create_acme(*, owner, reviewer, annotator, viewer):
    """Workspace ``acme`` with one member of each role."""
    workspace = workspaces_services.workspace_create(user=owner, slug="acme", name="Acme")
    Membership.objects.create(workspace=workspace, user=reviewer, role=Role.REVIEWER)
    Membership.objects.create(workspace=workspace, user=annotator, role=Role.ANNOTATOR)
    Membership.objects.create(workspace=workspace, user=viewer, role=Role.VIEWER)
    return workspace


def create_handbook(workspace) -> Document:
    """``handbook.txt`` with a ready reference parse (no parser needed)."""
    document = Document(
        workspace=workspace, source_id="handbook.txt", sha256="0" * 64, size=len(HANDBOOK)
    )
    document.file.save("handbook.txt", ContentFile(HANDBOOK.encode()), save=False)
    document.kind = "text"
    document.save()
    documents_services.parse_version_add(
        document=document,
        parser="plaintext",
        parser_version="1",
        text=HANDBOOK,
        page_starts=[0, HANDBOOK.index("Remote")],
        origin="parsed",
    )
    return document


def create_quiz(workspace, owner):
    return anchoring_services.evalset_create(
        workspace=workspace, user=owner, slug="quiz", name="Quiz"
    )


def create_q1(evalset, annotator):
    return anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="q1",
        question="How much leave do employees accrue per month?",
        qtype="numeric",
    )


@dataclass
class World:
    users: dict  # actor name -> User (no entry for "anonymous")
    tokens: dict  # actor name -> API token key
    workspace: object
    document: object
    reference: object
    other_parse: object
    evalset: object
    item: object  # q1, a draft by the annotator, with one anchor
    approved: object  # q2, approved
    anchor: object
    comment: object
    assignment: object
    experiment: object = None  # an uploaded run scored on release 1
    kwargs: dict = field(default_factory=dict)


def import_file(item_id: str = "q7", set_id: str = "quiz") -> bytes:
    """A context-grid JSONL eval set with one new item quoting the handbook."""
    item = CgItem(
        id=item_id,
        question="Can leave be carried over?",
        anchors=(CgAnchor("handbook.txt", "Leave may be carried over."),),
    )
    out = io.BytesIO()
    evalset = CgSet(id=set_id, items=(item,), version=1, source="groundwork", meta={})
    get_format("contextgrid-jsonl").writer(evalset, iter((item,)), out)
    return out.getvalue()


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


#: A one-page PDF with its pdfium parse (boxes and all), for the PDF view's routes.
PDF_SOURCE_ID = "tiny.pdf"


def pdf_document(
    workspace,
    *,
    source_id: str = PDF_SOURCE_ID,
    data: bytes | None = None,
    text: str = "Leave is accrued monthly.",
) -> Document:
    """A PDF with its pdfium parse (boxes and all), read in this process (no worker reads the
    world's files): by default ``tiny.pdf``, a page of ``text``. Given ``data``, the file
    stored is ``data`` while the parse is read from a plain PDF of ``text`` (a file whose own
    text costs minutes to read, when only its drawing is on trial)."""
    view = make_pdf([text])
    stored = view if data is None else data
    document = Document(
        workspace=workspace,
        source_id=source_id,
        sha256=hashlib.sha256(stored).hexdigest(),
        size=len(stored),
        kind="pdf",
    )
    document.file.save(source_id, ContentFile(stored), save=False)
    document.save()
    parsed = PARSERS["pdfium"].parse(view)
    parse = documents_services.parse_version_add(
        document=document,
        parser="pdfium",
        parser_version=parsed.parser_version,
        text=parsed.text,
        page_starts=parsed.page_starts,
        origin="parsed",
    )
    parse.char_boxes.save("boxes", ContentFile(parsed.char_boxes))
    return document


def build_world(
    *, owner, reviewer, annotator, viewer, outsider, make_user, document, evalset, item, capture
) -> World:
    """``capture`` is pytest-django's ``django_capture_on_commit_callbacks`` (to build releases)."""
    workspace = document.workspace
    reference = document.parses.get(is_reference=True)
    other_parse = documents_services.parse_version_add(
        document=document,
        parser="their-pipeline",
        parser_version="2.1",
        text=reference.text,
        page_starts=reference.page_starts,
    )
    make_user("newbie")  # not a member yet: the owner adds them in the matrix
    pdf_document(workspace)
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="1.5 days of leave per month"
    )
    comment = comments.comment_add(item=item, user=annotator, body="Is the quote long enough?")
    approved = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q2", question="How long may staff work remotely?"
    )
    anchoring_services.anchor_create_typed(
        item=approved, user=annotator, source_id="handbook.txt", quote="limited to 30 days a year"
    )
    EvalItem.objects.filter(pk=approved.pk).update(state=ItemState.APPROVED)
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["rita"], kind="review", item_ids=["q1"]
    )
    assignment = ItemAssignment.objects.get(item=item, kind="review")
    with capture(execute=True):
        releases_services.release_create(evalset=evalset, user=owner, formats=[RELEASE_FORMAT])
    with capture(execute=True):
        releases_services.release_create(evalset=evalset, user=owner, formats=[RELEASE_FORMAT])
    experiment = experiments_services.run_commit(
        evalset=evalset, user=owner, release=1, data=RUN_FILE, filename="run.jsonl", k=1
    )
    users = {
        "owner": owner,
        "reviewer": reviewer,
        "annotator": annotator,
        "viewer": viewer,
        "outsider": outsider,
    }
    tokens = {name: Token.objects.create(user=user).key for name, user in users.items()}
    item.refresh_from_db()
    kwargs = {
        "ws": workspace.slug,
        "workspace": workspace.slug,  # an invitation's workspace, named by the invitee
        "doc": document.source_id,
        "parse": str(other_parse.public_id),
        "page": 1,  # a page of the document (the PDF view's routes)
        "set": evalset.slug,
        "set_slug": evalset.slug,
        "item": item.item_id,
        "item_id": item.item_id,
        "anchor": str(anchor.public_id),
        "assignment": str(assignment.public_id),
        "username": viewer.username,
        "version": 1,
        "other": 2,
        "fmt": RELEASE_FORMAT,
        "experiment": str(experiment.public_id),
    }
    return World(
        users=users,
        tokens=tokens,
        workspace=workspace,
        document=document,
        reference=reference,
        other_parse=other_parse,
        evalset=evalset,
        item=item,
        approved=approved,
        anchor=anchor,
        comment=comment,
        assignment=assignment,
        experiment=experiment,
        kwargs=kwargs,
    )


def build_world_from_scratch(*, capture) -> World:
    """The conftest's base objects, then the world on them: for a world shared by a module,
    which no per-test fixture can feed."""
    owner, reviewer, annotator, viewer = (create_user(n) for n in ("olive", "rita", "ann", "vic"))
    outsider = create_outsider(create_user)
    workspace = create_acme(owner=owner, reviewer=reviewer, annotator=annotator, viewer=viewer)
    document = create_handbook(workspace)
    evalset = create_quiz(workspace, owner)
    return build_world(
        owner=owner,
        reviewer=reviewer,
        annotator=annotator,
        viewer=viewer,
        outsider=outsider,
        make_user=create_user,
        document=document,
        evalset=evalset,
        item=create_q1(evalset, annotator),
        capture=capture,
    )
