"""The pdfium parser, its character boxes and the PDF view's text runs (pure, no database).

The PDF view relies on one promise: box ``k`` of page ``i`` belongs to character
``page_starts[i] + k`` of the pdfium parse. These tests hold the parser to it on real PDFs
(fpdf2), through the isolated runner too, and check that runs cut the page text exactly.
"""

from __future__ import annotations

import io
import math
from importlib import metadata

import pytest
from PIL import Image

from evalsets.pure import pdfdraw
from evalsets.pure.parsers import PAGE_SEPARATOR, PARSERS, ParseError, charboxes, parse_isolated
from evalsets.pure.parsers.registry import DEFAULT_PARSERS
from tests.documents import break_page, encrypt_pdf, make_pdf, make_scan_pdf
from tests.hostile_pdfs import page_pdf

PAGE_ONE = (
    "Employees accrue 1.5 days of leave per month.\n"
    "The \ufb01rst claim is filed within thirty days of the loss."
)
PAGE_TWO = "Remote work is limited to 30 days a year."


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return make_pdf([PAGE_ONE, None, PAGE_TWO])


@pytest.fixture(scope="module")
def parsed(pdf):
    return PARSERS["pdfium"].parse(pdf, max_pages=100)


def test_pdfium_is_a_registered_pdf_parser_with_pypdfium2s_version():
    assert "pdfium" in DEFAULT_PARSERS["pdf"]
    assert PARSERS["pdfium"].kind == "pdf"
    assert PARSERS["pdfium"].version == metadata.version("pypdfium2")


def test_pdfium_reads_pages_on_real_page_boundaries(parsed):
    assert parsed.page_count == 3
    assert parsed.page_text(0).startswith("Employees accrue 1.5 days")
    assert parsed.page_text(1) == ""
    assert parsed.page_text(2) == PAGE_TWO
    assert parsed.meta["empty_pages"] == [2]
    assert parsed.meta["pdfium"]  # the engine's build is recorded beside the library's version
    assert "\r" not in parsed.text


def test_every_character_of_every_page_has_its_box_entry(parsed):
    handle = io.BytesIO(parsed.char_boxes)
    assert charboxes.page_count(handle) == parsed.page_count
    for index in range(parsed.page_count):
        page = charboxes.read_page(handle, index)
        assert page.chars == len(parsed.page_text(index))
        assert page.width == pytest.approx(595.28, abs=0.1)


def test_boxes_follow_the_words_across_the_page(parsed):
    page = charboxes.read_page(io.BytesIO(parsed.char_boxes), 0)
    boxes = page.boxes()
    text = parsed.page_text(0)
    first_line = [boxes[i] for i, ch in enumerate(text.split("\n")[0]) if ch != " "]
    assert all(b[0] < b[2] and b[1] < b[3] for b in first_line)
    assert [b[0] for b in first_line] == sorted(b[0] for b in first_line)  # left to right
    second = text.index("The")
    assert boxes[second][1] > boxes[0][3] - 10  # the second line lies below the first
    assert boxes[text.index("\n")][0] > boxes[text.index("\n")][2]  # a line break has no box


def test_the_boxes_survive_the_isolated_runner(pdf, parsed):
    isolated = parse_isolated("pdfium", pdf)
    assert isolated.text == parsed.text
    assert isolated.char_boxes == parsed.char_boxes


def test_runs_cut_the_page_text_exactly_and_lie_on_the_page(parsed):
    page = charboxes.read_page(io.BytesIO(parsed.char_boxes), 0)
    text = parsed.page_text(0)
    runs = pdfdraw.text_runs(text, page)
    assert [text[s:e] for s, e, *_ in runs] == text.split("\n")
    for _, _, x0, y0, x1, y1 in runs:
        assert 0 <= x0 < x1 <= charboxes.SCALE and 0 <= y0 < y1 <= charboxes.SCALE
    assert runs[0][3] < runs[1][3]


def test_runs_refuse_boxes_from_another_reading():
    page = charboxes.PageBoxes(width=10, height=10, packed=charboxes.pack_page([None, None]))
    with pytest.raises(ValueError, match="3 characters but 2 boxes"):
        pdfdraw.text_runs("abc", page)


def test_a_page_pdfium_cannot_load_is_reported_and_the_others_read():
    parsed = PARSERS["pdfium"].parse(break_page(make_pdf(["One.", "Two.", "Three."]), 2))
    assert parsed.meta["failed_pages"] == [2]
    assert parsed.page_text(0) == "One." and parsed.page_text(2) == "Three."
    with pytest.raises(pdfdraw.PageNotDrawn, match="damaged"):
        pdfdraw.render_page(break_page(make_pdf(["One.", "Two.", "Three."]), 2), 1)


def test_a_page_is_drawn_as_a_jpeg_image_of_the_pages_proportions(pdf):
    image = Image.open(io.BytesIO(pdfdraw.render_page(pdf, 0, 1.0)))
    assert image.format == "JPEG"
    assert abs(image.size[0] - 595) <= 1 and abs(image.size[1] - 842) <= 1


def test_encrypted_scanned_and_foreign_files_fail_in_words(pdf):
    with pytest.raises(ParseError) as locked:
        PARSERS["pdfium"].parse(encrypt_pdf(pdf, "secret"))
    assert locked.value.code == "encrypted"
    with pytest.raises(ParseError) as scan:
        PARSERS["pdfium"].parse(make_scan_pdf())
    assert scan.value.code == "no_text"
    with pytest.raises(ParseError) as other:
        PARSERS["pdfium"].parse(b"PK\x03\x04 not a pdf")
    assert other.value.code == "wrong_type"


def test_box_files_of_page_ranges_join_in_page_order(parsed):
    one = charboxes.encode([(100.0, 200.0, charboxes.pack_page([(0, 0, 0.5, 0.5)]))])
    joined = charboxes.concat([one, parsed.char_boxes])
    handle = io.BytesIO(joined)
    assert charboxes.page_count(handle) == 1 + parsed.page_count
    assert charboxes.page_sizes(handle)[0] == (100.0, 200.0)
    assert (
        charboxes.read_page(handle, 1).packed
        == charboxes.read_page(io.BytesIO(parsed.char_boxes), 0).packed
    )


def test_a_range_of_pages_reads_alone_and_joins_into_the_whole(pdf, parsed):
    head = PARSERS["pdfium"].parse_pages(pdf, start=0, stop=1)
    tail = PARSERS["pdfium"].parse_pages(pdf, start=1, stop=None)
    assert tail.meta["first_page"] == 2 and tail.meta["empty_pages"] == [2]
    assert head.text + PAGE_SEPARATOR + tail.text == parsed.text
    assert charboxes.concat([head.char_boxes, tail.char_boxes]) == parsed.char_boxes
    joined = PARSERS["pdfium"].join_ranges([head, tail])
    assert (joined.text, joined.char_boxes, joined.meta) == (
        parsed.text,
        parsed.char_boxes,
        parsed.meta,
    )


def test_a_page_of_any_shape_is_drawn_within_the_pixel_limit_counting_whole_pixels():
    for width, height in ((1200, 60000), (60000, 1200), (14400, 14400), (595, 842)):
        scale = pdfdraw.fitted_scale(width, height, 2.0, 1_000_000)
        assert math.ceil(width * scale) * math.ceil(height * scale) <= 1_000_000
        assert math.ceil(width * scale) <= pdfdraw.MAX_PIXELS_WIDE
    image = Image.open(io.BytesIO(pdfdraw.render_page(page_pdf(1200, 60000), 0, 1.5, 500_000)))
    assert image.size[0] * image.size[1] <= 500_000
    assert pdfdraw.fitted_scale(595, 842, 1.5, 12_000_000) == 1.5  # an A4 page is left alone
