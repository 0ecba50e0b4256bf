"""How one parse's reading of a passage differs from the reference parse's, as data.

The "how each parser read this evidence" panel puts each parse's text of an anchor side by
side. This module compares two short passages (bounded by the caller, never whole parses)
word by word and names each difference the way an annotator thinks of it: a ligature
("ﬁ" for "fi"), lost or added spaces, a word hyphenated across a line, case, punctuation or
markup, text moved elsewhere (columns read in another order), and text missing or extra.
Runs of whitespace compare equal, so a line break where the other has a space is no
difference. Pure Python, no Django; the page draws the segments.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

from evalsets.pure.resolver import fold

__all__ = ["KINDS", "diff_passages", "tally"]

#: Every kind of difference, in the order a legend lists them.
KINDS = ("ligature", "space", "hyphen", "case", "punctuation", "moved", "missing", "extra", "text")

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
_HYPHEN_BREAK = re.compile(r"[-\u00ad\u2010\u2011]\s*")
#: A block of at least this many word characters counts as moved when most of it stands
#: elsewhere in the other passage.
MOVED_MIN = 8


def _key(token: str) -> str:
    return " " if token.isspace() else token


def _squash(text: str) -> str:
    return "".join(text.split())


def _kind(ref: str, other: str) -> str:
    """What kind of difference turns ``ref`` into ``other`` (one of them may be empty)."""
    a, b = _squash(ref), _squash(other)
    if a == b:
        return "space"
    if unicodedata.normalize("NFKC", a) == unicodedata.normalize("NFKC", b):
        return "ligature"
    if _HYPHEN_BREAK.sub("", ref).split() == _HYPHEN_BREAK.sub("", other).split() or (
        _squash(_HYPHEN_BREAK.sub("", ref)) == _squash(_HYPHEN_BREAK.sub("", other))
    ):
        return "hyphen"
    if a.casefold() == b.casefold():
        return "case"
    if fold(a) == fold(b):  # quotes, dashes, accents, Markdown's marks
        return "punctuation"
    if not a:
        return "extra"
    if not b:
        return "missing"
    return "text"


def _moved(block: str, elsewhere: str) -> bool:
    """Whether most of ``block`` (squashed) stands elsewhere in the other passage."""
    squashed = _squash(block)
    if sum(ch.isalnum() for ch in squashed) < MOVED_MIN:
        return False
    if squashed in elsewhere:
        return True
    longest = SequenceMatcher(None, squashed, elsewhere, autojunk=False).find_longest_match()
    return longest.size >= max(MOVED_MIN, 0.6 * len(squashed))


def diff_passages(reference: str, other: str) -> list[dict]:
    """``other`` as segments against ``reference``.

    Each segment is ``{"op", "text", "ref", "kind"}``: ``op`` is ``equal`` (``text`` reads as
    the reference does), ``changed`` (``text`` stands where the reference has ``ref``),
    ``extra`` (``text`` the reference does not have) or ``missing`` (``ref`` is not here;
    ``text`` is empty). ``kind`` names the difference (one of ``KINDS``; empty when equal).
    Concatenating every ``text`` gives ``other`` back exactly.
    """
    ref_tokens = _TOKENS.findall(reference)
    other_tokens = _TOKENS.findall(other)
    matcher = SequenceMatcher(
        None, [_key(t) for t in ref_tokens], [_key(t) for t in other_tokens], autojunk=False
    )
    ref_all, other_all = _squash(reference), _squash(other)
    segments: list[dict] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        ref_part = "".join(ref_tokens[i1:i2])
        text = "".join(other_tokens[j1:j2])
        if op == "equal":
            segment = {"op": "equal", "text": text, "ref": "", "kind": ""}
        elif op == "insert":
            kind = "space" if text.isspace() else _kind("", text)
            if kind == "extra" and _moved(text, ref_all):
                kind = "moved"
            segment = {"op": "extra", "text": text, "ref": "", "kind": kind}
        elif op == "delete":
            kind = "space" if ref_part.isspace() else _kind(ref_part, "")
            if kind == "missing" and _moved(ref_part, other_all):
                kind = "moved"
            segment = {"op": "missing", "text": "", "ref": ref_part, "kind": kind}
        else:
            segment = {
                "op": "changed",
                "text": text,
                "ref": ref_part,
                "kind": _kind(ref_part, text),
            }
        if segments and segment["op"] == "equal" and segments[-1]["op"] == "equal":
            segments[-1]["text"] += text
        else:
            segments.append(segment)
    return segments


def tally(segments: list[dict]) -> dict[str, int]:
    """How many differences of each kind, in ``KINDS`` order, kinds with none left out."""
    counts = {kind: 0 for kind in KINDS}
    for segment in segments:
        if segment["kind"]:
            counts[segment["kind"]] += 1
    return {kind: n for kind, n in counts.items() if n}
