"""What an HTML page will cost to build as a tree, found in one cheap scan before it is built.

An HTML5 parser (lexbor for the parse, html5ever inside nh3 for the view) spends time in
proportion to the depth of the tree for every tag it reads, and it copies every formatting
element left open (``<b>``, ``<font>``, ``<a>``...) into each new block once its block is closed
around it (the "reconstruction of the active formatting elements"). Counting start tags minus
end tags is not enough for either: the tree builder ignores an end tag with no element of that
name open in scope (``<div></i>`` repeated nests the divs ever deeper) and an end tag of an
ordinary element across a block (a span holding a div, then the span's end tag), while a
formatting element closed by its block's end tag is not closed at all: it comes back in the
next block.

So this scan keeps a model of the tree builder's two lists, as the HTML standard defines them,
close to an upper bound for what lexbor and html5ever build (on random tag soup lexbor goes a
few levels past it at worst, in rare corners of the standard the model leaves out; a table
counts as the four levels its deepest cell is in):

* the stack of open elements, where an end tag pops only an element of its name that is in
  scope (no scope boundary such as ``<table>`` above it; for an ordinary element and most
  others, no "special" element such as ``<div>`` above it), and
* the list of active formatting elements, each one in the stack or waiting to be re-opened,
  with the standard's limit of three identical entries (the "Noah's Ark" clause).

It reports the deepest nesting seen and how many formatting elements were re-opened; both
are refused past their limits by ``html.html_to_text`` and by the view's renderer. The scan is
linear in the markup: every element is pushed and popped a bounded number of times, and every
re-opening is counted and stops the scan past its budget. Pure Python: no Django import.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

#: Elements that never hold others (void) or close themselves when a sibling opens
#: (optional end tags): neither makes the tree deeper. (``<p>`` is modelled: closing it
#: closes the formatting inside it, which the next paragraph re-opens; ``<li>``, ``<dd>``,
#: ``<dt>`` and ``<option>`` close their like only under the standard's conditions; table rows
#: and cells are counted once per table: see ``_IMPLIED``.)
FLAT_TAGS = frozenset(
    {
        *("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"),
        *("param", "source", "track", "wbr", "keygen", "frame", "basefont", "bgsound"),
        *("tr", "td", "th", "thead", "tbody"),
        *("tfoot", "colgroup", "caption", "rb", "rt", "rp", "html", "head", "body"),
    }
)
#: The formatting elements: closed by their own end tag only, re-opened in each new block.
FORMATTING_TAGS = frozenset(
    {"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong"}
    | {"tt", "u"}
)
#: An end tag of one of these pops elements only if no such element is above its own.
SCOPE_BOUNDARIES = frozenset(
    {"applet", "caption", "html", "table", "td", "th", "marquee", "object", "template"}
    | {"mi", "mo", "mn", "ms", "mtext", "annotation-xml", "foreignobject", "desc", "title"}
)
#: The standard's "special" elements: an end tag of an ordinary element (a span, a
#: custom element) does not cross one of them.
SPECIAL_TAGS = SCOPE_BOUNDARIES | frozenset(
    {
        *("address", "article", "aside", "blockquote", "button", "center", "details"),
        *("dialog", "dir", "div", "dl", "fieldset", "figcaption", "figure", "footer", "form"),
        *("frameset", "h1", "header", "hgroup", "iframe", "listing", "main", "menu", "nav"),
        *("noembed", "noframes", "noscript", "ol", "plaintext", "pre", "script", "search"),
        *("section", "select", "style", "summary", "textarea", "ul", "xmp", "p", "li"),
        *("dd", "dt", "tbody", "tfoot", "thead", "tr", "body", "head", "colgroup"),
    }
)
#: End tags that close their element wherever it is in scope; any other end tag (``</span>``,
#: ``</noscript>``) closes its element only if no special element is open above it.
_SCOPED_END = frozenset(
    {
        *("address", "article", "aside", "blockquote", "button", "center", "details"),
        *("dialog", "dir", "div", "dl", "fieldset", "figcaption", "figure", "footer"),
        *("header", "hgroup", "listing", "main", "menu", "nav", "ol", "pre", "search"),
        *("section", "summary", "ul", "form", "applet", "marquee", "object", "h1", "table"),
    }
)
#: Foreign content (SVG, MathML): ``<x/>`` closes itself there, and no element is raw text.
_FOREIGN_ROOTS = frozenset({"svg", "math"})
#: Foreign elements whose content is read as HTML again, under each root.
_INTEGRATION_POINTS = {
    "svg": frozenset({"foreignobject", "desc", "title"}),
    "math": frozenset({"mi", "mo", "mn", "ms", "mtext", "annotation-xml"}),
}
#: HTML start tags that end foreign content (the SVG or MathML around them is closed first).
_BREAKOUT = frozenset(
    {
        *("b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt"),
        *("em", "embed", "h1", "head", "hr", "i", "img", "li", "listing", "menu", "meta"),
        *("nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong", "strike", "sub"),
        *("sup", "table", "tt", "u", "ul", "var"),
    }
)
#: ``<font>`` ends foreign content only with one of these attributes.
_FONT_BREAKOUT = re.compile(r"\b(color|face|size)\s*=", re.I)
#: Inside a <select>, end tags of anything but these are ignored.
_SELECT_END = frozenset({"select", "option", "optgroup", "template"})
#: HTML elements whose content is text up to their end tag: tags inside are not tags.
#: (``<noscript>`` is not one: both parsers run without scripting, so its content is markup.)
_RAW_TEXT_END = {
    name: re.compile(f"</{name}", re.I)
    for name in ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
}
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: Start tags that close an open ``<p>`` first (``<table>`` does not in quirks mode).
_CLOSES_P = frozenset(
    {
        *("address", "article", "aside", "blockquote", "center", "details", "dialog", "dir"),
        *("div", "dl", "fieldset", "figcaption", "figure", "footer", "header", "hgroup"),
        *("main", "menu", "nav", "ol", "p", "search", "section", "summary", "ul", "h1"),
        *("pre", "listing", "form", "plaintext", "xmp", "hr", "li", "dd", "dt"),
    }
)
#: Start tags before which the tree builder does not re-open formatting (blocks, table parts,
#: what belongs in the head): the next text or inline element does, inside them.
_NO_REOPEN = _CLOSES_P | frozenset(
    {
        *("table", "caption", "col", "colgroup", "tbody", "td", "tfoot", "th", "thead", "tr"),
        *("html", "head", "body", "frameset", "frame", "base", "basefont", "bgsound", "link"),
        *("meta", "noframes", "script", "style", "template", "title"),
    }
)
#: The elements a table (or a template) holds around its content in every row: the deepest
#: cell is this far inside it, however its rows and cells are written.
_IMPLIED = {"table": ("tbody", "tr", "td"), "template": ("tbody", "tr", "td")}
#: What a new list item (or definition) closes, and what stops the search for it.
_LIST_ITEMS = {"li": ("li",), "dd": ("dd", "dt"), "dt": ("dd", "dt")}
_NOT_STOPPING = frozenset({"address", "div", "p"})
#: At most this many identical entries in the list of active formatting elements.
_NOAHS_ARK = 3
_TAG_OR_COMMENT = re.compile(r"<(/?)([A-Za-z][^\s/>]*)|<!--")
_COMMENT_END = re.compile(r"--!?>")


@dataclass(frozen=True)
class Nesting:
    """What the scan found: the deepest nesting, and formatting elements re-opened."""

    depth: int
    reopened: int


class _Formatting:
    """One entry of the list of active formatting elements."""

    __slots__ = ("alive", "key", "level", "listed", "name", "waiting")

    def __init__(self, name: str, key: str, level: int) -> None:
        self.name, self.key, self.level = name, key, level
        self.listed = True  # still in the list (not pushed out by the Noah's Ark clause)
        self.alive = True  # still adds to the depth, open or waiting to be re-opened
        self.waiting = False  # closed around by its block: re-opened by the next content


class _Scan:
    """The tree builder's stack and formatting list, modelled as ``nesting`` explains."""

    def __init__(self) -> None:
        self.stack: list[str] = []  # open elements other than formatting ones
        self.positions: dict[str, list[int]] = {}  # each name's places in the stack
        self.specials: list[int] = []  # places of special elements (boundaries included)
        self.boundaries: list[int] = []
        self.stoppers: list[int] = []  # special elements but address, div and p
        self.foreign: list[str] = []  # each element of the stack: "svg", "math" or "" (HTML)
        self.open_formatting: list[_Formatting] = []  # in the stack, in the order opened
        self.by_name: dict[str, list[_Formatting]] = {}
        self.by_key: dict[str, deque[_Formatting]] = {}
        self.listed: dict[str, int] = {}  # entries of each key still in the list
        self.waiting: list[_Formatting] = []
        self.formatting_depth = 0  # alive entries, open or waiting
        self.deepest = 0
        self.reopened = 0

    def _measure(self) -> None:
        depth = len(self.stack) + self.formatting_depth
        if depth > self.deepest:
            self.deepest = depth

    # -- the stack of open elements -------------------------------------------------------

    def in_foreign(self) -> bool:
        """Whether the current node is SVG or MathML whose content is not HTML."""
        root = self.foreign[-1] if self.foreign else ""
        if not root or self.stack[-1] in _INTEGRATION_POINTS[root]:
            return False
        last = self.open_formatting[-1] if self.open_formatting else None
        return last is None or last.level < len(self.stack)  # no HTML formatting inside it

    def in_select(self) -> bool:
        places = self.positions.get("select")
        return bool(places) and places[-1] > (self.boundaries[-1] if self.boundaries else -1)

    def push(self, name: str, foreign: str) -> None:
        at = len(self.stack)
        self.stack.append(name)
        self.foreign.append(foreign)
        self.positions.setdefault(name, []).append(at)
        if name in SPECIAL_TAGS:
            self.specials.append(at)
            if name not in _NOT_STOPPING:
                self.stoppers.append(at)
        if name in SCOPE_BOUNDARIES:
            self.boundaries.append(at)
        self._measure()

    def pop_to(self, size: int) -> None:
        """Pop the stack down to ``size`` elements; formatting opened above waits."""
        while len(self.stack) > size:
            name = self.stack.pop()
            self.foreign.pop()
            at = len(self.stack)
            self.positions[name].pop()
            if self.specials and self.specials[-1] == at:
                self.specials.pop()
            if self.stoppers and self.stoppers[-1] == at:
                self.stoppers.pop()
            if self.boundaries and self.boundaries[-1] == at:
                self.boundaries.pop()
        while self.open_formatting and self.open_formatting[-1].level > size:
            self._close_around(self.open_formatting.pop())

    def end(self, name: str) -> None:
        """An end tag of an element that is not a formatting one."""
        places = self.positions.get(name)
        if not places:
            return  # nothing of that name open: the tree builder ignores it
        if self.in_foreign() and self.foreign[places[-1]]:
            self.pop_to(places[-1])  # foreign content closes its own element by name
            return
        barriers = self.boundaries if name in _SCOPED_END else self.specials
        if barriers and barriers[-1] > places[-1]:
            return  # out of scope: ignored too
        self.pop_to(places[-1])

    def push_implied(self, name: str) -> None:
        """A table's rows and cells, counted once (plain: they are no scope to end tags)."""
        for implied in _IMPLIED.get(name, ()):
            self.stack.append(implied)
            self.foreign.append("")
            self.positions.setdefault(implied, []).append(len(self.stack) - 1)
        self._measure()

    def close_item(self, name: str) -> None:
        """A new ``<li>`` (``<dd>``, ``<dt>``) closes an open one unless a special element
        other than address, div and p is open above it."""
        tops = [self.positions[n][-1] for n in _LIST_ITEMS[name] if self.positions.get(n)]
        if tops and max(tops) >= (self.stoppers[-1] if self.stoppers else -1):
            self.pop_to(max(tops))

    def close_option(self) -> None:
        if self.stack and self.stack[-1] == "option":
            self.pop_to(len(self.stack) - 1)

    def close_p(self) -> None:
        """Close an open ``<p>`` in button scope (a ``</p>``, or a block that starts)."""
        places = self.positions.get("p")
        if not places:
            return
        buttons = self.positions.get("button")
        barrier = max(
            self.boundaries[-1] if self.boundaries else -1, buttons[-1] if buttons else -1
        )
        if barrier < places[-1]:
            self.pop_to(places[-1])

    # -- the list of active formatting elements -------------------------------------------

    def open_format(self, name: str, attributes: str) -> None:
        if name in ("a", "nobr") and self._last_listed(name) is not None:
            self.end_format(name)  # a new link closes the one still open
        key = f"{name} {' '.join(attributes.split())}"
        same = self.by_key.setdefault(key, deque())
        if self.listed.get(key, 0) >= _NOAHS_ARK:
            while not same[0].listed:
                same.popleft()
            self._unlist(same.popleft())
        entry = _Formatting(name, key, len(self.stack))
        same.append(entry)
        self.listed[key] = self.listed.get(key, 0) + 1
        self.by_name.setdefault(name, []).append(entry)
        self.open_formatting.append(entry)
        self.formatting_depth += 1
        self._measure()

    def end_format(self, name: str) -> None:
        entry = self._last_listed(name)
        if entry is None:
            return
        self._unlist(entry)
        if not entry.alive:
            return  # it was waiting: nothing of it is open
        if self.specials and self.specials[-1] >= entry.level:
            self._drop(entry)  # a block opened inside it stays open: only it goes
            return
        self.pop_to(entry.level)
        while self.open_formatting and self.open_formatting[-1] is not entry:
            self._close_around(self.open_formatting.pop())
        if self.open_formatting:
            self.open_formatting.pop()
        self._drop(entry)

    def reopen(self) -> None:
        """Content after a block closed around formatting: the formatting opens again."""
        if not self.waiting:
            return
        for entry in self.waiting:
            if entry.alive:
                entry.waiting = False
                entry.level = len(self.stack)
                self.open_formatting.append(entry)
                self.reopened += 1
        self.waiting = []
        self._measure()

    def _last_listed(self, name: str) -> _Formatting | None:
        entries = self.by_name.get(name)
        while entries and not entries[-1].listed:
            entries.pop()
        return entries[-1] if entries else None

    def _close_around(self, entry: _Formatting) -> None:
        if not entry.alive:
            return
        if entry.listed:
            entry.waiting = True
            self.waiting.append(entry)
        else:
            self._drop(entry)

    def _unlist(self, entry: _Formatting) -> None:
        entry.listed = False
        self.listed[entry.key] -= 1
        if entry.waiting:
            self._drop(entry)

    def _drop(self, entry: _Formatting) -> None:
        if entry.alive:
            entry.alive = False
            self.formatting_depth -= 1


def measure_nesting(markup: str, *, stop_depth: int, stop_reopened: int) -> Nesting:
    """How deeply ``markup`` nests and how many formatting elements it re-opens, in one scan
    that stops once either passes its ``stop_`` value."""
    scan = _Scan()
    at = 0
    search = _TAG_OR_COMMENT.search
    while scan.deepest <= stop_depth and scan.reopened <= stop_reopened:
        found = search(markup, at)
        if found is None:
            break
        start, slash, name = found.start(), found.group(1), found.group(2)
        if scan.waiting and start > at and not markup[at:start].isspace():
            scan.reopen()  # text re-opens what its block closed around
        if name is None:
            at = _after_comment(markup, found.end())
        elif slash:
            _end_tag(scan, _name(name))
            close = markup.find(">", found.end())  # what follows the name is inside the tag
            at = len(markup) if close < 0 else close + 1
        else:
            at = _start_tag(scan, markup, found)
    return Nesting(scan.deepest, scan.reopened)


def _name(raw: str) -> str:
    name = raw.lower()
    return "h1" if name in _HEADINGS else name  # </h2> closes an open <h1>


def _after_comment(markup: str, at: int) -> int:
    """Where scanning goes on after ``<!--`` (``<!-->`` and ``--!>`` end a comment too)."""
    if markup.startswith(">", at) or markup.startswith("->", at):
        return markup.index(">", at) + 1
    end = _COMMENT_END.search(markup, at)
    return end.end() if end else len(markup)


def _end_tag(scan: _Scan, name: str) -> None:
    if name in FLAT_TAGS or (name not in _SELECT_END and scan.in_select()):
        return
    if name == "p":
        scan.close_p()
    elif name == "option":
        scan.close_option()
    elif name == "template" and _html_template(scan):
        scan.pop_to(scan.positions[name][-1])  # any template open, in scope or not
    elif name in FORMATTING_TAGS:
        scan.end_format(name)
    else:
        scan.end(name)


def _html_template(scan: _Scan) -> bool:
    places = scan.positions.get("template")
    return bool(places) and not scan.foreign[places[-1]]


def _start_tag(scan: _Scan, markup: str, found: re.Match[str]) -> int:
    """Take in one start tag; return where scanning goes on."""
    name = _name(found.group(2))
    close = markup.find(">", found.end())
    if close < 0:
        return len(markup)  # a tag never closed: the rest is inside it
    attributes = markup[found.end() : close]
    if name in _BREAKOUT or (name == "font" and _FONT_BREAKOUT.search(attributes)):
        while scan.in_foreign():
            scan.pop_to(len(scan.stack) - 1)
    if scan.in_foreign() or name in _FOREIGN_ROOTS:
        scan.push(name, scan.foreign[-1] if scan.in_foreign() else name)
        if markup[close - 1] == "/":  # <path/> opens and closes at once (in HTML, <div/> opens)
            scan.pop_to(len(scan.stack) - 1)
        return close + 1
    _html_start(scan, name, attributes)
    if name == "plaintext":
        return len(markup)  # everything after it is text
    raw_end = _RAW_TEXT_END.get(name)
    if raw_end is None:
        return close + 1
    end = raw_end.search(markup, close)
    if end is None:
        return len(markup)
    scan.pop_to(len(scan.stack) - 1)
    return end.end()


def _html_start(scan: _Scan, name: str, attributes: str) -> None:
    if name not in _NO_REOPEN:
        scan.reopen()
    if name in _CLOSES_P and not scan.in_select():
        scan.close_p()
    if name in _LIST_ITEMS:
        scan.close_item(name)
    elif name in ("option", "optgroup"):
        scan.close_option()
    if name in FLAT_TAGS:
        return
    if name in FORMATTING_TAGS:
        scan.open_format(name, attributes)
    else:
        scan.push(name, "")
        scan.push_implied(name)
