"""Read plain text of any encoding: detect it, never crash, and normalise newlines.

Text files are the simplest upload and the easiest to get wrong: Windows editors save UTF-16 with
a byte-order mark, old exports are cp1252 or Latin-1, and line endings vary. The text is kept as
written (no re-wrapping), with CR LF and lone CR turned into LF and NUL characters removed.
This parser is also the "raw source" reading of Markdown files.
"""

from __future__ import annotations

from .base import ParsedText, ParseError, ProgressFn, clean_text, library_version, report
from .encoding import decode_text


class PlainTextParser:
    name = "plaintext"
    kind = "text"
    version = library_version("charset-normalizer")  # the library that decides the decoding

    def parse(
        self, data: bytes, *, max_pages: int = 2000, progress: ProgressFn | None = None
    ) -> ParsedText:
        del max_pages  # plain text has no pages
        if not data:
            raise ParseError("empty", "This file is empty.")
        raw, encoding = decode_text(data)
        text = clean_text(raw).lstrip("\ufeff")
        report(progress, 1, 1)
        if not text.strip():
            raise ParseError("empty", "This file contains no text.")
        return ParsedText(
            text=text,
            page_starts=[0],
            parser=self.name,
            parser_version=self.version,
            meta={"encoding": encoding},
        )


PARSER = PlainTextParser()
