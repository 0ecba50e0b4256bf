"""Wording and checks shared by the two PDF parsers, so both fail the same way.

A labeller who uploads a scan or a password-protected PDF should get the same sentence whichever
parser met the problem first.
"""

from __future__ import annotations

from .base import ParseError, error_detail
from .sniffing import not_a

ENCRYPTED_REASON = (
    "This PDF is encrypted (password-protected); remove the password and upload it again."
)
NO_TEXT_REASON = "This PDF has no text layer (it looks like a scan); run OCR first."
CORRUPT_REASON = "This PDF is damaged and could not be read; try exporting or saving it again."


def require_pdf_magic(data: bytes) -> None:
    """Raise ``empty`` or ``wrong_type`` unless the bytes carry a PDF header.

    The header may follow a little junk (the format allows up to 1 KB), as some generators emit.
    """
    if not data:
        raise ParseError("empty", "This file is empty.")
    if b"%PDF-" not in data[:1024]:
        raise not_a("a PDF", data)


def corrupt_pdf(exc: BaseException) -> ParseError:
    return ParseError("corrupt", CORRUPT_REASON, error_detail(exc))


def tidy_page(text: str) -> str:
    """Strip a page's surrounding whitespace and form feeds; keep its inner lines as extracted."""
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()
