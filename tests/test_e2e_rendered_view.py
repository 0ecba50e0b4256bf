"""The document as it looks, in Chromium: a mouse drag over rendered HTML, Markdown
and Word becomes an anchor in the reference parse; existing anchors are drawn over their words
with their status per parse; hostile HTML stays inert; a text file's form-feed pages redraw one
at a time.

docs/*-view.png come from here (``GROUNDWORK_SHOTS``, see ``tests/browser.py``).
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import renditions
from evalsets.documents import services as documents_services
from evalsets.models import GoldAnchor, ParseStatus
from evalsets.pure.resolver import resolve
from tests import services as svc
from tests.browser import log_in, shot
from tests.conftest import PASSWORD
from tests.documents import make_docx

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HTML_DOC = (
    "<html><head><title>Leave</title></head><body><nav>Home · Policies · Contact</nav>"
    "<h1>Leave policy</h1><p>Staff accrue <b>1.5 days</b> of leave per month, and may carry "
    "over <i>five days</i> into the next year.</p><table><tr><th>Kind</th><th>Days</th></tr>"
    "<tr><td>Sick leave</td><td>10</td></tr></table>"
    "<p>Remote work is limited to thirty days a year.</p></body></html>"
).encode()
MARKDOWN_DOC = (
    b"# Travel policy\n\n"
    b"Staff book **trains** for any journey under four hours.\n\n"
    b"| Mode | Limit |\n|---|---|\n| Train | 4 h |\n\n"
    b"Flights need the written approval of a director.\n"
)

HOSTILE = (
    b"<html><head><script>alert('head')</script>"
    b"<style>body{background:red} *{position:fixed!important}</style>"
    b"<link rel='stylesheet' href='https://evil.example/x.css'>"
    b"<meta http-equiv='refresh' content='0;url=https://evil.example/'></head>"
    b"<body onload=\"alert('onload')\">"
    b"<div style='position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647;"
    b"background:rgba(255,0,0,.9)'>overlay</div>"
    b"<h1 onmouseover=\"alert('hover')\">Harmless heading</h1>"
    b"<p>Plain words to read.<img src='https://evil.example/track.png' onerror=\"alert('img')\">"
    b"</p><p><a href=\"javascript:alert('link')\">click me</a> and "
    b"<a href='https://evil.example/away'>leave</a></p>"
    b"<iframe src='https://evil.example/frame'></iframe>"
    b"<form action='https://evil.example/post'><button>Send</button></form>"
    b"<svg onload=\"alert('svg')\"><circle r='5'/></svg>"
    b"<object data='https://evil.example/x.swf'></object></body></html>"
)

FRAME_READY = """() => {
  const f = document.querySelector("[data-rendered-frame]");
  const d = f && f.contentDocument;
  return !!(d && d.querySelector("section.loaded"));
}"""

# Where a phrase is drawn in the frame, in the page's coordinates: just inside its first and
# last characters (a press in a character's left half puts the caret before it, a release in
# the right half after it).
PHRASE_BOX = """(phrase) => {
  const f = document.querySelector("[data-rendered-frame]");
  const d = f.contentDocument;
  const walker = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT);
  const nodes = [];
  let all = "";
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    nodes.push([n, all.length]);
    all += n.data;
  }
  const at = all.indexOf(phrase);
  if (at < 0) throw new Error(phrase + " is not in the view");
  const point = (u) => {
    for (let k = nodes.length - 1; k >= 0; k--) {
      if (nodes[k][1] <= u) return [nodes[k][0], u - nodes[k][1]];
    }
  };
  const box = (u) => {
    const r = d.createRange();
    r.setStart(...point(u));
    r.setEnd(...point(u + 1));
    return r.getBoundingClientRect();
  };
  const a = box(at), b = box(at + phrase.length - 1), fr = f.getBoundingClientRect();
  const dx = fr.left + f.clientLeft, dy = fr.top + f.clientTop;
  return {
    x1: dx + a.left + 1, y1: dy + (a.top + a.bottom) / 2,
    x2: dx + b.right - 1, y2: dy + (b.top + b.bottom) / 2,
  };
}"""

FRAME_SELECTION = """() => document.querySelector("[data-rendered-frame]").contentWindow
  .getSelection().toString()"""

FRAME_MARKS = """() => Array.from(document.querySelector("[data-rendered-frame]").contentDocument
  .querySelectorAll("mark.hl")).map((m) => m.textContent)"""


@pytest.fixture
def docs(workspace, annotator, owner, background, django_capture_on_commit_callbacks):
    """Upload documents (parsed at once) into workspace acme, with eval set quiz and item q1."""
    evalset = anchoring_services.evalset_create(
        workspace=workspace, user=owner, slug="quiz", name="Quiz"
    )
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="What does the policy say?"
    )

    def upload(name: str, data: bytes):
        with django_capture_on_commit_callbacks(execute=True):
            document, _ = documents_services.document_upload(
                workspace=workspace, user=annotator, upload=SimpleUploadedFile(name, data)
            )
        if background == "worker":  # a real worker: wait for its parses and stored view
            svc.wait_for(
                lambda: not document.parses.exclude(status=ParseStatus.READY).exists(),
                what=f"the worker to parse {name}",
            )
            if renditions.has_rendered_view(document):
                folder = renditions.parse_dir(document, document.parses.get(is_reference=True))
                svc.wait_for(lambda: renditions.is_stored(folder), what=f"the view of {name}")
        return document

    upload.item = item
    return upload


def _open(page, live_server, source_id: str) -> None:
    page.goto(f"{live_server.url}/w/acme/documents/{source_id}")
    page.wait_for_function(FRAME_READY)


def _drag(page, phrase: str) -> str:
    """Press, move and release the left button over ``phrase``; return what got selected.

    The events go through Chromium's input pipeline (CDP ``Input.dispatchMouseEvent``), as a
    real mouse's do. Playwright's own ``mouse.move`` with a button down waits for a script to
    answer in every frame (to catch drag and drop), and the view's frame runs no script.
    """
    box = page.evaluate(PHRASE_BOX, phrase)
    cdp = page.context.new_cdp_session(page)
    steps = [(box["x1"], box["y1"])]
    steps += [
        (box["x1"] + (box["x2"] - box["x1"]) * k / 6, box["y1"] + (box["y2"] - box["y1"]) * k / 6)
        for k in range(1, 7)
    ]
    cdp.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": steps[0][0], "y": steps[0][1]})
    press = {"button": "left", "clickCount": 1}
    cdp.send(
        "Input.dispatchMouseEvent",
        {"type": "mousePressed", "x": box["x1"], "y": box["y1"], **press},
    )
    for x, y in steps[1:]:
        cdp.send(
            "Input.dispatchMouseEvent",
            {"type": "mouseMoved", "x": x, "y": y, "button": "left", "buttons": 1},
        )
    cdp.send(
        "Input.dispatchMouseEvent",
        {"type": "mouseReleased", "x": box["x2"], "y": box["y2"], **press},
    )
    cdp.detach()
    return page.evaluate(FRAME_SELECTION)


@pytest.mark.parametrize(
    ("name", "data", "phrase", "picture"),
    [
        ("leave.html", HTML_DOC, "accrue 1.5 days of leave per month", "html-view.png"),
        ("travel.md", MARKDOWN_DOC, "the written approval of a director", "markdown-view.png"),
        ("report.docx", make_docx(), "comes the conclusion", "word-view.png"),
    ],
)
def test_a_mouse_drag_over_the_rendered_document_creates_an_anchor_in_the_reference_parse(
    page, live_server, docs, name, data, phrase, picture
):
    document = docs(name, data)
    reference = document.parses.get(is_reference=True)
    log_in(page, live_server, "ann", PASSWORD)
    _open(page, live_server, name)
    expect(page.get_by_role("link", name="As it looks")).to_have_attribute("aria-current", "page")

    selected = _drag(page, phrase)
    assert selected == phrase

    popover = page.get_by_role("dialog", name="Attach to a question")
    expect(popover).to_be_visible()
    expect(popover.locator("[data-pop-quote]")).to_have_text(phrase)
    popover.locator('[data-item="q1"]').click()
    # saved with the popover's keyboard path: choosing the question loads its suggested
    # passages above the Save button, and a click aimed before they arrive lands elsewhere
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("Saved evidence for q1")).to_be_visible()

    anchor = GoldAnchor.objects.get(item=docs.item)
    assert anchor.quote == selected
    assert anchor.reference_parse_id == reference.pk
    found = resolve(
        reference.text,
        anchor.quote,
        occurrence=anchor.occurrence,
        page_hint=anchor.page_hint,
        page_starts=reference.page_starts,
        prefix=anchor.prefix,
        suffix=anchor.suffix,
    )
    assert (found.start, found.end) == (anchor.ref_start, anchor.ref_end)
    assert found.status == "exact"
    # The new anchor is drawn in the view over exactly the words that were dragged over.
    page.wait_for_function(f"() => ({FRAME_MARKS})().length > 0")
    assert "".join(page.evaluate(FRAME_MARKS)) == phrase
    page.mouse.click(5, 5)
    shot(page, picture)


def test_existing_anchors_are_drawn_over_their_words_with_their_status_per_parse(
    page, live_server, docs, annotator
):
    document = docs("leave.html", HTML_DOC)
    reference = document.parses.get(is_reference=True)
    quote = "Remote work is limited to thirty days a year"
    start = reference.text.index(quote)
    anchoring_services.anchor_create_from_highlight(
        item=docs.item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    log_in(page, live_server, "ann", PASSWORD)
    _open(page, live_server, "leave.html")

    page.wait_for_function(f"() => ({FRAME_MARKS})().length > 0")
    assert "".join(page.evaluate(FRAME_MARKS)) == quote
    # Hovering the mark shows the question and the anchor's status in the reference parse.
    box = page.evaluate(PHRASE_BOX, "limited to thirty")
    page.mouse.move((box["x1"] + box["x2"]) / 2, box["y1"])
    tip = page.locator("[data-tip]")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("q1: What does the policy say?")
    expect(tip.locator(".badge.exact")).to_contain_text("selectolax")

    # The text view is one switch away and draws the same anchor.
    page.get_by_role("link", name="Text (parser selectolax)").click()
    expect(page.locator("mark.hl")).to_have_text(quote)


def test_a_view_still_being_prepared_says_so_then_loads_once_the_worker_stored_it(
    page, live_server, docs, monkeypatch
):
    document = docs("leave.html", HTML_DOC)
    reference = document.parses.get(is_reference=True)
    folder = renditions.parse_dir(document, reference)
    svc.wait_for(lambda: renditions.is_stored(folder), what="the stored rendition")
    renditions.forget(folder)  # as if the worker had not got to it yet
    asked = []
    monkeypatch.setattr(renditions, "_ask", lambda folder, parse: asked.append(parse.pk))
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/leave.html")
    status = page.locator("[data-doc-status]")
    expect(status).to_contain_text("Preparing the document as it looks")
    assert asked and set(asked) == {reference.pk}
    expect(page.get_by_role("link", name="Text (parser selectolax)")).to_be_visible()

    renditions.rendition_build(parse=reference)  # what the worker does
    page.wait_for_function(FRAME_READY)
    expect(status).to_have_text("")
    frame = page.frame_locator("[data-rendered-frame]")
    expect(frame.get_by_role("heading", name="Leave policy")).to_be_visible()


def test_hostile_html_is_drawn_inert_with_no_dialog_and_no_network_load(page, live_server, docs):
    docs("hostile.html", HOSTILE)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    elsewhere: list[str] = []
    page.on(
        "request",
        lambda request: (
            None if request.url.startswith(live_server.url) else elsewhere.append(request.url)
        ),
    )
    log_in(page, live_server, "ann", PASSWORD)
    _open(page, live_server, "hostile.html")
    frame_doc = 'document.querySelector("[data-rendered-frame]").contentDocument'
    drawn = f"{frame_doc}.querySelector('[data-rendered-sections]')"

    # Nothing that acts or loads reached the frame: its one script-free page holds our
    # stylesheet and the sanitised document, nothing of the document's own head.
    assert page.evaluate(f"{frame_doc}.querySelectorAll('script, meta[http-equiv]').length") == 0
    assert page.evaluate(
        f"Array.from({frame_doc}.querySelectorAll('link')).map((l) => l.href)"
    ) == [f"{live_server.url}/static/css/rendered_frame.css"]
    for selector in ("script", "style", "link", "meta", "iframe", "object", "form", "svg"):
        assert page.evaluate(f"{drawn}.querySelectorAll('{selector}').length") == 0, selector
    assert (
        page.evaluate(
            f"Array.from({drawn}.querySelectorAll('[style], [href], [src]'))"
            ".map((e) => e.outerHTML)"
        )
        == []
    )
    assert page.evaluate(f"{drawn}.textContent").count("Harmless heading") == 1
    assert (
        page.evaluate(
            f"Array.from({drawn}.querySelectorAll('*')).some("
            "(e) => Array.from(e.attributes).some((a) => a.name.startsWith('on')))"
        )
        is False
    )
    expect(page.get_by_text("Plain words to read.")).to_have_count(0)  # it is in the frame only

    # Hover the heading, click both links: no dialog opens, no page leaves for elsewhere.
    box = page.evaluate(PHRASE_BOX, "Harmless heading")
    page.mouse.move(box["x1"] + 5, box["y1"])
    for link in ("click me", "leave"):
        box = page.evaluate(PHRASE_BOX, link)
        page.mouse.click(box["x1"] + 3, box["y1"])
    # The overlay the page asked for covers nothing of ours: our toolbar is still on top.
    toolbar = page.locator("[data-doc-toolbar]").bounding_box()
    on_top = page.evaluate(
        "([x, y]) => !!document.elementFromPoint(x, y).closest('[data-doc-toolbar]')",
        [toolbar["x"] + toolbar["width"] / 2, toolbar["y"] + toolbar["height"] / 2],
    )
    assert on_top
    page.get_by_role("link", name="Text (parser selectolax)").click()
    expect(page.locator('[data-page-text="1"]')).to_contain_text("Plain words to read.")
    assert page.url.startswith(live_server.url)
    assert dialogs == []
    assert elsewhere == []


def test_a_new_highlight_on_a_form_feed_page_redraws_that_page_only(
    page, live_server, docs, annotator
):
    pages = [f"Page {n} says the budget line {n} is settled.\n" * 3 for n in range(1, 1001)]
    document = docs("ledger.txt", "\f".join(pages).encode())
    reference = document.parses.get(is_reference=True)
    assert len(reference.page_starts) == 1000
    log_in(page, live_server, "ann", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/documents/ledger.txt#page=900")
    expect(page.locator('[data-page-text="900"]')).to_contain_text("Page 900 says")
    expect(page.locator('[data-page-text="901"]')).to_contain_text("Page 901 says")
    page.evaluate(
        """() => {
          window.__redrawn = new Set();
          // Only pages already drawn: one drawn later (scrolled into view) is a first draw.
          for (const el of document.querySelectorAll(".page.loaded [data-page-text]")) {
            new MutationObserver(() => window.__redrawn.add(Number(el.dataset.pageText)))
              .observe(el, { childList: true });
          }
        }"""
    )
    assert page.locator(".page.loaded").count() >= 2  # page 900 and its neighbours are drawn
    quote = "budget line 900 is settled"
    start = reference.text.index(quote)
    anchor = anchoring_services.anchor_create_from_highlight(
        item=docs.item, user=annotator, parse=reference, start=start, end=start + len(quote)
    )
    assert anchor.page_hint == 900
    page.evaluate("() => window.groundworkDocument.refreshAnchors()")
    expect(page.locator('[data-page-text="900"] mark.hl').first).to_have_text(quote)
    assert page.evaluate("() => Array.from(window.__redrawn)") == [900]
