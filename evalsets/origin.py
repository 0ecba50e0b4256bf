"""Which browser tab a request came from, for the audit trail.

Each page load makes a random tab id and sends it with every API call (``X-Groundwork-Tab``,
``static/js/api.js``); the middleware ``labelling.middleware.RememberTab`` puts it here for
the length of the request, and ``evalsets.review.audit.record`` writes it on each event. A page
that polls for changes (``/api/workspaces/{ws}/changes/``) then tells "this tab", "you, in
another tab" and someone else apart. The tab is where a request came from, not what it does,
so it travels beside the request rather than through every service's arguments. Pure Python.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

HEADER = "X-Groundwork-Tab"
_TAB_RE = re.compile(r"^[A-Za-z0-9-]{1,64}$")
_current: ContextVar[str] = ContextVar("groundwork_tab", default="")


def clean(value: str | None) -> str:
    """The tab id if it looks like one, else "" (a header is never trusted to be anything)."""
    return value if value and _TAB_RE.match(value) else ""


def current_tab() -> str:
    return _current.get()


def set_tab(value: str | None):
    """Remember the tab for this request; returns the token ``reset_tab`` takes."""
    return _current.set(clean(value))


def reset_tab(token) -> None:
    _current.reset(token)
