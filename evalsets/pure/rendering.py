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
near the reader.

What a view costs depends on the file, so it is bounded: markup the HTML parser would take too
long over is refused before the sanitiser reads it (``parsers.html.check_nesting``), a Word
file's images are inlined within ``max_image_bytes`` for all their references together, the
alignment reads at most ``ALIGN_WORK_PER_CHAR`` characters per character aligned, and the whole
build runs in a limited child process (``render_view_job``, started by ``renditions``). Pure
Python: no Django import.
"""

from __future__ import annotations

import base64
import bisect
import io
import json
import re
import struct
from dataclasses import dataclass, field

import mammoth
import nh3
from markdown_it import MarkdownIt
from selectolax.lexbor import LexborHTMLParser

from .parsers.base import ParseError
from .parsers.encoding import decode_html, decode_text
from .parsers.html import check_nesting
from .parsers.limited import JobError, limited_job

#: The kinds of document with a view "as it looks" drawn from this module.
RENDERED_KINDS = frozenset({"html", "markdown", "docx"})

#: About this much HTML per section (a section holds whole top-level blocks).
SECTION_CHARS = 64 * 1024

#: White space: Python's (``str.isspace``), the same characters the view's script counts
#: (``static/js/document/solid.js`` ``WHITE``).
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
#: Dropped with everything inside them: never text a reader sees, and never text the parser
#: keeps either (``parsers/html.py`` drops the same, so the two agree on what the page says).
#: ``<math>`` is not dropped: the parser reads a formula's text, so the view shows it too
#: (``_formulas_as_text``).
_DROP_WITH_CONTENT = frozenset(
    {
        *("script", "style", "title", "noscript", "template", "textarea", "select", "svg"),
        *("iframe", "object", "embed", "head", "button", "option", "canvas", "dialog"),
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


#: Image bytes a Word document's view may inline, all references together, by default.
DEFAULT_IMAGE_BYTES = 8 * 1024 * 1024


def render_html(kind: str, data: bytes, *, max_image_bytes: int = DEFAULT_IMAGE_BYTES) -> str:
    """The sanitised HTML of a document of ``kind`` (one of ``RENDERED_KINDS``).

    Raises ``ParseError("too_large")`` for markup the HTML parser would take too long over
    (``parsers.html.check_nesting``), before the sanitiser reads it.
    """
    if kind == "html":
        markup, _ = decode_html(data)
    elif kind == "markdown":
        source, _ = decode_text(data)
        # The same renderer and options as the markdown-it parser (parsers/markdown.py), so
        # the view and the reference parse read the same words.
        markup = (
            MarkdownIt("commonmark", {"html": True})
            .enable(["table", "strikethrough"])
            .render(source)
        )
    elif kind == "docx":
        markup = docx_to_html(data, max_image_bytes=max_image_bytes)
    else:
        raise ValueError(f"no rendered view for {kind!r} documents")
    check_nesting(markup)
    return sanitize_for_view(_formulas_as_text(markup))


_MATH_TAG = re.compile(r"<math", re.I)


def _formulas_as_text(markup: str) -> str:
    """``markup`` with each MathML formula replaced by its text.

    The parser reads a formula's text (``x=2``), and the sanitiser would drop it whole (it
    keeps HTML elements only): the view shows that text in its place, so the two agree.
    """
    if _MATH_TAG.search(markup) is None:
        return markup
    tree = LexborHTMLParser(markup)
    formulas = tree.css("math")
    if not formulas:
        return markup
    for formula in formulas:
        formula.replace_with(formula.text(deep=True) or "")
    return tree.html or ""


def docx_to_html(data: bytes, *, max_image_bytes: int) -> str:
    """mammoth's HTML of a Word file, with its images inlined up to ``max_image_bytes``.

    The file's own style map is ignored: it is the author's, and could map every paragraph
    to an element the sanitiser drops with its content (``p => script`` blanks the view).
    """
    return mammoth.convert_to_html(
        io.BytesIO(data),
        include_embedded_style_map=False,
        convert_image=mammoth.images.img_element(_InlineImages(max_image_bytes)),
    ).value


class _InlineImages:
    """mammoth's image converter, within a budget of image bytes for the whole document.

    mammoth inlines each reference to an image as its own copy in base64, so a small file
    that refers to one image ten thousand times would make a view of gigabytes. Every
    reference counts against the budget; past it an image is left out, its ``alt`` saying so.
    """

    def __init__(self, budget: int) -> None:
        self.left = budget
        self.left_out = 0

    def __call__(self, image) -> dict[str, str]:
        with image.open() as stream:
            data = stream.read(self.left + 1)
        if len(data) > self.left:
            self.left_out += 1
            return {"alt": "(image left out: the document's images pass the view's limit)"}
        self.left -= len(data)
        encoded = base64.b64encode(data).decode("ascii")
        return {"src": f"data:{image.content_type};base64,{encoded}"}


# -- sections ----------------------------------------------------------------------------------


def split_sections(clean: str, *, size: int = SECTION_CHARS) -> list[tuple[str, str]]:
    """Cut sanitised HTML into ``(html, text)`` sections of whole top-level blocks.

    ``text`` is what the browser's text nodes of that section hold, read by an HTML5 parser
    (lexbor) as the browser's own parser reads the same markup.
    """
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
_WINDOWS = (256, 2_048, 262_144)
#: The alignment's budget: characters its searches may read, per character aligned, plus a
#: floor. An ordinary page reads a few per character; a view and a parse that disagree
#: everywhere (an unrelated uploaded parse, a long passage only one side has) would read the
#: whole window for every few characters, hours for a page of a few hundred KB.
ALIGN_WORK_PER_CHAR = 512
ALIGN_WORK_FLOOR = 1 << 24


@dataclass
class Alignment:
    """Runs ``(i, j, n)``: ``rendered[i:i+n] == parse[j:j+n]``, increasing in both; ``work``
    (characters the searches read) and whether the budget ended it before both texts did."""

    runs: list[tuple[int, int, int]]
    work: int
    stopped: bool


def align(rendered: str, parse: str) -> list[tuple[int, int, int]]:
    """The runs of ``align_within_budget``."""
    return align_within_budget(rendered, parse).runs


def align_within_budget(rendered: str, parse: str, budget: int | None = None) -> Alignment:
    """Align two ``solid`` texts, reading at most ``budget`` characters in searches (default
    ``ALIGN_WORK_PER_CHAR`` per character of both, plus ``ALIGN_WORK_FLOOR``).

    Equal stretches are matched at C speed (slices compared in growing steps); after a
    difference the alignment goes on from the nearest place where ``_KEY`` characters agree
    again (``_resync``), or past a passage longer than the windows that only one side has
    (``_far_resync``). Past the budget the rest stays unaligned: the view
    shows it, but a selection there maps to nothing in the parse.
    """
    len_r, len_p = len(rendered), len(parse)
    if budget is None:
        budget = ALIGN_WORK_PER_CHAR * (len_r + len_p) + ALIGN_WORK_FLOOR
    runs: list[tuple[int, int, int]] = []
    i = j = work = 0
    while i < len_r and j < len_p:
        if work > budget:
            return Alignment(runs, work, True)
        n = _common_prefix(rendered, i, parse, j)
        work += n + 1
        if n:
            runs.append((i, j, n))
            i += n
            j += n
            continue
        (i, j), cost = _resync(rendered, i, parse, j)
        work += cost
    return Alignment(runs, work, False)


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


def _resync(r: str, i: int, p: str, j: int) -> tuple[tuple[int, int], int]:
    """Where to go on after ``r[i] != p[j]``: the nearest pair of positions (fewest characters
    skipped on both sides together) from which ``_KEY`` characters agree; and how many
    characters the searches read."""
    cost = 0
    for window in _WINDOWS:
        best: tuple[int, int, int] | None = None
        for d in range(_LOOKAHEAD):
            if best is not None and best[0] <= d:
                break  # a later start cannot skip fewer characters
            key_p = p[j + d : j + d + _KEY]
            if key_p:  # the parse has d characters the view does not show
                at = r.find(key_p, i, i + window + _KEY)
                cost += _searched(at, i, window, len(r))
                if at >= 0 and (at, d) != (i, 0):
                    best = min(best or (1 << 62, 0, 0), (d + at - i, at, j + d))
            key_r = r[i + d : i + d + _KEY]
            if key_r:  # the view shows d characters the parse left out
                at = p.find(key_r, j, j + window + _KEY)
                cost += _searched(at, j, window, len(p))
                if at >= 0 and (at, d) != (j, 0):
                    best = min(best or (1 << 62, 0, 0), (d + at - j, i + d, at))
            if not key_p and not key_r:
                break
        if best is not None:
            return (best[1], best[2]), cost
    far, searched = _far_resync(r, i, p, j)
    return far, cost + searched


#: How many characters must agree for a resync found past every window.
_FAR_KEY = 32


def _far_resync(r: str, i: int, p: str, j: int) -> tuple[tuple[int, int], int]:
    """After no window found a resync: where the text at ``i`` (or ``j``) appears anywhere
    later on the other side (a passage only one side has, longer than the windows), the
    nearer of the two; else past ``_LOOKAHEAD`` characters on both sides (no alignment could
    start within them: its key would have been found). Also the characters searched."""
    key_r, key_p = r[i : i + _FAR_KEY], p[j : j + _FAR_KEY]
    in_p = p.find(key_r, j) if len(key_r) == _FAR_KEY else -1
    in_r = r.find(key_p, i) if len(key_p) == _FAR_KEY else -1
    searched = _searched(in_p, j, len(p), len(p)) + _searched(in_r, i, len(r), len(r))
    if in_p >= 0 and (in_r < 0 or in_p - j <= in_r - i):
        return (i, in_p), searched
    if in_r >= 0:
        return (in_r, j), searched
    return (i + _LOOKAHEAD, j + _LOOKAHEAD), searched


def _searched(at: int, start: int, window: int, length: int) -> int:
    """Characters a search from ``start`` read: up to what it found, or its whole window."""
    return (at - start if at >= 0 else min(window, length - start)) + _KEY


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
    #: What aligning it cost (characters its searches read) and whether the budget ended it.
    align_work: int = 0
    align_stopped: bool = False
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
        found = align_within_budget("".join(solids), solid(parse_text))
        rendition = cls(
            sections=sections,
            runs=found.runs,
            parse_text=parse_text,
            align_work=found.work,
            align_stopped=found.stopped,
        )
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


# -- the view built in a limited child process --------------------------------------------------


def view_input(data: bytes, parse_text: str) -> bytes:
    """The uploaded file and the parse's text in one payload for ``render_view_job``."""
    return struct.pack(">Q", len(data)) + data + parse_text.encode("utf-8", "surrogatepass")


def _read_view_input(payload: bytes) -> tuple[bytes, str]:
    (size,) = struct.unpack_from(">Q", payload)
    data = payload[8 : 8 + size]
    return data, payload[8 + size :].decode("utf-8", "surrogatepass")


def pack_view(rendition: Rendition) -> bytes:
    """The stored form of a view: one line of index (section count, each section's HTML size,
    where each starts in the parse, each one's byte range below), then one line a section."""
    lines, ranges, sizes = [], [], []
    at = 0
    for section in rendition.sections:
        line = json.dumps(rendition.section_payload(section)).encode("utf-8") + b"\n"
        lines.append(line)
        ranges.append([at, at + len(line)])
        sizes.append(len(section.html))
        at += len(line)
    index = {
        "section_count": len(sizes),
        "section_sizes": sizes,
        # where each section starts in the parse (None: none of it is): a search hit's section
        "section_parse_starts": rendition.parse_starts(),
        "ranges": ranges,
    }
    return json.dumps(index).encode("utf-8") + b"\n" + b"".join(lines)


def unpack_view(packed: bytes) -> tuple[dict, bytes]:
    """``pack_view``'s index, and its sections' lines as they are stored."""
    head, _, sections = packed.partition(b"\n")
    return json.loads(head), sections


@limited_job
def render_view_job(
    payload: bytes, *, kind: str, max_image_bytes: int, section_chars: int = SECTION_CHARS
) -> bytes:
    """Render, sanitise, cut and align a document's view (``view_input``) in the child that
    ``run_limited`` starts; the answer is ``pack_view``'s."""
    data, parse_text = _read_view_input(payload)
    try:
        clean = render_html(kind, data, max_image_bytes=max_image_bytes)
    except ParseError as exc:
        raise JobError(exc.code, exc.reason, exc.detail) from None
    del data
    return pack_view(Rendition.build(clean, parse_text, size=section_chars))
