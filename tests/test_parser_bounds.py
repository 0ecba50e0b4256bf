"""Parsers stay bounded on hostile input: deep HTML is refused after one cheap scan, a wide
table is read in one pass, and a PDF bomb under any filter chain is refused as too large by
both PDF parsers before either library unpacks it. Work is asserted, never wall-clock time.
"""

from __future__ import annotations

import base64
import binascii
import zlib

import pytest

from evalsets.parsers import ParseError, get_parser
from evalsets.parsers.html import MAX_DEPTH, html_to_text, nesting_depth
from tests.test_upload_safety import PAGE_TEXT
from tests.test_upload_safety import _pdf as one_page_pdf

MB = 1024 * 1024


# -- HTML --------------------------------------------------------------------------------------


def _nested(depth: int, tag: str = "div") -> str:
    return f"<html><body>{f'<{tag}>' * depth}deep text{f'</{tag}>' * depth}</body></html>"


def test_a_hundred_thousand_nested_divs_are_refused_after_a_scan_that_stops_at_the_limit():
    markup = _nested(100_000)
    # The scan stops one level past the limit: the work done does not grow with the nesting.
    assert nesting_depth(markup, stop_after=MAX_DEPTH) == MAX_DEPTH + 1
    with pytest.raises(ParseError) as error:
        get_parser("selectolax").parse(markup.encode())
    assert error.value.code == "too_large"
    assert f"more than {MAX_DEPTH:,} levels deep" in error.value.reason


def test_self_closing_html_containers_still_count_as_nesting():
    """``<div/>`` opens a div in HTML, so it cannot be used to slip past the scan."""
    assert nesting_depth("<div/>" * 5_000, stop_after=MAX_DEPTH) == MAX_DEPTH + 1
    with pytest.raises(ParseError):
        html_to_text("<body>" + "<div/>" * 5_000 + "x</body>")


def test_markup_that_does_not_nest_is_not_counted_as_deep():
    flat = (
        "<body>"
        + "<p>para" * 3_000  # each <p> closes the one before
        + "<ul>"
        + "<li>item" * 3_000
        + "</ul><svg>"
        + '<path d="M0 0"/>' * 3_000
        + "</svg><!--"
        + "<div>" * 3_000
        + "--><script>"
        + "'<div>'" * 3_000
        + "</script><br><img src=x>" * 2
        + "</body>"
    )
    assert nesting_depth(flat, stop_after=MAX_DEPTH) <= 3
    assert html_to_text(flat).startswith("para")


def test_a_page_nested_within_the_limit_still_reads():
    assert html_to_text(_nested(500)) == "deep text"


def test_a_table_row_of_a_hundred_thousand_cells_is_read_in_one_pass():
    row = "<table><tr>" + "<td>x</td>" * 100_000 + "</tr></table>"
    text = html_to_text(row)
    assert text.count("\t") == 99_999 and text.count("x") == 100_000


# -- PDF filter chains ---------------------------------------------------------------------------


def _pdf(stream: bytes, filters: str) -> bytes:
    """The one-page PDF of the upload-safety tests, its content stream under ``filters``."""
    return one_page_pdf(stream, compress=False).replace(
        b"/Length", f"/Filter {filters} /Length".encode(), 1
    )


def _lzw_run(byte: int, blocks: int) -> bytes:
    """LZW (PDF's, EarlyChange 1) for long runs of one byte: ~7 MB per block from ~5.5 KB.

    The codes are written directly: after a clear, the byte, then 258, 259, ... each meaning
    one more copy than the last, widening from 9 to 12 bits as the table grows.
    """
    bits: list[tuple[int, int]] = []
    width = 9
    for _ in range(blocks):
        bits.append((256, width))
        width = 9
        bits.append((byte, width))
        for code in range(258, 4094):
            bits.append((code, width))
            width = {511: 10, 1023: 11, 2047: 12}.get(code + 1, width)
    bits.append((256, width))
    bits.append((257, 9))
    value = 0
    count = 0
    for code, size in bits:
        value = (value << size) | code
        count += size
    value <<= -count % 8
    return value.to_bytes((count + 7) // 8, "big")


def _chains() -> dict[str, tuple[bytes, str]]:
    """Bombs of 40 MB under each chain. RunLength is not here: it unpacks at most 64 to 1,
    under the ratio limit, so only the 1 GB total bounds it (and pypdf's own 75 MB limit,
    reported as too large: tests/test_upload_safety.py)."""
    content = PAGE_TEXT + b" " * (40 * MB)
    flate = zlib.compress(content, 9)
    return {
        "ASCIIHex + Flate": (binascii.hexlify(flate) + b">", "[/ASCIIHexDecode /FlateDecode]"),
        "ASCII85 + Flate": (base64.a85encode(flate) + b"~>", "[/ASCII85Decode /FlateDecode]"),
        "Flate + Flate": (zlib.compress(flate, 9), "[/FlateDecode /FlateDecode]"),
        "abbreviated names": (binascii.hexlify(flate) + b">", "[/AHx /Fl]"),
        "LZW": (_lzw_run(0x20, blocks=4), "/LZWDecode"),
        "Flate before an image filter": (flate, "[/FlateDecode /DCTDecode]"),
    }


CHAINS = _chains()


@pytest.mark.parametrize("parser", ["pypdf", "pdfminer", "pdfium"])
@pytest.mark.parametrize("chain", list(CHAINS))
def test_a_pdf_bomb_under_any_filter_chain_is_refused_as_too_large(parser, chain):
    stream, filters = CHAINS[chain]
    assert len(stream) < 2 * MB
    with pytest.raises(ParseError) as error:
        get_parser(parser).parse(_pdf(stream, filters))
    assert error.value.code == "too_large"
    assert "compressed stream that unpacks to more than" in error.value.reason
    assert "it was refused" in error.value.reason


def test_the_lzw_fixture_is_what_pdfminer_decodes():
    from pdfminer.lzw import lzwdecode

    assert lzwdecode(_lzw_run(0x41, blocks=1)) == b"A" * sum(range(1, 4094 - 256))


@pytest.mark.parametrize("parser", ["pypdf", "pdfminer", "pdfium"])
@pytest.mark.parametrize(
    ("encode", "filters"),
    [
        (
            lambda data: binascii.hexlify(zlib.compress(data)) + b">",
            "[/ASCIIHexDecode /FlateDecode]",
        ),
        (
            lambda data: base64.a85encode(zlib.compress(data)) + b"~>",
            "[/ASCII85Decode /FlateDecode]",
        ),
    ],
)
def test_an_ordinary_pdf_with_a_filter_chain_still_reads(parser, encode, filters):
    parsed = get_parser(parser).parse(_pdf(encode(PAGE_TEXT * 50), filters))
    assert "Leave accrues monthly." in parsed.text
