"""Read a Word (.docx) document with python-docx: paragraphs and tables in document order.

Labellers quote tables as often as prose, so tables are kept where they appear (one line per row,
cells separated by a tab) instead of being appended at the end. Content controls (``w:sdt``) are
walked into, and vertically merged cells are read once. Headers, footers and comments are left
out: they repeat on every page and are not part of the body text being labelled.
"""

from __future__ import annotations

import io
import zipfile

from .base import (
    BLOCK_SEPARATOR,
    ParsedText,
    ParseError,
    ProgressFn,
    clean_text,
    error_detail,
    library_version,
    report,
    tidy_block_text,
)
from .sniffing import check_archive, describe_content, not_a

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_CORRUPT_REASON = "This Word document is damaged and could not be read; try saving it again."


class DocxParser:
    name = "python-docx"
    kind = "docx"
    version = library_version("python-docx")

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        del max_pages  # a .docx has no fixed pages; its size is bounded by the byte limit
        if not data:
            raise ParseError("empty", "This file is empty.")
        description = describe_content(data)
        if description == "a password-protected Office document":
            raise ParseError(
                "encrypted",
                "This Word document is encrypted (password-protected); "
                "remove the password and upload it again.",
            )
        if description != "a Word document (.docx)":
            raise not_a("a Word document (.docx)", data)
        check_archive(data)  # an archive bomb is refused before anything is unpacked

        import docx

        try:
            document = docx.Document(io.BytesIO(data))
        except (zipfile.BadZipFile, KeyError, ValueError) as exc:
            raise ParseError("corrupt", _CORRUPT_REASON, error_detail(exc)) from None
        except Exception as exc:  # lxml syntax errors, missing parts
            raise ParseError("corrupt", _CORRUPT_REASON, error_detail(exc)) from None

        counts = {"paragraphs": 0, "tables": 0}
        blocks = list(_blocks(document.element.body, counts))
        text = tidy_block_text(BLOCK_SEPARATOR.join(b for b in blocks if b.strip()))
        report(progress, 1, 1)
        if not text:
            raise ParseError("empty", "This Word document contains no text.")
        return ParsedText(
            text=text,
            page_starts=[0],
            parser=self.name,
            parser_version=self.version,
            meta=counts,
        )


def _blocks(container: object, counts: dict[str, int]):
    """Yield the text of each paragraph and table directly inside ``container``, in order."""
    for child in container:  # type: ignore[attr-defined]
        tag = child.tag
        if tag == f"{_W}p":
            counts["paragraphs"] += 1
            yield _paragraph_text(child)
        elif tag == f"{_W}tbl":
            counts["tables"] += 1
            yield _table_text(child, counts)
        elif tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _blocks(content, counts)


def _paragraph_text(p: object) -> str:
    from docx.text.paragraph import Paragraph

    return clean_text(Paragraph(p, None).text)  # type: ignore[arg-type]


def _table_text(tbl: object, counts: dict[str, int]) -> str:
    rows: list[str] = []
    for tr in tbl.iterchildren(f"{_W}tr"):  # type: ignore[attr-defined]
        cells: list[str] = []
        for tc in _row_cells(tr):
            v_merge = tc.find(f"{_W}tcPr/{_W}vMerge")
            if v_merge is not None and v_merge.get(f"{_W}val", "continue") == "continue":
                cells.append("")  # the text lives in the first cell of the vertical merge
                continue
            parts = [b for b in _blocks(tc, counts) if b.strip()]
            cells.append(" ".join(" ".join(parts).split()))
        if any(cells):
            rows.append("\t".join(cells).rstrip("\t"))
    return "\n".join(rows)


def _row_cells(tr: object):
    for child in tr:  # type: ignore[attr-defined]
        if child.tag == f"{_W}tc":
            yield child
        elif child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from (c for c in content if c.tag == f"{_W}tc")


PARSER = DocxParser()
