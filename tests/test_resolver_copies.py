"""Which copy of a quote the resolver returns, through `resolve()` only: occurrence and pages
counted one way everywhere (as a highlight records them), the recorded context choosing
only among the hinted page's copies, and the parse a highlight was made in always giving
back exactly the highlight."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evalsets.pure.resolver import (
    CONTEXT_CHARS,
    FUZZY,
    NORMALISED,
    fold,
    occurrence_at,
    prepare,
    resolve,
)
from evalsets.pure.textpages import page_begin, page_of


def highlight(text: str, start: int, end: int, page_starts: list[int] | None = None) -> dict:
    """What the app records for a highlight of text[start:end] (see anchoring.services)."""
    quote = text[start:end]
    return {
        "quote": quote,
        "occurrence": occurrence_at(text, quote, start, begin=page_begin(page_starts, start)),
        "page_hint": page_of(page_starts, start) if page_starts else None,
        "prefix": text[max(0, start - CONTEXT_CHARS) : start],
        "suffix": text[end : end + CONTEXT_CHARS],
    }


def resolved_span(text: str, anchor: dict, page_starts: list[int] | None = None):
    return resolve(text, **anchor, page_starts=page_starts).span


def test_a_copy_differing_only_in_indentation_counts_for_the_occurrence():
    text = "Steps:\nalpha beta\n    gamma delta\n\nAgain, the same:\nalpha beta\ngamma delta\nEnd."
    start = text.rindex("alpha beta\ngamma")
    anchor = highlight(text, start, start + len("alpha beta\ngamma delta"))
    assert anchor["occurrence"] == 1
    assert resolved_span(text, anchor) == (start, start + len(anchor["quote"]))


def test_a_copy_differing_only_by_a_blank_line_counts_for_the_occurrence():
    text = "One: red green\n\nblue. Two: red green\nblue. Three: red green\nblue."
    start = text.index("red green\nblue")
    end = start + len("red green\nblue")
    anchor = highlight(text, start, end)
    assert anchor["occurrence"] == 1
    assert resolved_span(text, anchor) == (start, end)


def test_a_copy_crossing_into_the_hinted_page_is_not_on_that_page():
    page_one = "Introduction to the method, which ends with the fox"
    page_two = "jumps over a fence. Later on the fox jumps again."
    text = f"{page_one}\n\n{page_two}"
    starts = [0, len(page_one) + 2]
    start = text.rindex("fox jumps")
    anchor = {"quote": "fox jumps", "occurrence": 0, "page_hint": 2}
    assert occurrence_at(text, "fox jumps", start, begin=starts[1]) == 0
    assert resolved_span(text, anchor, starts) == (start, start + len("fox jumps"))


def test_the_recorded_context_does_not_move_an_answer_off_the_hinted_page():
    page_one = "The installer asks: choose the mirror nearest to you, then wait."
    page_two = "A second run asks again: choose the mirror nearest to you once more."
    text = f"{page_one}\n\n{page_two}"
    starts = [0, len(page_one) + 2]
    on_one = text.index("choose the mirror")
    on_two = text.rindex("choose the mirror")
    quote = "choose the mirror nearest to you"
    # the context recorded where it was highlighted reads like page one's surroundings,
    # but the highlight was on page two, its only copy there
    anchor = {
        "quote": quote,
        "occurrence": 0,
        "page_hint": 2,
        "prefix": text[on_one - CONTEXT_CHARS : on_one],
        "suffix": text[on_one + len(quote) : on_one + len(quote) + CONTEXT_CHARS],
    }
    assert resolved_span(text, anchor, starts) == (on_two, on_two + len(quote))


def test_the_context_chooses_among_the_hinted_pages_copies_when_the_count_cannot():
    page_one = "Alpha. The Kernel Build runs here first."
    page_two = "Beta: the kernel build runs fast. Gamma: the kernel build runs slow."
    text = f"{page_one}\n\n{page_two}"
    starts = [0, len(page_one) + 2]
    quote = "THE KERNEL BUILD RUNS"  # no copy reads so here: only folded copies count
    slow = text.rindex("the kernel build runs")
    anchor = {
        "quote": quote,
        "occurrence": 0,
        "page_hint": 2,
        "prefix": "runs fast. Gamma: ",
        "suffix": " slow.",
    }
    assert resolved_span(text, anchor, starts) == (slow, slow + len(quote))


def test_a_quote_across_markdown_blockquote_lines_is_found_after_folding_the_marks():
    text = "Intro.\n\n> Keep the backup copy safe\n> before you upgrade the system.\n\nDone."
    quote = "Keep the backup copy safe\nbefore you upgrade the system."
    start = text.index("Keep")
    r = resolve(text, quote, prefix="Intro.\n\n", suffix="\n\nDone.")
    assert r.status == NORMALISED
    assert r.span == (start, text.index("system.") + len("system."))
    assert fold("> quoted line\n> next") == fold("quoted line\nnext")


def test_folding_does_not_widen_the_copies_an_occurrence_counts():
    # an imported anchor: quote, page and occurrence, no context
    text = "Step 1 of 1 done. Issue #1 here; 1 more, and issue #1 again, then 1 and 1."
    second = text.rindex("#1")
    for occurrence, start in ((0, text.index("#1")), (1, second)):
        anchor = {"quote": "#1", "occurrence": occurrence, "page_hint": 1}
        assert resolved_span(text, anchor, [0]) == (start, start + 2)
    assert resolved_span(text, {"quote": "#1", "occurrence": 1}) == (second, second + 2)


def test_case_does_not_widen_the_copies_an_occurrence_counts():
    text = "apple pie. Apple pie. apple pie. Apple pie."
    second = text.rindex("Apple pie")
    for occurrence, start in ((0, text.index("Apple pie")), (1, second)):
        anchor = {"quote": "Apple pie", "occurrence": occurrence, "page_hint": 1}
        assert resolved_span(text, anchor, [0]) == (start, start + len("Apple pie"))


def test_a_fuzzy_span_far_longer_than_the_quote_is_refused():
    quote = "the quick brown fox jumps over the lazy dog near the riverbank at dawn"
    filler = " and then a long digression about nothing in particular follows here"
    # the quote's words spread thinly over a long stretch: no passage of its length holds it
    text = "Start. " + filler.join(quote.split(" ")) + " End."
    r = resolve(text, quote)
    if r.found:
        assert r.end - r.start <= 2 * len(quote), (r.status, r.end - r.start)
        assert r.status != FUZZY or r.end - r.start <= 2 * len(quote)


WORDS = st.sampled_from(["alpha", "beta", "Alpha", "#1", "1", "fox", "fo", "x", "a-b", "ab"])
SPACES = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", "\n    ", "\t"])


@st.composite
def highlighted_texts(draw):
    words = draw(st.lists(WORDS, min_size=2, max_size=40))
    gaps = draw(st.lists(SPACES, min_size=len(words), max_size=len(words)))
    pieces, bounds, at = [], [], 0
    for word, gap in zip(words, gaps, strict=True):
        bounds.append((at, at + len(word)))
        pieces += [word, gap]
        at += len(word) + len(gap)
    text = "".join(pieces)
    i = draw(st.integers(0, len(words) - 1))
    j = draw(st.integers(i, min(len(words) - 1, i + 6)))
    cuts = draw(st.lists(st.integers(1, len(words) - 1), max_size=3, unique=True))
    starts = sorted({0, *(bounds[c][0] for c in cuts)}) if cuts else None
    return text, bounds[i][0], bounds[j][1], starts


@settings(max_examples=400, deadline=None)
@given(highlighted_texts())
def test_the_parse_a_highlight_was_made_in_gives_back_exactly_the_highlight(case):
    text, start, end, starts = case
    anchor = highlight(text, start, end, starts)
    assert resolved_span(text, anchor, starts) == (start, end)


def test_a_repeated_sentence_read_with_glued_words_is_found_where_its_context_is():
    reference = (
        "Employee Handbook\n\nEmployees accrue 1.5 days of leave per month. Leave may be "
        "carried over.\nRemote work is limited to 30 days a year.\n"
        "Employees accrue 1.5 days of leave per month.\n"
    )
    theirs = reference.replace("leave per month. Leave", "leaveper month. Leave")
    quote = "Employees accrue 1.5 days of leave per month."
    start = reference.index(quote)
    context = {
        "prefix": reference[start - 32 : start],
        "suffix": reference[start + 45 : start + 77],
    }

    unpaged = prepare(theirs).resolve(quote, occurrence=0, **context)
    paged = prepare(theirs, [0]).resolve(quote, occurrence=0, page_hint=1, **context)

    for found in (unpaged, paged):
        assert found.found and (found.start, found.end) == (19, 63)
        assert theirs[found.start : found.end] == "Employees accrue 1.5 days of leaveper month."
