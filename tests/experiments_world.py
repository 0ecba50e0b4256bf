"""A small corpus for experiments: two documents, each read by two parsers (the second
loses one sentence), five approved items with anchors, and a release of them."""

from __future__ import annotations

from django.core.files.base import ContentFile

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document, EvalItem, ItemState
from evalsets.releases import services as releases_services

POLICY_TEXT = (
    "Travel policy\n\n"
    "Economy class is required for flights under six hours.\n"
    "Business class may be booked for flights longer than six hours.\n"
    "Hotel stays are reimbursed up to 180 euros per night in capital cities.\n"
    "Meals are reimbursed against receipts, up to 45 euros per day.\n"
    "Taxis are allowed only when no public transport runs after 22:00.\n"
)
SAFETY_TEXT = (
    "Safety handbook\n\n"
    "Fire doors must be kept closed at all times.\n"
    "Evacuation drills take place twice a year, in spring and autumn.\n"
    "First aid kits are checked by the office manager every month.\n"
    "Visitors must sign in at reception and wear a badge.\n"
)
#: The lossy parser drops this sentence, so its evidence is lost in that parse.
LOST = "Visitors must sign in at reception and wear a badge."

ITEMS = [
    (
        "t1",
        "Which class is required for short flights?",
        "policy.txt",
        "Economy class is required for flights under six hours.",
    ),
    (
        "t2",
        "How much is reimbursed for a hotel night in a capital?",
        "policy.txt",
        "Hotel stays are reimbursed up to 180 euros per night",
    ),
    (
        "t3",
        "When are taxis allowed?",
        "policy.txt",
        "Taxis are allowed only when no public transport runs after 22:00.",
    ),
    (
        "s1",
        "How often are evacuation drills held?",
        "safety.txt",
        "Evacuation drills take place twice a year, in spring and autumn.",
    ),
    ("s2", "What must visitors do at reception?", "safety.txt", LOST),
]


def _document(workspace, source_id: str, text: str, sha: str) -> Document:
    document = Document(workspace=workspace, source_id=source_id, sha256=sha * 64, size=len(text))
    document.file.save(source_id, ContentFile(text.encode()), save=False)
    document.kind = "text"
    document.save()
    documents_services.parse_version_add(
        document=document, parser="plaintext", parser_version="1", text=text, origin="parsed"
    )
    documents_services.parse_version_add(
        document=document, parser="lossy", parser_version="1", text=text.replace(LOST, "")
    )
    return document


def build(workspace, evalset, annotator, owner, capture):
    """The documents, items and a release (version 1) of ``evalset``."""
    _document(workspace, "policy.txt", POLICY_TEXT, "a")
    _document(workspace, "safety.txt", SAFETY_TEXT, "b")
    for item_id, question, source_id, quote in ITEMS:
        item = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=question
        )
        with capture(execute=True):  # the resolutions are written after the commit
            anchoring_services.anchor_create_typed(
                item=item, user=annotator, source_id=source_id, quote=quote
            )
    EvalItem.objects.filter(evalset=evalset).update(state=ItemState.APPROVED)
    with capture(execute=True):
        return releases_services.release_create(
            evalset=evalset, user=owner, formats=["contextgrid-jsonl"]
        )
