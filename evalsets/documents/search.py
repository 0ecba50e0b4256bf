"""Searching a parse's whole text from the document page, with the prepared text cached.

The matching is ``evalsets.pure.textsearch`` (pure Python); this module loads a parse's text
once per web process and keeps it lowered, least recently used first out once the characters
held pass ``GROUNDWORK_SEARCH_CACHE_CHARS``, as ``evalsets.anchoring.resolution`` keeps folded
parses for the resolver. A parse written again has a new key (its length and last update), so it
is read again. Each search examines at most ``GROUNDWORK_SEARCH_MAX_CHARS`` positions a scan,
and says where it stopped if it stopped there.
"""

from __future__ import annotations

from django.conf import settings

from evalsets.anchoring.resolution import PreparedCache
from evalsets.models import ParseVersion
from evalsets.pure import textsearch

searchable_parses = PreparedCache(
    budget="GROUNDWORK_SEARCH_CACHE_CHARS", size=lambda prepared: prepared.size, unit=1
)


def searchable(parse: ParseVersion) -> textsearch.SearchableText:
    """``parse`` ready to search; its text is read only when this process has not got it."""
    found = searchable_parses.get(parse)
    if found is None:
        text = ParseVersion.objects.filter(pk=parse.pk).values_list("text", flat=True).get()
        found = textsearch.prepare_search(text, parse.page_begins)
        searchable_parses.put(parse, found)
    return found


def parse_search(
    parse: ParseVersion, query: str, *, after: int = 0, limit: int = 50
) -> textsearch.Found:
    """Hits of ``query`` in ``parse`` from code point ``after`` on (``QueryError`` if bad),
    each scan examining at most ``GROUNDWORK_SEARCH_MAX_CHARS`` positions."""
    textsearch.check_query(query)
    return searchable(parse).search(
        query, after=after, limit=limit, budget=settings.GROUNDWORK_SEARCH_MAX_CHARS
    )
