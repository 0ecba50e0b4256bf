"""Domain rules, with context-grid's own words.

Groundwork's exports must load in context-grid, so we refuse exactly what its constructors
refuse and say it the way its documentation does (``eval item 'q1' has an empty question``).
Running these checks before any write means a bad request never leaves half an object behind.
"""

from __future__ import annotations

import re

from evalsets.errors import InvalidInput

MAX_GRADE = 2
ITEM_ID_RE = re.compile(r"^[^/\s][^/]{0,127}$")


def check_item_id(item_id: str) -> str:
    item_id = (item_id or "").strip()
    if not item_id:
        raise InvalidInput("an eval item needs an id, such as 'q1'", field="id")
    if not ITEM_ID_RE.match(item_id):
        raise InvalidInput(
            f"eval item id {item_id!r} must be 1-128 characters without '/'", field="id"
        )
    return item_id


def check_question(item_id: str, question: str | None) -> str:
    if question is None or not str(question).strip():
        raise InvalidInput(f"eval item {item_id!r} has an empty question", field="question")
    return str(question)


def check_quote(quote: str | None) -> str:
    if quote is None or not str(quote).strip():
        raise InvalidInput("a gold anchor must quote some text", field="quote")
    return str(quote)


def check_grade(grade: int) -> int:
    if grade < 0:
        raise InvalidInput(f"gold grade must be >= 0, got {grade}", field="grade")
    if grade > MAX_GRADE:
        raise InvalidInput(
            f"gold grade must be 0, 1 or 2 (2 fully answers, 1 partially, 0 irrelevant), "
            f"got {grade}",
            field="grade",
        )
    return grade


def check_occurrence(occurrence: int) -> int:
    if occurrence < 0:
        raise InvalidInput(f"occurrence must be >= 0, got {occurrence}", field="occurrence")
    return occurrence


def check_page_hint(page_hint: int | None) -> int | None:
    if page_hint is not None and page_hint < 1:
        raise InvalidInput(f"page_hint counts pages from 1, got {page_hint}", field="page_hint")
    return page_hint


def duplicate_item_message(item_id: str, evalset_id: str) -> str:
    return f"duplicate eval item id {item_id!r} in eval set {evalset_id!r}"


def check_page_starts(page_starts: list, text_length: int) -> list[int]:
    """Page starts must be whole numbers, begin at 0, rise strictly and stay inside the text."""
    if not isinstance(page_starts, list) or not page_starts:
        raise InvalidInput(
            "page_starts must be a list of offsets starting with 0, e.g. [0, 1834, 3920]",
            field="page_starts",
        )
    previous = -1
    for index, value in enumerate(page_starts):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidInput(
                f"page_starts[{index}] must be a whole number, got {value!r}", field="page_starts"
            )
        if index == 0 and value != 0:
            raise InvalidInput(
                f"page_starts[0] must be 0 (page 1 starts the text), got {value}",
                field="page_starts",
            )
        if value <= previous:
            raise InvalidInput(
                f"page_starts must rise strictly: page_starts[{index}] = {value} "
                f"is not after {previous}",
                field="page_starts",
            )
        if value > text_length:
            raise InvalidInput(
                f"page_starts[{index}] = {value} is past the end of the text "
                f"({text_length} characters)",
                field="page_starts",
            )
        previous = value
    return page_starts
