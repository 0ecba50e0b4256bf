"""Read PDF, Word and HTML documents as Markdown with Microsoft's markitdown.

Many LLM and RAG pipelines feed their models markitdown's Markdown rather than plain text, so
an eval set has to say how much of its gold evidence survives that reading too: headings
become ``#`` lines, tables become pipe tables, links keep their targets. The resolver folds
that markup away when it re-locates a quote (see ``evalsets.pure.resolver``).

One parser for three kinds: the same name and version on a PDF, a .docx and a web page, so a
team compares "markitdown" as one parser across its documents. A PDF is read page by page
as markitdown reads each page (a form or borderless table as a Markdown table, prose with
pdfminer), so its pages become real ``page_starts`` even when markitdown, reading the whole
file, would drop them. It runs only where a workspace chooses it (``parser_settings``); it
is not a default.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

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
    #: What a PDF page costs (``parse_seconds``): about 0.1 s measured on dense prose (it
    #: looks for tables on every page besides pdfminer's reading), four times pdfminer's,
    #: and it cannot read a range alone, so a long PDF is one long task.
    seconds_per_page = 0.1

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
        try:
            if kind == "pdf":
                pages = _pdf_pages(data)
            else:
                text = _converted(data, kind)
        except Exception as exc:  # markitdown wraps each converter's many failure types
            raise ParseError("corrupt", _CORRUPT, error_detail(exc)) from None
        starts = [0]
        if kind == "pdf":
            check_page_count(len(pages), max_pages)
            text, starts = join_pages([tidy_page(clean_text(page)) for page in pages])
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


def _converted(data: bytes, kind: str) -> str:
    from markitdown import MarkItDown

    result = MarkItDown(enable_plugins=False).convert_stream(
        io.BytesIO(data), file_extension=_EXTENSIONS[kind]
    )
    return clean_text(result.text_content or "")


def _pdf_pages(data: bytes) -> list[str]:
    """markitdown's reading of a PDF, one entry per page, empty pages included.

    markitdown reads a page that looks like a form or a borderless table as a Markdown
    table, and the others with pdfminer, but as soon as one page is a form it joins every
    page with blank lines (no page breaks) and reads the prose pages with pdfplumber, which
    glues words together. Here each page is read as markitdown reads it alone: its form
    reading when it is one, else pdfminer's text of that page.
    """
    import pdfminer.high_level
    import pdfplumber
    from markitdown.converters._pdf_converter import (
        _extract_form_content_from_words,
        _merge_partial_numbering_lines,
    )

    forms: list[str | None] = []
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for page in pdf.pages:
            forms.append(_extract_form_content_from_words(page))
            page.close()  # as markitdown does: each page's cached objects freed at once
    plain = [k for k, form in enumerate(forms) if form is None]
    prose: Iterator[str] = iter(())
    if plain:
        # pdfminer ends each page it reads with a form feed
        prose = iter(
            pdfminer.high_level.extract_text(io.BytesIO(data), page_numbers=plain).split("\f")
        )
    return [
        _merge_partial_numbering_lines(form if form is not None else next(prose, ""))
        for form in forms
    ]


def _guess_kind(data: bytes) -> str:
    """What the bytes are, for a caller that did not say: PDF and .docx by their magic."""
    head = data[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if head.startswith(b"PK"):
        return "docx"
    return "html"


PARSER = MarkItDownParser()
