"""The search box's matcher costs time linear in the text, whatever the query, and each search
examines at most its budget: past it the page says where it stopped and the next goes on.

The work is counted (``Found.examined``, positions of the searched copy looked at), never
timed. No database: ``evalsets.pure.textsearch`` is pure Python.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsets.pure import textsearch

#: The hostile input of the finding: megabytes of one short word, and a long query of it
#: that never matches (a regular expression of the words tries every position anew).
HOSTILE_TEXT = "a " * 2_000_000
HOSTILE_QUERY = " ".join(["a"] * 98 + ["b"])


def old_spans(text: str, query: str, limit: int = 10_000) -> list[tuple[int, int]]:
    """Where the regular expression the search used to run finds ``query``: the reference
    for every behaviour the new matcher keeps (case, runs of whitespace, ligatures, breaks,
    non-overlapping hits from the left)."""
    copy, edits, written_out = textsearch._search_copy(text.translate(textsearch._LOWER))
    lowered = query.strip().translate(textsearch._LOWER)
    if written_out:
        lowered = lowered.translate(textsearch._WRITTEN_OUT)
    pattern = re.compile(r"\s+".join(re.escape(w) for w in lowered.split()))
    spans = []
    for match in pattern.finditer(copy):
        start, end = match.span()
        if edits is not None:
            start, end = edits.start_in_text(start), edits.end_in_text(end)
        spans.append((start, end))
        if len(spans) >= limit:
            break
    return spans


def new_spans(prepared: textsearch.SearchableText, query: str, **kwargs) -> list[tuple[int, int]]:
    """Every hit of ``query``, page after page, as the search box asks for them."""
    spans, after = [], 0
    while after is not None:
        found = prepared.search(query, after=after, limit=200, **kwargs)
        spans.extend((hit.start, hit.end) for hit in found.hits)
        after = found.next_after
    return spans


# -- the hostile input: bounded work ------------------------------------------------------------


def test_a_long_query_that_never_matches_examines_each_position_of_the_text_once():
    prepared = textsearch.prepare_search(HOSTILE_TEXT)
    found = prepared.search(HOSTILE_QUERY)
    assert (found.total, found.hits, found.complete) == (0, [], True)
    # linear: at most the text's length (the old matcher looked at up to 197 characters of
    # each of its 4,000,000 positions)
    assert found.examined <= len(prepared.lowered)


def test_a_search_that_would_run_long_stops_at_its_budget_and_says_where():
    prepared = textsearch.prepare_search(HOSTILE_TEXT)
    found = prepared.search(HOSTILE_QUERY, budget=100_000)
    assert found.complete is False and found.total_is_lower_bound is True
    # the count and the page are one scan when the page starts at the beginning
    assert 100_000 <= found.examined <= 100_000 + len(HOSTILE_QUERY)
    assert found.searched_to == found.next_after == found.examined
    assert found.hits == [] and found.total == 0


def test_each_page_of_a_long_search_examines_at_most_two_budgets_and_moves_on():
    prepared = textsearch.prepare_search(HOSTILE_TEXT)
    budget = 300_000
    first = prepared.search(HOSTILE_QUERY, budget=budget)
    later = prepared.search(HOSTILE_QUERY, after=first.next_after, budget=budget)
    assert later.examined <= 2 * (budget + len(HOSTILE_QUERY))  # the count, then the page
    assert later.searched_to > first.searched_to and later.complete is False


def test_the_budget_has_a_floor_so_that_a_page_always_moves_past_what_it_examined():
    prepared = textsearch.prepare_search("x " * 10_000)
    found = prepared.search("y", budget=1)
    assert found.examined >= textsearch.MIN_EXAMINED and found.next_after > 0


class _Calls(str):
    """A text that records the span of each search for a needle in it (each call into C)."""

    def find(self, needle, start=0, end=None):
        self.calls.append(((end if end is not None else len(self)) - start, len(needle)))
        return super().find(needle, start, end)


def test_a_long_scan_calls_into_c_a_window_at_a_time_so_other_threads_run_between(monkeypatch):
    monkeypatch.setattr(textsearch, "WINDOW", 10_000)
    text = _Calls("a " * 50_000)
    text.calls = []
    scan = textsearch._Scan(text, HOSTILE_QUERY, 0, 10**9)
    assert (
        list(scan) == [] and scan.finished and scan.examined == len(text) - len(HOSTILE_QUERY) + 1
    )
    assert len(text.calls) == 10
    # each call looks at one window, and the few characters a match starting in it may cover
    assert all(span <= 10_000 + size - 1 for span, size in text.calls)


# -- stopping at the budget keeps every hit, once ----------------------------------------------


def test_hits_come_once_each_whatever_the_budget_stops_at(monkeypatch):
    monkeypatch.setattr(textsearch, "WINDOW", 7)
    monkeypatch.setattr(textsearch, "MIN_EXAMINED", 3)
    text = "".join(f"An o\ufb03ce,  the infor-\nmation {n}\n\n" for n in range(40))
    prepared = textsearch.prepare_search(text)
    for query in ("office", "the information", "ffi", "fice the", "n"):
        expected = old_spans(text, query)
        for budget in (3, 4, 5, 11, 50):
            assert new_spans(prepared, query, budget=budget) == expected, (query, budget)


def test_a_page_that_stops_inside_a_ligature_goes_back_to_its_start(monkeypatch):
    monkeypatch.setattr(textsearch, "MIN_EXAMINED", 3)
    text = "y" * 40 + " \ufb03 x \ufb03"  # searched as "yyy... ffi x ffi"
    prepared = textsearch.prepare_search(text)
    # "ff" is found at the ligature's start, and the scan stops at its "i"
    found = prepared.search("ff", budget=43)
    assert found.complete is False and found.searched_to == 41 and found.hits == []
    rest = prepared.search("ff", after=found.next_after)
    assert [(h.start, h.end, h.match) for h in rest.hits] == [
        (41, 42, "\ufb03"),
        (45, 46, "\ufb03"),
    ]


def test_a_count_stopped_by_its_budget_is_a_lower_bound_and_the_page_still_comes(monkeypatch):
    monkeypatch.setattr(textsearch, "MIN_EXAMINED", 3)
    text = "needle hay " * 1000
    prepared = textsearch.prepare_search(text)
    found = prepared.search("needle", after=len(text) // 2, limit=3, budget=len(text) // 4)
    assert found.total_is_lower_bound and found.total < 1000
    assert [h.start for h in found.hits] == [5500, 5511, 5522] and found.complete


# -- the new matcher finds what the old one found ----------------------------------------------

PIECES = ["a", "b", "f", "i", " ", "  ", "\n", "\n\n", "\t", " \n ", "\ufb01", "\ufb03", "-\n"]
PIECES += ["\u00ad", "A", "\u2019", "'", "\u00a0", "\u3000"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=60),
    st.lists(st.sampled_from(["a", "b", "fi", "ffi", "ab", "'", "A", "i"]), min_size=1, max_size=4),
    st.sampled_from([" ", "  ", "\n", " \t "]),
    st.booleans(),
)
def test_every_hit_is_where_the_regular_expression_found_it(pieces, words, gap, prose):
    text = ("x" * 10 * len(pieces) if prose else "") + "".join(pieces)
    query = gap.join(words)
    if not query.strip():
        return
    assert new_spans(textsearch.prepare_search(text), query) == old_spans(text, query)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=80), st.sampled_from(["a b", "a", "b  a"]))
def test_a_text_cut_into_chunks_is_searched_as_a_whole(monkeypatch_chunk, pieces, query):
    text = "".join(pieces)
    assert new_spans(textsearch.prepare_search(text), query) == old_spans(text, query)


@pytest.fixture(scope="module")
def monkeypatch_chunk():
    """Chunks and windows of a few characters, so that runs and hits meet their edges."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(textsearch, "CHUNK", 3)
        patch.setattr(textsearch, "WINDOW", 4)
        yield


def test_runs_of_whitespace_map_back_to_the_text_both_ways():
    text = "one  \n\t two\n\nthree four   five"
    prepared = textsearch.prepare_search(text)
    assert prepared.lowered == "one two three four five"
    assert len(prepared.runs) == 3  # the single "\n"-less runs of one space need no entry
    hit = prepared.search("TWO three").hits[0]
    assert text[hit.start : hit.end] == "two\n\nthree" and hit.match == "two three"
    # an offset inside a run searches on from the run: the word after it is found
    assert prepared.search("two", after=text.index("\t")).hits[0].start == text.index("two")
    assert prepared.size == 2 * len(text) + 2 * 3


def test_a_query_of_soft_hyphens_only_finds_nothing_rather_than_everything():
    prepared = textsearch.prepare_search("the pre\u00adsent ﬁle")
    found = prepared.search("\u00ad")
    assert (found.total, found.hits, found.complete) == (0, [], True)
