"""Rate limits per user on the API's costly endpoints: DRF throttles, counted in the cache.

A throttle is a ``ScopedThrottle``: a scope (``"uploads"``), the actions it counts (a
viewset's action names, or an ``APIView``'s lower-case methods, the names ``access.ROLES``
uses; ``None``: every request to the view) and a rate, read at each request from the setting
``GROUNDWORK_RATE_<SCOPE>`` (``"120/min"``; ``labelling/settings.py``), so a changed setting
holds at once. A view lists the throttles of its costly actions in ``throttle_classes``. A new
scope is a subclass naming ``scope``, ``actions`` and ``what``, plus its setting.

Each signed-in user is counted alone. Throttles run after the permission check, so a request
refused for its role, or for a workspace the caller cannot see, is never counted, and a 429
tells an outsider nothing. Past the rate the answer is ``RateLimited``: a 429 in the API's
one error shape whose detail names what was limited, the setting and its rate, with
``Retry-After``. The count is a sliding window (DRF's): one more request is allowed as the
oldest in the window leaves it.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle

from evalsets.api.permissions import action_of
from evalsets.errors import RateLimited, limit_named

PERIODS = {1: "a second", 60: "a minute", 3600: "an hour", 86400: "a day"}


def rate_setting(scope: str) -> str:
    """The setting that holds ``scope``'s rate."""
    return f"GROUNDWORK_RATE_{scope.upper()}"


class ScopedThrottle(ScopedRateThrottle):
    """``scope``'s rate per user, from its setting, for the ``actions`` named."""

    #: The scope: its rate is the setting ``rate_setting(scope)``.
    scope: str = ""
    #: The actions counted; None: all of them.
    actions: frozenset[str] | None = None
    #: What is counted, as the refusal says it ("too many uploads").
    what: str = ""

    def allow_request(self, request, view) -> bool:
        if self.actions is not None and action_of(view, request) not in self.actions:
            return True
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return SimpleRateThrottle.allow_request(self, request, view)

    def get_rate(self) -> str:
        name = rate_setting(self.scope)
        rate = getattr(settings, name, None)
        if not rate:
            raise ImproperlyConfigured(f"{name} (the rate of API throttle {self.scope!r}) is unset")
        return rate

    def throttle_failure(self) -> bool:
        wait = self.wait() or self.duration
        name = rate_setting(self.scope)
        per = PERIODS[self.duration]  # env_rate allows only these periods
        raise RateLimited(
            f"too many {self.what}: {name} allows {self.num_requests:,} {per} for each user; "
            f"try again in {RateLimited.whole_seconds(wait)} s",
            retry_after=wait,
            extra=limit_named(name, self.rate),
        )


class UploadThrottle(ScopedThrottle):
    """Document uploads, and asking for a document to be parsed again: each is parsing work."""

    scope = "uploads"
    actions = frozenset({"create", "reparse"})
    what = "uploads and re-parses"


class ParseUploadThrottle(ScopedThrottle):
    """Parses sent as text: each body is read, checked and stored, then resolved against."""

    scope = "parse_uploads"
    actions = frozenset({"create"})
    what = "parse uploads"


class ImportThrottle(ScopedThrottle):
    """Import previews and commits: each reads and checks a whole file."""

    scope = "imports"
    actions = frozenset({"post"})
    what = "imports (previews and commits)"


class ReleaseThrottle(ScopedThrottle):
    """New releases: each builds every chosen format of the whole set on a worker."""

    scope = "releases"
    actions = frozenset({"post"})
    what = "releases"


class ExperimentThrottle(ScopedThrottle):
    """Experiments started and runs uploaded: a grid is minutes of worker CPU, a run's
    placement a resolver pass over every chunk it names."""

    scope = "experiments"
    actions = frozenset({"post"})
    what = "experiments and uploaded runs"


class ResolveThrottle(ScopedThrottle):
    """Re-resolving a whole workspace: every anchor against every parse."""

    scope = "resolve"
    actions = frozenset({"resolve"})
    what = "requests to re-resolve a workspace"


class WorkspaceThrottle(ScopedThrottle):
    """New workspaces (the quota bounds how many a user owns; this, how fast)."""

    scope = "workspaces"
    actions = frozenset({"create"})
    what = "new workspaces"


class SearchThrottle(ScopedThrottle):
    """Searches of a parse's whole text (the document page's search box): each scans up to
    ``GROUNDWORK_SEARCH_MAX_CHARS`` positions twice in a web process."""

    scope = "search"
    actions = frozenset({"get"})
    what = "searches"
