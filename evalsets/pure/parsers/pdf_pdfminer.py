"""Read a PDF with pdfminer.six, page by page.

pdfminer.six groups characters into lines and text boxes by their position on the page (layout
analysis), so it often reads multi-column and table-heavy pages differently from pypdf. It is the
second opinion on every PDF. The interpreter is driven one page at a time, so ``page_starts`` are
real page boundaries and progress is reported as pages complete.
"""

from __future__ import annotations

import io
import itertools
import logging
from collections.abc import Iterator

from .base import (
    ParsedText,
    ParseError,
    ProgressFn,
    check_page_count,
    clean_text,
    error_detail,
    join_page_ranges,
    join_pages,
    library_version,
    report,
)
from .pdf_common import (
    ENCRYPTED_REASON,
    check_pages_read,
    check_streams,
    corrupt_pdf,
    require_pdf_magic,
    tidy_page,
)


class PdfminerParser:
    """Reads the whole file (``parse``) or a range of its pages (``parse_pages``, so one
    document's parse can be shared by several workers: ``base.PageRangeParser``)."""

    name = "pdfminer"
    kind = "pdf"
    version = library_version("pdfminer.six")
    #: A range's worth of pages (``PageRangeParser``): about 3 s of one core for dense
    #: prose (25 ms a page), against about 0.3 s to start a child, open the file and walk
    #: to the range; 8 ranges for 1,000 pages balance 2 or 4 workers
    #: (``bench/parse_scaling_model.py``).
    pages_per_range = 125
    #: What a page costs (``parse_seconds``): 25 ms measured, with room for a slower host.
    seconds_per_page = 0.03

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        document, total = self._open(data, max_pages)
        report(progress, 0, total)  # open: the clock of each page's budget starts here
        return self.join_ranges([self._read(document, 0, None, total, max_pages, progress)])

    def parse_pages(
        self,
        data: bytes,
        *,
        start: int,
        stop: int | None,
        max_pages: int = 2000,
        progress: ProgressFn | None = None,
    ) -> ParsedText:
        document, total = self._open(data, max_pages)
        report(progress, min(start, total), total)
        return self._read(document, start, stop, total, max_pages, progress)

    def join_ranges(self, parts: list[ParsedText]) -> ParsedText:
        text, starts, meta = join_page_ranges(parts)
        check_pages_read(text, meta)
        return ParsedText(
            text=text, page_starts=starts, parser=self.name, parser_version=self.version, meta=meta
        )

    def _open(self, data: bytes, max_pages: int):
        """The document and its page count, or the refusal a whole file earns."""
        require_pdf_magic(data)
        check_streams(data)  # a decompression bomb is refused before the library unpacks it
        from pdfminer.pdfdocument import PDFDocument, PDFPasswordIncorrect
        from pdfminer.pdfpage import PDFPage
        from pdfminer.pdfparser import PDFParser

        logging.getLogger("pdfminer").setLevel(logging.ERROR)
        try:
            document = PDFDocument(PDFParser(io.BytesIO(data)), password="")
        except PDFPasswordIncorrect as exc:
            raise ParseError("encrypted", ENCRYPTED_REASON, error_detail(exc)) from None
        except Exception as exc:
            if "crypt" in type(exc).__name__.lower():  # PDFEncryptionError and friends
                raise ParseError("encrypted", ENCRYPTED_REASON, error_detail(exc)) from None
            raise corrupt_pdf(exc) from None

        total = _declared_page_count(document)
        if total is None:
            try:
                total = sum(1 for _ in PDFPage.create_pages(document))
            except Exception as exc:
                raise corrupt_pdf(exc) from None
        if total == 0:
            raise ParseError("empty", "This PDF has no pages.")
        check_page_count(total, max_pages)
        return document, total

    def _read(
        self,
        document,
        start: int,
        stop: int | None,
        total: int,
        max_pages: int,
        progress: ProgressFn | None,
    ) -> ParsedText:
        """Pages ``start`` .. ``stop`` (``None``: to the end of the page tree, whatever its
        declared count says) of an open document, as one range (``PageRangeParser``)."""
        from pdfminer.converter import TextConverter
        from pdfminer.layout import LAParams
        from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
        from pdfminer.pdfpage import PDFPage

        resources = PDFResourceManager(caching=True)
        buffer = io.StringIO()
        device = TextConverter(resources, buffer, laparams=LAParams())
        interpreter = PDFPageInterpreter(resources, device)
        pages: list[str] = []
        failed: list[int] = []
        try:
            chosen = itertools.islice(_page_tree(document), start, stop)
            for index, page in enumerate(chosen, start):
                page = PDFPage(*page)  # only the range's pages are built
                if index >= max_pages:  # the declared /Count lied
                    check_page_count(index + 1, max_pages)
                try:
                    interpreter.process_page(page)
                except Exception:  # one damaged page should not lose the whole document
                    failed.append(index + 1)
                pages.append(tidy_page(clean_text(buffer.getvalue())))
                buffer.seek(0)
                buffer.truncate(0)
                report(progress, index + 1, max(total, index + 1))
        except ParseError:
            raise
        except Exception as exc:
            if not pages:
                raise corrupt_pdf(exc) from None
            # the page tree broke part-way: keep what was read
            failed.append(start + len(pages) + 1)
        finally:
            device.close()

        text, starts = join_pages(pages)
        return ParsedText(
            text=text,
            page_starts=starts,
            parser=self.name,
            parser_version=self.version,
            meta={
                "document_pages": total,
                "first_page": start + 1,
                "pages": len(pages),
                "empty_pages": [start + i + 1 for i, page in enumerate(pages) if not page],
                "failed_pages": failed,
            },
        )


def _page_tree(document) -> Iterator[tuple]:
    """What ``PDFPage.create_pages`` walks, page by page, in its order, as the arguments
    of each ``PDFPage``, unbuilt: building a page resolves its contents and resources, so a
    range that starts at page 900 would build 900 pages for nothing."""
    from pdfminer.pdfpage import PDFPage

    class Unbuilt(PDFPage):
        def __init__(self, *args) -> None:
            self.args = args

    return (page.args for page in Unbuilt.create_pages(document))


def _declared_page_count(document: object) -> int | None:
    """The page count from the page tree's /Count, without walking every page."""
    from pdfminer.pdftypes import resolve1

    try:
        pages = resolve1(document.catalog["Pages"])  # type: ignore[attr-defined]
        count = resolve1(pages["Count"])
    except Exception:
        return None
    return count if isinstance(count, int) and count >= 0 else None


PARSER = PdfminerParser()
