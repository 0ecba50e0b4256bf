"""Read plain text of any encoding: detect it, never crash, normalise newlines, and keep pages.

Text files are the simplest upload and the easiest to get wrong: Windows editors save UTF-16 with
a byte-order mark, old exports are cp1252 or Latin-1, and line endings vary. The text is kept as
written (no re-wrapping), with CR LF and lone CR turned into LF and NUL characters removed.
This parser is also the "raw source" reading of Markdown files.

A form feed (``\\f``) is how text exports of paged documents (``pdftotext``, ``man``, printers'
spools) mark a new page, so each one starts a page here: the pages are joined with
``PAGE_SEPARATOR`` like every paged parser's, anchors get the page they are on, and the
document view loads and redraws one page at a time instead of the whole file.
"""

from __future__ import annotations

from .base import (
    ParsedText,
    ParseError,
    ProgressFn,
    clean_text,
    join_pages,
    library_version,
    report,
)
from .encoding import decode_text

#: What starts a new page in a text file.
FORM_FEED = "\f"


class PlainTextParser:
    name = "plaintext"
    kind = "text"
    #: Groundwork's own reading of text files, bumped whenever its output changes (2: pages at
    #: form feeds). The decoder's version is recorded in ``meta["decoder"]``.
    version = "2"

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        del max_pages  # a text file's pages are its own; it is bounded by the byte limit
        if not data:
            raise ParseError("empty", "This file is empty.")
        raw, encoding = decode_text(data)
        text = clean_text(raw).lstrip("\ufeff")
        if not text.strip():
            raise ParseError("empty", "This file contains no text.")
        text, page_starts = split_pages(text)
        report(progress, len(page_starts), len(page_starts))
        return ParsedText(
            text=text,
            page_starts=page_starts,
            parser=self.name,
            parser_version=self.version,
            meta={
                "encoding": encoding,
                "decoder": f"charset-normalizer {library_version('charset-normalizer')}",
                "pages": len(page_starts),
            },
        )


def split_pages(text: str) -> tuple[str, list[int]]:
    """The text with each form feed turned into a page break, and where each page starts.

    A form feed that ends the file (as ``pdftotext`` writes after the last page) opens no
    empty page of its own.
    """
    if FORM_FEED not in text:
        return text, [0]
    pages = text.split(FORM_FEED)
    if len(pages) > 1 and not pages[-1].strip():
        pages.pop()
    return join_pages(pages)


PARSER = PlainTextParser()
