"""Read a PDF with pypdf, page by page.

pypdf is pure Python, fast, and follows the content stream order; its text differs from
pdfminer's layout analysis (line breaks, spacing, hyphenation), and comparing the two is what the
evaluation sets are for. Pages are extracted one at a time so ``page_starts`` are real page
boundaries and progress can be reported as pages complete.
"""

from __future__ import annotations

import io
import logging

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
    over_limit_pdf,
    require_pdf_magic,
    tidy_page,
)


class PypdfParser:
    """Reads the whole file (``parse``) or a range of its pages (``parse_pages``, so one
    document's parse can be shared by several workers: ``base.PageRangeParser``)."""

    name = "pypdf"
    kind = "pdf"
    version = library_version("pypdf")
    #: A range's worth of pages (``PageRangeParser``): about 7 s of one core for dense
    #: prose, against under a second to start a child and open the file
    #: (bench/parse_scaling_bench.py).
    pages_per_range = 500
    #: What a page of dense prose costs on one core (``parse_seconds``), measured on a PDF of
    #: ``bench/parse_scaling_bench.py``'s pages, with room for a slower host.
    seconds_per_page = 0.01

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        reader, total = self._open(data, max_pages)
        report(progress, 0, total)  # open: the clock of each page's budget starts here
        return self.join_ranges([self._read(reader, 0, total, total, progress)])

    def parse_pages(
        self,
        data: bytes,
        *,
        start: int,
        stop: int | None,
        max_pages: int = 2000,
        progress: ProgressFn | None = None,
    ) -> ParsedText:
        reader, total = self._open(data, max_pages)
        start = min(start, total)
        stop = total if stop is None else min(stop, total)
        report(progress, start, total)
        return self._read(reader, start, stop, total, progress)

    def join_ranges(self, parts: list[ParsedText]) -> ParsedText:
        text, starts, meta = join_page_ranges(parts)
        check_pages_read(text, meta)
        return ParsedText(
            text=text, page_starts=starts, parser=self.name, parser_version=self.version, meta=meta
        )

    def _open(self, data: bytes, max_pages: int):
        """The reader and the page count, or the refusal a whole file earns."""
        require_pdf_magic(data)
        check_streams(data)  # a decompression bomb is refused before the library unpacks it
        from pypdf import PdfReader
        from pypdf.errors import EmptyFileError, LimitReachedError

        logging.getLogger("pypdf").setLevel(logging.ERROR)  # per-object warnings are noise here
        try:
            reader = PdfReader(io.BytesIO(data))
        except EmptyFileError as exc:
            raise ParseError("empty", "This file is empty.", error_detail(exc)) from None
        except LimitReachedError as exc:
            raise over_limit_pdf(exc) from None
        except Exception as exc:  # pypdf raises many types for damaged files
            raise corrupt_pdf(exc) from None

        if reader.is_encrypted:
            self._decrypt(reader)

        try:
            total = len(reader.pages)
        except LimitReachedError as exc:
            raise over_limit_pdf(exc) from None
        except Exception as exc:
            raise corrupt_pdf(exc) from None
        if total == 0:
            raise ParseError("empty", "This PDF has no pages.")
        check_page_count(total, max_pages)
        return reader, total

    def _read(
        self, reader, start: int, stop: int, total: int, progress: ProgressFn | None
    ) -> ParsedText:
        """Pages ``start`` .. ``stop`` of an open file, as one range (``PageRangeParser``)."""
        from pypdf.errors import LimitReachedError

        pages: list[str] = []
        failed: list[int] = []
        for index in range(start, stop):
            try:
                raw = reader.pages[index].extract_text() or ""
            except LimitReachedError as exc:  # a bomb, not a damaged page: refuse the file
                raise over_limit_pdf(exc) from None
            except Exception:  # one damaged page should not lose the whole document
                raw = ""
                failed.append(index + 1)
            pages.append(tidy_page(clean_text(raw)))
            report(progress, index + 1, total)
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
                "encrypted_without_password": bool(reader.is_encrypted),
            },
        )

    @staticmethod
    def _decrypt(reader: object) -> None:
        # Many PDFs are "encrypted" only with an owner password (printing/copying flags) and open
        # with an empty user password; those are readable.
        from pypdf import PasswordType

        try:
            result = reader.decrypt("")  # type: ignore[attr-defined]
        except Exception as exc:  # unsupported algorithm, missing crypto backend
            raise ParseError("encrypted", ENCRYPTED_REASON, error_detail(exc)) from None
        if result == PasswordType.NOT_DECRYPTED:
            raise ParseError("encrypted", ENCRYPTED_REASON)


PARSER = PypdfParser()
