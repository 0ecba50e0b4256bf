"""The annotator's day in Chromium: upload, read, highlight, write a question, submit.

Selections are made in the page with ``document.createRange`` and ``Selection.addRange`` and
then a ``mouseup``, exactly what a drag leaves behind, because dragging across a page break
with a mouse is flaky in headless Chromium.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document, GoldAnchor
from tests import services as svc
from tests.browser import log_in, shot
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SELECT = """
([first, last]) => {
  // Select from the start of `first` to the end of `last`, each searched in its page's text.
  const find = (pageNo, needle, atEnd) => {
    const el = document.querySelector(`[data-page-text="${pageNo}"]`);
    const index = el.textContent.indexOf(needle);
    if (index < 0) throw new Error(`${needle} is not on page ${pageNo}`);
    let units = index + (atEnd ? needle.length : 0);
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (units <= node.data.length) return [node, units];
      units -= node.data.length;
    }
    throw new Error("ran out of text");
  };
  const range = document.createRange();
  range.setStart(...find(first[0], first[1], false));
  range.setEnd(...find(last[0], last[1], true));
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  document.querySelector("[data-pages]").dispatchEvent(new MouseEvent("mouseup", {bubbles: true}));
}
"""

MARKDOWN = (
    "# Travel policy\n\n"
    "Staff book trains for any journey under four hours.\n\n"
    "Flights need the written approval of a director.\n"
)


def select(page, first: tuple[int, str], last: tuple[int, str]) -> None:
    page.evaluate(SELECT, [list(first), list(last)])


def test_an_annotator_uploads_reads_highlights_a_new_question_and_submits_it(
    page, live_server, workspace, owner, background, tmp_path
):
    anchoring_services.evalset_create(workspace=workspace, user=owner, slug="travel", name="Travel")
    log_in(page, live_server, "ann", PASSWORD)
    page.get_by_role("link", name="Acme", exact=True).click()

    upload = tmp_path / "travel.md"
    upload.write_text(MARKDOWN)
    page.locator("[data-file-input]").set_input_files(str(upload))
    row = page.locator('tr[data-doc="travel.md"]')
    # The row is drawn from the upload's answer: only then is the upload committed. On the
    # embedded SQLite the live server shares this test's connection, so a read made while the
    # upload's transaction is open can leave the upload half-done.
    expect(row).to_be_visible(timeout=30_000)
    svc.wait_for_parses("travel.md", 2)
    expect(row.locator('[data-status="ready"]')).to_have_count(2, timeout=15_000)  # polls <= 3 s
    shot(page, "workspace.png", full_page=True)

    row.get_by_role("link", name="travel.md").click()
    # Markdown opens as it looks (tests/test_e2e_rendered_view.py); this walk-through reads
    # the parse's text, one switch away.
    page.get_by_role("link", name="Text (parser markdown-it)").click()
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Flights need")
    select(page, (1, "Flights need"), (1, "of a director"))

    popover = page.get_by_role("dialog", name="Attach to a question")
    expect(popover).to_be_visible()
    # The set has no questions yet, so the popover offers a new one, with an id ready.
    expect(popover.get_by_label("Id")).to_have_value("q1")
    popover.get_by_label("Question", exact=True).fill("Who approves flights?")
    popover.get_by_label("Eval set").focus()
    page.keyboard.press("1")
    expect(popover.get_by_role("radio", name="1 partly")).to_be_checked()
    page.keyboard.press("2")
    shot(page, "annotate-popover.png")
    popover.get_by_role("button", name="Save").click()

    expect(page.locator("mark.hl")).to_have_text("Flights need the written approval of a director")
    anchor = GoldAnchor.objects.get()
    assert anchor.quote == "Flights need the written approval of a director"
    assert (anchor.grade, anchor.item.item_id) == (2, "q1")

    page.locator("mark.hl").hover()
    expect(page.get_by_role("tooltip")).to_contain_text("Who approves flights?")
    expect(page.get_by_role("tooltip").locator(".badge.exact")).to_have_count(2, timeout=60_000)
    shot(page, "annotate-tooltip.png")
    page.get_by_role("link", name="Open q1").click()

    badges = page.locator("li.anchor .badge[data-status]")
    expect(badges).to_have_count(2, timeout=60_000)
    expect(badges.filter(has_text="exact").first).to_be_visible()
    expect(page.locator("[data-resolving]")).to_be_hidden(timeout=60_000)
    shot(page, "item.png", full_page=True)

    page.get_by_role("button", name="Submit for review").click()
    expect(page.locator("[data-state]")).to_have_text("Submitted")
    anchor.item.refresh_from_db()
    assert anchor.item.state == "submitted"

    page.get_by_role("link", name="Home", exact=True).click()
    expect(page.get_by_role("link", name="acme/travel/q1 Who approves flights?")).to_be_visible()
    expect(page.get_by_text("0/1 approved · 1 in review")).to_be_visible()
    shot(page, "home.png", full_page=True)


def test_the_item_editor_shows_the_apis_message_beside_the_field_and_a_conflict(
    page, live_server, item
):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    question = page.get_by_label("Question", exact=True)
    question.fill("   ")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator('[data-error-for="question"]')).to_have_text(
        "eval item 'q1' has an empty question"
    )

    anchoring_services.item_update(item=item, user=item.author, row_version=1, answer="1.5 days")
    question.fill("How many days of leave accrue each month?")
    page.get_by_role("button", name="Save", exact=True).click()
    # Saved elsewhere meanwhile (by ann herself, outside this tab): the conflict view, with
    # my question and their answer chosen, instead of a reload that would drop my edit.
    conflict = page.get_by_role("alert").filter(has_text="while you were editing")
    expect(conflict).to_be_visible()
    expect(conflict.get_by_label("Keep theirs for answer")).to_be_checked()
    conflict.get_by_role("button", name="Save my choices").click()
    expect(page.locator("[data-saved]")).to_have_text("Saved.")
    expect(page.get_by_label("Answer", exact=True)).to_have_value("1.5 days")
    item.refresh_from_db()
    assert item.question == "How many days of leave accrue each month?"
    assert item.answer == "1.5 days"


def _big_document(workspace, pages: int = 1000) -> tuple[Document, str, list[int]]:
    document = Document.objects.create(
        workspace=workspace, source_id="big.txt", sha256="b" * 64, kind="text"
    )
    chunks = []
    for n in range(1, pages + 1):
        lines = [f"This is page {n}."] + [
            f"Line {k} of page {n}: the quick brown fox reads the handbook." for k in range(1, 25)
        ]
        chunks.append("\n".join(lines) + "\n")
    starts, offset = [], 0
    for chunk in chunks:
        starts.append(offset)
        offset += len(chunk)
    text = "".join(chunks)
    documents_services.parse_version_add(
        document=document, parser="generated", text=text, page_starts=starts
    )
    return document, text, starts


def test_a_thousand_page_document_opens_at_once_and_scrolls_to_its_last_page(
    page, live_server, workspace
):
    _big_document(workspace)
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/big.txt")
    expect(page.locator("section.page")).to_have_count(1000)
    expect(page.locator('[data-page-text="1"]')).to_contain_text("This is page 1.")

    page.keyboard.press("End")
    last = page.locator('[data-page-text="1000"]')
    expect(last).to_contain_text("Line 24 of page 1000")
    expect(last).to_be_in_viewport()
    # End jumps: the pages in between are neither flown past nor fetched. (A smooth scroll
    # over estimated heights fetched a few pages on its way and, when the real heights came
    # in, could stop thousands of pixels short of the end.)
    loaded = page.evaluate("[...window.groundworkDocument.loaded.keys()]")
    between = [n for n in loaded if 20 < n < 980]
    assert not between, f"pages {between} were fetched on the way to the end"
    shot(page, "big-last-page.png")

    page.keyboard.press("Home")
    expect(page.locator('[data-page-text="1"]')).to_be_in_viewport()
    assert page.evaluate("window.scrollY") == 0

    page.keyboard.press("g")
    page.keyboard.press("p")
    page.keyboard.type("500")
    page.keyboard.press("Enter")
    expect(page.locator('[data-page-text="500"]')).to_contain_text("This is page 500.")
    expect(page.locator('[data-page-text="500"]')).to_be_in_viewport()


EMOJI_TEXT = (
    "Первая страница. The team 🙂 celebrates on Fridays.\n"
    "Smile 👩🏽‍💻 at the end of page one.\n"
    "Page two begins: 二 coffee is free.\n"
    "Nothing else here.\n"
)


def test_a_selection_with_emoji_across_a_page_break_stores_the_exact_quote(
    page, live_server, item, background
):
    split = EMOJI_TEXT.index("Page two")
    document = Document.objects.create(
        workspace=item.evalset.workspace, source_id="emoji.txt", sha256="e" * 64, kind="text"
    )
    parse = documents_services.parse_version_add(
        document=document, parser="plain", text=EMOJI_TEXT, page_starts=[0, split]
    )
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/emoji.txt?set=quiz")
    expect(page.locator('[data-page-text="2"]')).to_contain_text("coffee")

    select(page, (1, "🙂 celebrates"), (2, "二 coffee"))
    popover = page.get_by_role("dialog", name="Attach to a question")
    popover.get_by_role("searchbox").fill("leave")
    popover.get_by_role("option").filter(has_text="q1").click()
    popover.get_by_role("button", name="Save").click()
    expect(page.locator("[data-toasts]")).to_contain_text("Saved evidence for q1")

    start = EMOJI_TEXT.index("🙂 celebrates")
    end = EMOJI_TEXT.index("二 coffee") + len("二 coffee")
    anchor = GoldAnchor.objects.get(item=item)
    assert anchor.quote == EMOJI_TEXT[start:end]
    assert (anchor.ref_start, anchor.ref_end, anchor.page_hint) == (start, end, 1)
    assert anchor.reference_parse == parse
    # The highlight is drawn on both pages, around exactly the selected characters.
    marks = page.locator("mark.hl")
    expect(marks).to_have_count(2)
    assert "".join(marks.all_text_contents()) == EMOJI_TEXT[start:end]


def test_keyboard_only_caret_mode_selects_and_anchors_text(page, live_server, item, reference):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt?set=quiz&item=q1")
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")
    page.keyboard.press("c")
    for _ in range(len("Employee")):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")
    popover = page.get_by_role("dialog", name="Attach to a question")
    expect(popover).to_be_visible()
    chosen = popover.get_by_role("listbox").get_by_role("option", selected=True)
    expect(chosen).to_contain_text("q1")
    page.keyboard.press("Control+Enter")
    expect(page.locator("mark.hl")).to_have_text("Employee")
    assert GoldAnchor.objects.get(item=item).quote == "Employee"
    # Nothing typed in caret mode changed the text.
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Employee Handbook")


def test_question_mark_opens_the_keyboard_shortcut_list(page, live_server, document):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/handbook.txt")
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Caret mode")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


DROP = """
([dropzone, files]) => {
  const transfer = new DataTransfer();
  for (const [name, text] of files) {
    transfer.items.add(new File([text], name, {type: "text/plain"}));
  }
  dropzone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
}
"""


def test_several_files_dropped_on_the_workspace_page_upload_and_get_read(
    page, live_server, workspace, background
):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/")
    dropzone = page.locator("[data-dropzone]").element_handle()
    page.evaluate(DROP, [dropzone, [["a.txt", "first file"], ["b.txt", "second file"]]])
    for name in ("a.txt", "b.txt"):
        row = page.locator(f'tr[data-doc="{name}"]')
        expect(row).to_be_visible(timeout=30_000)  # committed: see the test above
        svc.wait_for_parses(name, 1)
        expect(row.locator('[data-status="ready"]')).to_have_count(1, timeout=15_000)
    assert sorted(Document.objects.values_list("source_id", flat=True)) == ["a.txt", "b.txt"]


def test_the_eval_set_page_filters_in_place_and_creates_an_item(page, live_server, item):
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/")
    page.get_by_label("State").select_option("approved")
    expect(page.get_by_text("No items match these filters")).to_be_visible()
    assert page.url.endswith("?state=approved")
    page.get_by_label("State").select_option("")
    expect(page.get_by_role("link", name="q1")).to_be_visible()

    form = page.locator("[data-new-item]")
    form.get_by_role("textbox", name="Id").fill("q1")
    form.get_by_label("Question", exact=True).fill("Is remote work limited?")
    form.get_by_role("button", name="Create and open").click()
    expect(form.locator('[data-error-for="id"]')).to_have_text(
        "duplicate eval item id 'q1' in eval set 'quiz'"
    )
    form.get_by_role("textbox", name="Id").fill("q2")
    form.get_by_role("combobox", name="Question type").fill("yes_no")
    form.get_by_role("button", name="Create and open").click()
    expect(page.get_by_role("heading", name="Item q2")).to_be_visible()
    expect(page.get_by_label("Question type")).to_have_value("yes_no")


def test_marking_an_item_unanswerable_removes_its_evidence_after_asking(
    page, live_server, item, reference
):
    anchoring_services.anchor_create_from_highlight(
        item=item, user=item.author, parse=reference, start=19, end=64
    )
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    expect(page.locator("li.anchor")).to_have_count(1)
    page.get_by_role("button", name="Mark as unanswerable").click()
    expect(page.get_by_text("Remove its 1 piece(s) of evidence?")).to_be_visible()
    page.get_by_role("button", name="Remove evidence and mark unanswerable").click()
    expect(page.locator("[data-no-anchors]")).to_be_visible()
    expect(page.get_by_label("Question type")).to_have_value("unanswerable")
    item.refresh_from_db()
    assert (item.qtype, item.anchors.count()) == ("unanswerable", 0)
