"""How a parse is prepared for the resolver, through its public functions: the folded copy's
map back to the text (`fold_text`), and the copies of a passage counted from a place in the
text (`passage_copies`), which a flat copy with only its longer whitespace runs recorded
answers."""

from __future__ import annotations

import re

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from evalsets.pure import resolver
from evalsets.pure.resolver import fold, fold_text, passage_copies


def test_a_mark_after_a_dropped_character_belongs_to_nothing():
    # the accent after "a" widens it; the one after the space belongs to no character; the two
    # after "b" both widen it
    f = fold_text("a\u0301 \u0301b\u0301\u0302")
    assert f.text == "ab"
    assert list(f.starts) == [0, 4]
    assert list(f.ends) == [2, 7]


def test_a_text_beyond_the_basic_plane_folds_as_one_within_it_does():
    # a mathematical bold capital folds to its letter, and takes the accent after it; an
    # emoji stays itself
    f = fold_text("X\U0001d400\u0301y\U0001f600")
    assert f.text == "xay\U0001f600"
    assert list(f.starts) == [0, 1, 3, 4]
    assert list(f.ends) == [1, 3, 4, 5]


def test_copies_are_counted_from_a_place_inside_a_run_of_whitespace():
    text = "a  b\n\n a  b"
    assert passage_copies(text, "a b") == [(0, 4), (7, 11)]
    assert passage_copies(text, "a b", 2) == [(7, 11)]  # inside the run after the first "a"
    assert passage_copies(text, "a b", 5) == [(7, 11)]  # inside the run before the second
    assert passage_copies(text, "a b", 8) == []
    assert passage_copies(text, "a b", -3) == passage_copies(text, "a b")
    assert passage_copies(text, "a b", 20) == []


def copies_by_pattern(text: str, quote: str, begin: int) -> list[tuple[int, int]]:
    """Every copy of `quote` with any run of ASCII whitespace where it has one, found by a
    regular expression tried at every position (overlapping copies included)."""
    words = re.split(r"[ \t\n\r\f\v]+", quote.strip(" \t\n\r\f\v"))
    pattern = re.compile("(?=(" + "[ \t\n\r\f\v]+".join(map(re.escape, words)) + "))")
    return [m.span(1) for m in pattern.finditer(text, max(begin, 0))]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_copies_of_a_passage_are_those_its_words_make_with_any_whitespace(data):
    # The quote is drawn from inside the text, so few draws are whitespace only (filtering
    # most of them away made Hypothesis's health check fail now and then).
    letters = st.sampled_from([*"ab \n\t", "\u00a0", "\u00e9"])
    text = data.draw(st.lists(letters, min_size=1, max_size=40).map("".join))
    at = data.draw(st.integers(0, len(text) - 1))
    quote = text[at : at + data.draw(st.integers(1, 12))]
    assume(quote.strip(" \t\n\r\f\v"))
    begin = data.draw(st.integers(-2, len(text) + 2))
    assert passage_copies(text, quote, begin) == copies_by_pattern(text, quote, begin)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"aB -\n>#*", "\u0301", "\u00ad", "\ufb01", "\U0001d400", "\ud800"]),
        max_size=50,
    ).map("".join)
)
def test_folding_with_the_map_gives_the_text_folding_alone_gives(text):
    f = fold_text(text)
    assert f.text == fold(text)
    assert len(f.starts) == len(f.ends) == len(f.text)


def fold_by_scanning(text: str) -> str:
    """`fold` as its cuts were first found: each pattern scanned over the whole text, at
    every position, then the characters left folded one by one."""
    cuts = [m.span() for m in resolver._MARKDOWN_NOISE.finditer(text)]
    cuts += [m.span() for m in resolver._LIST_MARKER.finditer(text)]
    cuts += [m.span() for m in resolver._BLOCKQUOTE.finditer(text) if m.end() > m.start()]
    cuts += [(m.start(), m.start() + 1) for m in resolver._JOINING_HYPHEN.finditer(text)]
    dropped = {i for a, b in cuts for i in range(a, b)}
    kept = "".join(ch for i, ch in enumerate(text) if i not in dropped)
    return kept.translate(resolver._FOLD_TABLE)


#: Pieces of Markdown noise, rules, blockquote marks and placeholders, and the characters
#: around them, drawn together so that matches start, nest and overlap often.
_MARKDOWN_PIECES = [
    "![",
    "](",
    "(cid:",
    "---",
    "-",
    "|",
    ":",
    "> ",
    ">",
    "+ ",
    "[",
    "]",
    "(",
    ")",
    "\n",
    " ",
    "a",
    "7",
    '"t"',
    "\\",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_MARKDOWN_PIECES), max_size=40).map("".join))
@example("---\n---")  # a rule on the line right after another line holding "---"
@example("a --- b\n> c\n>> d\n| --- | :---: |\n---")
def test_folding_drops_the_markdown_a_scan_of_every_position_would_find(text):
    assert fold(text) == fold_by_scanning(text)
    assert fold_text(text).text == fold_by_scanning(text)
