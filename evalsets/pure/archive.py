"""The one way an uploaded ZIP archive is read: with limits, counted while it is unpacked.

A 1 MB zip can unpack to gigabytes, hold millions of tiny members, or carry one line of
hundreds of megabytes; read naively it takes the process's memory with it. Every reader of an
uploaded archive (BEIR imports, the import format guesser, DOCX parsing, upload sniffing)
opens it through ``GuardedZip``, which refuses, with ``ArchiveTooLarge`` naming the limit and
the member:

* more members than ``max_members`` -- counted by walking the central directory's records
  before ``zipfile`` builds an object per member (its end record's count can lie);
* more unpacked bytes than ``max_unpacked_bytes`` in all -- the declared sizes are checked
  first, and the bytes are counted again as they are decompressed, so a header that lies
  about ``file_size`` gains nothing;
* a member that unpacks more than ``max_ratio`` times its compressed size once past
  ``ratio_floor_bytes`` (real text compresses 5-30 times, bombs 1,000);
* a line longer than ``max_line_bytes`` in a member read line by line.

Members are streamed in small chunks; ``lines()`` never holds more than one line. Nested
archives are never opened: a zip inside a zip is just bytes to the reader that asked for it.
Pure Python with no Django import, so the isolated parser process uses it too; the limits come
from the environment (``GROUNDWORK_ARCHIVE_*``, see docs/deployment.md).
"""

from __future__ import annotations

import io
import os
import struct
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

CHUNK_BYTES = 64 * 1024
MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_members: int = 10_000
    max_unpacked_bytes: int = 500 * MB
    max_ratio: int = 200
    #: Members smaller than this unpacked are never refused for their ratio: a page of
    #: repeated markup may compress 1,000 to 1 and is harmless at that size.
    ratio_floor_bytes: int = 8 * MB
    max_line_bytes: int = 1 * MB

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ArchiveLimits:
        """The limits a deployment set, failing loudly on a value that is not a whole number."""

        def read(name: str, default: int) -> int:
            raw = environ.get(name)
            if raw is None or raw == "":
                return default
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{name} must be a whole number, got {raw!r}") from None

        default = cls()
        return cls(
            max_members=read("GROUNDWORK_ARCHIVE_MAX_MEMBERS", default.max_members),
            max_unpacked_bytes=read("GROUNDWORK_ARCHIVE_MAX_UNPACKED_MB", 500) * MB,
            max_ratio=read("GROUNDWORK_ARCHIVE_MAX_RATIO", default.max_ratio),
            max_line_bytes=read("GROUNDWORK_ARCHIVE_MAX_LINE_KB", 1024) * 1024,
        )


#: The limits every ``GuardedZip`` uses unless given others.
LIMITS = ArchiveLimits.from_env()


class ArchiveTooLarge(Exception):
    """An archive passes one of the limits; ``message`` names the limit and the member.

    ``message`` is ``f"{name} {clause}"``, ``name`` being what the caller called the archive;
    ``clause`` alone ("would unpack to 3.0 GB, past the 500 MB limit") lets a caller word
    the sentence its own way. ``limit`` is the ``ArchiveLimits`` field that was passed.
    """

    def __init__(self, name: str, clause: str, *, limit: str, member: str | None = None):
        self.message = f"{name} {clause}"
        super().__init__(self.message)
        self.clause = clause
        self.limit = limit
        self.member = member


def size_text(nbytes: int) -> str:
    """``3.0 GB``, ``40.0 MB``, ``512 KB``: sizes as a person reads them."""
    if nbytes >= 1024**3:
        return f"{nbytes / 1024**3:.1f} GB"
    if nbytes >= MB:
        return f"{nbytes / MB:.1f} MB"
    return f"{nbytes // 1024} KB"


def limit_text(nbytes: int) -> str:
    """A limit as it was configured: ``500 MB``, ``1 MB``, ``64 KB``."""
    if nbytes % MB == 0:
        return f"{nbytes // MB:,} MB"
    return f"{nbytes // 1024:,} KB"


def is_zip(data: bytes) -> bool:
    return data.startswith((b"PK\x03\x04", b"PK\x05\x06"))


def central_directory_entries(data: bytes, stop_after: int) -> int | None:
    """How many members the central directory really lists (counting stops past ``stop_after``).

    Walks the fixed-size records from the end-of-central-directory record without building
    anything, so a directory of millions of entries costs no memory. ``None`` when the bytes
    are not a readable ZIP directory (``zipfile`` then says what is wrong).
    """
    tail_start = max(0, len(data) - (22 + 65535))
    end = data.rfind(b"PK\x05\x06", tail_start)
    if end < 0 or end + 22 > len(data):
        return None
    (size_cd,) = struct.unpack_from("<I", data, end + 12)
    record = end
    if end >= 20 and data[end - 20 : end - 16] == b"PK\x06\x07":
        (offset,) = struct.unpack_from("<Q", data, end - 20 + 8)
        if data[offset : offset + 4] == b"PK\x06\x06" and offset + 56 <= len(data):
            (size_cd,) = struct.unpack_from("<Q", data, offset + 40)
            record = offset
    at = record - size_cd
    if at < 0:
        return None
    count = 0
    while at + 46 <= record and data[at : at + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, at + 28)
        at += 46 + name_len + extra_len + comment_len
        count += 1
        if count > stop_after:
            break
    return count


class GuardedZip:
    """A ZIP archive opened under ``limits``; raises ``ArchiveTooLarge`` past any of them.

    Opening checks the member count and the declared sizes; ``read``, ``open`` and ``lines``
    count the bytes actually unpacked against the same limits, for the whole archive.
    Raises ``zipfile.BadZipFile`` when the bytes are not a ZIP archive.
    """

    def __init__(
        self, data: bytes, *, name: str = "the archive", limits: ArchiveLimits | None = None
    ) -> None:
        self.name = name
        self.limits = limits or LIMITS
        self.unpacked = 0
        count = central_directory_entries(data, self.limits.max_members)
        if count is not None and count > self.limits.max_members:
            self._refuse_members()
        self._zip = zipfile.ZipFile(io.BytesIO(data))
        members = self._zip.infolist()
        if len(members) > self.limits.max_members:
            self._refuse_members()
        total = sum(member.file_size for member in members)
        if total > self.limits.max_unpacked_bytes:
            raise ArchiveTooLarge(
                self.name,
                f"would unpack to {size_text(total)}, past the "
                f"{limit_text(self.limits.max_unpacked_bytes)} limit",
                limit="max_unpacked_bytes",
            )
        for member in members:
            self._check_ratio(member.filename, member.file_size, member.compress_size)

    def __enter__(self) -> GuardedZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()

    def names(self) -> list[str]:
        return self._zip.namelist()

    def chunks(self, member: str) -> Iterator[bytes]:
        """The member's bytes in chunks of at most ``CHUNK_BYTES``, counted as they unpack."""
        info = self._zip.getinfo(member)
        produced = 0
        with self._zip.open(info) as stream:
            while chunk := stream.read(CHUNK_BYTES):
                produced += len(chunk)
                self.unpacked += len(chunk)
                if self.unpacked > self.limits.max_unpacked_bytes:
                    raise ArchiveTooLarge(
                        self.name,
                        f"unpacks past the {limit_text(self.limits.max_unpacked_bytes)} "
                        f"limit (reached in {member!r})",
                        limit="max_unpacked_bytes",
                        member=member,
                    )
                self._check_ratio(member, produced, info.compress_size)
                yield chunk

    def read(self, member: str) -> bytes:
        """The whole member, for members that are read whole (bounded by the limits)."""
        return b"".join(self.chunks(member))

    def lines(self, member: str) -> Iterator[bytes]:
        """The member's lines without their ``\\n``, one at a time, each within the line limit."""
        limit = self.limits.max_line_bytes
        pending = b""
        number = 1
        for chunk in self.chunks(member):
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", start)) >= 0:
                if end - start > limit:
                    self._refuse_line(member, number)
                yield pending[start:end]
                number += 1
                start = end + 1
            pending = pending[start:]
            if len(pending) > limit:
                self._refuse_line(member, number)
        if pending:
            yield pending

    def _check_ratio(self, member: str, unpacked: int, compressed: int) -> None:
        limits = self.limits
        if unpacked <= limits.ratio_floor_bytes or unpacked <= limits.max_ratio * max(
            compressed, 1
        ):
            return
        ratio = unpacked // max(compressed, 1)
        raise ArchiveTooLarge(
            self.name,
            f"would unpack to {size_text(unpacked)} from one part compressed {ratio:,} to 1 "
            f"({member!r}), past the limit of {limits.max_ratio} to 1",
            limit="max_ratio",
            member=member,
        )

    def _refuse_members(self) -> None:
        raise ArchiveTooLarge(
            self.name,
            f"holds more than the limit of {self.limits.max_members:,} separate files",
            limit="max_members",
        )

    def _refuse_line(self, member: str, number: int) -> None:
        raise ArchiveTooLarge(
            self.name,
            f"has a line longer than the {limit_text(self.limits.max_line_bytes)} limit for "
            f"one line ({member!r}, line {number:,})",
            limit="max_line_bytes",
            member=member,
        )
