"""The context an anchor keeps either side of its quote: one length, recorded and weighed alike.

Only a highlight records context (a typed or imported quote has no place in a text to take
it from); wherever the selection was made, it keeps ``resolver.CONTEXT_CHARS`` a side, and the
resolver weighs all of what was recorded.
"""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import GoldAnchor
from evalsets.pure.resolver import CONTEXT_CHARS, _Context
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.django_db

QUOTE = "Remote work is limited to 30 days a year."


def _context_of(text: str, quote: str) -> tuple[str, str]:
    start = text.index(quote)
    end = start + len(quote)
    return text[max(0, start - CONTEXT_CHARS) : start], text[end : end + CONTEXT_CHARS]


def test_a_highlight_keeps_the_one_context_length_either_side(item, annotator, reference):
    start = HANDBOOK.index(QUOTE)
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(QUOTE)
    )
    assert len(anchor.prefix) == len(anchor.suffix) == CONTEXT_CHARS
    assert (anchor.prefix, anchor.suffix) == _context_of(HANDBOOK, QUOTE)


def test_a_highlight_in_another_parse_keeps_the_context_a_reference_highlight_keeps(
    item, annotator, document, reference
):
    """The PDF view selects in another parse; the anchor is written as the reference has it."""
    spaced = HANDBOOK.replace("Leave may be", "Leave  may  be")
    other = documents_services.parse_version_add(
        document=document, parser="spaced", parser_version="1", text=spaced
    )
    start = spaced.index(QUOTE)
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=other, start=start, end=start + len(QUOTE)
    )
    assert anchor.reference_parse_id == reference.pk
    assert (anchor.prefix, anchor.suffix) == _context_of(HANDBOOK, QUOTE)
    assert len(anchor.prefix) == len(anchor.suffix) == CONTEXT_CHARS


def test_the_resolver_weighs_all_of_the_context_a_highlight_records():
    context = _Context("a" * CONTEXT_CHARS, "b" * CONTEXT_CHARS, "quote")
    assert context.prefix == "a" * CONTEXT_CHARS
    assert context.suffix == "b" * CONTEXT_CHARS


def test_the_anchor_columns_hold_the_context_a_highlight_records():
    for name in ("prefix", "suffix"):
        assert GoldAnchor._meta.get_field(name).max_length >= CONTEXT_CHARS
