"""The review card's evidence on a PDF: where on which page of the pdfium parse each quote
lies, for the card to draw that part of the page with the quote boxed, and a link that opens
the PDF view there."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from evalsets.anchoring import services as anchoring_services
from evalsets.models import AnchorResolution, GoldAnchor
from evalsets.review import selectors as review_selectors
from evalsets.review import workflow
from tests.world import pdf_document

pytestmark = pytest.mark.django_db

QUOTE = "accrued monthly"


@pytest.fixture
def on_pdf(workspace, evalset, annotator):
    document = pdf_document(workspace, text="Leave is accrued monthly.")
    parse = document.parses.get(parser="pdfium")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="p1", question="How is leave accrued?"
    )
    start = parse.text.index(QUOTE)
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=parse, start=start, end=start + len(QUOTE)
    )
    AnchorResolution.objects.update_or_create(
        anchor=anchor,
        parse=parse,
        defaults={"status": "exact", "start": start, "end": start + len(QUOTE), "score": 1.0},
    )
    workflow.item_submit(item=item, user=annotator)
    return anchor, parse, start


def test_a_pdf_anchor_is_placed_on_its_page_of_the_pdfium_parse(on_pdf):
    anchor, parse, start = on_pdf
    (item,) = review_selectors.review_items(
        anchor.item.evalset,
        membership=anchor.item.evalset.workspace.memberships.get(user__username="rita"),
        state="submitted",
        mine=False,
        limit=10,
        context=40,
    )
    places = review_selectors.pdf_places(item.anchors.all())
    assert places == {
        anchor.pk: {
            "parse": str(parse.public_id),
            "page": 1,
            "start": start,
            "end": start + len(QUOTE),
        }
    }


def test_an_anchor_on_a_text_file_has_no_place_on_a_pdf(item, reference, annotator):
    start = reference.text.index("Leave may")
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + 9
    )
    anchors = GoldAnchor.objects.filter(item=item).prefetch_related("resolutions__parse")
    assert review_selectors.pdf_places(anchors) == {}


def test_the_review_card_carries_the_page_the_offsets_and_a_link_to_the_pdf_view(on_pdf, reviewer):
    _, _, start = on_pdf
    web = Client()
    web.force_login(reviewer)
    page = web.get("/w/acme/sets/quiz/review/").content.decode()
    figure = re.search(r"<figure class=\"pdf-crop\"[^>]*>", page).group(0)
    assert 'data-doc="tiny.pdf"' in figure and 'data-page="1"' in figure
    assert f'data-start="{start}"' in figure and f'data-end="{start + len(QUOTE)}"' in figure
    assert "/w/acme/documents/tiny.pdf?view=pdf&amp;set=quiz&amp;item=p1#page=1" in page
