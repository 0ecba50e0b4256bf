"""Decide what an upload really is from its bytes, not from its name.

File names lie: a "report.pdf" is often an HTML error page saved by a browser, a ZIP of several
files, or a scan saved as PNG. Choosing the parser by content (magic bytes, ZIP members, HTML tags)
and using the extension only to tell Markdown from plain text means each upload goes to a parser
that can read it, and anything else is refused with a sentence saying what the file looks like.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import zipfile

from evalsets.pure.archive import (
    LIMITS,
    ArchiveTooLarge,
    GuardedZip,
    central_directory_entries,
    is_zip,
)

from .base import ParseError
from .encoding import bom_encoding

KINDS = ("pdf", "docx", "html", "markdown", "text")

MARKDOWN_EXTENSIONS = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdwn"})
_CLAIMED_BINARY = {".pdf": "pdf", ".docx": "docx"}
_CLAIMED_NAME = {"pdf": "a PDF", "docx": "a Word document (.docx)"}

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_OOXML = "EncryptedPackage".encode("utf-16-le")
_ENCRYPTED_OFFICE = "a password-protected Office document"

# (magic bytes at offset 0, description). Checked after PDF and ZIP.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\x7fELF", "a program (Linux executable)"),
    (b"\xcf\xfa\xed\xfe", "a program (macOS executable)"),
    (b"\xca\xfe\xba\xbe", "a program (compiled code)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\xfd7zXZ\x00", "an XZ archive"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard archive"),
    (b"SQLite format 3\x00", "a SQLite database"),
    (b"{\\rtf", "an RTF document"),
    (b"%!PS", "a PostScript file"),
    (b"OggS", "an audio or video file"),
    (b"fLaC", "an audio file"),
    (b"ID3", "an audio file"),
)

_HTML_START_TAGS = frozenset(
    {
        *("html", "head", "body", "meta", "title", "link", "base", "style", "script", "div"),
        *("p", "span", "a", "table", "section", "article", "main", "header", "footer", "nav"),
        *("aside", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "form", "pre"),
        *("blockquote", "figure", "center", "font", "iframe", "noscript"),
    }
)
_LEADING_JUNK = re.compile(r"^(?:\s+|<\?xml[^>]*\?>|<!--.*?-->)+", re.S)
_FIRST_TAG = re.compile(r"<(!doctype\s+html|[a-z][a-z0-9]*)[\s>/]", re.I)
_DOCTYPE = re.compile(r"<!doctype\s+html[\s>]", re.I)
_HTML_TAG = re.compile(r"<html[\s>]", re.I)
_HEAD_OR_BODY_TAG = re.compile(r"<(?:head|body)[\s>]", re.I)


# Archive bombs: a .docx is a ZIP, and a small ZIP can claim to unpack to gigabytes or hold
# millions of tiny members. ``evalsets.pure.archive`` reads every uploaded archive under one set of
# limits (members, unpacked bytes, compression ratio); here its refusal becomes ``too_large``.
# python-docx then reads the parts itself, and Python's zipfile never returns more than a
# member's declared size, which the guard has already checked.
_ARCHIVE_BOMB = (
    "This file is a compressed archive that {what}, far more than any real document; it was "
    "refused. Save the document again and upload that copy."
)


def check_archive(data: bytes) -> None:
    """Raise ``too_large`` when a ZIP-based upload passes the archive limits; else nothing."""
    if not is_zip(data):
        return
    try:
        GuardedZip(data, name="This file").close()
    except ArchiveTooLarge as exc:
        raise ParseError("too_large", _ARCHIVE_BOMB.format(what=exc.clause)) from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # not readable as a ZIP: the parser says it is damaged


def describe_content(data: bytes) -> str:
    """A short phrase saying what some bytes look like ("a ZIP archive", "plain text", ...)."""
    if not data:
        return "an empty file"
    if b"%PDF-" in data[:1024]:
        return "a PDF"
    if is_zip(data):
        return _describe_zip(data)
    if data.startswith(_OLE_MAGIC):
        if _ENCRYPTED_OOXML in data:
            return _ENCRYPTED_OFFICE
        return "an old-style Office file (.doc, .xls or .ppt)"
    for magic, description in _MAGIC:
        if data.startswith(magic):
            return description
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "a WebP image"
    if data[4:8] == b"ftyp":
        return "a video or photo file"
    if data.startswith(b"MZ") and b"\x00" in data[:64]:
        return "a program (Windows executable)"
    if len(data) > 262 and data[257:262] == b"ustar":
        return "a tar archive"
    head = _decode_head(data)
    if head is None:
        return "binary data"
    if _looks_like_html(head, markdown_name=False):
        return "an HTML page"
    return "plain text"


def sniff(data: bytes, filename: str = "") -> str:
    """Return ``pdf``, ``docx``, ``html``, ``markdown`` or ``text`` for an upload.

    The content decides; the extension only tells Markdown from plain text (and a Markdown file
    that starts with an HTML snippet, as many READMEs do, stays Markdown unless it is a whole HTML
    document). A file whose name claims PDF or DOCX but whose bytes are something else is refused
    rather than read as text: it is usually a saved error page or a mislabelled download.

    Raises ``ParseError`` with code ``empty`` or ``wrong_type``.
    """
    if not data:
        raise ParseError("empty", "This file is empty.")
    ext = os.path.splitext(filename.lower())[1]
    claimed = _CLAIMED_BINARY.get(ext)
    check_archive(data)
    description = describe_content(data)

    kind: str | None = None
    if description == "a PDF":
        kind = "pdf"
    elif description == "a Word document (.docx)":
        kind = "docx"
    elif description in ("an HTML page", "plain text"):
        if claimed:
            raise ParseError(
                "wrong_type",
                f"This file is named {ext} but it is not {_CLAIMED_NAME[claimed]} "
                f"(it starts like {description}).",
            )
        head = _decode_head(data) or ""
        if _looks_like_html(head, markdown_name=ext in MARKDOWN_EXTENSIONS):
            kind = "html"
        elif ext in MARKDOWN_EXTENSIONS:
            kind = "markdown"
        else:
            kind = "text"
    if kind is None:
        code = "encrypted" if description == _ENCRYPTED_OFFICE else "wrong_type"
        raise ParseError(code, _unsupported_reason(description))
    return kind


def not_a(kind_name: str, data: bytes) -> ParseError:
    """The error a parser raises when handed bytes of another format."""
    return ParseError(
        "wrong_type", f"This file is not {kind_name} (it starts like {describe_content(data)})."
    )


def _unsupported_reason(description: str) -> str:
    if description == _ENCRYPTED_OFFICE:
        return (
            "This Office document is encrypted (password-protected); remove the password, "
            "save it as .docx or PDF and upload it again."
        )
    if description.startswith("an old-style Office file"):
        return (
            f"This file is {description}, which cannot be read; "
            "save it as .docx or PDF and upload it again."
        )
    if description == "an empty file":
        return "This file is empty."
    return (
        f"This file cannot be read (it looks like {description}). "
        "Upload a PDF, Word (.docx), HTML, Markdown or plain-text file."
    )


def _describe_zip(data: bytes) -> str:
    count = central_directory_entries(data, LIMITS.max_members)
    if count is not None and count > LIMITS.max_members:
        return "a ZIP archive of too many files"  # not opened: its directory alone is huge
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return "a damaged ZIP archive"
    if "word/document.xml" in names:
        return "a Word document (.docx)"
    if "xl/workbook.xml" in names:
        return "an Excel spreadsheet (.xlsx)"
    if "ppt/presentation.xml" in names:
        return "a PowerPoint presentation (.pptx)"
    if "mimetype" in names and "content.xml" in names:
        return "an OpenDocument file (.odt, .ods or .odp)"
    if "META-INF/container.xml" in names:
        return "an EPUB e-book"
    return "a ZIP archive"


def _decode_head(data: bytes, size: int = 8192) -> str | None:
    """The first few KB as text, or None when the bytes do not look like text."""
    head = data[:size]
    bom = bom_encoding(head)
    if bom:
        return head.decode(bom, errors="replace").lstrip("\ufeff")
    if b"\x00" in head:
        return _decode_bomless_utf16(head)
    try:
        text = head.decode("utf-8") if len(data) <= size else _decode_prefix_utf8(head)
    except UnicodeDecodeError:
        text = None
    if text is None:
        from charset_normalizer import from_bytes

        best = from_bytes(head).best()
        if best is None:
            return None
        text = str(best)
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f\x1b")
    if text and controls / len(text) > 0.05:
        return None
    return text


def _decode_prefix_utf8(head: bytes) -> str:
    # The head may cut a multi-byte character in half; an incremental decoder tolerates that.
    return codecs.getincrementaldecoder("utf-8")().decode(head, final=False)


def _decode_bomless_utf16(head: bytes) -> str | None:
    pairs = len(head) // 2
    if pairs == 0:
        return None
    even_nuls = sum(1 for i in range(0, pairs * 2, 2) if head[i] == 0)
    odd_nuls = sum(1 for i in range(1, pairs * 2, 2) if head[i] == 0)
    if odd_nuls > 0.4 * pairs and even_nuls < 0.05 * pairs:
        encoding = "utf-16-le"
    elif even_nuls > 0.4 * pairs and odd_nuls < 0.05 * pairs:
        encoding = "utf-16-be"
    else:
        return None
    return head[: pairs * 2].decode(encoding, errors="replace")


def _looks_like_html(head: str, *, markdown_name: bool) -> bool:
    rest = _LEADING_JUNK.sub("", head[:4096], count=1)
    match = _FIRST_TAG.match(rest)
    if match:
        tag = match.group(1).lower()
        if tag.startswith("!doctype") or tag == "html":
            return True
        if tag in _HTML_START_TAGS and not markdown_name:
            return True
    if markdown_name:
        return False
    # Something before the first tag (a stray line, a byte-order mark, a server banner) but a
    # whole document further on.
    head = head[:4096]
    return bool(
        _DOCTYPE.search(head) or (_HTML_TAG.search(head) and _HEAD_OR_BODY_TAG.search(head))
    )
