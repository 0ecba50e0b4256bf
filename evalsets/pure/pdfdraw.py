"""Draw a PDF page as an image, and lay out its text layer: the pure core of the PDF view.

The page is drawn by pdfium (pypdfium2), the engine that also read the ``pdfium`` parse, so
what the annotator sees and the characters they select come from one reading of the file.
The text layer is a list of *runs*: stretches of one line of the parse's page text with the box
they cover. The browser places one transparent span per run over the image; a selection inside
a span is ``run start + characters into the span``, an offset in the parse without guessing.

What a page costs to draw is what the file asks for: a few hundred bytes can ask for millions
of full-page fills, or a page 60,000 points tall. So ``draw_page`` draws in a limited child
process (``parsers.limited``) with a wall-clock, processor-time and memory budget, and every
image is held to a number of pixels whatever the page's shape. The web process and the workers
call ``draw_page``; ``render_page`` is the drawing itself, for the child and the benchmark.

No Django here. pdfium is not thread-safe, so every call into it goes through ``PDFIUM_LOCK``;
in a child that lock has one user, so one costly page no longer holds up anyone else's.
"""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import pypdfium2 as pdfium

from evalsets.pure.parsers import charboxes
from evalsets.pure.parsers.limited import JobError, LimitExceeded, limited_job, run_limited

#: pdfium keeps global state: one thread at a time in this process.
PDFIUM_LOCK = threading.Lock()

#: The scales a page may be drawn at (1 = 72 dpi). A short list keeps the cache bounded and
#: shared: everyone asking for page 7 at 1.5 gets the same file.
SCALES = (1.0, 1.5, 2.0)
DEFAULT_SCALE = 1.5
#: The widest image drawn, in pixels, whatever the page's size (a poster is scaled down).
MAX_PIXELS_WIDE = 2400
#: The most pixels in one image (width x height): a tall or huge page is scaled down to fit.
#: 12 million is an A0 poster 2400 pixels wide; an A4 page at 2 is 2 million.
DEFAULT_MAX_PIXELS = 12_000_000
#: Below this scale (5 dpi) a page scaled to fit the pixel limit is unreadable: refused.
MIN_SCALE = 0.07
#: JPEG at high quality without chroma subsampling: text stays crisp, and it encodes 5-10
#: times faster than WebP (measured on this machine: ~40 ms against ~250 ms for an A4 page at
#: 1.5), which is most of the time a page not drawn yet takes.
IMAGE_TYPE = "image/jpeg"
IMAGE_SUFFIX = ".jpg"

_DRAW_JOB = "evalsets.pure.pdfdraw:draw_page_job"


class PageNotDrawn(Exception):
    """A page that could not be drawn, with a sentence a reader can act on.

    ``lasting`` is False when another try may succeed (the machine was too busy to finish in
    time), so the failure is not remembered for the page.
    """

    def __init__(self, reason: str, *, code: str = "not_drawn", lasting: bool = True) -> None:
        super().__init__(reason)
        self.code = code
        self.lasting = lasting


@dataclass(frozen=True)
class DrawBudget:
    """What one page drawing may cost: pixels in the image, seconds and megabytes."""

    max_pixels: int = DEFAULT_MAX_PIXELS
    timeout_s: float = 30.0
    cpu_s: float = 20.0
    memory_mb: int = 1024

    @property
    def max_image_bytes(self) -> int:
        """The largest JPEG such an image can be (three bytes a pixel is beyond any real page)."""
        return self.max_pixels * 3 + 1024 * 1024


def fitted_scale(width: float, height: float, scale: float, max_pixels: int) -> float:
    """``scale`` lowered until the page is at most ``MAX_PIXELS_WIDE`` wide and ``max_pixels``
    in all, counting whole pixels as pdfium rounds them."""
    width, height = max(width, 1.0), max(height, 1.0)
    fitted = min(scale, MAX_PIXELS_WIDE / width, math.sqrt(max_pixels / (width * height)))
    while fitted > 0 and _pixels(width, fitted) * _pixels(height, fitted) > max_pixels:
        fitted *= 0.995  # a partial pixel on each side: a step or two at most
    return fitted


def _pixels(points: float, scale: float) -> int:
    return max(math.ceil(points * scale), 1)


def render_page(
    source: str | bytes,
    index: int,
    scale: float = DEFAULT_SCALE,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> bytes:
    """Page ``index`` (0-based) of the PDF at ``source`` (a path or the bytes) as a JPEG image,
    drawn in this process, with no budget but its pixels: call ``draw_page`` instead."""
    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source)
        except pdfium.PdfiumError as exc:
            raise PageNotDrawn(f"the PDF could not be opened to draw it ({exc})") from None
        try:
            image = _draw(document, index, scale, max_pixels)
        finally:
            document.close()
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=88, subsampling=0)
    return out.getvalue()


def _draw(document: pdfium.PdfDocument, index: int, scale: float, max_pixels: int):
    if not 0 <= index < len(document):
        raise PageNotDrawn(f"this PDF has no page {index + 1}")
    try:
        page = document[index]
    except pdfium.PdfiumError:
        raise PageNotDrawn("the page is damaged and pdfium cannot load it") from None
    try:
        width, height = page.get_size()
        fitted = fitted_scale(width, height, scale, max_pixels)
        if fitted < MIN_SCALE:
            raise PageNotDrawn(
                f"the page is {width:,.0f} x {height:,.0f} points, too large to draw legibly "
                f"within the limit of {max_pixels:,} pixels an image",
                code="too_large",
            )
        try:
            return page.render(scale=fitted, may_draw_forms=True).to_pil()
        except MemoryError:
            raise  # the limited child answers it as over the memory budget
        except Exception as exc:
            raise PageNotDrawn(f"pdfium failed while drawing it ({exc})") from None
    finally:
        page.close()


@limited_job
def draw_page_job(
    payload: bytes, *, index: int, scale: float, max_pixels: int, path: str | None = None
) -> bytes:
    """The child's side of ``draw_page``: the PDF is at ``path``, else it is the payload."""
    try:
        return render_page(path or payload, index, scale, max_pixels)
    except PageNotDrawn as exc:
        raise JobError(exc.code, str(exc)) from None


def draw_page(
    source: str | bytes,
    index: int,
    scale: float = DEFAULT_SCALE,
    budget: DrawBudget = DrawBudget(),
) -> bytes:
    """Page ``index`` (0-based) of the PDF at ``source`` (a path or the bytes) as a JPEG image,
    drawn in a limited child within ``budget``.

    Raises ``PageNotDrawn`` with the reason: the page's own fault, or which budget it hit.
    """
    path, payload = (source, b"") if isinstance(source, str) else (None, source)
    args = {"index": index, "scale": scale, "max_pixels": budget.max_pixels, "path": path}
    try:
        return run_limited(
            _DRAW_JOB,
            payload,
            args=args,
            timeout_s=budget.timeout_s,
            memory_mb=budget.memory_mb,
            cpu_s=budget.cpu_s,
            max_output_bytes=budget.max_image_bytes,
            what="drawing it",
        )
    except LimitExceeded as exc:
        lasting = exc.limit != "wall_clock"  # a busy machine, not the page: try again later
        raise PageNotDrawn(exc.reason.rstrip("."), code=exc.code, lasting=lasting) from None
    except JobError as exc:
        raise PageNotDrawn(exc.reason.rstrip("."), code=exc.code) from None


def _same_line(a: Sequence[int], b: Sequence[int]) -> bool:
    """Box ``b`` continues the line box ``a`` ends with: overlapping heights, moving right."""
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    height = min(a[3] - a[1], b[3] - b[1])
    if height <= 0 or overlap < height / 2:
        return False
    line_height = max(a[3] - a[1], b[3] - b[1])
    return a[0] - line_height / 2 <= b[0] <= a[2] + 3 * line_height


def text_runs(text: str, page: charboxes.PageBoxes) -> list[list[int]]:
    """The runs of one page: ``[start, end, x0, y0, x1, y1]``, ``start``/``end`` counted in
    code points from the page's first character and the box in 0..65535 of the page.

    A run is a stretch of one line; a line break, a jump back or a wide gap (a column) starts
    another. Characters without a box (a space the library inserted) ride with their run.
    """
    boxes = page.boxes()
    if len(boxes) != len(text):
        raise ValueError(
            f"the page has {len(text)} characters but {len(boxes)} boxes; "
            "the boxes belong to another reading of the file"
        )
    runs: list[list[int]] = []
    current: list[int] | None = None
    last: tuple[int, int, int, int] | None = None
    for i, ch in enumerate(text):
        box = boxes[i]
        if ch == "\n":
            current, last = None, None
            continue
        has_box = box[0] <= box[2]
        if has_box and current is not None and last is not None and not _same_line(last, box):
            current = None
        if current is None:
            if not has_box:
                continue  # nothing to place it by; its offsets still lie between runs
            current = [i, i, box[0], box[1], box[2], box[3]]
            runs.append(current)
        current[1] = i + 1
        if has_box:
            current[2] = min(current[2], box[0])
            current[3] = min(current[3], box[1])
            current[4] = max(current[4], box[2])
            current[5] = max(current[5], box[3])
            last = box
    for run in runs:  # a trailing space without a box would stretch nothing
        while (
            run[1] > run[0]
            and text[run[1] - 1] == " "
            and boxes[run[1] - 1][0] > boxes[run[1] - 1][2]
        ):
            run[1] -= 1
    return runs
