"""A slow PDF parser whose slowness a test controls: it reads a PDF as pypdf does, but a PDF
of more than one page waits (reporting progress, as a slow parser working through its pages
would) until the test opens its gate: a file named after the PDF's hash in the folder
``GROUNDWORK_TEST_GATE_DIR`` (the worker's environment, which its parse child inherits).

It says it costs a second a page (``seconds_per_page``), so a long PDF's parse goes to the
slow parse queue and a one-page PDF's does not; it cannot read a range alone, as markitdown
cannot. Named by its dotted path ``tests.slow_parser:PARSER`` in a workspace's parsers.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from evalsets.pure.parsers import PARSERS, ParsedText

#: The longest it waits for its gate, so a test that fails never leaves a parse behind.
MAX_WAIT_S = 120


def gate(folder: Path, data: bytes) -> Path:
    """The file that lets the parse of ``data`` finish."""
    return folder / hashlib.sha256(data).hexdigest()


class GatedSlowParser:
    name = "gated-slow"
    kind = "pdf"
    version = "1"
    seconds_per_page = 1.0

    def parse(self, data: bytes, *, max_pages: int = 2000, progress=None) -> ParsedText:
        read = PARSERS["pypdf"].parse(data, max_pages=max_pages)
        pages = len(read.page_starts)
        folder = os.environ.get("GROUNDWORK_TEST_GATE_DIR", "")
        deadline = time.monotonic() + MAX_WAIT_S
        while pages > 1 and folder and not gate(Path(folder), data).exists():
            if progress is not None:
                progress(0, pages)
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if progress is not None:
            progress(pages, pages)
        return ParsedText(
            text=read.text,
            page_starts=read.page_starts,
            parser=self.name,
            parser_version=self.version,
            meta={},
        )


PARSER = GatedSlowParser()
