"""The page of an offset: one definition, and every place that numbers pages using it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsets.models import ParseVersion
from evalsets.pure.parsers.base import join_pages, page_span
from evalsets.pure.resolver import prepare, resolve
from evalsets.pure.textpages import page_begin, page_begins, page_of
from evalsets.pure.textsearch import prepare_search

TEXT = "First page.\n\nSecond page.\n\nThird page."
STARTS = [0, TEXT.index("Second"), TEXT.index("Third")]


def _brute_page(page_starts: list[int] | None, offset: int) -> int:
    """The last page whose start is at or before ``offset``, counted from 1; page 1 when none
    is (a text without page starts is one page)."""
    pages = [i + 1 for i, start in enumerate(page_starts or []) if start <= offset]
    return pages[-1] if pages else 1


page_starts = st.one_of(
    st.none(),
    st.lists(st.integers(min_value=0, max_value=200), max_size=8).map(sorted),
)


@given(page_starts, st.integers(min_value=-20, max_value=260))
def test_the_page_of_an_offset_is_the_last_page_starting_at_or_before_it(starts, offset):
    assert page_of(starts, offset) == _brute_page(starts, offset)


@given(page_starts, st.integers(min_value=-20, max_value=260))
def test_a_page_begins_where_the_page_of_the_offset_starts(starts, offset):
    expected = starts[_brute_page(starts, offset) - 1] if starts else 0
    assert page_begin(starts, offset) == expected


@pytest.mark.parametrize("starts", [None, []])
def test_a_text_without_page_starts_is_one_page(starts):
    assert page_of(starts, 0) == 1
    assert page_of(starts, 10_000) == 1
    assert page_begin(starts, 10_000) == 0
    assert page_begins(starts) == [0]
    assert ParseVersion(page_starts=starts or []).page_begins == [0]
    assert ParseVersion(page_starts=starts or []).page_count == 1


def test_an_offset_at_a_page_start_is_on_that_page_and_one_past_the_end_on_the_last():
    assert page_of(STARTS, STARTS[1] - 1) == 1
    assert page_of(STARTS, STARTS[1]) == 2
    assert page_of(STARTS, len(TEXT)) == 3
    assert page_of(STARTS, -1) == 1


def test_the_resolver_puts_a_span_in_a_text_without_page_starts_on_page_1():
    """A highlight on an unpaged document records page hint 1; its resolutions said no page."""
    found = resolve("Alpha beta gamma.", "beta")
    assert found.start == 6
    assert found.page == 1
    assert prepare("Alpha beta gamma.", []).page_at(6) == 1


def test_the_resolver_puts_an_offset_before_the_text_on_page_1():
    assert prepare(TEXT, STARTS).page_at(-1) == 1


@pytest.mark.parametrize("starts", [None, [], STARTS])
@pytest.mark.parametrize("offset", [-1, 0, STARTS[1] - 1, STARTS[1], STARTS[2], len(TEXT)])
def test_parses_the_resolver_and_the_search_number_pages_alike(starts, offset):
    expected = page_of(starts, offset)
    assert ParseVersion(text=TEXT, page_starts=starts or []).page_of(offset) == expected
    assert prepare(TEXT, starts).page_at(offset) == expected
    assert prepare_search(TEXT, starts).page_at(offset) == expected


def test_the_page_rules_import_no_django():
    """The resolver and the text search use them alone, in workers and benchmarks."""
    code = (
        "import sys, evalsets.pure.textpages, evalsets.pure.resolver, evalsets.pure.textsearch; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


@given(st.lists(st.text(max_size=12), min_size=1, max_size=6))
def test_each_page_joined_is_read_back_whole_without_its_separator(pages):
    text, starts = join_pages(pages)
    for index, page in enumerate(pages):
        start, end = page_span(starts, index, len(text))
        assert text[start:end] == page
