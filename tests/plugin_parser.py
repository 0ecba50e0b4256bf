"""A tiny plug-in parser, as a team would write one: text files read in capitals."""

from __future__ import annotations

from evalsets.pure.parsers import ParsedText


class ShoutParser:
    name = "shout"
    kind = "text"
    version = "0.1"

    def parse(self, data: bytes, *, max_pages: int = 2000, progress=None) -> ParsedText:
        text = data.decode("utf-8").upper()
        return ParsedText(
            text=text, page_starts=[0], parser=self.name, parser_version=self.version, meta={}
        )


PARSER = ShoutParser()


class NotAParser:
    name = "nothing"
