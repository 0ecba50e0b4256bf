"""Blind overlap and adjudication in Chromium: an owner assigns an item to two annotators
with overlap 2; each highlights evidence without seeing the other's; the reviewer compares
the two versions, picks one from the keyboard and approves the item. And the review card
shows a PDF quote on its page as it looks, boxed, with a link to the PDF view there."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.models import AnchorResolution, EvalItem, GoldAnchor, ItemEvent, Membership
from evalsets.review import workflow
from tests.browser import axe_violations, log_in
from tests.conftest import PASSWORD
from tests.world import pdf_document

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _highlight_from_the_start(page, live_server, characters: int) -> None:
    """Select the first ``characters`` of the handbook with the keyboard and attach it to b1."""
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?set=quiz&item=b1")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")
    page.keyboard.press("c")
    for _ in range(characters):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")
    popover = page.get_by_role("dialog", name="Attach to a question")
    expect(popover.get_by_role("listbox").get_by_role("option", selected=True)).to_contain_text(
        "b1"
    )
    page.keyboard.press("Control+Enter")


def _submit(page, live_server) -> None:
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/b1/")
    page.get_by_role("button", name="Submit for review").click()
    expect(page.get_by_text("Submitted for review.")).to_be_visible()


def test_two_annotators_work_blind_and_the_reviewer_picks_one_version_then_approves(
    page, live_server, evalset, document, owner, annotator, reviewer, make_user, workspace
):
    bob = make_user("bob")
    Membership.objects.create(workspace=workspace, user=bob, role="annotator")
    anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="b1", question="What does the handbook cover?"
    )

    # The owner assigns b1 to ann and bob, overlap 2.
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/dashboard/")
    page.get_by_role("link", name="Assign items with overlap").click()
    form = page.get_by_role("form", name="Assign annotators")
    form.locator('input[name="users"][value="ann"]').check()
    form.locator('input[name="users"][value="bob"]').check()
    form.get_by_label("Overlap").fill("2")
    form.get_by_role("button", name="Assign to annotate").click()
    expect(page.locator("[data-owner-note]")).to_contain_text("Assigned 2 item(s)")
    page.context.clear_cookies()

    # Ann highlights "Employee" and submits her part.
    log_in(page, live_server, "ann", PASSWORD)
    _highlight_from_the_start(page, live_server, len("Employee"))
    expect(page.locator("mark.hl")).to_have_text("Employee")
    _submit(page, live_server)
    assert EvalItem.objects.get(item_id="b1").state == "draft"  # waiting for bob
    page.context.clear_cookies()

    # Bob sees none of Ann's evidence, on the document or on the item, and adds his own.
    log_in(page, live_server, "bob", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?set=quiz&item=b1")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")
    page.wait_for_load_state("networkidle")
    expect(page.locator("mark.hl")).to_have_count(0)
    _highlight_from_the_start(page, live_server, len("Employee Handbook"))
    expect(page.locator("mark.hl")).to_have_text("Employee Handbook")
    _submit(page, live_server)
    expect(page.locator("[data-anchors] > li.anchor")).to_have_count(1)
    expect(page.locator("[data-anchors]")).to_contain_text("Employee Handbook")
    expect(page.locator("[data-anchors]")).to_contain_text("by bob")
    expect(page.locator("[data-blind-note]")).to_be_visible()
    assert EvalItem.objects.get(item_id="b1").state == "submitted"
    page.context.clear_cookies()

    # The reviewer compares the two versions and picks Ann's from the keyboard.
    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/review/")
    card = page.locator("[data-review-item]:not([hidden])")
    expect(card).to_contain_text("by ann")
    expect(card).to_contain_text("by bob")
    page.keyboard.press("v")
    expect(page.get_by_role("heading", name="Adjudicate b1")).to_be_visible()
    expect(page.get_by_role("heading", name="1. ann")).to_be_visible()
    expect(page.get_by_role("heading", name="2. bob")).to_be_visible()
    expect(page.locator("[data-span-agreement]")).to_contain_text("0.4706")  # 8 of 17 chars
    assert axe_violations(page) == []
    page.keyboard.press("1")
    expect(page.get_by_role("radio", name=re.compile("ann's version"))).to_be_checked()
    page.keyboard.press("s")

    # Back on the review card, only Ann's evidence is left; approve it.
    expect(page).to_have_url(re.compile(r"/review/\?state=submitted#review-b1$"))
    card = page.locator("[data-review-item]:not([hidden])")
    expect(card.locator(".anchor")).to_have_count(1)
    expect(card).to_contain_text("by ann")
    page.keyboard.press("a")
    expect(card.locator("[data-state-label]")).to_have_text(re.compile("Approved", re.I))

    item = EvalItem.objects.get(item_id="b1")
    assert item.state == "approved" and item.adjudicated_at is not None
    assert list(GoldAnchor.objects.filter(item=item).values_list("quote", flat=True)) == [
        "Employee"
    ]
    event = ItemEvent.objects.get(item=item, kind="adjudicated")
    assert [r["quote"] for r in event.data["removed"]] == ["Employee Handbook"]


def test_the_review_card_shows_a_pdf_quote_on_its_page_with_a_link_to_the_pdf_view(
    page, live_server, workspace, evalset, annotator, reviewer
):
    document = pdf_document(workspace, text="Leave is accrued monthly.")
    parse = document.parses.get(parser="pdfium")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="p1", question="How is leave accrued?"
    )
    start = parse.text.index("accrued monthly")
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=parse, start=start, end=start + 15
    )
    AnchorResolution.objects.update_or_create(
        anchor=anchor,
        parse=parse,
        defaults={"status": "exact", "start": start, "end": start + 15, "score": 1.0},
    )
    workflow.item_submit(item=item, user=annotator)

    log_in(page, live_server, "rita", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/review/")
    figure = page.locator("[data-pdf-crop]")
    expect(figure).to_have_attribute("data-ready", "1")
    canvas = figure.locator("canvas")
    expect(canvas).to_be_visible()
    size = canvas.evaluate("(c) => [c.width, c.height]")
    assert size[0] > 100 and 0 < size[1] < size[0]  # the lines around the quote, not the page
    # The box is drawn: some pixels carry the box's red.
    red = canvas.evaluate(
        """(c) => { const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 180 && d[i + 1] < 80) n++;
        return n; }"""
    )
    assert red > 20
    assert axe_violations(page) == []
    figure.get_by_role("link", name="Open the PDF view at page 1").click()
    expect(page).to_have_url(re.compile(r"/documents/tiny\.pdf\?view=pdf&set=quiz&item=p1#page=1$"))
    expect(page.locator("[data-pdf-page]").first).to_be_visible()
