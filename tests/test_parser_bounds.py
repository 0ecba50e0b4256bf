"""Parsers stay bounded on hostile input: deep HTML is refused after one cheap scan, a wide
table is read in one pass, and a PDF bomb under any filter chain is refused as too large by
both PDF parsers before either library unpacks it. Work is asserted, never wall-clock time.
"""

from __future__ import annotations

import base64
import binascii
import random
import zlib

import pytest
from selectolax.lexbor import LexborHTMLParser

from evalsets.pure.parsers import ParseError, get_parser
from evalsets.pure.parsers.html import MAX_DEPTH, _TextWriter, html_to_text
from evalsets.pure.parsers.nesting import measure_nesting
from tests.test_upload_safety import PAGE_TEXT
from tests.test_upload_safety import _pdf as one_page_pdf

MB = 1024 * 1024


def nesting_depth(markup: str, *, stop_after: int) -> int:
    """How deeply the elements of ``markup`` nest, stopping one past ``stop_after``."""
    return measure_nesting(markup, stop_depth=stop_after, stop_reopened=1 << 62).depth


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


# Each way a page can make the tree builder nest deeper than its start and end tags say.
_HIDDEN_NESTING = {
    "stray end tags": "<div></i>",
    "an ordinary end tag across a block": "<span><div></span>",
    "a self-closed HTML element": "<x-y/>",
    "markup inside noscript": "<noscript><div>",
    "an empty comment": "<!--><div>",
    "a comment ended by --!>": "<!-- a --!><div>",
    "markup inside an SVG style": "<svg><style><span>",
    "list items inside definitions": "<li><dd>",
    "terms inside list items": "<dt><li>",
}


@pytest.mark.parametrize("piece", _HIDDEN_NESTING.values(), ids=_HIDDEN_NESTING.keys())
def test_nesting_is_counted_whatever_the_end_tags_say(piece):
    markup = "<body>" + piece * 3_000 + "deep text"
    assert _lexbor_depth(markup) > MAX_DEPTH  # the HTML parser does build it that deep
    assert nesting_depth(markup, stop_after=MAX_DEPTH) == MAX_DEPTH + 1
    with pytest.raises(ParseError) as error:
        html_to_text(markup)
    assert f"more than {MAX_DEPTH:,} levels deep" in error.value.reason


def _lexbor_depth(markup: str) -> int:
    """How deep the tree lexbor builds is, in elements below <body>."""
    deepest, stack = 0, [(LexborHTMLParser(markup).body, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.is_element_node:
                stack.append((child, depth + 1))
            child = child.next
    return deepest


_SOUP = (
    *("div", "span", "b", "i", "a", "p", "li", "ul", "table", "tr", "td", "svg", "math"),
    *("font", "em", "section", "button", "h1", "h2", "x-y", "nobr", "select", "option"),
    *("template", "object", "title", "style", "noscript", "pre", "form", "mtext", "dd"),
    *("foreignObject", "desc", "caption"),
)


def _tag_soup(seed: int) -> str:
    rng = random.Random(seed)
    pieces = []
    for _ in range(rng.randint(5, 400)):
        roll, name = rng.random(), rng.choice(_SOUP)
        if roll < 0.45:
            pieces.append(f"<{name}{rng.choice(['', ' id=1', ' id=2', ' class=c'])}>")
        elif roll < 0.8:
            pieces.append(f"</{name}>")
        elif roll < 0.85:
            pieces.append(f"<{name}/>")
        elif roll < 0.9:
            pieces.append(rng.choice(["<!--", "-->", "<!-->", "--!>"]))
        else:
            pieces.append("t")
    return "<body>" + "".join(pieces)


def test_the_scan_never_counts_much_less_than_the_html_parser_builds():
    """Random tag soup: the scan is a model of the tree builder, close to an upper bound (a
    few levels short at worst in rare corners of the standard)."""
    for seed in range(400):
        markup = _tag_soup(seed)
        counted = measure_nesting(markup, stop_depth=1 << 30, stop_reopened=1 << 30).depth
        assert _lexbor_depth(markup) <= counted + 8, markup


def test_formatting_left_open_around_every_paragraph_is_refused_before_it_is_copied():
    """990 different <b> left open inside a closed <div> come back in every paragraph: the
    tree would hold 990 elements a paragraph, though nothing nests deeper than 1,000."""
    opened = "".join(f"<b id={k}>" for k in range(990))
    markup = f"<body><div>{opened}</div>" + "<p>x</p>" * 30_000
    found = measure_nesting(markup, stop_depth=MAX_DEPTH, stop_reopened=1 << 62)
    assert found.depth <= MAX_DEPTH and found.reopened > 990 * 29_000
    with pytest.raises(ParseError) as error:
        html_to_text(markup)
    assert error.value.code == "too_large" and "repeat them more than" in error.value.reason


def test_formatting_closed_by_its_paragraph_is_not_counted_as_nesting():
    markup = "<body>" + "<p><b>Heading</p><p>text</p>" * 5_000
    assert nesting_depth(markup, stop_after=MAX_DEPTH) < 10
    assert html_to_text(markup).startswith("Heading")


def test_the_scan_reads_each_character_once_however_tags_are_left_open():
    """``<a <a <a ...>`` is one tag: the scan does not look for its end again at each ``<a``."""
    markup = "<body>" + "<a " * 200_000 + ">text"
    assert nesting_depth(markup, stop_after=MAX_DEPTH) == 1
    assert html_to_text(markup) == "text"


def test_headers_on_a_deep_page_are_placed_in_one_walk():
    """Whether a header is the page's banner is known from the walk: each node is entered
    and left once, however deep the page and however many headers it has."""
    markup = "<body>" + "<div>" * 900 + "<header>banner</header><p>body</p>" * 5_000
    writer = _TextWriter()
    tree = LexborHTMLParser(markup)
    text = writer.walk(tree.body)
    elements = len(tree.css("*"))
    assert "banner" not in text and text.count("body") == 5_000
    assert writer.steps <= 2 * (elements + 5_000 * 2)  # elements and text nodes, in and out


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
