"""The inbox count in every page's header.

A template context processor: ``inbox_unread`` is a callable the template calls only when it
draws the header, so a page that does not show it (a partial table, a page for someone not
signed in) costs no query, and one that does costs exactly one.
"""

from __future__ import annotations

from functools import cache

from django.http import HttpRequest

from evalsets.review import selectors as review_selectors


def context(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)

    @cache
    def inbox_unread() -> int:
        return review_selectors.unread_count(user)

    return {"inbox_unread": inbox_unread}
