"""Domain rules, with context-grid's own words.

Groundwork's exports must load in context-grid, so we refuse exactly what its constructors
refuse and say it the way its documentation does (``eval item 'q1' has an empty question``).
Running these checks before any write means a bad request never leaves half an object behind.
"""

from __future__ import annotations

import math
import re

from django.core.exceptions import FieldDoesNotExist

from evalsets.errors import InvalidInput, TooLarge, limit_named
from evalsets.pure.archive import MB

MAX_GRADE = 2
ITEM_ID_RE = re.compile(r"^[^/\s][^/]{0,127}$")

# -- keys that URLs carry ------------------------------------------------------------------------
#
# A document's source_id and an item's id appear in URL paths (``/documents/<source_id>/``,
# ``/items/<id>/``). A browser rewrites a path before sending it: a segment that is ``.`` or
# ``..`` (written plainly or as ``%2e``) is removed together with the one before it, and a
# backslash is read as ``/``. Percent-encoding cannot stop the first (``.`` is never encoded),
# so a key holding such a segment would send a click on it somewhere else: a source_id
# ``../../demo/evalsets/x`` turned its Remove button into a DELETE of an eval set. Such keys
# are refused wherever one is written; an empty segment (``a//b``, a leading or trailing
# ``/``) too, since proxies merge slashes.

MAX_SOURCE_ID_CHARS = 255
_DOT_SEGMENT = re.compile(r"^(?:\.|%2e){1,2}$", re.IGNORECASE)


def url_key_problem(key: str) -> str | None:
    """Why ``key`` cannot be a URL path's segments as it is, or None when it can."""
    if "\\" in key:
        return "contains '\\', which a browser reads as '/'"
    for segment in key.split("/"):
        if not segment:
            return "has an empty part between slashes (or starts or ends with '/')"
        if _DOT_SEGMENT.match(segment):
            return (
                f"has a part {segment!r}, which a browser removes from a URL "
                "with the part before it"
            )
    return None


def check_source_id(source_id: str) -> str:
    """A document's ``source_id``: 1-255 characters that a URL path carries unchanged."""
    if len(source_id) > MAX_SOURCE_ID_CHARS:
        raise InvalidInput(
            f"source_id must be at most {MAX_SOURCE_ID_CHARS} characters", field="source_id"
        )
    problem = url_key_problem(source_id)
    if problem:
        raise InvalidInput(
            f"source_id {source_id[:80]!r} {problem}; name the document another way "
            "(such as 'reports/2024.pdf')",
            field="source_id",
        )
    return source_id


def check_invitee_name(name: str) -> str:
    """A user name (or e-mail address) an invitation names: a URL carries it as one part."""
    problem = "contains '/'" if "/" in name else url_key_problem(name)
    if problem:
        raise InvalidInput(f"{name[:80]!r} {problem}; no account can be named so", field="username")
    return name


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def address_key(address: str) -> str:
    """What two e-mail addresses must share to be the same: every character, with only ASCII
    letters' case ignored. A database's case-insensitive match folds more than that
    (PostgreSQL's ``UPPER`` makes a dotless i, U+0131, an 'I'), so an address can differ from
    another's in a letter and still match; this is the comparison that decides."""
    return address.translate(_ASCII_LOWER)


def check_item_id(item_id: str) -> str:
    item_id = (item_id or "").strip()
    if not item_id:
        raise InvalidInput("an eval item needs an id, such as 'q1'", field="id")
    if not ITEM_ID_RE.match(item_id):
        raise InvalidInput(
            f"eval item id {item_id!r} must be 1-128 characters without '/'", field="id"
        )
    problem = url_key_problem(item_id)
    if problem:
        raise InvalidInput(f"eval item id {item_id!r} {problem}; choose another id", field="id")
    return item_id


#: A question is a query a retrieval pipeline is asked: a few sentences, never a document.
#: Longer ones are refused (a 200,000-character question drew a 71,000-pixel review card).
MAX_QUESTION_CHARS = 2000


def check_question(item_id: str, question: str | None) -> str:
    if question is None or not str(question).strip():
        raise InvalidInput(f"eval item {item_id!r} has an empty question", field="question")
    question = str(question)
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidInput(
            f"eval item {item_id!r} has a question of {len(question):,} characters; "
            f"a question is at most {MAX_QUESTION_CHARS:,} characters",
            field="question",
        )
    return question


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


def check_span(start: int, end: int, text_length: int) -> None:
    """A selection in a parse: at least one character, inside its text."""
    if not (0 <= start < end <= text_length):
        raise InvalidInput(
            f"start and end must satisfy 0 <= start < end <= {text_length} "
            f"(the parse's length), got start={start}, end={end}",
            field="start",
        )


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


# -- what a database can store -------------------------------------------------------------------
#
# PostgreSQL refuses NUL in text and jsonb and any string that is not valid UTF-8 (a lone
# surrogate cannot be encoded); SQLite stores a lone surrogate and then every read of the row
# fails. JSON columns hold only finite numbers. Integer columns hold what their width allows
# (SQLite silently stores more, PostgreSQL answers with an error). These checks run at every
# boundary (the API's serializers, the import plan) so such input is refused with the field
# named, before anything is written.

#: How deeply JSON values (``meta``, ``parser_settings``) may nest.
MAX_JSON_DEPTH = 32

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

#: The integer range of each model field type, as PostgreSQL (the strictest store) holds it.
#: The same figures as Django's ``BaseDatabaseOperations.integer_field_ranges``; only the
#: width matters here, the sign of a value is each field's own domain rule.
INT_RANGES: dict[str, tuple[int, int]] = {
    "SmallIntegerField": (-(2**15), 2**15 - 1),
    "PositiveSmallIntegerField": (-(2**15), 2**15 - 1),
    "IntegerField": (-(2**31), 2**31 - 1),
    "PositiveIntegerField": (-(2**31), 2**31 - 1),
    "BigIntegerField": (-(2**63), 2**63 - 1),
    "PositiveBigIntegerField": (-(2**63), 2**63 - 1),
}
DEFAULT_INT_RANGE = INT_RANGES["IntegerField"]


def check_storable_text(value: str, field: str) -> str:
    """``value`` unchanged, or ``InvalidInput`` naming ``field`` if no database can store it."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return value
    char = found.group()
    what = (
        "a NUL character (\\u0000)" if char == "\x00" else f"a lone surrogate (\\u{ord(char):04x})"
    )
    raise InvalidInput(
        f"{field} contains {what} at character {found.start()}, which cannot be stored; "
        "send valid Unicode text",
        field=_top(field),
    )


def check_storable_json(value: object, field: str, *, max_depth: int = MAX_JSON_DEPTH) -> object:
    """``value`` unchanged if a JSON column can hold it, else ``InvalidInput`` naming the path.

    Walks nested lists and objects without recursion (so depth costs no stack) and refuses
    nesting deeper than ``max_depth``, keys or strings a database cannot store, non-finite
    numbers and anything that is not a JSON value.
    """
    stack: list[tuple[object, str, int]] = [(value, field, 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            check_storable_text(node, path)
        elif node is None or isinstance(node, bool | int):
            continue
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise InvalidInput(
                    f"{path} is {node}, and JSON numbers must be finite", field=_top(field)
                )
        elif isinstance(node, dict | list | tuple):
            if depth >= max_depth:
                raise InvalidInput(
                    f"{path} nests deeper than {max_depth} levels; flatten it", field=_top(field)
                )
            if isinstance(node, dict):
                for key, child in node.items():
                    if not isinstance(key, str):
                        raise InvalidInput(
                            f"{path} has a key {key!r} that is not text", field=_top(field)
                        )
                    check_storable_text(key, f"{path} key {key[:40]!r}")
                    stack.append((child, f"{path}.{key}", depth + 1))
            else:
                for index, child in enumerate(node):
                    stack.append((child, f"{path}[{index}]", depth + 1))
        else:
            raise InvalidInput(
                f"{path} is a {type(node).__name__}, not a JSON value", field=_top(field)
            )
    return value


def check_db_int(value: int, field: str, bounds: tuple[int, int] = DEFAULT_INT_RANGE) -> int:
    """``value`` unchanged if an integer column of ``bounds`` holds it, else ``InvalidInput``."""
    low, high = bounds
    if not low <= value <= high:
        shown = value if value.bit_length() <= 128 else f"a number of {value.bit_length()} bits"
        raise InvalidInput(
            f"{field} must be between {low} and {high} to be stored, got {shown}", field=field
        )
    return value


def column_range(model, name: str) -> tuple[int, int]:
    """The integer range of ``model``'s column ``name`` (32-bit when it is not a model field)."""
    try:
        column = model._meta.get_field(name)
    except FieldDoesNotExist:
        return DEFAULT_INT_RANGE
    return INT_RANGES.get(column.get_internal_type(), DEFAULT_INT_RANGE)


def check_storable(value: object, field: str, int_bounds: tuple[int, int] = DEFAULT_INT_RANGE):
    """Any input value: text, JSON (lists, objects, numbers) or an integer for a column."""
    if isinstance(value, int) and not isinstance(value, bool):
        return check_db_int(value, field, int_bounds)
    if isinstance(value, str):
        return check_storable_text(value, field)
    if isinstance(value, dict | list | tuple | float):
        return check_storable_json(value, field)
    return value


def _top(path: str) -> str:
    """The field a nested path starts from: ``meta`` for ``meta.a[2]``."""
    return path.split("[", 1)[0].split(".", 1)[0].split(" ", 1)[0]


def check_upload_size(size: int, name: str, limit: int) -> None:
    """Refuse an uploaded file past ``limit`` bytes (``GROUNDWORK_MAX_UPLOAD_MB``) with a 413
    that gives both sizes and names the setting."""
    if size > limit:
        raise TooLarge(
            f"{name!r} is too large: {size / MB:.1f} MB, the limit is {limit / MB:.1f} MB "
            "(GROUNDWORK_MAX_UPLOAD_MB)",
            field="file",
            extra=limit_named("GROUNDWORK_MAX_UPLOAD_MB", limit // MB),
        )
