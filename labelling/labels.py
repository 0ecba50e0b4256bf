"""The words and colours the UI shows for workflow states, resolution statuses and grades.

Defined here once and sent to each page once: templates read ``gw_labels`` (this module's
context processor), scripts read the same dictionary from the page's
``<script type="application/json" id="gw-labels">`` block (``Groundwork.labels`` in
``static/js/api.js``), stylesheets read the colours as CSS custom properties from
``/labels.css``, and the dashboard's charts (``labelling/charts.py``) fill with them. The
domain (``evalsets/``) only knows the values (``changes_requested``, ``not_found``); a person
reads "changes requested" and "lost".
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from evalsets.models import FOUND_STATUSES, ItemState, NotificationKind, ResolutionStatus

#: One colour per workflow state (charts, progress bars, state pills).
STATE_COLOURS = {
    ItemState.DRAFT: "#9aa3b5",
    ItemState.SUBMITTED: "#2f5bd3",
    ItemState.CHANGES_REQUESTED: "#d9822b",
    ItemState.APPROVED: "#2b8a3e",
}
#: One colour per resolution status (badges, charts).
RESOLUTION_COLOURS = {
    ResolutionStatus.EXACT: "#2b8a3e",
    ResolutionStatus.NORMALISED: "#5cb85c",
    ResolutionStatus.FUZZY: "#a3d977",
    ResolutionStatus.AMBIGUOUS: "#d9822b",
    ResolutionStatus.NOT_FOUND: "#c0392b",
    ResolutionStatus.PENDING: "#c9ced8",
    ResolutionStatus.CONFIRMED: "#1d6fa5",
}
#: What someone did, as the inbox says it: "rita <words> acme/quiz/q1".
NOTIFICATION_WORDS = {
    NotificationKind.CHANGES_REQUESTED: "asked for changes on",
    NotificationKind.ASSIGNED: "assigned you",
    NotificationKind.REVIEW: "asked you to review",
    NotificationKind.REPLY: "replied to your comment on",
}
#: What each kind of difference between two parses' readings is called (the comparison panel).
DIFFERENCE_WORDS = {
    "ligature": "ligature",
    "space": "spaces",
    "hyphen": "hyphenation",
    "case": "case",
    "punctuation": "punctuation or markup",
    "moved": "moved",
    "missing": "missing",
    "extra": "extra",
    "text": "other text",
}
#: What a grade means, as the popover and the item editor say it.
#: Grade 0 is "irrelevant", as context-grid, the release notes and the import/export formats
#: say it (IR convention: 2 fully answers, 1 partly, 0 irrelevant).
GRADE_WORDS = {2: "answers it", 1: "partly", 0: "irrelevant"}


def _entries(choices, colours) -> dict[str, dict[str, str]]:
    # The models' own choice labels are already plain words ("Changes requested", "Lost"):
    # ``label`` heads a pill or a column, ``words`` goes inside a sentence.
    return {
        c.value: {"label": c.label, "words": c.label.lower(), "colour": colours[c]} for c in choices
    }


LABELS: dict[str, dict] = {
    "states": _entries(ItemState, STATE_COLOURS),
    "resolutions": _entries(ResolutionStatus, RESOLUTION_COLOURS),
    "grades": {str(grade): words for grade, words in GRADE_WORDS.items()},
    "notifications": {
        kind.value: {"label": kind.label, "words": NOTIFICATION_WORDS[kind]}
        for kind in NotificationKind
    },
    "differences": DIFFERENCE_WORDS,
    #: The statuses that place an anchor on a span (a script draws those).
    "found": [status.value for status in FOUND_STATUSES],
}


def state_words(state: str) -> str:
    return LABELS["states"].get(state, {}).get("words", state)


#: What a comment that explains a transition is, in words.
COMMENT_KIND_WORDS = {
    "submitted": "on submitting",
    "approved": "on approving",
    "changes_requested": "changes requested",
    "reopened": "on reopening",
}


def comment_kind_words(kind: str) -> str:
    return COMMENT_KIND_WORDS.get(kind, state_words(kind))


#: context-grid's own sentences name its Python API and its file format; on a page, say what
#: to do in Groundwork instead.
LIBRARY_PHRASES = (
    (
        "`is_the_winner_real()` settles it",
        "a significance test on the two runs (context-grid's is_the_winner_real) settles it",
    ),
    (
        'If you wrote these questions yourself, say so with `"meta": {"reviewed": true}` on '
        "each one; otherwise the review queue is the cheapest place to fix it",
        "Approving an item on the Review page marks it checked",
    ),
)


def plain_words(text: str) -> str:
    """``text`` with context-grid's library wording replaced and no Markdown backticks left."""
    for library, ours in LIBRARY_PHRASES:
        text = text.replace(library, ours)
    return text.replace("`", "")


def resolution_words(status: str) -> str:
    return LABELS["resolutions"].get(status, {}).get("words", status)


def context(request: HttpRequest) -> dict:
    """Template context processor: ``gw_labels`` on every page (``base.html`` sends it)."""
    return {"gw_labels": LABELS}


@require_safe
@cache_control(max_age=3600, public=True)
def stylesheet(request: HttpRequest) -> HttpResponse:
    """The colours as CSS custom properties (``--state-approved``, ``--res-not_found``) and
    ``.swatch-*`` classes for legends, so stylesheets use them without a copy."""
    return render(request, "labelling/labels.css", {"labels": LABELS}, content_type="text/css")
