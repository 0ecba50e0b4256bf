"""An eval set's guidelines: Markdown an owner writes, shown to annotators as safe HTML.

Rendered with markdown-it-py (CommonMark, tables, strikethrough) with raw HTML off, then
sanitised with nh3 anyway: the owner is trusted to write instructions, not to run script in
an annotator's page. Links keep their target (http, https, mailto only) and open without
handing the page to the site they lead to. Pure Python: no Django import.
"""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

#: The longest guidelines an owner may save, in characters: a few pages of instructions.
MAX_GUIDELINES_CHARS = 20_000

_TAGS = frozenset(
    {
        *("a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5"),
        *("h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "strong", "table", "tbody"),
        *("td", "th", "thead", "tr", "ul"),
    }
)
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def render_guidelines(text: str) -> str:
    """The guidelines as HTML a page may insert: structure, text and plain links only."""
    if not text.strip():
        return ""
    return nh3.clean(
        _MARKDOWN.render(text),
        tags=set(_TAGS),
        attributes={k: set(v) for k, v in _ATTRIBUTES.items()},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def clean_qtypes(values: list[str]) -> tuple[list[str], str | None]:
    """The question types as an owner's list keeps them (trimmed, in order, each once), and
    why the list is refused (None when it is not)."""
    out: list[str] = []
    for value in values:
        value = value.strip()
        if not value:
            return out, "a question type cannot be empty"
        if len(value) > 64:
            return out, f"question type {value[:20]!r}... is longer than 64 characters"
        if value not in out:
            out.append(value)
    return out, None
