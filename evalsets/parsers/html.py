"""Turn an HTML page into readable text with selectolax (lexbor), and sanitise HTML for display.

Saved web pages carry scripts, styles, menus and cookie banners around the text a labeller
actually quotes. This parser drops that boilerplate, keeps block structure as line breaks (blank
line between paragraphs and headings, one line per list item and table row, tab between cells),
preserves ``<pre>`` whitespace, and lets the HTML parser decode entities. Ligatures and smart
quotes are kept as written: normalising them is the comparison step's decision, not the reader's.

``sanitize_html`` is the one way to turn untrusted HTML into something safe to show in a page.
"""

from __future__ import annotations

import re

from .base import (
    ParsedText,
    ParseError,
    ProgressFn,
    library_version,
    tidy_block_text,
    unpaged_result,
)
from .encoding import decode_html

# Elements whose whole subtree is never readable text.
_DROP_SELECTOR = ", ".join(
    [
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "canvas",
        "iframe",
        "object",
        "embed",
        "nav",
        "aside",
        "footer",
        "button",
        "select",
        "textarea",
        "input",
        "dialog",
        "[hidden]",
        "[aria-hidden=true]",
        "[role=navigation]",
        "[role=banner]",
        "[role=contentinfo]",
        "[role=dialog]",
    ]
)
_SKIP_TAGS = frozenset({"head", "title", "meta", "link", "base", "-comment", "!doctype"})

# Blocks that end a paragraph (blank line) versus blocks that end a line.
_PARAGRAPH_TAGS = frozenset(
    {
        *("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol"),
        *("dl", "figure", "figcaption", "section", "article", "main", "header", "address"),
        *("details", "summary", "fieldset", "form", "hr", "center"),
    }
)
_LINE_TAGS = frozenset({"div", "li", "tr", "dt", "dd", "caption", "legend", "option", "label"})
_CELL_TAGS = frozenset({"td", "th"})
_WHITESPACE = re.compile(r"\s+")

_NO_BREAK, _LINE, _PARAGRAPH = 0, 1, 2


class SelectolaxParser:
    name = "selectolax"
    kind = "html"
    version = library_version("selectolax")

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        del max_pages  # a web page has no pages

        def read(raw: bytes) -> tuple[str, str]:
            markup, encoding = decode_html(raw)
            return html_to_text(markup), encoding

        return unpaged_result(
            self,
            data,
            read,
            progress=progress,
            nothing_readable="This page contains no readable text.",
        )


def html_to_text(markup: str) -> str:
    """Readable text of an HTML document or fragment (see the module docstring for the rules).

    Raises ``ParseError("too_large")`` for markup nested deeper than ``MAX_DEPTH``: building
    the tree costs the HTML parser time in proportion to the depth for every tag, so 100,000
    nested ``<div>`` would hold a worker for its whole time limit.
    """
    from selectolax.lexbor import LexborHTMLParser

    depth = nesting_depth(markup, stop_after=MAX_DEPTH)
    if depth > MAX_DEPTH:
        raise ParseError(
            "too_large",
            f"This page nests its elements more than {MAX_DEPTH:,} levels deep, far more than "
            "any real page (browsers stop at 512); it was refused because reading it would "
            "take too long. Save the page again from a browser, or upload its text.",
        )
    tree = LexborHTMLParser(markup)
    for node in tree.css(_DROP_SELECTOR):
        node.decompose()
    for header in tree.css("header"):  # page banners go; an article's own header stays
        if not _inside(header, {"article", "main"}):
            header.decompose()
    root = tree.body or tree.root
    if root is None:
        return ""
    return tidy_block_text(_TextWriter().walk(root))


#: How deeply elements may nest before a page is refused (see ``nesting_depth``).
MAX_DEPTH = 1_000
#: Elements that never hold others (void) or close themselves when a sibling opens
#: (optional end tags): neither makes the tree deeper.
_FLAT_TAGS = frozenset(
    {
        *("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"),
        *("param", "source", "track", "wbr", "keygen", "frame", "basefont", "bgsound"),
        *("p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody"),
        *("tfoot", "colgroup", "caption", "rb", "rt", "rp", "html", "head", "body"),
    }
)
#: HTML elements for which ``<x/>`` still opens an element (only foreign ones self-close).
_HTML_CONTAINERS = frozenset(
    {
        *("a", "abbr", "address", "article", "aside", "audio", "b", "bdi", "bdo", "blockquote"),
        *("button", "canvas", "center", "cite", "code", "data", "datalist", "del", "details"),
        *("dfn", "dialog", "div", "dl", "em", "fieldset", "figcaption", "figure", "font"),
        *("footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "i"),
        *("ins", "kbd", "label", "legend", "main", "map", "mark", "menu", "meter", "nav"),
        *("nobr", "object", "ol", "output", "picture", "pre", "progress", "q", "ruby", "s"),
        *("samp", "search", "section", "select", "slot", "small", "span", "strike"),
        *("strong", "sub", "summary", "sup", "table", "template", "time", "tt", "u", "ul"),
        *("var", "video", "big", "marquee", "dir", "applet", "frameset"),
    }
)
#: Elements whose content is text up to their end tag: tags inside are not tags.
_RAW_TEXT_END = {
    name: re.compile(f"</{name}", re.I)
    for name in (
        *("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"),
        "noscript",
    )
}
_TAG_OR_COMMENT = re.compile(r"<(/?)([A-Za-z][^\s/>]*)|<!--")


def nesting_depth(markup: str, *, stop_after: int) -> int:
    """How deeply the elements of ``markup`` nest, scanning it once (stops past ``stop_after``).

    A cheap estimate made before the real parse, never lower than the depth the HTML parser
    builds for ordinary markup: it counts start and end tags, skips comments and the text of
    scripts and styles, and leaves out elements that cannot deepen the tree (void elements,
    and those like ``<p>`` and ``<li>`` that a sibling closes).
    """
    depth = deepest = 0
    at = 0
    while (found := _TAG_OR_COMMENT.search(markup, at)) is not None:
        at = found.end()
        if found.group(2) is None:  # a comment
            end = markup.find("-->", at)
            if end < 0:
                break
            at = end + 3
            continue
        name = found.group(2).lower()
        if name in _FLAT_TAGS:
            continue
        if found.group(1):
            depth = max(0, depth - 1)
            continue
        close = markup.find(">", at)
        if close < 0:
            break
        if markup[close - 1] == "/" and name not in _HTML_CONTAINERS:
            at = close + 1
            continue  # <path/> in SVG: opens and closes at once
        raw_end = _RAW_TEXT_END.get(name)
        if raw_end is not None:
            end = raw_end.search(markup, close)
            at = end.end() if end else len(markup)
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > stop_after:
                break
    return deepest


def _inside(node: object, tags: set[str]) -> bool:
    parent = node.parent  # type: ignore[attr-defined]
    while parent is not None:
        if parent.tag in tags:
            return True
        parent = parent.parent
    return False


class _TextWriter:
    """Walks the tree without recursion (deeply nested pages must not hit the recursion limit)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.pending_break = _NO_BREAK
        self.pending_space = ""
        self.pre_depth = 0

    def walk(self, root: object) -> str:
        # Stack entries: (node, entering, a table cell came before it among its siblings).
        # Children are pushed in reverse so they pop in order; the cell flag is found in the
        # same pass over the children, so a row of 100,000 cells costs no more than a list.
        stack: list[tuple[object, bool, bool]] = [(root, True, False)]
        while stack:
            node, entering, cell_before = stack.pop()
            if entering:
                if self._enter(node, cell_before):
                    stack.append((node, False, False))
                    children = []
                    seen_cell = False
                    child = node.child  # type: ignore[attr-defined]
                    while child is not None:
                        children.append((child, True, seen_cell))
                        seen_cell = seen_cell or child.tag in _CELL_TAGS
                        child = child.next
                    stack.extend(reversed(children))
            else:
                self._leave(node)
        return "".join(self.out)

    # -- events ---------------------------------------------------------------------------

    def _enter(self, node: object, cell_before: bool) -> bool:
        """Handle the opening of ``node``; return whether to walk its children."""
        tag = node.tag  # type: ignore[attr-defined]
        if node.is_text_node:  # type: ignore[attr-defined]
            self._text(node.text_content or "")  # type: ignore[attr-defined]
            return False
        if tag in _SKIP_TAGS or not node.is_element_node:  # type: ignore[attr-defined]
            return False
        if tag == "br":
            self._hard_break()
            return False
        if tag in _PARAGRAPH_TAGS:
            self._block(_PARAGRAPH)
        elif tag in _LINE_TAGS:
            self._block(_LINE)
        elif tag in _CELL_TAGS and cell_before:
            self.pending_space = "\t"
        if tag == "pre":
            self.pre_depth += 1
        return True

    def _leave(self, node: object) -> None:
        tag = node.tag  # type: ignore[attr-defined]
        if tag in _PARAGRAPH_TAGS:
            self._block(_PARAGRAPH)
        elif tag in _LINE_TAGS:
            self._block(_LINE)
        if tag == "pre":
            self.pre_depth -= 1

    # -- output ---------------------------------------------------------------------------

    def _block(self, strength: int) -> None:
        self.pending_break = max(self.pending_break, strength)
        self.pending_space = ""

    def _hard_break(self) -> None:
        self._flush_break()
        self.out.append("\n")
        self.pending_space = ""

    def _flush_break(self) -> None:
        if self.pending_break and self.out:
            self.out.append("\n" if self.pending_break == _LINE else "\n\n")
            self.pending_space = ""
        self.pending_break = _NO_BREAK

    def _text(self, raw: str) -> None:
        if self.pre_depth:
            if raw:
                self._flush_break()
                self.out.append(raw)
            return
        collapsed = _WHITESPACE.sub(" ", raw)
        words = collapsed.strip(" ")
        if collapsed.startswith(" ") and not self.pending_space:
            self.pending_space = " "
        if not words:
            return
        had_break = self.pending_break and self.out
        self._flush_break()
        if self.pending_space and self.out and not had_break and not self.out[-1].endswith("\n"):
            self.out.append(self.pending_space)
        self.out.append(words)
        self.pending_space = " " if collapsed.endswith(" ") else ""


def sanitize_html(html: str) -> str:
    """Untrusted HTML made safe to show: nh3 (ammonia) allow-list, scripts and styles removed
    with their content, links limited to http(s)/mailto and marked ``noopener noreferrer
    nofollow``. Use it for anything from a corpus that is ever rendered as HTML."""
    import nh3

    return nh3.clean(
        html,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


PARSER = SelectolaxParser()
