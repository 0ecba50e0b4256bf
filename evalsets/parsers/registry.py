"""Which parsers exist, which ones read each kind of document, and which one is the reference.

Reading the same document with several parsers is the point of Groundwork, so the list of parsers
per kind is data, not code scattered through the app. Parser modules import their libraries only
when they parse, so importing the registry (as the web process does) stays cheap.
"""

from __future__ import annotations

import importlib

from . import docx, html, markdown, pdf_pdfium, pdf_pdfminer, pdf_pypdf, text
from .base import Parser

PARSERS: dict[str, Parser] = {
    module.PARSER.name: module.PARSER
    for module in (pdf_pypdf, pdf_pdfminer, pdf_pdfium, docx, html, markdown, text)
}

#: The parsers run on every upload of a kind, in display order.
DEFAULT_PARSERS: dict[str, list[str]] = {
    "pdf": ["pypdf", "pdfminer", "pdfium"],  # pdfium also backs the PDF view
    "docx": ["python-docx"],
    "html": ["selectolax"],
    "markdown": ["markdown-it", "plaintext"],  # rendered text, and the raw source
    "text": ["plaintext"],
}

#: The parse version other versions are compared against (and quotes are anchored to).
DEFAULT_REFERENCE: dict[str, str] = {
    "pdf": "pypdf",
    "docx": "python-docx",
    "html": "selectolax",
    "markdown": "markdown-it",
    "text": "plaintext",
}


def parsers_for(kind: str) -> list[Parser]:
    """The parsers for a kind: the defaults in order, then any other registered for that kind."""
    if kind not in DEFAULT_PARSERS:
        raise KeyError(f"unknown document kind {kind!r}; expected one of {sorted(DEFAULT_PARSERS)}")
    names = list(DEFAULT_PARSERS[kind])
    names += [name for name, p in PARSERS.items() if p.kind == kind and name not in names]
    return [PARSERS[name] for name in names]


def get_parser(name: str) -> Parser:
    """A registered parser by name, or any parser object by dotted path ``"package.module:Attr"``.

    A dotted path names a parser instance or a class (instantiated without arguments); it lets the
    isolated runner execute parsers that are not registered, such as the diagnostic parsers in
    ``evalsets.parsers.diagnostic``. Names come from code and settings, never from users.
    """
    if name in PARSERS:
        return PARSERS[name]
    if ":" not in name:
        raise KeyError(f"unknown parser {name!r}; registered parsers are {sorted(PARSERS)}")
    module_name, _, attr = name.partition(":")
    obj = getattr(importlib.import_module(module_name), attr)
    if isinstance(obj, type):
        obj = obj()
    if not callable(getattr(obj, "parse", None)):
        raise TypeError(f"{name!r} is not a parser (it has no parse method)")
    return obj
