"""Tests for evalsets.pure.parsers: real files built in the test, real child processes, no mocks.

PDFs come from fpdf2 (multi-page, smart quotes, a ligature when a Unicode font is available, a
hyphen at a line end), encrypted PDFs from pypdf's writer, DOCX from python-docx, and text in
Latin-1 / cp1252 / UTF-16. No database is used.
"""

from __future__ import annotations

import difflib
import pickle
import re
import unicodedata
from pathlib import Path

import pytest

from evalsets.pure.parsers import (
    DEFAULT_PARSERS,
    DEFAULT_REFERENCE,
    ERROR_CODES,
    PAGE_SEPARATOR,
    PARSERS,
    ParsedText,
    ParseError,
    check_page_count,
    check_size,
    get_parser,
    html_to_text,
    parse_isolated,
    parsers_for,
    sanitize_html,
    sniff,
)
from evalsets.pure.parsers.html import MAX_DEPTH
from tests.documents import (
    encrypt_pdf,
    make_docx,
    make_pdf,
    make_scan_pdf,
    make_zip,
)
from tests.hostile_pdfs import nested_fills_pdf

PDF_PARSERS = ["pypdf", "pdfminer", "pdfium"]
MB = 1024 * 1024

PAGE_ONE = (
    "Page one says \u201chello\u201d \u2014 it\u2019s the first page. This sentence is long "
    "enough to wrap and ends with a hyphen-\nated word."
)
PAGE_TWO = "Page two begins here and mentions the \ufb01nance of\ufb01ce."
PAGE_FOUR = "Page four closes the report."


@pytest.fixture(scope="module")
def report_pdf() -> bytes:
    return make_pdf([PAGE_ONE, PAGE_TWO, None, PAGE_FOUR])


def squash(text: str) -> str:
    return " ".join(text.split())


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


# --- PDF -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_each_pdf_parser_puts_page_starts_on_real_page_boundaries(name, report_pdf):
    parsed = PARSERS[name].parse(report_pdf, max_pages=100, progress=None)

    assert len(parsed.page_starts) == 4
    assert parsed.page_starts[0] == 0
    assert squash(parsed.text).startswith("Page one says")  # pdfminer spaces justified lines
    assert parsed.text[parsed.page_starts[1] :].startswith("Page two begins")
    assert parsed.text[parsed.page_starts[3] :].startswith("Page four closes")
    assert parsed.page_text(2) == ""  # the blank third page is still a page
    assert parsed.meta["empty_pages"] == [3]
    for i in (1, 2, 3):  # every page but the first is preceded by the documented separator
        start = parsed.page_starts[i]
        assert parsed.text[start - len(PAGE_SEPARATOR) : start] == PAGE_SEPARATOR


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_each_pdf_parser_reports_progress_page_by_page_from_when_the_file_is_open(name, report_pdf):
    calls: list[tuple[int, int]] = []
    PARSERS[name].parse(report_pdf, max_pages=100, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_each_pdf_parser_keeps_smart_quotes_ligatures_and_line_end_hyphens(name, report_pdf):
    parsed = PARSERS[name].parse(report_pdf, max_pages=100, progress=None)

    assert "\u201chello\u201d" in parsed.text
    assert "it\u2019s" in parsed.text
    # pdfium knows a hyphen at a line end splits a word and joins the two halves at it.
    assert re.search(r"hyphen-ated" if name == "pdfium" else r"hyphen-\s+ated", parsed.text)
    assert "finance office" in nfkc(parsed.text)  # "ﬁ" may come out as the ligature or as "fi"
    assert parsed.parser == name
    assert parsed.parser_version == PARSERS[name].version


def test_the_two_pdf_parsers_read_the_same_pdf_differently_but_overlapping(report_pdf):
    pypdf_text = PARSERS["pypdf"].parse(report_pdf, max_pages=100).text
    pdfminer_text = PARSERS["pdfminer"].parse(report_pdf, max_pages=100).text

    assert pypdf_text != pdfminer_text
    words = set(pypdf_text.split()) & set(pdfminer_text.split())
    assert {"Page", "two", "begins", "closes", "report."} <= words
    all_words = set(pypdf_text.split()) | set(pdfminer_text.split())
    assert len(words) / len(all_words) > 0.9  # the same words ...
    assert (
        0.6 < difflib.SequenceMatcher(None, pypdf_text, pdfminer_text).ratio() < 1
    )  # ... spaced apart differently


def test_pdf_parser_versions_are_the_libraries_own_versions():
    import pdfminer
    import pypdf

    assert PARSERS["pypdf"].version == pypdf.__version__
    assert PARSERS["pdfminer"].version == pdfminer.__version__


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_password_protected_pdf_fails_with_a_readable_reason(name):
    locked = encrypt_pdf(make_pdf(["Secret page."]), user_password="open-sesame")

    with pytest.raises(ParseError) as caught:
        PARSERS[name].parse(locked, max_pages=100, progress=None)

    assert caught.value.code == "encrypted"
    assert caught.value.reason == (
        "This PDF is encrypted (password-protected); remove the password and upload it again."
    )


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_pdf_locked_only_by_an_owner_password_is_still_read(name):
    restricted = encrypt_pdf(make_pdf(["Readable despite restrictions."]), user_password="")
    parsed = PARSERS[name].parse(restricted, max_pages=100, progress=None)
    assert "Readable despite restrictions." in parsed.text


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_pdf_without_a_text_layer_asks_for_ocr(name):
    with pytest.raises(ParseError) as caught:
        PARSERS[name].parse(make_scan_pdf(), max_pages=100, progress=None)
    assert caught.value.code == "no_text"
    assert caught.value.reason == (
        "This PDF has no text layer (it looks like a scan); run OCR first."
    )


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_pdf_over_the_page_limit_is_refused_with_both_numbers(name):
    five_pages = make_pdf(["one", "two", "three", "four", "five"])
    with pytest.raises(ParseError) as caught:
        PARSERS[name].parse(five_pages, max_pages=3, progress=None)
    assert caught.value.code == "too_many_pages"
    assert caught.value.reason == "This PDF has 5 pages; the limit is 3."


@pytest.mark.parametrize("name", PDF_PARSERS)
@pytest.mark.parametrize(
    ("data", "looks_like"),
    [
        (make_zip({"notes.txt": "hello"}), "a ZIP archive"),
        (b"Just some notes saved with the wrong name.\n", "plain text"),
        (b"<!DOCTYPE html><html><body>404 Not Found</body></html>", "an HTML page"),
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "a PNG image"),
    ],
)
def test_a_file_that_is_not_a_pdf_at_all_says_what_it_looks_like(name, data, looks_like):
    with pytest.raises(ParseError) as caught:
        PARSERS[name].parse(data, max_pages=100, progress=None)
    assert caught.value.code == "wrong_type"
    assert caught.value.reason == f"This file is not a PDF (it starts like {looks_like})."


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_damaged_pdf_fails_as_corrupt_without_library_jargon(name):
    with pytest.raises(ParseError) as caught:
        PARSERS[name].parse(b"%PDF-1.7\n" + b"\x00garbage\xff" * 50, max_pages=100)
    assert caught.value.code == "corrupt"
    assert "PDF" in caught.value.reason
    assert "Error" not in caught.value.reason and "Traceback" not in caught.value.reason
    assert caught.value.detail  # the library's own words are kept for the logs


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_parser_says_an_empty_file_is_empty(name):
    with pytest.raises(ParseError) as caught:
        PARSERS[name].parse(b"", max_pages=100, progress=None)
    assert caught.value.code == "empty"
    assert caught.value.reason == "This file is empty."


# --- DOCX ----------------------------------------------------------------------------------------


def test_a_docx_is_read_with_paragraphs_and_tables_in_document_order():
    parsed = PARSERS["python-docx"].parse(make_docx(), max_pages=100, progress=None)
    text = parsed.text

    assert parsed.page_starts == [0]
    assert text.startswith("Quarterly \u201cfindings\u201d")
    assert text.index("it\u2019s prose") < text.index("Region\tRevenue") < text.index("After the")
    assert "North\t12" in text
    assert text.count("Merged total row") == 1  # a merged cell is read once
    assert "\n\n\n" not in text  # the empty spacer paragraph leaves no hole
    assert parsed.meta["tables"] == 1


def test_a_zip_that_is_not_a_word_document_is_refused_by_the_docx_parser():
    with pytest.raises(ParseError) as caught:
        PARSERS["python-docx"].parse(make_zip({"a.txt": "x"}), max_pages=100)
    assert caught.value.code == "wrong_type"
    assert caught.value.reason == (
        "This file is not a Word document (.docx) (it starts like a ZIP archive)."
    )


# --- HTML and Markdown ---------------------------------------------------------------------------

PAGE_HTML = """<!DOCTYPE html>
<html><head><title>Ignored title</title><style>p { color: red }</style>
<script>var secret = "do not show";</script></head>
<body>
<header><nav><a href="/">Home</a> | <a href="/about">About</a></nav></header>
<article>
  <h1>Caf&eacute; &amp; the &ldquo;of&#xFB01;ce&rdquo;</h1>
  <p>It&rsquo;s a    paragraph
     spread over lines,&nbsp;with <b>bold</b> and <a href="https://example.com">a link</a>.</p>
  <ul><li>first item</li><li>second item</li></ul>
  <table><tr><th>Name</th><th>Score</th></tr><tr><td>Ada</td><td>9</td></tr></table>
  <pre>  indented
    code</pre>
  <p>Line one<br>Line two</p>
</article>
<footer>Copyright boilerplate</footer>
<script>document.write("nor this")</script>
</body></html>"""


def test_html_becomes_readable_text_without_scripts_styles_or_navigation():
    parsed = PARSERS["selectolax"].parse(PAGE_HTML.encode(), max_pages=100, progress=None)
    text = parsed.text

    for boilerplate in ("secret", "nor this", "color", "Home", "About", "Copyright", "Ignored"):
        assert boilerplate not in text
    assert text.startswith("Caf\u00e9 & the \u201cof\ufb01ce\u201d\n\n")  # entities decoded
    assert "It\u2019s a paragraph spread over lines, with bold and a link." in text
    assert "first item\nsecond item" in text
    assert "Name\tScore\nAda\t9" in text
    assert "  indented\n    code" in text
    assert "Line one\nLine two" in text
    assert "https://example.com" not in text
    assert parsed.page_starts == [0]


def test_html_in_a_legacy_encoding_is_decoded_from_its_meta_charset():
    page = (
        '<html><head><meta charset="windows-1252"></head>'
        "<body><p>Cr\u00e8me \u201cbr\u00fbl\u00e9e\u201d</p></body></html>"
    )
    parsed = PARSERS["selectolax"].parse(page.encode("cp1252"), max_pages=100)
    assert parsed.text == "Cr\u00e8me \u201cbr\u00fbl\u00e9e\u201d"


def test_deeply_nested_html_does_not_hit_the_recursion_limit():
    # As deep as a page may nest (deeper is refused: tests/test_parser_bounds.py), which is
    # also past Python's default recursion limit.
    text = html_to_text("<div>" * MAX_DEPTH + "deep text" + "</div>" * MAX_DEPTH)
    assert text == "deep text"


def test_sanitize_html_removes_scripts_handlers_and_javascript_links():
    dirty = (
        '<p onclick="steal()">Hi <script>alert(1)</script><a href="javascript:alert(2)">x</a>'
        '<a href="https://example.com">ok</a><img src=x onerror="alert(3)"></p>'
    )
    clean = sanitize_html(dirty)
    assert "script" not in clean and "alert" not in clean and "onclick" not in clean
    assert "javascript:" not in clean and "onerror" not in clean
    assert 'href="https://example.com"' in clean
    assert "Hi" in clean


def test_markdown_becomes_plain_text_without_markup_or_link_targets():
    source = (
        "# Title with *emphasis*\n\n"
        "A paragraph with **bold**, `code` and a [link](https://example.com/target).\n"
        "Second line &amp; more.\n\n"
        "- item one\n- item two\n\n"
        "```\nfenced  code\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    parsed = PARSERS["markdown-it"].parse(source.encode(), max_pages=100, progress=None)
    text = parsed.text

    assert text.startswith("Title with emphasis\n\nA paragraph with bold, code and a link.")
    assert "#" not in text and "*" not in text and "`" not in text
    assert "example.com" not in text
    assert "a link. Second line & more." in text  # a soft line break reads as a space
    assert "item one\nitem two" in text
    assert "fenced  code" in text
    assert "a\tb\n1\t2" in text


# --- plain text and encodings --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected", "encoding"),
    [
        ("Caf\u00e9 cr\u00e8me, na\u00efve fa\u00e7ade, d\u00e9j\u00e0 vu.".encode("latin-1"),
         "Caf\u00e9 cr\u00e8me, na\u00efve fa\u00e7ade, d\u00e9j\u00e0 vu.", "cp1252"),
        ("He said \u201cfine\u201d \u2013 it\u2019s 5 \u20ac.".encode("cp1252"),
         "He said \u201cfine\u201d \u2013 it\u2019s 5 \u20ac.", "cp1252"),
        ("\ufeffUTF-16 text: \u041f\u0440\u0438\u0432\u0435\u0442 \u00e9".encode("utf-16-le"),
         "UTF-16 text: \u041f\u0440\u0438\u0432\u0435\u0442 \u00e9", "utf-16"),
        ("\u00fcber UTF-8 \u2713".encode(), "\u00fcber UTF-8 \u2713", "utf-8"),
    ],
    ids=["latin-1", "cp1252", "utf-16-bom", "utf-8"],
)  # fmt: skip
def test_non_utf8_text_is_decoded_correctly(data, expected, encoding):
    parsed = PARSERS["plaintext"].parse(data, max_pages=100, progress=None)
    assert parsed.text == expected
    assert parsed.meta["encoding"] == encoding


def test_plain_text_newlines_are_normalised_and_nul_bytes_dropped():
    parsed = PARSERS["plaintext"].parse(b"one\r\ntwo\rthree\n\x00four", max_pages=100)
    assert parsed.text == "one\ntwo\nthree\nfour"


def test_plain_text_never_crashes_on_arbitrary_bytes():
    for seed in range(20):
        data = bytes((seed * 37 + i * 101) % 256 for i in range(500))
        try:
            parsed = PARSERS["plaintext"].parse(data, max_pages=100)
        except ParseError as exc:
            assert exc.code == "empty"
        else:
            parsed.text.encode("utf-8")  # always storable


# --- sniffing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "filename", "kind"),
    [
        (make_pdf(["sniffed"]), "upload.bin", "pdf"),
        (make_pdf(["sniffed"]), "", "pdf"),
        (make_docx(), "renamed.zip", "docx"),
        (PAGE_HTML.encode(), "page.txt", "html"),
        (b"<p>A fragment of HTML</p>", "", "html"),
        (b"# Notes\n\nSome *markdown*.", "notes.md", "markdown"),
        (b'<p align="center"><img src="logo.png"></p>\n\n# Project', "README.md", "markdown"),
        (b"# Notes\n\nSome *markdown*.", "notes.txt", "text"),
        (b"Plain words, nothing else.", "", "text"),
        (b"Notes that mention the <html> tag in passing.", "", "text"),
        (b"Server said:\n<html><body>Error 500</body></html>", "", "html"),
        ("UTF-16 words".encode("utf-16"), "notes.txt", "text"),
        ("caf\u00e9 cr\u00e8me".encode("latin-1"), "legacy.txt", "text"),
    ],
)
def test_sniff_decides_by_content_and_uses_the_extension_only_for_markdown(data, filename, kind):
    assert sniff(data, filename) == kind


@pytest.mark.parametrize(
    ("data", "filename", "reason_part"),
    [
        (make_zip({"photo.jpg": "x"}), "archive.zip", "it looks like a ZIP archive"),
        (make_zip({"xl/workbook.xml": "<x/>"}), "sheet.xlsx", "an Excel spreadsheet"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "scan.png", "a PNG image"),
        (b"\x7fELF\x02\x01\x01" + bytes(100), "tool", "a program"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "old.doc", "save it as .docx"),
        (b"Plain words saved as a PDF", "report.pdf", "named .pdf but it is not a PDF"),
        (make_zip({"notes.txt": "x"}), "report.pdf", "it looks like a ZIP archive"),
        (bytes(range(256)) * 4, "blob.dat", "it looks like binary data"),
    ],
)
def test_sniff_refuses_what_cannot_be_read_and_says_what_it_looks_like(data, filename, reason_part):
    with pytest.raises(ParseError) as caught:
        sniff(data, filename)
    assert caught.value.code == "wrong_type"
    assert reason_part in caught.value.reason


ENCRYPTED_OFFICE = (
    b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(200) + "EncryptedPackage".encode("utf-16-le")
)


def test_a_password_protected_word_file_is_reported_as_encrypted_not_as_unknown():
    with pytest.raises(ParseError) as caught:
        sniff(ENCRYPTED_OFFICE, "contract.docx")
    assert caught.value.code == "encrypted"
    assert "remove the password" in caught.value.reason
    with pytest.raises(ParseError) as caught:
        PARSERS["python-docx"].parse(ENCRYPTED_OFFICE, max_pages=100)
    assert caught.value.code == "encrypted"


def test_sniff_says_an_empty_upload_is_empty():
    with pytest.raises(ParseError) as caught:
        sniff(b"", "empty.pdf")
    assert caught.value.code == "empty"


# --- limits and errors ---------------------------------------------------------------------------


def test_a_file_over_the_size_limit_is_refused_with_both_sizes():
    check_size(50 * MB, 50 * MB)  # exactly at the limit is fine
    with pytest.raises(ParseError) as caught:
        check_size(int(61.2 * MB), 50 * MB)
    assert caught.value.code == "too_large"
    assert caught.value.reason == "This file is too large: 61.2 MB, the limit is 50 MB."


def test_a_file_just_over_the_size_limit_does_not_read_as_equal_to_it():
    with pytest.raises(ParseError) as caught:
        check_size(50 * MB + 2000, 50 * MB)
    assert caught.value.reason == "This file is too large: 50.002 MB, the limit is 50 MB."


def test_the_page_limit_message_groups_thousands():
    with pytest.raises(ParseError) as caught:
        check_page_count(2300, 2000)
    assert caught.value.reason == "This PDF has 2,300 pages; the limit is 2,000."


def test_parse_errors_survive_pickling_for_celery_results():
    error = ParseError("encrypted", "This PDF is encrypted.", "WrongPasswordError")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.reason, copy.detail) == (
        "encrypted",
        "This PDF is encrypted.",
        error.detail,
    )
    assert str(copy) == "This PDF is encrypted."
    with pytest.raises(ValueError):
        ParseError("not-a-code", "x")
    assert {"encrypted", "no_text", "timeout", "out_of_memory"} <= ERROR_CODES


def test_parsed_text_rejects_page_starts_that_do_not_fit_the_text():
    with pytest.raises(ValueError):
        ParsedText(text="abc", page_starts=[0, 5], parser="x", parser_version="1")
    with pytest.raises(ValueError):
        ParsedText(text="abc", page_starts=[1], parser="x", parser_version="1")


# --- registry ------------------------------------------------------------------------------------


def test_every_kind_has_default_parsers_and_a_reference_among_them():
    for kind, names in DEFAULT_PARSERS.items():
        assert [p.name for p in parsers_for(kind)][: len(names)] == names
        assert DEFAULT_REFERENCE[kind] in names
        for parser in parsers_for(kind):
            assert parser.version and parser.version != "unknown"
    # the defaults first, then the opt-in parsers a workspace can turn on
    assert [p.name for p in parsers_for("pdf")] == ["pypdf", "pdfminer", "pdfium", "markitdown"]
    assert get_parser("selectolax") is PARSERS["selectolax"]
    with pytest.raises(KeyError):
        get_parser("no-such-parser")


def test_the_parsers_package_never_imports_django():
    package = Path(__file__).resolve().parents[1] / "evalsets" / "pure" / "parsers"
    for source in package.glob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+django", source.read_text(), re.M), source


# --- isolation -----------------------------------------------------------------------------------


def test_parse_isolated_returns_the_same_text_as_parsing_in_process_and_streams_progress(
    report_pdf,
):
    calls: list[tuple[int, int]] = []
    isolated = parse_isolated(
        "pdfminer",
        report_pdf,
        timeout_s=30,
        memory_mb=1024,
        max_pages=100,
        progress=lambda done, total: calls.append((done, total)),
    )
    direct = PARSERS["pdfminer"].parse(report_pdf, max_pages=100)
    assert isolated == direct
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


def test_parse_isolated_passes_the_parsers_own_failure_through(report_pdf):
    with pytest.raises(ParseError) as caught:
        parse_isolated("pypdf", report_pdf, timeout_s=30, memory_mb=1024, max_pages=2)
    assert caught.value.code == "too_many_pages"
    assert caught.value.reason == "This PDF has 4 pages; the limit is 2."


def test_a_hanging_parse_is_cut_off_by_the_timeout_and_the_caller_lives():
    calls: list[tuple[int, int]] = []
    with pytest.raises(ParseError) as caught:
        parse_isolated(
            "evalsets.pure.parsers.diagnostic:HangingParser",
            b"anything",
            timeout_s=1.5,
            memory_mb=512,
            max_pages=10,
            progress=lambda done, total: calls.append((done, total)),
        )
    assert caught.value.code == "timeout"
    assert caught.value.reason == "Parsing took longer than 1.5 s and was stopped."
    assert calls == [(1, 3)]  # progress arrived before the hang


@pytest.mark.parametrize("parser", ["pdfminer", "pdfium"])
def test_a_few_hundred_bytes_of_nested_fills_stop_the_parse_at_the_page_budget(parser):
    with pytest.raises(ParseError) as caught:
        parse_isolated(
            parser, nested_fills_pdf(22), timeout_s=600, memory_mb=2048, page_timeout_s=2
        )
    assert caught.value.code == "timeout"
    assert caught.value.reason == (
        "Parsing spent longer than 2 s on one page (page 1) and was stopped."
    )


def test_a_memory_blow_up_is_cut_off_by_the_memory_limit():
    with pytest.raises(ParseError) as caught:
        parse_isolated(
            "evalsets.pure.parsers.diagnostic:MemoryHogParser",
            b"anything",
            timeout_s=20,
            memory_mb=300,
            max_pages=10,
        )
    assert caught.value.code == "out_of_memory"
    assert caught.value.reason == "Parsing needed more than 300 MB of memory and was stopped."


def test_a_parser_that_dies_without_answering_is_reported_not_raised_as_a_crash():
    with pytest.raises(ParseError) as caught:
        parse_isolated(
            "evalsets.pure.parsers.diagnostic:CrashingParser",
            b"anything",
            timeout_s=20,
            memory_mb=512,
            max_pages=10,
        )
    assert caught.value.code == "corrupt"
    assert "status 13" in caught.value.detail


def test_parse_isolated_refuses_an_unknown_parser_before_starting_a_process():
    with pytest.raises(KeyError):
        parse_isolated("no-such-parser", b"x", timeout_s=5, memory_mb=256, max_pages=1)


# --- plain text pages ----------------------------------------------------------------------------


def test_plain_text_starts_a_page_at_each_form_feed():
    parsed = PARSERS["plaintext"].parse(b"Page one.\fPage two.\n\fPage three.\f\n", max_pages=10)
    assert parsed.page_count == 3
    assert [parsed.page_text(i) for i in range(3)] == ["Page one.", "Page two.\n", "Page three."]
    assert "\f" not in parsed.text


def test_a_thousand_form_feed_pages_give_a_thousand_pages_with_right_starts():
    pages = [f"This is page {n}.\n" * 20 for n in range(1, 1001)]
    parsed = PARSERS["plaintext"].parse("\f".join(pages).encode(), max_pages=10)
    assert parsed.page_count == 1000
    start = parsed.page_starts[899]
    assert parsed.text[start : start + 18] == "This is page 900.\n"


def test_plain_text_without_form_feeds_is_one_page():
    parsed = PARSERS["plaintext"].parse(b"no pages here\n", max_pages=10)
    assert parsed.page_starts == [0]


def test_the_text_parser_version_is_groundworks_not_the_decoders():
    parsed = PARSERS["plaintext"].parse(b"some text", max_pages=10)
    assert parsed.parser_version == "2"
    assert parsed.meta["decoder"].startswith("charset-normalizer ")
