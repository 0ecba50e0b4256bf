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
import struct
import zipfile

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
# millions of tiny members. Its central directory says both before anything is unpacked, and
# Python's zipfile never returns more than a member's declared size, so checking the declared
# figures is enough. Real Word documents have tens or hundreds of parts.
MAX_ARCHIVE_MEMBERS = 10_000
MAX_ARCHIVE_UNPACKED_BYTES = 512 * 1024 * 1024
#: A member this much larger than its compressed bytes (and over MIN_RATIO_CHECK_BYTES) is a
#: bomb; text XML compresses 5-30 times, not hundreds.
MAX_ARCHIVE_RATIO = 200
MIN_RATIO_CHECK_BYTES = 8 * 1024 * 1024
_ARCHIVE_BOMB = (
    "This file is a compressed archive that would unpack to {what}, far more than any real "
    "document; it was refused. Save the document again and upload that copy."
)


def _declared_member_count(data: bytes) -> int | None:
    """The member count from a ZIP's end-of-central-directory record, without opening it."""
    tail_start = max(0, len(data) - (22 + 65535))
    at = data.rfind(b"PK\x05\x06", tail_start)
    if at < 0 or at + 22 > len(data):
        return None
    (count,) = struct.unpack_from("<H", data, at + 10)
    if count == 0xFFFF and at >= 20 and data[at - 20 : at - 16] == b"PK\x06\x07":
        (offset,) = struct.unpack_from("<Q", data, at - 20 + 8)
        if data[offset : offset + 4] == b"PK\x06\x06" and offset + 40 <= len(data):
            (count,) = struct.unpack_from("<Q", data, offset + 32)
    return count


def check_archive(data: bytes) -> None:
    """Raise ``too_large`` when a ZIP-based upload is an archive bomb; do nothing otherwise.

    Too many members, too many bytes once unpacked, or a member compressed far beyond what
    real documents compress to. Only the directory is read; nothing is decompressed.
    """
    if not (data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06")):
        return
    count = _declared_member_count(data)
    if count is not None and count > MAX_ARCHIVE_MEMBERS:
        raise ParseError("too_large", _ARCHIVE_BOMB.format(what=f"{count:,} separate files"))
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return  # not readable as a ZIP: the parser says it is damaged
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise ParseError("too_large", _ARCHIVE_BOMB.format(what=f"{len(members):,} separate files"))
    total = sum(member.file_size for member in members)
    if total > MAX_ARCHIVE_UNPACKED_BYTES:
        raise ParseError("too_large", _ARCHIVE_BOMB.format(what=_size(total)))
    for member in members:
        if member.file_size > MIN_RATIO_CHECK_BYTES and member.file_size > MAX_ARCHIVE_RATIO * max(
            member.compress_size, 1
        ):
            ratio = member.file_size // max(member.compress_size, 1)
            raise ParseError(
                "too_large",
                _ARCHIVE_BOMB.format(
                    what=f"{_size(member.file_size)} from one part compressed {ratio:,} to 1"
                ),
            )


def _size(nbytes: int) -> str:
    if nbytes >= 1024**3:
        return f"{nbytes / 1024**3:,.1f} GB"
    return f"{nbytes / 1024**2:,.1f} MB"


def describe_content(data: bytes) -> str:
    """A short phrase saying what some bytes look like ("a ZIP archive", "plain text", ...)."""
    if not data:
        return "an empty file"
    if b"%PDF-" in data[:1024]:
        return "a PDF"
    if data.startswith(b"PK\x03\x04") or data.startswith(b"PK\x05\x06"):
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
    count = _declared_member_count(data)
    if count is not None and count > MAX_ARCHIVE_MEMBERS:
        return f"a ZIP archive of {count:,} files"  # not opened: its directory alone is huge
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
