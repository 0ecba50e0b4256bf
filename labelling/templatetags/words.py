"""Template filters that put values into people's words (``labelling.labels``).

``{{ event.to_state|state_words }}`` reads "changes requested", never ``changes_requested``;
``{{ comment.kind|comment_kind_words }}`` the same for a comment that explains a transition;
``{{ text|plain_words }}`` rewrites context-grid's library wording for the page.
"""

from __future__ import annotations

from django import template

from labelling import labels

register = template.Library()


@register.filter
def state_words(value: str) -> str:
    return labels.state_words(value)


@register.filter
def comment_kind_words(value: str) -> str:
    return labels.comment_kind_words(value)


@register.filter
def plain_words(value: str) -> str:
    return labels.plain_words(value)
