"""The document's annotations panel, an eval set's guidelines and question types where people
work, and undo for the last highlight or removal, in Chromium at 1,920 and 390 px wide."""

from __future__ import annotations

import re

import pytest
from django.core.files.base import ContentFile
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import renditions
from evalsets.documents import services as documents_services
from evalsets.models import Document, GoldAnchor, ItemEvent
from tests.browser import axe_violations, log_in, shot
from tests.conftest import PASSWORD
from tests.documents import make_pdf
from tests.test_e2e_narrow import OVERFLOWING
from tests.test_e2e_pdf_view import open_pdf, upload
from tests.world import HANDBOOK

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1920, "height": 1080}
PHONE = {"width": 390, "height": 844}
DOC = "/w/acme/documents/handbook.txt"

SELECT = """([pageNo, needle]) => {
  const el = document.querySelector(`[data-page-text="${pageNo}"]`);
  let units = el.textContent.indexOf(needle);
  if (units < 0) throw new Error(`${needle} is not on page ${pageNo}`);
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let end = units + needle.length, started = false;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!started && units <= node.data.length) { range.setStart(node, units); started = true; }
    else if (!started) units -= node.data.length;
    if (end <= node.data.length) { range.setEnd(node, end); break; }
    end -= node.data.length;
  }
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  document.querySelector("[data-pages]").dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
}"""


def _highlight(item, user, reference, words: str, grade: int = 2) -> GoldAnchor:
    start = HANDBOOK.index(words)
    return anchoring_services.anchor_create_from_highlight(
        item=item, user=user, parse=reference, start=start, end=start + len(words), grade=grade
    )


def _select(page, page_no: int, words: str) -> None:
    expect(page.locator(f'[data-page-text="{page_no}"]')).to_contain_text(words)
    page.evaluate(SELECT, [page_no, words])


def _open(page, live_server, path: str, size: dict, who: str = "ann") -> None:
    page.set_viewport_size(size)
    log_in(page, live_server, who, PASSWORD)
    page.goto(f"{live_server.url}{path}")


def test_the_panel_beside_the_document_lists_its_highlights_each_a_click_or_a_key_path_away(
    page, live_server, item, annotator, reference
):
    _highlight(item, annotator, reference, "Employees accrue 1.5 days of leave per month.")
    _highlight(item, annotator, reference, "Remote work is limited to 30 days a year.", grade=1)
    _open(page, live_server, f"{DOC}?set=quiz", WIDE)
    panel = page.get_by_role("complementary", name=re.compile("Annotations"))
    rows = panel.locator("[data-panel-anchor]")
    expect(rows).to_have_count(2)
    expect(panel.locator("[data-panel-item='quiz/q1']")).to_contain_text("How much leave")
    expect(rows.nth(1)).to_contain_text("p. 2")
    # At 1,920 px the document and the panel stand side by side.
    doc_box = page.locator("[data-pages]").bounding_box()
    panel_box = panel.bounding_box()
    assert panel_box["x"] >= doc_box["x"] + doc_box["width"], (doc_box, panel_box)
    assert doc_box["width"] > 700

    shot(page, "document-panel.png")

    rows.nth(1).click()
    focused = page.locator("mark.hl:focus")
    expect(focused).to_have_text("Remote work is limited to 30 days a year.")

    # The key path: g a into the list, down to the second highlight, Enter.
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("Home")
    page.keyboard.press("g")
    page.keyboard.press("a")
    expect(rows.nth(0)).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(rows.nth(1)).to_be_focused()
    page.keyboard.press("Enter")
    expect(focused).to_have_text("Remote work is limited to 30 days a year.")
    assert axe_violations(page) == []

    # At 1,366 px both still fit side by side, the document the wider.
    page.set_viewport_size({"width": 1366, "height": 768})
    doc_box, panel_box = page.locator("[data-pages]").bounding_box(), panel.bounding_box()
    assert panel_box["x"] >= doc_box["x"] + doc_box["width"] and doc_box["width"] > 640
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366

    # Collapsed, the document takes the room.
    panel.get_by_role("button", name="Hide").click()
    expect(rows.first).to_be_hidden()
    assert page.locator("[data-pages]").bounding_box()["width"] >= doc_box["width"]


def test_the_panel_updates_when_a_highlight_is_saved_and_the_save_can_be_undone(
    page, live_server, item, annotator, reference
):
    _open(page, live_server, f"{DOC}?set=quiz", WIDE)
    panel = page.locator("[data-doc-panel]")
    expect(panel.locator("[data-panel-empty]")).to_be_visible()
    _select(page, 2, "Remote work is limited")
    popover = page.get_by_role("dialog", name="Attach to a question")
    popover.get_by_role("option").filter(has_text="q1").click()
    popover.get_by_role("button", name="Save").click()
    expect(panel.locator("[data-panel-anchor]")).to_have_count(1)
    expect(panel.locator("[data-panel-anchor]")).to_contain_text("Remote work is limited")
    assert GoldAnchor.objects.count() == 1

    toast = page.locator(".toast.undoable")
    expect(toast).to_contain_text("Saved evidence for q1")
    toast.get_by_role("button", name=re.compile("Undo")).click()
    expect(page.locator(".toast[data-undone]")).to_have_text("Undone.")
    expect(panel.locator("[data-panel-anchor]")).to_have_count(0)
    assert GoldAnchor.objects.count() == 0
    kinds = list(ItemEvent.objects.filter(item=item).values_list("kind", flat=True))
    assert kinds[-2:] == ["anchor_created", "anchor_deleted"]


def test_a_highlight_removed_in_the_panel_comes_back_with_ctrl_z_as_it_was(
    page, live_server, item, annotator, reference
):
    before = _highlight(item, annotator, reference, "Leave may be carried over.", grade=1)
    kept = ("quote", "page_hint", "occurrence", "prefix", "suffix", "grade", "ref_start")
    was = {k: getattr(before, k) for k in kept}
    _open(page, live_server, f"{DOC}?set=quiz", WIDE)
    panel = page.locator("[data-doc-panel]")
    panel.get_by_role("button", name="Remove this highlight from q1").click()
    expect(panel.locator("[data-panel-anchor]")).to_have_count(0)
    expect(page.locator("mark.hl")).to_have_count(0)
    assert GoldAnchor.objects.count() == 0

    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("Control+z")
    expect(panel.locator("[data-panel-anchor]")).to_have_count(1)
    expect(page.locator("mark.hl")).to_have_text("Leave may be carried over.")
    again = GoldAnchor.objects.get()
    assert {k: getattr(again, k) for k in kept} == was
    kinds = list(ItemEvent.objects.filter(item=item).values_list("kind", flat=True))
    assert kinds[-2:] == ["anchor_deleted", "anchor_created"]


def test_at_390_px_the_panel_waits_behind_its_toggle_and_nothing_overflows(
    page, live_server, item, annotator, reference
):
    _highlight(item, annotator, reference, "Remote work is limited to 30 days a year.")
    _open(page, live_server, DOC, PHONE)
    panel = page.locator("[data-doc-panel]")
    toggle = panel.get_by_role("button", name="Show")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(panel.locator("[data-panel-anchor]")).to_be_hidden()
    toggle.click()
    expect(panel.locator("[data-panel-anchor]")).to_have_count(1)
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, page.evaluate(OVERFLOWING)
    assert axe_violations(page) == []


def test_an_owner_sets_guidelines_and_types_that_annotators_see_where_they_work(
    page, live_server, item, owner, annotator, reference
):
    _open(page, live_server, "/w/acme/sets/quiz/", WIDE, who="olive")
    page.get_by_role("link", name="Guidelines & question types").click()
    page.get_by_label("Guidelines").fill("## Evidence\n\nQuote **the whole sentence**.")
    page.get_by_label("Question types").fill("numeric\nfactoid\n")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".guidelines-preview strong")).to_have_text("the whole sentence")
    assert axe_violations(page) == []
    item.evalset.refresh_from_db()
    assert item.evalset.qtypes == ["numeric", "factoid"]

    page.context.clear_cookies()
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    guidelines = page.locator("details.guidelines")
    expect(guidelines.locator("strong")).to_be_hidden()
    page.locator("h1").click()
    page.keyboard.press("g")
    page.keyboard.press("i")
    expect(guidelines.locator("strong")).to_have_text("the whole sentence")
    qtype = page.get_by_label("Question type")
    expect(qtype.locator("option")).to_have_text(["(none)", "numeric", "factoid", "unanswerable"])
    qtype.select_option("factoid")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_have_text("Saved.")
    item.refresh_from_db()
    assert item.qtype == "factoid"
    assert axe_violations(page) == []

    # Beside the document: the same guidelines, and the popover's new question picks a type.
    page.goto(f"{live_server.url}{DOC}?set=quiz")
    expect(page.locator("[data-doc-panel] details.guidelines summary")).to_contain_text("quiz")
    _select(page, 2, "Remote work is limited")
    popover = page.get_by_role("dialog", name="Attach to a question")
    popover.get_by_label("New question").check()
    popover.get_by_label("Question", exact=True).fill("How many remote days?")
    popover.get_by_role("combobox", name="Question type").select_option("numeric")
    popover.get_by_role("button", name="Save").click()
    expect(page.locator("[data-doc-panel] [data-panel-anchor]")).to_have_count(1)
    assert item.evalset.items.get(item_id="q2").qtype == "numeric"


def test_evidence_removed_on_the_item_page_comes_back_with_its_undo_button(
    page, live_server, item, annotator, reference
):
    _highlight(item, annotator, reference, "Leave may be carried over.", grade=1)
    _open(page, live_server, "/w/acme/sets/quiz/items/q1/", WIDE)
    page.locator("li.anchor").get_by_role("button", name=re.compile("Remove")).click()
    expect(page.locator("li.anchor")).to_have_count(0)
    page.locator(".toast.undoable").get_by_role("button", name=re.compile("Undo")).click()
    expect(page.locator("li.anchor")).to_have_count(1)
    expect(page.locator("li.anchor .quote")).to_have_text("Leave may be carried over.")
    again = GoldAnchor.objects.get()
    assert (again.grade, again.page_hint) == (1, 1)


def test_in_the_pdf_view_a_highlight_in_the_panel_opens_its_page(
    page, live_server, workspace, annotator, item, background
):
    pages = [f"Page {n} of the long report, with words of its own." for n in range(1, 7)]
    document = upload(workspace, annotator, make_pdf(pages), "long.pdf")
    reference = document.parses.get(is_reference=True)
    quote = "Page 5 of the long report"
    start = reference.text.index(quote)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    page.set_viewport_size(WIDE)
    log_in(page, live_server, "ann", PASSWORD)
    open_pdf(page, live_server, "long.pdf")
    panel = page.locator("[data-doc-panel]")
    pdf_box = page.locator("[data-pdf-pages]").bounding_box()
    assert panel.bounding_box()["x"] >= pdf_box["x"] + pdf_box["width"]
    row = panel.locator("[data-panel-anchor]")
    expect(row).to_contain_text("p. 5")
    row.click()
    expect(page.locator('[data-pdf-page="5"][data-drawn="1"] img.pdf-image')).to_be_in_viewport()
    expect(page.locator('[data-pdf-page="1"]')).not_to_be_in_viewport()


MARKDOWN = "# Travel\n\n" + "\n\n".join(f"Paragraph {n} of the policy." for n in range(1, 80))


def test_in_the_view_as_it_looks_a_highlight_in_the_panel_is_marked_in_the_frame(
    page, live_server, workspace, annotator, item
):
    source = MARKDOWN.encode()
    document = Document(workspace=workspace, source_id="travel.md", sha256="2" * 64)
    document.size = len(source)
    document.file.save("travel.md", ContentFile(source), save=False)
    document.kind = "markdown"
    document.save()
    text = MARKDOWN.replace("# ", "")
    parse = documents_services.parse_version_add(
        document=document,
        parser="markdown-it",
        parser_version="4",
        text=text,
        page_starts=[0],
        origin="parsed",
    )
    renditions.rendition_build(parse=parse)
    quote = "Paragraph 70 of the policy."
    start = text.index(quote)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=parse, start=start, end=start + len(quote)
    )
    _open(page, live_server, "/w/acme/documents/travel.md", WIDE)
    panel = page.locator("[data-doc-panel]")
    expect(panel.locator("[data-panel-anchor]")).to_contain_text("Paragraph 70")
    frame = page.locator("[data-rendered-frame]")
    assert panel.bounding_box()["x"] >= frame.bounding_box()["x"] + frame.bounding_box()["width"]
    panel.locator("[data-panel-anchor]").click()
    marked = (
        "() => { const w = document.querySelector('[data-rendered-frame]').contentWindow;"
        " const h = w.CSS.highlights.get('gw-search-current');"
        " return h ? [...h].map((r) => r.toString()).join('') : ''; }"
    )
    page.wait_for_function(marked)
    assert page.evaluate(marked) == quote
