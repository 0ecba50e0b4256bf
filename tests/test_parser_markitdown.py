"""markitdown as a parser (PDF, Word and HTML read as Markdown), and a team's own parsers
plugged in by settings or entry points."""

from __future__ import annotations

import pytest
from fpdf import FPDF

from evalsets.pure.parsers import PARSERS, ParseError, parse_isolated, parsers_for, registry
from evalsets.pure.parsers.markitdown_md import PARSER as MARKITDOWN
from evalsets.workspaces import services as workspaces_services
from tests.documents import make_docx, make_pdf, make_scan_pdf

PAGES = ["Page one says hello to the reader.", "Page two has the \ufb01nal word.", None, "Last."]


def test_markitdown_reads_a_pdf_page_by_page_with_its_version_recorded():
    parsed = MARKITDOWN.parse(make_pdf(PAGES), max_pages=100, progress=None)
    assert parsed.parser == "markitdown"
    assert parsed.parser_version == registry.metadata.version("markitdown")
    assert len(parsed.page_starts) == 4
    first, second = parsed.page_starts[:2]
    assert "Page one says hello" in parsed.text[first:second]
    assert "Page two" in parsed.text[second : parsed.page_starts[2]]


def _pdf_with_a_form_page() -> bytes:

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Page one is prose about the lighthouse keeper and her logbook.")
    pdf.add_page()  # a borderless table: markitdown reads it as a form
    for row in range(14):
        for col, word in enumerate(["Name", "Qty", "Price", "Total"]):
            pdf.set_xy(20 + col * 45, 20 + row * 9)
            pdf.cell(40, 8, f"{word}{row}")
    pdf.add_page()
    pdf.add_page()
    pdf.multi_cell(0, 8, "Page four ends the report with a summary of the corner bakery.")
    return bytes(pdf.output())


def test_markitdown_keeps_a_pdfs_pages_and_spaces_when_one_page_is_a_form():
    parsed = MARKITDOWN.parse(_pdf_with_a_form_page(), max_pages=100, progress=None)
    assert parsed.page_count == 4
    assert "the lighthouse keeper and her logbook" in parsed.page_text(0)
    assert "| Name0" in parsed.page_text(1) and "Total13" in parsed.page_text(1)
    assert parsed.page_text(2) == ""
    assert "the report with a summary of the corner bakery" in parsed.page_text(3)


def test_markitdown_reads_a_word_document_as_markdown_with_its_table():
    parsed = MARKITDOWN.parse(make_docx(), max_pages=100, progress=None)
    assert parsed.text.startswith("# Quarterly")
    assert "| North | 12 |" in parsed.text
    assert parsed.text.index("Before the table") < parsed.text.index("After the table")
    assert parsed.page_starts == [0]


def test_markitdown_reads_html_as_markdown_with_headings_and_links():
    html = b"<html><body><h1>Leave</h1><p>See <a href='/p'>the policy</a> now.</p></body></html>"
    parsed = MARKITDOWN.parse(html, max_pages=100, progress=None)
    assert parsed.text == "# Leave\n\nSee [the policy](/p) now."


def test_markitdown_says_a_scan_needs_ocr_and_an_empty_file_is_empty():
    with pytest.raises(ParseError) as caught:
        MARKITDOWN.parse(make_scan_pdf(), max_pages=100, progress=None)
    assert caught.value.code == "no_text"
    with pytest.raises(ParseError) as caught:
        MARKITDOWN.parse(b"", max_pages=100, progress=None)
    assert caught.value.code == "empty"


def test_markitdown_is_offered_for_pdf_word_and_html_but_runs_only_where_chosen():
    for kind in ("pdf", "docx", "html"):
        assert MARKITDOWN in parsers_for(kind)
        assert "markitdown" not in registry.DEFAULT_PARSERS[kind]
    assert MARKITDOWN not in parsers_for("text")


def test_markitdown_runs_in_the_isolated_child_like_the_others():
    parsed = parse_isolated("markitdown", make_pdf(PAGES), timeout_s=120)
    assert parsed.parser == "markitdown" and "Page one says hello" in parsed.text


@pytest.mark.django_db
def test_a_workspace_chooses_markitdown_in_its_parser_settings(workspace):
    settings = {"parsers": {"pdf": ["pypdf", "markitdown"]}, "reference": {"pdf": "pypdf"}}
    updated = workspaces_services.workspace_update(workspace=workspace, parser_settings=settings)
    assert updated.parser_settings["parsers"]["pdf"] == ["pypdf", "markitdown"]


# -- a team's own parsers --------------------------------------------------------------------


@pytest.fixture
def plugins():
    """Registers what a test asks for, and forgets it afterwards."""
    before = dict(PARSERS), dict(registry.PLUGIN_PATHS)
    yield registry.register_plugins
    PARSERS.clear()
    PARSERS.update(before[0])
    registry.PLUGIN_PATHS.clear()
    registry.PLUGIN_PATHS.update(before[1])


def test_a_parser_named_in_the_settings_list_is_registered_for_its_kind(plugins):
    assert plugins(["tests.plugin_parser:PARSER"], entry_points=False) == ["shout"]
    assert PARSERS["shout"].version == "0.1"
    assert [p.name for p in parsers_for("text")] == ["plaintext", "shout"]
    # registering again (the web process and a worker both start up) changes nothing
    assert plugins(["tests.plugin_parser:PARSER"], entry_points=False) == []


def test_a_plugin_parser_runs_in_the_isolated_child_by_its_dotted_path(plugins):
    plugins(["tests.plugin_parser:ShoutParser"], entry_points=False)
    parsed = parse_isolated("shout", b"quiet words", timeout_s=60)
    assert parsed.text == "QUIET WORDS" and parsed.parser == "shout"


def test_parsers_published_under_the_entry_point_group_are_registered(plugins, monkeypatch):
    class EntryPoint:
        value = "tests.plugin_parser:PARSER"

    seen = []

    def entry_points(*, group):
        seen.append(group)
        return [EntryPoint()]

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    assert plugins([]) == ["shout"]
    assert seen == ["groundwork.parsers"]


@pytest.mark.parametrize(
    ("path", "error", "words"),
    [
        ("tests.plugin_parser:NotAParser", TypeError, "no parse method"),
        ("tests.plugin_parser", ValueError, "package.module:ATTR"),
        ("evalsets.pure.parsers.text:PARSER", ValueError, "already taken"),
    ],
)
def test_a_wrong_plugin_fails_at_start_up_naming_its_path(plugins, path, error, words):
    with pytest.raises(error, match=words):
        plugins([path], entry_points=False)


@pytest.mark.django_db
def test_a_workspace_chooses_a_plugin_parser_like_a_built_in_one(plugins, workspace):
    plugins(["tests.plugin_parser:PARSER"], entry_points=False)
    settings = {"parsers": {"text": ["plaintext", "shout"]}}
    updated = workspaces_services.workspace_update(workspace=workspace, parser_settings=settings)
    assert updated.parser_settings["parsers"]["text"] == ["plaintext", "shout"]
