"""Draw a PDF page as an image, and lay out its text layer: the pure core of the PDF view.

The page is drawn by pdfium (pypdfium2), the engine that also read the ``pdfium`` parse, so
what the annotator sees and the characters they select come from one reading of the file.
The text layer is a list of *runs*: stretches of one line of the parse's page text with the box
they cover. The browser places one transparent span per run over the image; a selection inside
a span is ``run start + characters into the span``, an offset in the parse without guessing.

No Django here: the web process, the workers and the benchmark call these directly.
pdfium is not thread-safe, so every call into it goes through ``PDFIUM_LOCK``.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence

from evalsets.parsers import charboxes

#: pdfium keeps global state: one thread at a time in this process.
PDFIUM_LOCK = threading.Lock()

#: The scales a page may be drawn at (1 = 72 dpi). A short list keeps the cache bounded and
#: shared: everyone asking for page 7 at 1.5 gets the same file.
SCALES = (1.0, 1.5, 2.0)
DEFAULT_SCALE = 1.5
#: The widest image drawn, in pixels, whatever the page's size (a poster is scaled down).
MAX_PIXELS_WIDE = 2400
#: JPEG at high quality without chroma subsampling: text stays crisp, and it encodes 5-10
#: times faster than WebP (measured on this machine: ~40 ms against ~250 ms for an A4 page at
#: 1.5), which is most of the time a page not drawn yet takes.
IMAGE_TYPE = "image/jpeg"
IMAGE_SUFFIX = ".jpg"


class PageNotDrawn(Exception):
    """A page pdfium could not draw, with a sentence a reader can act on."""


def render_page(source: str | bytes, index: int, scale: float = DEFAULT_SCALE) -> bytes:
    """Page ``index`` (0-based) of the PDF at ``source`` (a path or the bytes) as a JPEG image."""
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(source)
        except pdfium.PdfiumError as exc:
            raise PageNotDrawn(f"the PDF could not be opened to draw it ({exc})") from None
        try:
            if not 0 <= index < len(document):
                raise PageNotDrawn(f"this PDF has no page {index + 1}")
            try:
                page = document[index]
            except pdfium.PdfiumError:
                raise PageNotDrawn("the page is damaged and pdfium cannot load it") from None
            try:
                width = page.get_width()
                scale = min(scale, MAX_PIXELS_WIDE / max(width, 1.0))
                bitmap = page.render(scale=scale, may_draw_forms=True)
                image = bitmap.to_pil()
            except Exception as exc:
                raise PageNotDrawn(f"pdfium failed while drawing it ({exc})") from None
            finally:
                page.close()
        finally:
            document.close()
    out = io.BytesIO()
    image.convert("RGB").save(out, "JPEG", quality=88, subsampling=0)
    return out.getvalue()


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
