"""Stored files, through Django's storage API only, so every host reads what any host wrote.

Web and worker processes may run on hosts that share nothing but PostgreSQL, Redis and the
storage (``STORAGES["default"]``: a folder every host mounts, or S3-compatible object
storage). So no product code opens a stored file by its path: it reads and writes names in
the storage. These are the few things the storage API lacks:

- ``open_ranged``: a seekable reader that fetches only the byte ranges read (an S3 object is
  otherwise downloaded whole on the first read), for the character boxes of one page and
  the sections of a rendered view that one request serves;
- ``save_new``: store a file under exactly its name, or not at all when it exists already
  (another process stored it first: theirs stands);
- ``stored_names`` / ``delete_folder``: every file under a folder, and removing them all;
- ``copy_to_disk``: a local copy for a library that wants a path (pdfium reads a PDF lazily).
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from botocore.exceptions import ClientError
from django.core.files.base import ContentFile, File
from django.core.files.storage import Storage, default_storage
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

#: What one ranged fetch reads at least: a page's boxes or a few sections in one request.
RANGE_CHUNK = 256 * 1024


def storage() -> Storage:
    """The storage every file goes to (``STORAGES["default"]``)."""
    return default_storage


class _S3Range(io.RawIOBase):
    """An S3 object read by HTTP range requests as a seekable binary file."""

    def __init__(self, s3: S3Storage, name: str):
        super().__init__()
        self._client = s3.connection.meta.client
        self._bucket = s3.bucket_name
        self._key = s3._normalize_name(clean_name(name))
        head = self._client.head_object(Bucket=self._bucket, Key=self._key)
        self._size = head["ContentLength"]
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer) -> int:
        if self._position >= self._size or len(buffer) == 0:
            return 0
        end = min(self._size, self._position + len(buffer)) - 1
        answer = self._client.get_object(
            Bucket=self._bucket, Key=self._key, Range=f"bytes={self._position}-{end}"
        )
        data = answer["Body"].read()
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)


def open_ranged(name: str, store: Storage | None = None) -> BinaryIO:
    """``name`` opened for reading; on object storage only the byte ranges read are fetched.

    Raises ``FileNotFoundError`` when it is not stored."""
    store = store or storage()
    if isinstance(store, S3Storage):
        try:
            raw = _S3Range(store, name)
        except ClientError as exc:
            if _missing(exc):
                raise FileNotFoundError(name) from None
            raise
        return io.BufferedReader(raw, buffer_size=RANGE_CHUNK)
    return store.open(name, "rb")


def _missing(exc: ClientError) -> bool:
    """Whether S3 answered that the object is not there."""
    return exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


def modified_at(name: str, store: Storage | None = None) -> float | None:
    """When ``name`` was last stored (a timestamp), or None when it is not."""
    store = store or storage()
    try:
        return store.get_modified_time(name).timestamp()
    except FileNotFoundError:
        return None
    except ClientError as exc:
        if _missing(exc):
            return None
        raise


def read_bytes(name: str, store: Storage | None = None) -> bytes:
    """The whole of a small stored file (``FileNotFoundError`` when it is not stored)."""
    with (store or storage()).open(name, "rb") as handle:
        return handle.read()


def save_new(name: str, content: bytes | File, store: Storage | None = None) -> bool:
    """Store ``content`` under exactly ``name``; False (nothing kept) when a file of that
    name was stored first, by another process or earlier."""
    store = store or storage()
    if store.exists(name):
        return False
    body = content if isinstance(content, File) else ContentFile(content)
    saved = store.save(name, body)
    if saved != name:  # stored meanwhile by another process: the storage picked a new name
        store.delete(saved)
        return False
    return True


def replace(name: str, content: bytes, store: Storage | None = None) -> None:
    """Store ``content`` as ``name`` whether or not it exists (a small marker or counter)."""
    store = store or storage()
    store.delete(name)
    saved = store.save(name, ContentFile(content))
    if saved != name:  # another process wrote it at the same moment: one copy is enough
        store.delete(saved)


def stored_names(folder: str, store: Storage | None = None) -> Iterator[str]:
    """Every file under ``folder``, at any depth (nothing when it does not exist)."""
    store = store or storage()
    try:
        folders, files = store.listdir(folder)
    except (FileNotFoundError, NotImplementedError):
        return
    for name in files:
        yield f"{folder}/{name}"
    for name in folders:
        yield from stored_names(f"{folder}/{name}", store)


def listing(folder: str, store: Storage | None = None) -> Iterator[tuple[str, int, float]]:
    """Every file under ``folder`` as (name, bytes, modified as a timestamp): one paginated
    listing on object storage, not a request per file."""
    store = store or storage()
    if isinstance(store, S3Storage):
        yield from _s3_listing(store, folder)
        return
    for name in stored_names(folder, store):
        try:
            yield name, store.size(name), store.get_modified_time(name).timestamp()
        except FileNotFoundError:  # removed meanwhile
            continue


def _s3_listing(s3: S3Storage, folder: str) -> Iterator[tuple[str, int, float]]:
    prefix = s3._normalize_name(clean_name(folder)).rstrip("/") + "/"
    strip = len(prefix) - len(folder.rstrip("/")) - 1  # the storage's own location prefix
    pages = s3.connection.meta.client.get_paginator("list_objects_v2")
    for page in pages.paginate(Bucket=s3.bucket_name, Prefix=prefix):
        for entry in page.get("Contents", []):
            yield entry["Key"][strip:], entry["Size"], entry["LastModified"].timestamp()


def delete_folder(folder: str, store: Storage | None = None) -> int:
    """Delete every file under ``folder``; how many there were."""
    store = store or storage()
    names = list(stored_names(folder, store))
    for name in names:
        store.delete(name)
    return len(names)


def copy_to_disk(name: str, path: Path, store: Storage | None = None) -> Path:
    """``path``, a whole local copy of the stored ``name`` (written under a temporary name
    and renamed, so a reader sees all of it or none); ``FileNotFoundError`` when not stored."""
    store = store or storage()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".copy-")
    try:
        with os.fdopen(handle, "wb") as out, store.open(name, "rb") as source:
            for chunk in iter(lambda: source.read(RANGE_CHUNK * 4), b""):
                out.write(chunk)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
