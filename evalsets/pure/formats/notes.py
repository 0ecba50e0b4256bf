"""What a format's writer hands back: `ExportNotes` saying, in words and counts, what the
format could not carry; and `ExportRefused`, the one error a writer raises on purpose.
Nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


class ExportRefused(ValueError):
    """A writer cannot write this set faithfully; the message names the item or id and why.

    The only exception a writer raises on purpose: a file that reads back differently from
    what the app holds is worse than no file.
    """


@dataclass(slots=True)
class ExportNotes:
    """What an export wrote and, in words, everything the format could not carry.

    `notes` is for people; `counts` holds the same facts as numbers keyed by a stable slug
    (`extra_anchors`, `unanswerable`, ...) for code that wants to decide something.
    """

    format: str
    items: int = 0
    rows: int = 0
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.notes)


class Tally:
    """Item ids that share one caveat, kept bounded: a count plus the first few ids.

    Export memory must not grow with the set, so a caveat that hits 9,000 items is a number
    and three names, not a list of 9,000 ids.
    """

    __slots__ = ("_last", "_size", "count", "key", "sample", "template")

    def __init__(self, key: str, template: str, sample_size: int = 3) -> None:
        self.key = key
        self.template = template
        self.count = 0
        self.sample: list[str] = []
        self._size = sample_size
        self._last: str | None = None

    def add(self, item_id: str) -> None:
        """Count `item_id` once, however many of its anchors hit the caveat (items stream in
        order, so a repeat is always the item just added)."""
        if item_id == self._last:
            return
        self._last = item_id
        self.count += 1
        if len(self.sample) < self._size:
            self.sample.append(item_id)

    def render(self) -> str | None:
        if not self.count:
            return None
        names = ", ".join(self.sample)
        if self.count > len(self.sample):
            names = f"{names} and {self.count - len(self.sample)} more"
        one = self.count == 1
        return self.template.format(
            n=self.count, noun="item" if one else "items", has="has" if one else "have", ids=names
        )


def finish_notes(notes: ExportNotes, tallies: Iterable[Tally], extra: Iterable[str] = ()) -> None:
    """Render every tally that was hit into `notes`, in the order given."""
    for tally in tallies:
        text = tally.render()
        if text:
            notes.notes.append(text)
            notes.counts[tally.key] = tally.count
    notes.notes.extend(extra)
