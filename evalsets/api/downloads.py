"""Stored files served to a user, streamed from the storage in bounded chunks.

A release file can be hundreds of megabytes. django-storages' ``S3File`` downloads a whole
object into a temporary file held in memory on its first read, so a response built on
``FieldFile.open()`` held the whole file in the web process before its first byte left.
Here the file is read through ``storage.open_ranged`` (on S3: one ranged GET per chunk;
on the file system: the file itself) ``CHUNK`` bytes at a time, and a single byte range
(``Range: bytes=...``, honoured unless an ``If-Range`` names another version) is answered
206 with only those bytes, so a broken download resumes where it stopped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from django.core.files.storage import Storage
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

from evalsets import storage as stored

#: Bytes read from the storage and sent per step: one ranged fetch on S3.
CHUNK = stored.RANGE_CHUNK

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def requested_range(header: str | None, size: int) -> tuple[int, int] | bool | None:
    """The one byte range ``header`` asks for, as (first, last) inclusive; None when the
    whole file is to be sent (no header, several ranges, or one this does not parse: RFC
    9110 lets a server ignore those); False when it names no byte of the file (416)."""
    found = _RANGE.match((header or "").replace(" ", ""))
    if found is None or found.groups() == ("", ""):
        return None
    first, last = found.groups()
    if first == "":  # the last ``last`` bytes
        if int(last) == 0:
            return False
        return max(0, size - int(last)), size - 1
    if int(first) >= size:
        return False
    end = size - 1 if last == "" else min(int(last), size - 1)
    if end < int(first):
        return None
    return int(first), end


def _chunks(handle: BinaryIO, first: int, last: int) -> Iterator[bytes]:
    """Bytes ``first``..``last`` of ``handle``, ``CHUNK`` at a time; closes it at the end."""
    try:
        handle.seek(first)
        left = last - first + 1
        while left > 0:
            data = handle.read(min(CHUNK, left))
            if not data:
                break
            left -= len(data)
            yield data
    finally:
        handle.close()


def stored_file(
    request,
    *,
    name: str,
    store: Storage,
    size: int,
    filename: str,
    content_type: str,
    etag: str,
) -> HttpResponse:
    """``name`` from ``store`` as an attachment, streamed; one byte range on request.

    Raises ``FileNotFoundError`` when the file is not stored."""
    wanted = requested_range(request.META.get("HTTP_RANGE"), size)
    if_range = request.META.get("HTTP_IF_RANGE")
    if if_range is not None and if_range.strip() != etag:
        wanted = None  # the client holds another version: it gets the whole of this one
    if wanted is False:
        response = HttpResponse(status=416)
        response["Content-Range"] = f"bytes */{size}"
    else:
        handle = stored.open_ranged(name, store)
        if wanted is None:
            response = FileResponse(handle, content_type=content_type)
            response.block_size = CHUNK
            response["Content-Length"] = str(size)
        else:
            first, last = wanted
            response = StreamingHttpResponse(
                _chunks(handle, first, last), status=206, content_type=content_type
            )
            response["Content-Range"] = f"bytes {first}-{last}/{size}"
            response["Content-Length"] = str(last - first + 1)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = etag
    return response
