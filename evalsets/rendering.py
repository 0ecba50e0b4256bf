"""A document as it looks (HTML, Markdown, Word), made safe, cut into sections, tied to a parse.

Annotators read the uploaded page, not only a parser's text of it, so this module turns the
bytes into HTML a browser may show: HTML is sanitised with nh3, Markdown is rendered with
markdown-it-py exactly as its parser renders it (then sanitised), Word goes through mammoth's
HTML (then sanitised). The allow-list keeps structure and text but nothing that acts or loads:
no script, style, event handler, link target, form or remote image (only ``data:`` images).

A selection in that view must become an anchor in the reference parse, so the rendered text is
aligned to the parse: both are reduced to their characters that are not white space (the
browser and the parsers disagree on spaces and line breaks, never on letters) and matched in
order, skipping what only one side has (a menu the parser drops, a caption it keeps). The
result is a list of runs ``(rendered_index, parse_index, length)`` over those characters. A
large page is cut into sections of about ``SECTION_CHARS`` so the browser draws only what is
near the reader. Pure Python: no Django import.
"""

from __future__ import annotations

import bisect
import io
import re
from dataclasses import dataclass, field

from .parsers.encoding import decode_html, decode_text

#: The kinds of document with a view "as it looks" drawn from this module.
RENDERED_KINDS = frozenset({"html", "markdown", "docx"})

#: About this much HTML per section (a section holds whole top-level blocks).
SECTION_CHARS = 64 * 1024

#: White space: Python's (``str.isspace``), the same characters the view's script counts
#: (rendered.js ``WHITE``).
WHITE = "\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_DROP_WHITE = {c: None for c in range(0x3001) if chr(c).isspace()}

# -- sanitising --------------------------------------------------------------------------------

_TAGS = frozenset(
    {
        *("a", "abbr", "article", "aside", "b", "bdi", "bdo", "blockquote", "br", "caption"),
        *("center", "cite", "code", "col", "colgroup", "dd", "del", "details", "dfn", "div"),
        *("dl", "dt", "em", "figcaption", "figure", "footer", "h1", "h2", "h3", "h4", "h5"),
        *("h6", "header", "hgroup", "hr", "i", "img", "ins", "kbd", "li", "main", "mark"),
        *("nav", "ol", "p", "pre", "q", "s", "samp", "section", "small", "span", "strike"),
        *("strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead"),
        *("time", "tr", "tt", "u", "ul", "var", "wbr"),
    }
)
#: Dropped with everything inside them: never text a reader sees.
_DROP_WITH_CONTENT = frozenset(
    {
        *("script", "style", "title", "noscript", "template", "textarea", "select", "svg"),
        *("math", "iframe", "object", "embed", "head", "button", "option"),
    }
)
_ATTRIBUTES = {
    "*": {"title", "lang", "dir"},
    "img": {"alt", "width", "height", "src"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "ol": {"start", "reversed"},
}
_IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|bmp);", re.I)


def _keep_attribute(tag: str, name: str, value: str) -> str | None:
    if tag == "img" and name == "src":
        return value if _IMAGE_DATA.match(value) else None  # no network load, ever
    if name in {"width", "height", "colspan", "rowspan", "start"} and not value.isdigit():
        return None
    return value


def sanitize_for_view(markup: str) -> str:
    """Untrusted HTML made inert for the rendered view: structure and text only.

    Stricter than ``parsers.html.sanitize_html`` (which keeps links): a link's target is
    dropped (clicking it would load a page into the view), so are remote images and every
    ``style``/``class``/``id`` (no CSS of the document's own can reach or cover our page).
    """
    import nh3

    return nh3.clean(
        markup,
        tags=set(_TAGS),
        clean_content_tags=set(_DROP_WITH_CONTENT),
        attributes={k: set(v) for k, v in _ATTRIBUTES.items()},
        attribute_filter=_keep_attribute,
        url_schemes={"data"},
        link_rel=None,
        strip_comments=True,
    )


def render_html(kind: str, data: bytes) -> str:
    """The sanitised HTML of a document of ``kind`` (one of ``RENDERED_KINDS``)."""
    if kind == "html":
        markup, _ = decode_html(data)
    elif kind == "markdown":
        from markdown_it import MarkdownIt

        source, _ = decode_text(data)
        # The same renderer and options as the markdown-it parser (parsers/markdown.py), so
        # the view and the reference parse read the same words.
        markup = (
            MarkdownIt("commonmark", {"html": True})
            .enable(["table", "strikethrough"])
            .render(source)
        )
    elif kind == "docx":
        import mammoth

        markup = mammoth.convert_to_html(io.BytesIO(data)).value
    else:
        raise ValueError(f"no rendered view for {kind!r} documents")
    return sanitize_for_view(markup)


# -- sections ----------------------------------------------------------------------------------


def split_sections(clean: str, *, size: int = SECTION_CHARS) -> list[tuple[str, str]]:
    """Cut sanitised HTML into ``(html, text)`` sections of whole top-level blocks.

    ``text`` is what the browser's text nodes of that section hold, read by an HTML5 parser
    (lexbor) as the browser's own parser reads the same markup.
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(f"<body>{clean}</body>")
    body = tree.body
    sections: list[tuple[str, str]] = []
    html_parts: list[str] = []
    text_parts: list[str] = []
    length = 0
    child = body.child if body is not None else None
    while child is not None:
        if child.is_text_node:
            markup = _escape_text(child.text_content or "")
            text = child.text_content or ""
        else:
            markup = child.html or ""
            text = child.text(deep=True) or ""
        html_parts.append(markup)
        text_parts.append(text)
        length += len(markup)
        if length >= size:
            sections.append(("".join(html_parts), "".join(text_parts)))
            html_parts, text_parts, length = [], [], 0
        child = child.next
    if html_parts and ("".join(text_parts).strip() or not sections):
        sections.append(("".join(html_parts), "".join(text_parts)))
    return sections or [("", "")]


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- alignment ---------------------------------------------------------------------------------


def solid(text: str) -> str:
    """``text`` without its white space (the characters alignment compares)."""
    return text.translate(_DROP_WHITE)


#: How many characters must agree for the alignment to pick up again after a difference, how
#: far along each side a difference may reach, and how far ahead the other side is searched.
_KEY = 8
_LOOKAHEAD = 48
_WINDOWS = (2_048, 262_144)


def align(rendered: str, parse: str) -> list[tuple[int, int, int]]:
    """Runs ``(i, j, n)``: ``rendered[i:i+n] == parse[j:j+n]``, increasing in both.

    Both arguments are ``solid`` texts. Equal stretches are matched at C speed (slices
    compared in growing steps); after a difference the alignment goes on from the nearest
    place where ``_KEY`` characters agree again (``_resync``), and a stretch that agrees
    nowhere nearby is passed over one character on each side at a time.
    """
    runs: list[tuple[int, int, int]] = []
    i = j = 0
    len_r, len_p = len(rendered), len(parse)
    while i < len_r and j < len_p:
        n = _common_prefix(rendered, i, parse, j)
        if n:
            runs.append((i, j, n))
            i += n
            j += n
            continue
        i, j = _resync(rendered, i, parse, j)
    return runs


def _common_prefix(a: str, i: int, b: str, j: int) -> int:
    n, step = 0, 64
    while True:
        x, y = a[i + n : i + n + step], b[j + n : j + n + step]
        if x and x == y:
            n += len(x)
            step = min(step * 2, 1 << 16)
            continue
        lo, hi = 0, min(len(x), len(y))
        while lo < hi:  # x[:lo] == y[:lo]; find the first difference
            mid = (lo + hi + 1) // 2
            if x[:mid] == y[:mid]:
                lo = mid
            else:
                hi = mid - 1
        return n + lo


def _resync(r: str, i: int, p: str, j: int) -> tuple[int, int]:
    """Where to go on after ``r[i] != p[j]``: the nearest pair of positions (fewest characters
    skipped on both sides together) from which ``_KEY`` characters agree."""
    for window in _WINDOWS:
        best: tuple[int, int, int] | None = None
        for d in range(_LOOKAHEAD):
            if best is not None and best[0] <= d:
                break  # a later start cannot skip fewer characters
            key_p = p[j + d : j + d + _KEY]
            if key_p:  # the parse has d characters the view does not show
                at = r.find(key_p, i, i + window + _KEY)
                if at >= 0 and (at, d) != (i, 0):
                    best = min(best or (1 << 62, 0, 0), (d + at - i, at, j + d))
            key_r = r[i + d : i + d + _KEY]
            if key_r:  # the view shows d characters the parse left out
                at = p.find(key_r, j, j + window + _KEY)
                if at >= 0 and (at, d) != (j, 0):
                    best = min(best or (1 << 62, 0, 0), (d + at - j, i + d, at))
            if not key_p and not key_r:
                break
        if best is not None:
            return best[1], best[2]
    return i + 1, j + 1


# -- the rendition -----------------------------------------------------------------------------


@dataclass
class Section:
    number: int
    html: str
    #: Where this section's solid text starts in the whole view's solid text.
    solid_start: int
    solid_length: int


@dataclass
class Rendition:
    """A document's rendered view, cut into sections and aligned to one parse's text."""

    sections: list[Section]
    runs: list[tuple[int, int, int]]
    parse_text: str
    _checkpoints: list[int] = field(default_factory=list)  # solid count before each block
    _run_starts: list[int] = field(default_factory=list)
    _parse_starts: list[int | None] | None = None

    _BLOCK = 1 << 14

    @classmethod
    def build(cls, clean_html: str, parse_text: str, *, size: int = SECTION_CHARS) -> Rendition:
        sections = []
        at = 0
        solids = []
        for number, (markup, text) in enumerate(split_sections(clean_html, size=size), 1):
            s = solid(text)
            solids.append(s)
            sections.append(Section(number, markup, at, len(s)))
            at += len(s)
        runs = align("".join(solids), solid(parse_text))
        rendition = cls(sections=sections, runs=runs, parse_text=parse_text)
        rendition._index()
        return rendition

    def _index(self) -> None:
        count, marks = 0, []
        for at in range(0, len(self.parse_text), self._BLOCK):
            marks.append(count)
            count += len(solid(self.parse_text[at : at + self._BLOCK]))
        self._checkpoints = marks
        self._run_starts = [r[0] for r in self.runs]

    def parse_offset(self, k: int) -> int:
        """The code-point offset in the parse text of its ``k``-th solid character."""
        block = max(0, bisect.bisect_right(self._checkpoints, k) - 1)
        count = self._checkpoints[block] if self._checkpoints else 0
        at = block * self._BLOCK
        text = self.parse_text
        for m in _SOLID_CHAR.finditer(text, at):
            if count == k:
                return m.start()
            count += 1
        return len(text)

    def section_runs(self, section: Section) -> list[tuple[int, int, int]]:
        """The runs inside one section, cut to it (rendered indexes still whole-view)."""
        lo, hi = section.solid_start, section.solid_start + section.solid_length
        first = max(0, bisect.bisect_right(self._run_starts, lo) - 1)
        out = []
        for i, j, n in self.runs[first:]:
            if i >= hi:
                break
            a, b = max(i, lo), min(i + n, hi)
            if a < b:
                out.append((a, j + (a - i), b - a))
        return out

    def parse_starts(self) -> list[int | None]:
        """Where each section's text starts in the parse (``None``: none of it is there), so a
        view can tell which section to load for a parse offset (a search hit). Worked out once
        per rendition."""
        if self._parse_starts is None:
            starts: list[int | None] = []
            for section in self.sections:
                runs = self.section_runs(section)
                starts.append(self.parse_offset(runs[0][1]) if runs else None)
            self._parse_starts = starts
        return self._parse_starts

    def section_payload(self, section: Section) -> dict:
        """What the view needs to draw one section and map it to the parse.

        ``parse_start``/``parse_end`` bound the parse text this section shows (``None`` when
        none of it is in the parse), ``parse_text`` is that text, and each run is
        ``[rendered, parse, length]`` counted in solid characters from the section's start
        and from ``parse_start``.
        """
        runs = self.section_runs(section)
        payload = {
            "number": section.number,
            "html": section.html,
            "solid_length": section.solid_length,
            "parse_start": None,
            "parse_end": None,
            "parse_text": "",
            "runs": [],
        }
        if runs:
            p0 = runs[0][1]
            last = runs[-1]
            start = self.parse_starts()[section.number - 1]
            end = self.parse_offset(last[1] + last[2] - 1) + 1
            payload.update(
                parse_start=start,
                parse_end=end,
                parse_text=self.parse_text[start:end],
                runs=[[i - section.solid_start, j - p0, n] for i, j, n in runs],
            )
        return payload


_SOLID_CHAR = re.compile(f"[^{WHITE}]")


def rendered_to_parse(payload: dict, a: int, b: int) -> tuple[int, int] | None:
    """The parse span of solid characters ``a..b`` (exclusive) of a section, as the view
    maps a selection: the first character at or after ``a`` that the parse has, to the last
    one before ``b``. ``None`` when the parse has none of them. (rendered.js does the same.)
    """
    runs = payload["runs"]
    first = last = None
    for i, j, n in runs:
        if first is None and i + n > a:
            first = j + max(0, a - i)
        if i < b:
            last = j + min(n, b - i) - 1
    if first is None or last is None or last < first:
        return None
    text = payload["parse_text"]
    offsets = [m.start() for m in _SOLID_CHAR.finditer(text)]
    return payload["parse_start"] + offsets[first], payload["parse_start"] + offsets[last] + 1
