"""Which parsers exist, which ones read each kind of document, and which one is the reference.

Reading the same document with several parsers is the point of Groundwork, so the list of parsers
per kind is data, not code scattered through the app. Parser modules import their libraries only
when they parse, so importing the registry (as the web process does) stays cheap.


A team plugs in its own parser without forking: any object with ``name``, ``kind`` (or
``kinds``, a tuple), ``version`` and ``parse(data, *, max_pages, progress) -> ParsedText``,
named by a dotted path ``"package.module:ATTR"`` in the ``GROUNDWORK_PARSERS`` setting or
published under the ``groundwork.parsers`` entry point group. ``register_plugins`` adds them
(the app calls it at start-up); a workspace then chooses them in its ``parser_settings``
like the built-in ones. The isolated runner is handed their dotted path, so the child process
that parses finds them without reading Django's settings.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib import metadata

from . import docx, html, markdown, markitdown_md, pdf_pdfium, pdf_pdfminer, pdf_pypdf, text
from .base import Parser

PARSERS: dict[str, Parser] = {
    module.PARSER.name: module.PARSER
    for module in (pdf_pypdf, pdf_pdfminer, pdf_pdfium, docx, html, markdown, text, markitdown_md)
}
#: The entry point group a package publishes its parsers under.
ENTRY_POINT_GROUP = "groundwork.parsers"
#: Parsers added by ``register_plugins``: name -> the dotted path they were loaded from.
PLUGIN_PATHS: dict[str, str] = {}

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


def kinds_of(parser: Parser) -> tuple[str, ...]:
    """The kinds of document a parser reads: its ``kinds``, or its one ``kind``."""
    return tuple(getattr(parser, "kinds", None) or (parser.kind,))


def parsers_for(kind: str) -> list[Parser]:
    """The parsers for a kind: the defaults in order, then any other registered for that kind."""
    if kind not in DEFAULT_PARSERS:
        raise KeyError(f"unknown document kind {kind!r}; expected one of {sorted(DEFAULT_PARSERS)}")
    names = list(DEFAULT_PARSERS[kind])
    names += [name for name, p in PARSERS.items() if kind in kinds_of(p) and name not in names]
    return [PARSERS[name] for name in names]


def register_plugins(paths: Iterable[str] = (), *, entry_points: bool = True) -> list[str]:
    """Register a team's own parsers: dotted paths (``GROUNDWORK_PARSERS``), then the
    ``groundwork.parsers`` entry points. Returns the names registered.

    A path that does not import, an object that is not a parser, a kind Groundwork does not
    know, or a name already taken by another parser raises at start-up, naming the path, so a
    typo is found when the app starts rather than on the first upload.
    """
    found = [str(path) for path in paths]
    if entry_points:
        found += [ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    names = []
    for path in found:
        if PLUGIN_PATHS.get(_name_of(path)) == path:
            continue  # registered already (the app and the worker both start up)
        parser = _load(path)
        for attr in ("name", "kind", "version"):
            if not isinstance(getattr(parser, attr, None), str) or not getattr(parser, attr):
                raise TypeError(f"parser {path!r} needs a non-empty string {attr!r}")
        unknown = [k for k in kinds_of(parser) if k not in DEFAULT_PARSERS]
        if unknown:
            raise ValueError(
                f"parser {path!r} reads {unknown}, which Groundwork does not sniff; "
                f"kinds are {sorted(DEFAULT_PARSERS)}"
            )
        taken = PARSERS.get(parser.name)
        if taken is not None and PLUGIN_PATHS.get(parser.name) != path:
            raise ValueError(f"parser {path!r} is called {parser.name!r}, a name already taken")
        PARSERS[parser.name] = parser
        PLUGIN_PATHS[parser.name] = path
        names.append(parser.name)
    return names


def _name_of(path: str) -> str:
    return next((name for name, p in PLUGIN_PATHS.items() if p == path), "")


def isolated_name(name: str) -> str:
    """What to hand the isolated runner's child: a plugin's dotted path, else the name."""
    return PLUGIN_PATHS.get(name, name)


def get_parser(name: str) -> Parser:
    """A registered parser by name, or any parser object by dotted path ``"package.module:Attr"``.

    A dotted path names a parser instance or a class (instantiated without arguments); it lets the
    isolated runner execute parsers that are not registered, such as the diagnostic parsers in
    ``evalsets.pure.parsers.diagnostic``. Names come from code and settings, never from users.
    """
    if name in PARSERS:
        return PARSERS[name]
    if ":" not in name:
        raise KeyError(f"unknown parser {name!r}; registered parsers are {sorted(PARSERS)}")
    return _load(name)


def _load(path: str) -> Parser:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"a parser is named by a dotted path 'package.module:ATTR', got {path!r}")
    obj = getattr(importlib.import_module(module_name), attr)
    if isinstance(obj, type):
        obj = obj()
    if not callable(getattr(obj, "parse", None)):
        raise TypeError(f"{path!r} is not a parser (it has no parse method)")
    return obj
