"""Turn the bytes of a text-like upload (plain text, Markdown, HTML) into ``str`` without crashing.

Labelling corpora arrive from every kind of machine: UTF-8, UTF-16 from Windows editors, and
legacy cp1252 / Latin-1 exports. Decoding must never fail and must not turn "crème" into "crčme";
charset-normalizer alone often picks cp1250 for short Western text, so ties are broken towards
cp1252, by far the most common legacy encoding.
"""

from __future__ import annotations

import codecs
import re

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)

# The HTML standard reads these labels as windows-1252; so do browsers.
_WHATWG_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "ascii": "cp1252"}


def bom_encoding(data: bytes) -> str | None:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    return None


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode bytes of unknown encoding; return ``(text, encoding_name)``. Never raises.

    Order: byte-order mark, strict UTF-8, charset-normalizer (ties broken towards cp1252),
    and as a last resort cp1252 with replacement characters.
    """
    bom = bom_encoding(data)
    if bom:
        text = data.decode(bom, errors="replace")
        return text.lstrip("\ufeff"), bom.removesuffix("-sig")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    guess = _guess_with_charset_normalizer(data)
    if guess is not None:
        return guess
    return data.decode("cp1252", errors="replace"), "cp1252 (with replacements)"


def decode_html(data: bytes) -> tuple[str, str]:
    """Like ``decode_text`` but honours a ``<meta charset>`` declaration when UTF-8 fails."""
    if bom_encoding(data) is None:
        try:
            return data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            pass
        declared = _declared_charset(data[:4096])
        if declared:
            return data.decode(declared, errors="replace"), declared
    return decode_text(data)


def _declared_charset(head: bytes) -> str | None:
    match = _META_CHARSET.search(head)
    if not match:
        return None
    label = match.group(1).decode("ascii", "ignore").lower()
    label = _WHATWG_ALIASES.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name.startswith(("utf-16", "utf-32")):  # a declaration in ASCII bytes cannot be UTF-16
        return None
    return name


def _guess_with_charset_normalizer(data: bytes) -> tuple[str, str] | None:
    from charset_normalizer import from_bytes

    results = from_bytes(data)
    best = results.best()
    if best is None:
        return None
    tied = [
        m for m in results if m.chaos <= best.chaos + 0.01 and m.coherence >= best.coherence - 0.01
    ]
    best_text = str(best)
    if best.encoding != "cp1252":
        prefer_cp1252 = any(m.encoding == "cp1252" for m in tied)
        if not prefer_cp1252:
            try:
                # charset-normalizer drops encodings that decode to identical text; when cp1252
                # reads the bytes the same way as its pick, call it by the common name.
                prefer_cp1252 = data.decode("cp1252") == best_text
            except UnicodeDecodeError:
                prefer_cp1252 = False
        if prefer_cp1252:
            return data.decode("cp1252", errors="replace"), "cp1252"
    return best_text, best.encoding
