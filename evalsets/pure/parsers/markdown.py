"""Read Markdown as the plain text a reader sees: no ``#``, ``*``, or link targets.

The source is rendered with markdown-it-py (CommonMark plus tables and strikethrough) and the
resulting HTML goes through the same text extraction as uploaded web pages, so headings,
paragraphs, lists, tables and code blocks get the same line-break rules in both formats, raw HTML
inside the Markdown is handled (scripts dropped), and entities are decoded once. A paragraph reads
as one line (soft line breaks become spaces, as when the Markdown is displayed); the source's own
line breaks survive in the other parse version of a Markdown file, the ``plaintext`` parser's.
"""

from __future__ import annotations

from .base import ParsedText, ProgressFn, library_version, unpaged_result
from .encoding import decode_text
from .html import html_to_text


class MarkdownItParser:
    name = "markdown-it"
    kind = "markdown"
    version = library_version("markdown-it-py")

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        del max_pages  # Markdown has no pages

        def read(raw: bytes) -> tuple[str, str]:
            source, encoding = decode_text(raw)
            return markdown_to_text(source), encoding

        return unpaged_result(
            self, data, read, progress=progress, nothing_readable="This file contains no text."
        )


def markdown_to_text(source: str) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return html_to_text(md.render(source))


PARSER = MarkdownItParser()
