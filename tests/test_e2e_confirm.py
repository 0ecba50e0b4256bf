"""Confirming and correcting a candidate on the item page, in Chromium: a quote mostly absent
from one parse is offered there, not found; a person confirms it (or selects the right
span), and the evidence shows as confirmed."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, ParseVersion, ResolutionStatus
from tests import services as svc
from tests.browser import log_in
from tests.conftest import PASSWORD
from tests.documents import make_pdf
from tests.test_confirm import DAMAGED, PASSAGE

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: Select `needle` inside the correction panel's text, as a drag would leave it.
SELECT = """
(needle) => {
  const el = document.querySelector(".correction-text");
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let text = "", nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    nodes.push([n, text.length]);
    text += n.data;
  }
  const at = text.indexOf(needle);
  if (at < 0) throw new Error(needle + " is not in the panel");
  const place = (units) => {
    for (const [node, from] of nodes) {
      if (units <= from + node.data.length) return [node, units - from];
    }
    throw new Error("ran out of text");
  };
  const range = document.createRange();
  range.setStart(...place(at));
  range.setEnd(...place(at + needle.length));
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}
"""


@pytest.fixture
def offered(item, annotator, document, background):
    damaged = documents_services.parse_version_add(
        document=document, parser="broken-fonts", parser_version="1", text=DAMAGED
    )
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote=PASSAGE
    )
    svc.wait_for(
        lambda: AnchorResolution.objects.filter(
            anchor=anchor, parse=damaged, status=ResolutionStatus.NOT_FOUND
        ).exists(),
        what="the damaged parse to turn the quote down and offer a candidate",
    )
    return anchor, damaged


def _row(anchor, parse):
    return AnchorResolution.objects.get(anchor=anchor, parse=parse)


def test_an_annotator_confirms_the_offered_candidate_on_the_item_page(page, live_server, offered):
    anchor, damaged = offered
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    offer = page.locator(f'[data-offer-parse="{damaged.public_id}"]')
    expect(offer).to_contain_text("best candidate offered")
    offer.get_by_role("button", name="Confirm the candidate in broken-fonts").click()
    badge = page.locator('li.badge[data-status="confirmed"]')
    expect(badge).to_contain_text("broken-fonts")
    expect(page.get_by_role("status").filter(has_text="Candidate confirmed")).to_be_visible()
    expect(offer).to_have_count(0)
    row = _row(anchor, damaged)
    assert row.status == ResolutionStatus.CONFIRMED
    assert DAMAGED[row.start : row.end].startswith("The comittee")


def test_an_annotator_corrects_the_candidate_by_selecting_the_passage(page, live_server, offered):
    anchor, damaged = offered
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    offer = page.locator(f'[data-offer-parse="{damaged.public_id}"]')
    offer.get_by_role("button", name="Correct…").click()
    panel = page.locator("[data-correction]")
    expect(panel.locator("mark")).to_contain_text("The comittee reviewd")
    page.evaluate(SELECT, "The comittee reviewd the anual budgett")
    panel.get_by_role("button", name="Use selection").click()
    expect(page.locator('li.badge[data-status="confirmed"]')).to_contain_text("broken-fonts")
    row = _row(anchor, damaged)
    assert row.status == ResolutionStatus.CONFIRMED and row.detail["reason"] == "corrected"
    assert DAMAGED[row.start : row.end] == "The comittee reviewd the anual budgett"


#: A one-page parse whose candidate lies far below the page's top.
FILLER = "".join(f"Line {n} of the preamble, nothing about budgets.\n" for n in range(1500))


@pytest.fixture
def offered_far_down(item, annotator, document, background):
    damaged = documents_services.parse_version_add(
        document=document, parser="broken-fonts", parser_version="1", text=FILLER + DAMAGED
    )
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote=PASSAGE
    )
    svc.wait_for(
        lambda: AnchorResolution.objects.filter(
            anchor=anchor, parse=damaged, status=ResolutionStatus.NOT_FOUND
        ).exists(),
        what="the damaged parse to turn the quote down and offer a candidate",
    )
    return anchor, damaged


def test_correct_opens_the_parse_scrolled_to_the_candidate_marked(
    page, live_server, offered_far_down
):
    _, damaged = offered_far_down
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    offer = page.locator(f'[data-offer-parse="{damaged.public_id}"]')
    offer.get_by_role("button", name="Correct…").click()
    mark = page.locator("[data-correction] mark")
    expect(mark).to_contain_text("The comittee reviewd")
    expect(mark).to_be_in_viewport()  # scrolled inside the panel's text, not left at its top


def test_show_candidate_opens_that_parse_at_the_candidate_marked(
    page, live_server, offered_far_down
):
    _, damaged = offered_far_down
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    offer = page.locator(f'[data-offer-parse="{damaged.public_id}"]')
    offer.get_by_role("link", name="Show candidate").click()
    expect(page).to_have_url(re.compile(rf"parse={damaged.public_id}.*#candidate=\d+-\d+"))
    expect(page.locator("[data-doc-status]")).to_contain_text("The candidate is marked")
    marked = page.evaluate(
        """() => { const h = CSS.highlights.get("gw-candidate");
                   return h ? [...h][0].toString() : null; }"""
    )
    assert marked is not None and marked.startswith("The comittee reviewd")
    in_view = page.evaluate(
        """() => { const r = [...CSS.highlights.get("gw-candidate")][0].getBoundingClientRect();
                   return r.top >= 0 && r.bottom <= window.innerHeight; }"""
    )
    assert in_view


#: A 40-page PDF whose page 30 holds the passage as a broken font map reads it.
CANDIDATE_PAGE = 30
LONG_PDF_PAGES = [
    DAMAGED if n == CANDIDATE_PAGE else f"Page {n}. Minutes of an ordinary meeting, no budget."
    for n in range(1, 41)
]


@pytest.fixture
def offered_in_pdf(item, annotator, workspace, background, settings):
    workspace.parser_settings = {"parsers": {"pdf": ["pypdf", "pdfium"]}}
    workspace.save(update_fields=["parser_settings"])
    upload = SimpleUploadedFile("long.pdf", make_pdf(LONG_PDF_PAGES), "application/pdf")
    documents_services.document_upload(workspace=workspace, user=annotator, upload=upload)
    svc.wait_for_parses("long.pdf", 2)
    pdfium = ParseVersion.objects.get(document__source_id="long.pdf", parser="pdfium")
    anchor = anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="long.pdf", quote=PASSAGE
    )
    svc.wait_for(
        lambda: AnchorResolution.objects.filter(
            anchor=anchor, parse=pdfium, detail__offered_start__isnull=False
        ).exists(),
        what="pdfium to offer a candidate on page 30",
    )
    return anchor, pdfium


def test_show_candidate_opens_the_pdf_view_at_the_candidates_page_marked(
    page, live_server, offered_in_pdf
):
    _, pdfium = offered_in_pdf
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    offer = page.locator(f'[data-offer-parse="{pdfium.public_id}"]')
    offer.get_by_role("link", name="Show candidate").click()
    expect(page).to_have_url(re.compile(rf"parse={pdfium.public_id}.*#candidate=\d+-\d+"))
    expect(page.locator("[data-pdf-pages]")).to_be_visible()  # the PDF view, as it looks
    marks = page.locator(f'[data-pdf-page="{CANDIDATE_PAGE}"] mark.pdf-candidate-mark')
    expect(marks.first).to_be_visible(timeout=30_000)
    expect(marks.first).to_be_in_viewport()
    expect(page.locator("[data-doc-status]")).to_contain_text(
        f"The candidate is marked on page {CANDIDATE_PAGE}"
    )
    assert page.locator("mark.pdf-candidate-mark").count() == marks.count()


def test_show_candidate_in_another_parse_of_a_pdf_opens_that_parses_text_marked(
    page, live_server, offered_in_pdf
):
    anchor, _ = offered_in_pdf
    pypdf = ParseVersion.objects.get(document__source_id="long.pdf", parser="pypdf")
    svc.wait_for(
        lambda: AnchorResolution.objects.filter(
            anchor=anchor, parse=pypdf, detail__offered_start__isnull=False
        ).exists(),
        what="pypdf to offer a candidate too",
    )
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    offer = page.locator(f'[data-offer-parse="{pypdf.public_id}"]')
    offer.get_by_role("link", name="Show candidate").click()
    expect(page.locator("[data-doc-status]")).to_contain_text(
        f"The candidate is marked on page {CANDIDATE_PAGE}"
    )
    expect(page.locator("[data-pdf-pages]")).to_have_attribute("hidden", "")  # the text view
    marked = page.evaluate(
        """() => { const h = CSS.highlights.get("gw-candidate");
                   return h ? [...h][0].toString() : null; }"""
    )
    assert marked is not None  # pypdf reads the justified line with doubled spaces
    assert " ".join(marked.split()).startswith("The comittee reviewd the anual budgett")
    in_view = page.evaluate(
        """() => { const r = [...CSS.highlights.get("gw-candidate")][0].getBoundingClientRect();
                   return r.top >= 0 && r.bottom <= window.innerHeight; }"""
    )
    assert in_view
