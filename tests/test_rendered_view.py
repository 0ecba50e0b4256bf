"""The document as it looks: sanitised rendering, alignment to the reference parse,
the sections API, the script-less frame, and the view switch on the document page."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evalsets.documents import renditions
from evalsets.documents import services as documents_services
from evalsets.documents import tasks as documents_tasks
from evalsets.pure.parsers import get_parser
from evalsets.pure.rendering import (
    ALIGN_WORK_FLOOR,
    ALIGN_WORK_PER_CHAR,
    WHITE,
    Rendition,
    align,
    align_within_budget,
    render_html,
    sanitize_for_view,
    solid,
    split_sections,
)
from evalsets.pure.resolver import resolve
from tests.documents import make_docx

HOSTILE = (
    "<html><head><title>Evil</title><style>body{display:none}</style>"
    "<link rel=stylesheet href='https://evil.example/x.css'><script>alert(1)</script></head>"
    "<body onload='alert(2)'><nav>Home About</nav>"
    "<h1 onclick='alert(3)'>Leave policy</h1>"
    "<p style='position:fixed;inset:0;z-index:99999'>Staff accrue 1.5 days of leave.</p>"
    "<img src='https://evil.example/track.png' onerror='alert(4)'>"
    "<img src='data:image/png;base64,iVBORw0KGgo=' alt='dot'>"
    "<a href='javascript:alert(5)'>click</a> <a href='https://evil.example/'>away</a>"
    "<iframe src='https://evil.example/'></iframe><form action='https://evil.example/'>"
    "<button>Send</button></form><svg onload='alert(6)'></svg></body></html>"
)

MARKDOWN = (
    "# Travel policy\n\n"
    "Staff book **trains** for any journey under four hours.\n\n"
    "| Mode | Limit |\n|---|---|\n| Train | 4 h |\n\n"
    "Flights need the written approval of a director.\n"
)


_SOLID_CHAR = re.compile(f"[^{WHITE}]")


def rendered_to_parse(payload: dict, a: int, b: int) -> tuple[int, int] | None:
    """The parse span of solid characters ``a..b`` (exclusive) of a section, as the view
    maps a selection: the first character at or after ``a`` that the parse has, to the last
    one before ``b``. ``None`` when the parse has none of them. (The view's script does the
    same: ``static/js/document/solid.js``.)
    """
    runs = payload["runs"]
    first = last = None
    for i, j, n in runs:
        if first is None and i + n > a:
            first = j + max(0, a - i)
        if i < b:
            last = j + min(n, b - i) - 1
    if first is None or last is None or last < first:
        return None
    text = payload["parse_text"]
    offsets = [m.start() for m in _SOLID_CHAR.finditer(text)]
    return payload["parse_start"] + offsets[first], payload["parse_start"] + offsets[last] + 1


# -- sanitising and rendering ------------------------------------------------------------------


def test_the_view_keeps_structure_and_drops_everything_that_acts_or_loads():
    clean = render_html("html", HOSTILE.encode())
    lowered = clean.lower()
    for gone in ("<script", "alert", "onload", "onclick", "onerror", "javascript:", "style"):
        assert gone not in lowered
    for gone in ("evil.example", "<iframe", "<form", "<link", "<svg", "Evil</"):
        assert gone not in clean
    assert "<h1>Leave policy</h1>" in clean
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in clean  # an embedded image stays
    assert "<a>click</a>" in clean  # a link keeps its words, not its target


def test_markdown_is_rendered_with_its_headings_and_tables():
    clean = render_html("markdown", MARKDOWN.encode())
    assert "<h1>Travel policy</h1>" in clean
    assert "<strong>trains</strong>" in clean
    assert "<table>" in clean and "<td>Train</td>" in clean


def test_word_is_rendered_through_mammoth_with_its_table():
    clean = render_html("docx", make_docx())
    assert "<h1>Quarterly \u201cfindings\u201d</h1>" in clean
    assert "<table>" in clean and "Merged total row" in clean


def test_raw_html_in_markdown_is_sanitised_too():
    clean = render_html("markdown", b"Hi <script>alert(1)</script><b onclick='x()'>there</b>")
    assert "script" not in clean and "onclick" not in clean and "<b>there</b>" in clean


def test_sanitising_refuses_non_image_data_urls():
    clean = sanitize_for_view("<img src='data:text/html,<script>alert(1)</script>'>")
    assert "data:text" not in clean


def test_a_long_page_is_cut_into_sections_of_whole_blocks():
    clean = "".join(f"<p>Paragraph {n} of the long page.</p>" for n in range(2000))
    sections = split_sections(clean, size=4096)
    assert len(sections) > 10
    assert all(html.startswith("<p>") and html.endswith("</p>") for html, _ in sections)
    assert "".join(text for _, text in sections) == "".join(
        f"Paragraph {n} of the long page." for n in range(2000)
    )


# -- alignment ---------------------------------------------------------------------------------


def test_alignment_skips_text_only_the_view_has_and_text_only_the_parse_has():
    rendered = solid("Home About Leave policy Staff accrue days. Footer")
    parse = solid("Leave policy [1] Staff accrue days.")
    runs = align(rendered, parse)
    mapped = "".join(rendered[i : i + n] for i, _, n in runs)
    assert mapped == solid("Leave policy Staff accrue days.")
    assert all(rendered[i : i + n] == parse[j : j + n] for i, j, n in runs)


def test_alignment_of_identical_texts_is_one_run():
    text = solid("word " * 100_000)
    assert align(text, text) == [(0, 0, len(text))]


@pytest.mark.parametrize(
    ("inside", "words", "shown"),
    [
        ("<math><mi>x</mi><mo>=</mo><mn>2</mn></math>", "x=2", True),  # a formula is read
        ("<svg><text>chart label</text></svg>", "chart label", False),
        ("<template><p>not yet shown</p></template>", "not yet shown", False),
        ("<canvas>fallback words</canvas>", "fallback words", False),
        ("<noscript>enable scripts</noscript>", "enable scripts", False),
    ],
)
def test_the_view_and_the_parser_agree_on_what_special_elements_say(inside, words, shown):
    page = f"<p>Before the element.</p><p>{inside}</p><p>After it, the rest.</p>".encode()
    parsed = get_parser("selectolax").parse(page)
    view_text = solid(split_sections(render_html("html", page))[0][1])
    assert view_text == solid(parsed.text)
    assert (solid(words) in view_text) is shown
    assert align(view_text, solid(parsed.text)) == [(0, 0, len(view_text))]


def test_alignment_of_texts_that_agree_nowhere_stops_within_its_budget():
    """A parse that shares no text with the view (an unrelated uploaded parse) would make
    every character search the whole window: the searches stop at the budget instead."""
    view, parse = "ab" * 150_000, "cd" * 150_000
    found = align_within_budget(view, parse)
    assert found.runs == []
    assert found.work <= ALIGN_WORK_PER_CHAR * (len(view) + len(parse)) + ALIGN_WORK_FLOOR + (
        4 * 262_144 * 48  # the one resync under way when the budget ran out
    )


def test_a_passage_only_the_parse_has_longer_than_any_window_is_passed_over():
    """A long formula, a hidden appendix: 300 KB the view does not show, then the text both
    have, which is aligned whole after it."""
    shared = "".join(f"word{k}" for k in range(20_000))
    extra = "".join(f"only{k}" for k in range(40_000))
    found = align_within_budget(shared, "head" + extra + shared)
    assert not found.stopped
    assert sum(n for _, _, n in found.runs) == len(shared)
    assert found.runs[-1] == (0, 4 + len(extra), len(shared))


def test_alignment_work_grows_with_the_text_not_its_square():
    """A long passage only the parse has, then text both have, at two sizes: the work
    counted doubles with the text, no more."""

    def work(n: int) -> int:
        shared = "".join(f"word{k}" for k in range(n))
        extra = "".join(f"only{k}" for k in range(n // 8))
        return align_within_budget(shared, extra + shared).work

    small, large = work(20_000), work(40_000)
    assert large <= 2.5 * small


def _words_map_to_themselves(rendition: Rendition) -> int:
    """Every word of the view maps to itself (or the part of it the parse has: blocks' text
    nodes touch, so a menu's last word and a heading's first read as one); returns how many
    mapped whole."""
    checked = 0
    for section in rendition.sections:
        payload = rendition.section_payload(section)
        text = split_sections(section.html, size=10**9)[0][1]
        at = 0
        for word in re.findall(r"\S+", text):
            k = solid(text).index(word, at)
            at = k + len(word)
            span = rendered_to_parse(payload, k, k + len(word))
            if span is None:
                continue
            found = rendition.parse_text[span[0] : span[1]]
            assert solid(found) in word
            checked += found == word
    return checked


@pytest.mark.parametrize(
    ("kind", "data", "parser"),
    [
        ("html", HOSTILE.encode(), "selectolax"),
        ("markdown", MARKDOWN.encode(), "markdown-it"),
        ("docx", make_docx(), "python-docx"),
    ],
)
def test_each_word_of_the_view_lands_on_the_same_word_of_the_reference_parse(kind, data, parser):
    from evalsets.pure.parsers.registry import PARSERS

    parsed = PARSERS[parser].parse(data, max_pages=10)
    rendition = Rendition.build(render_html(kind, data), parsed.text, size=64)
    assert _words_map_to_themselves(rendition) >= 6


def test_text_the_parse_leaves_out_maps_to_nothing():
    from evalsets.pure.parsers.registry import PARSERS

    parsed = PARSERS["selectolax"].parse(HOSTILE.encode(), max_pages=10)
    rendition = Rendition.build(render_html("html", HOSTILE.encode()), parsed.text)
    payload = rendition.section_payload(rendition.sections[0])
    nav = solid("Home About")
    assert rendered_to_parse(payload, 0, len(nav)) is None  # the parser drops <nav>


def test_each_sections_start_in_the_parse_is_known_without_drawing_it():
    """Search finds which section to load for a hit from these starts (rendered.js)."""
    from evalsets.pure.parsers.registry import PARSERS

    parsed = PARSERS["markdown-it"].parse(MARKDOWN.encode(), max_pages=10)
    rendition = Rendition.build(render_html("markdown", MARKDOWN.encode()), parsed.text, size=64)
    starts = rendition.parse_starts()
    assert len(rendition.sections) > 2
    assert len(starts) == len(rendition.sections)
    for section, start in zip(rendition.sections, starts, strict=True):
        if start is None:
            continue
        # the parse's character there is a solid one that the section shows
        shown = solid(split_sections(section.html, size=10**9)[0][1])
        assert solid(rendition.parse_text[start]) and rendition.parse_text[start] in shown
    known = [s for s in starts if s is not None]
    assert known == sorted(known) and len(set(known)) == len(known)


# -- the API -----------------------------------------------------------------------------------


@pytest.fixture
def upload_doc(workspace, annotator, django_capture_on_commit_callbacks):
    def make(name: str, data: bytes):
        with django_capture_on_commit_callbacks(execute=True):
            document, _ = documents_services.document_upload(
                workspace=workspace, user=annotator, upload=SimpleUploadedFile(name, data)
            )
        return document

    return make


def _sections(client, source_id: str, query: str = ""):
    return client.get(f"/api/workspaces/acme/documents/{source_id}/rendered/{query}")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "data", "phrase"),
    [
        ("policy.html", HOSTILE.encode(), "accrue 1.5 days"),
        ("travel.md", MARKDOWN.encode(), "written approval of a director"),
        ("report.docx", make_docx(), "comes the conclusion"),
    ],
)
def test_a_span_from_the_sections_becomes_an_anchor_that_resolves_exactly(
    upload_doc, client_for, viewer, annotator, item, name, data, phrase
):
    document = upload_doc(name, data)
    response = _sections(client_for(viewer), name)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kind"] == document.kind and body["section_count"] == 1
    section = body["sections"][0]
    reference = document.parses.get(is_reference=True)
    assert body["parse"] == str(reference.public_id)
    # As rendered.js does: count the phrase in solid characters of the section's text.
    text = split_sections(section["html"], size=10**9)[0][1]
    k = solid(text).index(solid(phrase))
    start, end = rendered_to_parse(section, k, k + len(solid(phrase)))
    assert reference.text[start:end] == phrase
    created = client_for(annotator).post(
        "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/",
        {"parse": str(reference.public_id), "start": start, "end": end},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["quote"] == phrase
    found = resolve(reference.text, phrase, occurrence=created.json()["occurrence"])
    assert (found.start, found.end) == (start, end)


@pytest.mark.django_db
def test_a_text_document_has_no_rendered_view_and_says_so(upload_doc, client_for, viewer):
    upload_doc("notes.txt", b"Plain words.\fPage two.")
    response = _sections(client_for(viewer), "notes.txt")
    assert response.status_code == 409
    assert "text documents have no rendered view" in response.json()["detail"]


@pytest.mark.django_db
def test_a_document_that_cannot_be_drawn_is_a_409_pointing_to_the_text_view(
    upload_doc, client_for, viewer
):
    document = upload_doc("travel.md", MARKDOWN.encode())
    document.kind = "docx"  # its bytes are not a Word file: mammoth cannot read them
    document.save()
    renditions.forget(renditions.document_dir(document))  # the worker tries again, as Word
    documents_tasks.render_document(document.parses.get(is_reference=True).pk)
    response = _sections(client_for(viewer), "travel.md")
    assert response.status_code == 409
    assert "cannot be drawn as it looks; read it in the Text view" in response.json()["detail"]


@pytest.mark.django_db
def test_another_workspaces_document_is_not_found(upload_doc, client_for, outsider):
    upload_doc("travel.md", MARKDOWN.encode())
    assert _sections(client_for(outsider), "travel.md").status_code == 404


@pytest.mark.django_db
def test_sections_out_of_range_are_a_400_naming_the_parameter(upload_doc, client_for, viewer):
    upload_doc("travel.md", MARKDOWN.encode())
    response = _sections(client_for(viewer), "travel.md", "?from=5")
    assert response.status_code == 400
    assert "'from' is section 5 but this view has 1 sections" in response.json()["detail"]
    assert _sections(client_for(viewer), "travel.md", "?from=x").status_code == 400


# -- the frame and the page --------------------------------------------------------------------


@pytest.mark.django_db
def test_the_frame_runs_no_script_and_loads_nothing_but_our_stylesheet(viewer):
    client = Client()
    client.force_login(viewer)
    response = client.get("/document-frame/")
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "img-src data:" in policy
    assert "script-src" not in policy and "sandbox allow-same-origin" in policy
    assert "frame-ancestors 'self'" in policy
    assert response["X-Frame-Options"] == "SAMEORIGIN"
    assert b"<script" not in response.content


@pytest.mark.django_db
def test_the_document_page_offers_as_it_looks_and_the_text_one_switch_apart(upload_doc, viewer):
    upload_doc("travel.md", MARKDOWN.encode())
    client = Client()
    client.force_login(viewer)
    page = client.get("/w/acme/documents/travel.md").content.decode()
    assert 'sandbox="allow-same-origin"' in page and "data-rendered-frame" in page
    assert "As it looks" in page and "Text (parser markdown-it)" in page
    assert "data-pages" not in page
    text = client.get("/w/acme/documents/travel.md?view=text").content.decode()
    assert "data-pages" in text and "data-rendered-frame" not in text
    assert 'href="?view=rendered"' in text


@pytest.mark.django_db
def test_a_text_document_page_has_no_view_switch(upload_doc, viewer):
    upload_doc("notes.txt", b"Plain words.\fPage two.")
    client = Client()
    client.force_login(viewer)
    page = client.get("/w/acme/documents/notes.txt").content.decode()
    assert "data-view-switch" not in page and "data-pages" in page
