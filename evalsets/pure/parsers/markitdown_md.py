"""Read PDF, Word and HTML documents as Markdown with Microsoft's markitdown.

Many LLM and RAG pipelines feed their models markitdown's Markdown rather than plain text, so
an eval set has to say how much of its gold evidence survives that reading too: headings
become ``#`` lines, tables become pipe tables, links keep their targets. The resolver folds
that markup away when it re-locates a quote (see ``evalsets.pure.resolver``).

One parser for three kinds: the same name and version on a PDF, a .docx and a web page, so a
team compares "markitdown" as one parser across its documents. markitdown separates a PDF's
pages with form feeds; those become real ``page_starts``. It runs only where a workspace
chooses it (``parser_settings``); it is not a default.
"""

from __future__ import annotations

import io

from .base import (
    ParsedText,
    ParseError,
    ProgressFn,
    check_page_count,
    clean_text,
    error_detail,
    join_pages,
    library_version,
    report,
)
from .pdf_common import NO_TEXT_REASON, check_streams, require_pdf_magic, tidy_page

_EXTENSIONS = {"pdf": ".pdf", "docx": ".docx", "html": ".html"}
_CORRUPT = "This file could not be converted to Markdown; it may be damaged."


class MarkItDownParser:
    name = "markitdown"
    kind = "pdf"
    kinds = ("pdf", "docx", "html")
    version = library_version("markitdown")

    def parse(
        self,
        data: bytes,
        *,
        max_pages: int = 2000,
        progress: ProgressFn | None = None,
    ) -> ParsedText:
        if not data:
            raise ParseError("empty", "This file is empty.")
        kind = _guess_kind(data)
        if kind == "pdf":
            require_pdf_magic(data)
            check_streams(data)  # a decompression bomb is refused before pdfminer unpacks it
        from markitdown import MarkItDown

        try:
            result = MarkItDown(enable_plugins=False).convert_stream(
                io.BytesIO(data), file_extension=_EXTENSIONS[kind]
            )
        except Exception as exc:  # markitdown wraps each converter's many failure types
            raise ParseError("corrupt", _CORRUPT, error_detail(exc)) from None
        text = clean_text(result.text_content or "")
        starts = [0]
        if kind == "pdf":
            pages = [tidy_page(page) for page in text.split("\f")]
            check_page_count(len(pages), max_pages)
            text, starts = join_pages(pages)
        text = text.strip() if len(starts) == 1 else text
        report(progress, 1, 1)
        if not text.strip():
            if kind == "pdf":
                raise ParseError("no_text", NO_TEXT_REASON)
            raise ParseError("empty", "This file contains no text.")
        return ParsedText(
            text=text,
            page_starts=starts,
            parser=self.name,
            parser_version=self.version,
            meta={"format": "markdown", "source_kind": kind},
        )


def _guess_kind(data: bytes) -> str:
    """What the bytes are, for a caller that did not say: PDF and .docx by their magic."""
    head = data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(b"PK"):
        return "docx"
    return "html"


PARSER = MarkItDownParser()
