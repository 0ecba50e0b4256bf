"""Search inside a 1,000-page document, and how each parser read an anchor, in Chromium."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from playwright.sync_api import expect

from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document
from tests.browser import log_in, shot
from tests.conftest import HANDBOOK, PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHRASE = "the quarterly zebra audit"


def _big_document(workspace) -> tuple[Document, str]:
    """1,000 pages of filler; the phrase on page 900 (across a line break) and on page 950."""
    pages = []
    for n in range(1, 1001):
        body = f"Page {n} of the annual report. " + "Revenue grew in every region. " * 12
        if n == 900:
            body += "Here the quarterly\nzebra audit is described.\n"
        if n == 950:
            body += "Later, THE QUARTERLY ZEBRA AUDIT is summed up.\n"
        pages.append(body + "\n")
    text = "".join(pages)
    starts, at = [], 0
    for body in pages:
        starts.append(at)
        at += len(body)
    doc = Document(workspace=workspace, source_id="report.txt", sha256="2" * 64, size=len(text))
    doc.file.save("report.txt", ContentFile(text.encode()), save=False)
    doc.kind = "text"
    doc.save()
    documents_services.parse_version_add(
        document=doc, parser="plaintext", parser_version="1", text=text, page_starts=starts
    )
    return doc, text


def _current_mark(page) -> str:
    return page.evaluate(
        """() => {
          const h = CSS.highlights.get("gw-search-current");
          return h ? Array.from(h).map((r) => r.toString()).join("|") : "";
        }"""
    )


def _wait_until_the_marked_hit_is_in_view(page) -> None:
    """The marked hit sits below the sticky toolbar and above the bottom edge, and stays."""
    page.wait_for_function(
        """() => {
          const h = CSS.highlights.get("gw-search-current");
          if (!h || !h.size) return false;
          const rect = Array.from(h)[0].getBoundingClientRect();
          const bar = document.querySelector("[data-doc-toolbar]").getBoundingClientRect();
          return rect.height > 0 && rect.top >= bar.bottom && rect.bottom <= window.innerHeight;
        }"""
    )


def test_search_finds_a_phrase_on_page_900_of_1000_and_jumps_to_it(
    page, live_server, workspace, background
):
    _big_document(workspace)
    log_in(page, live_server, "vic", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/report.txt")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Page 1 of the annual report")

    page.keyboard.press("/")
    box = page.get_by_role("search", name="Search the document")
    expect(box).to_be_visible()
    search = box.get_by_role("searchbox", name="Search the whole document")
    expect(search).to_be_focused()
    search.fill("The Quarterly   ZEBRA audit")
    search.press("Enter")

    hits = box.locator("[data-search-hits] .hit")
    expect(hits).to_have_count(2)
    expect(hits.nth(0)).to_contain_text("p. 900")
    expect(hits.nth(0).locator("strong")).to_have_text("the quarterly zebra audit")
    expect(box.locator("[data-search-count]")).to_have_text("1 of 2 hits · page 900")
    page_900 = page.locator('[data-page-text="900"]')
    expect(page_900).to_contain_text("Here the quarterly\nzebra audit is described.")
    expect(page.locator("#page-900")).to_be_in_viewport()
    page.wait_for_function(
        """() => { const h = CSS.highlights.get("gw-search-current");
                   return h && Array.from(h).some((r) => r.toString().includes("zebra")); }"""
    )
    assert _current_mark(page) == "the quarterly\nzebra audit"
    _wait_until_the_marked_hit_is_in_view(page)
    shot(page, "search-hits.png")

    search.press("Enter")  # the next hit
    expect(box.locator("[data-search-count]")).to_have_text("2 of 2 hits · page 950")
    expect(page.locator("#page-950")).to_be_in_viewport()
    page.wait_for_function(
        """(text) => { const h = CSS.highlights.get("gw-search-current");
                       return h && Array.from(h).some((r) => r.toString() === text); }""",
        arg="THE QUARTERLY ZEBRA AUDIT",
    )
    _wait_until_the_marked_hit_is_in_view(page)
    search.press("Shift+Enter")  # back to the previous one
    expect(box.locator("[data-search-count]")).to_have_text("1 of 2 hits · page 900")
    expect(page.locator("#page-900")).to_be_in_viewport()
    _wait_until_the_marked_hit_is_in_view(page)

    search.press("Escape")
    expect(box).to_be_hidden()
    assert _current_mark(page) == ""
    # Ctrl+F inside the viewer opens it again, with the last search kept.
    page.locator('[data-page-text="900"]').click()
    page.keyboard.press("Control+f")
    expect(box).to_be_visible()
    expect(search).to_have_value("The Quarterly   ZEBRA audit")


def test_a_search_without_hits_says_so_and_leaves_the_buttons_disabled_with_the_reason(
    page, live_server, document, background
):
    log_in(page, live_server, "vic", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")
    page.get_by_role("button", name="Search").click()
    search = page.get_by_role("searchbox", name="Search the whole document")
    search.fill("sabbatical")
    search.press("Enter")
    expect(page.locator("[data-search-count]")).to_have_text(
        "No hits for “sabbatical” in this parse."
    )
    next_button = page.get_by_role("button", name="Next hit")
    expect(next_button).to_be_disabled()
    expect(next_button).to_have_attribute("title", "No hits to go to")


THEIRS = (
    "Employee Handbook\n\nEmployees accrue 1.5 days of leaveper month. "
    "Leave may be carried over.\n"
    "Remote work is limited to 30 days a year.\n"
    "Employees accrue 1.5 days of leave per month.\n"
)


def test_the_comparison_panel_shows_each_parses_text_with_differences_marked(
    page, live_server, document, reference, item, annotator, background
):
    their_parse = documents_services.parse_version_add(
        document=document, parser="their-pipeline", parser_version="2.1", text=THEIRS
    )
    quote = "Employees accrue 1.5 days of leave per month."
    start = HANDBOOK.index(quote)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    resolution.resolve_parse(reference)  # idempotent: whether or not a worker did it already
    resolution.resolve_parse(their_parse)

    log_in(page, live_server, "vic", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    page.get_by_role("button", name="How each parser read it").click()
    panel = page.get_by_role("dialog", name="How each parser read this evidence")
    expect(panel).to_be_visible()
    reference_col = panel.locator('.compare-col[data-parser="plaintext"]')
    theirs_col = panel.locator('.compare-col[data-parser="their-pipeline"]')
    expect(reference_col).to_contain_text("(reference)")
    expect(reference_col.locator(".span")).to_have_text(quote)
    expect(reference_col.locator(".badge")).to_contain_text("exact")
    expect(theirs_col.locator(".span")).to_have_text("Employees accrue 1.5 days of leaveper month.")
    expect(theirs_col.locator(".badge")).to_contain_text("normalised")
    expect(theirs_col.locator(".badge")).to_contain_text("score")
    mark = theirs_col.locator('.diff[data-kind="space"]')
    expect(mark).to_have_text("leaveper")
    expect(mark).to_have_attribute("title", "spaces: the reference reads “leave per”")
    expect(theirs_col.locator(".compare-summary")).to_have_text("1 \u00d7 spaces")
    shot(page, "parse-comparison-hyphens.png")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()

    # The same panel from the document page's highlight: hover it, or press v on it.
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt")
    highlight = page.locator("mark.hl").first
    expect(highlight).to_have_text(quote)
    highlight.hover()
    page.get_by_role("tooltip").get_by_role("button", name="How each parser read it").click()
    expect(panel).to_be_visible()
    expect(theirs_col.locator('.diff[data-kind="space"]')).to_have_text("leaveper")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    highlight.focus()
    page.keyboard.press("v")
    expect(panel).to_be_visible()
    expect(reference_col.locator(".span")).to_have_text(quote)


QUOTE = (
    "The final figures show that staff benefits rose in every region this year, and the office "
    "hours stayed the same for each of the twelve sites that reported before the end of March."
)


def test_ligatures_hyphenation_lost_spaces_and_missing_text_are_each_marked(
    page, live_server, workspace, item, annotator, background
):
    text = "Annual summary.\n" + QUOTE + " End of section.\n"
    doc = Document(workspace=workspace, source_id="summary.pdf", sha256="4" * 64, size=len(text))
    doc.file.save("summary.pdf", ContentFile(text.encode()), save=False)
    doc.kind = "pdf"
    doc.save()
    reference = documents_services.parse_version_add(
        document=doc, parser="pdfminer.six", parser_version="20240706", text=text
    )
    pdf_like = (
        text.replace("final figures", "\ufb01nal \ufb01gures")
        .replace("benefits", "bene-\nfits")
        .replace("year, and", "year,and")
    )
    lossy = text.replace("rose in every region this year", "rose this year")
    parses = [
        reference,
        documents_services.parse_version_add(
            document=doc, parser="pypdf", parser_version="5.1", text=pdf_like
        ),
        documents_services.parse_version_add(
            document=doc, parser="ocr", parser_version="1", text=lossy
        ),
    ]
    start = text.index(QUOTE)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=reference, start=start, end=start + len(QUOTE)
    )
    for parse in parses:
        resolution.resolve_parse(parse)

    log_in(page, live_server, "vic", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    page.get_by_role("button", name="How each parser read it").click()
    panel = page.get_by_role("dialog", name="How each parser read this evidence")
    pypdf = panel.locator('.compare-col[data-parser="pypdf"]')
    expect(pypdf.locator('.diff[data-kind="ligature"]')).to_have_text(["\ufb01nal", "\ufb01gures"])
    expect(pypdf.locator('.diff[data-kind="hyphen"]')).to_have_text("bene-\nfits")
    expect(pypdf.locator('.diff[data-kind="space"]')).to_have_count(1)
    expect(pypdf.locator(".compare-summary")).to_have_text(
        "2 \u00d7 ligature, 1 \u00d7 spaces, 1 \u00d7 hyphenation"
    )
    ocr = panel.locator('.compare-col[data-parser="ocr"]')
    expect(ocr.locator(".badge")).to_contain_text("fuzzy")
    expect(ocr.locator('del.diff[data-kind="missing"]')).to_have_text(" in every region")
    shot(page, "parse-comparison-kinds.png")


def test_the_item_list_searches_questions_and_answers_as_you_type_and_keeps_it_in_the_url(
    page, live_server, evalset, item, annotator
):
    anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="q2",
        question="How long may staff work from home?",
        answer="Thirty days of remote work a year.",
    )
    log_in(page, live_server, "vic", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/")
    rows = page.locator("[data-items-table] tbody tr")
    expect(rows).to_have_count(2)
    page.keyboard.press("/")
    search = page.get_by_role("searchbox", name="Search")
    expect(search).to_be_focused()
    search.type("REMOTE thirty")  # both words, found in the answer, any case
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Answer: Thirty days of remote work a year.")
    expect(page).to_have_url(f"{live_server.url}/w/acme/sets/quiz/?q=REMOTE+thirty")
    page.reload()
    expect(page.get_by_role("searchbox", name="Search")).to_have_value("REMOTE thirty")
    expect(rows).to_have_count(1)
    page.get_by_role("searchbox", name="Search").press("Escape")
    expect(rows).to_have_count(2)
    expect(page).to_have_url(f"{live_server.url}/w/acme/sets/quiz/")
