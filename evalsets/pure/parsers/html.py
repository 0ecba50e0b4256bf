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
from .nesting import measure_nesting

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
#: A ``<header>`` inside one of these is the article's own; any other is a page banner.
_ARTICLE_TAGS = frozenset({"article", "main"})
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

    Raises ``ParseError("too_large")`` for markup the tree builder would take too long over
    (``check_nesting``).
    """
    from selectolax.lexbor import LexborHTMLParser

    check_nesting(markup)
    tree = LexborHTMLParser(markup)
    for node in tree.css(_DROP_SELECTOR):
        node.decompose()
    root = tree.body or tree.root
    if root is None:
        return ""
    return tidy_block_text(_TextWriter().walk(root))


#: How deeply elements may nest before a page is refused (see ``nesting.py``).
MAX_DEPTH = 1_000
#: How many formatting elements a page may make the tree builder re-open, per character of
#: markup, before it is refused: an ordinary page re-opens a few; one that leaves hundreds of
#: ``<b id=...>`` open around short paragraphs makes every paragraph copy them all.
MAX_REOPENED_PER_CHAR = 1
#: ... and at least this many, whatever the size.
MIN_REOPENED = 10_000


def reopen_budget(markup: str) -> int:
    """How many formatting elements ``markup`` may make the tree builder re-open."""
    return max(MIN_REOPENED, MAX_REOPENED_PER_CHAR * len(markup))


def check_nesting(markup: str) -> None:
    """Refuse (``ParseError("too_large")``) markup whose tree would cost the HTML parser far
    more than its size: nested deeper than ``MAX_DEPTH`` (building the tree costs time in
    proportion to the depth for every tag, so 100,000 nested ``<div>`` would hold a worker
    for its whole time limit), or re-opening more formatting elements than
    ``reopen_budget`` (each copy is a new element, so the tree would outgrow the page)."""
    budget = reopen_budget(markup)
    found = measure_nesting(markup, stop_depth=MAX_DEPTH, stop_reopened=budget)
    if found.depth > MAX_DEPTH:
        raise ParseError(
            "too_large",
            f"This page nests its elements more than {MAX_DEPTH:,} levels deep, far more than "
            "any real page (browsers stop at 512); it was refused because reading it would "
            "take too long. Save the page again from a browser, or upload its text.",
        )
    if found.reopened > budget:
        raise ParseError(
            "too_large",
            "This page leaves so many bold, italic, link or other formatting elements open "
            f"that its paragraphs would repeat them more than {budget:,} times; it was "
            "refused because reading it would take too long. Save the page again from a "
            "browser, or upload its text.",
        )


class _TextWriter:
    """Walks the tree without recursion (deeply nested pages must not hit the recursion limit).

    Each node is entered once and left once (``steps`` counts them), and whether a header is
    inside an article is known from the walk itself: asking each header for its ancestors
    cost the depth of the page for every header.
    """

    def __init__(self) -> None:
        self.out: list[str] = []
        self.pending_break = _NO_BREAK
        self.pending_space = ""
        self.pre_depth = 0
        self.article_depth = 0
        self.steps = 0

    def walk(self, root: object) -> str:
        # Stack entries: (node, entering, a table cell came before it among its siblings).
        # Children are pushed in reverse so they pop in order; the cell flag is found in the
        # same pass over the children, so a row of 100,000 cells costs no more than a list.
        stack: list[tuple[object, bool, bool]] = [(root, True, False)]
        while stack:
            node, entering, cell_before = stack.pop()
            self.steps += 1
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
        if tag == "header" and not self.article_depth:
            return False  # a page banner, not the article's own header
        if tag in _ARTICLE_TAGS:
            self.article_depth += 1
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
        if tag in _ARTICLE_TAGS:
            self.article_depth -= 1

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
