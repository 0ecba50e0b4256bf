"""The errors services raise, each carrying words for the person who sent the request.

The API turns them into 4xx responses (``evalsets.api.errors``); the web pages show the same
message beside the field named in ``field``.
"""

from __future__ import annotations

import math


class GroundworkError(Exception):
    """Something the caller asked for cannot be done, and ``message`` says why."""

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = extra or {}


class InvalidInput(GroundworkError):
    """The request is malformed or breaks a rule of the domain (HTTP 400)."""


class Conflict(GroundworkError):
    """The request is well formed but collides with the current state (HTTP 409)."""

    status_code = 409


class Forbidden(GroundworkError):
    """The caller may not do this, whatever the object's state (HTTP 403): their role is
    too low (``evalsets.access``), or four eyes bars them."""

    status_code = 403


class LimitReached(Conflict):
    """A count the caller holds (workspaces they own, documents in a workspace) is at its
    limit (HTTP 409): it stays refused until something is deleted or the limit is raised, so
    it is a state of the data, not a rate. ``extra["limit"]`` names the setting and value."""


class TooLarge(GroundworkError):
    """Storing this would take a workspace past its byte limit (HTTP 413)."""

    status_code = 413


class RateLimited(GroundworkError):
    """Too many of these within a window (HTTP 429); one more is allowed in ``retry_after``
    seconds, which the API sends as ``Retry-After``."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: float, **kwargs):
        super().__init__(message, **kwargs)
        self.retry_after = self.whole_seconds(retry_after)

    @staticmethod
    def whole_seconds(wait: float) -> int:
        """The wait as the client is told it, in the header and in words alike: whole
        seconds, rounded up so a retry at that moment is allowed, and at least one."""
        return max(1, math.ceil(wait))


def limit_named(setting: str, value, **more) -> dict:
    """The ``extra`` of a refusal at a configured limit: ``{"limit": {"setting", "value"}}``
    (plus ``more``, such as the line), so a program reads which limit and its value the same
    way from every quota, rate, budget and size refusal."""
    return {"limit": {"setting": setting, "value": value, **more}}
