"""Every stored file, on S3-compatible object storage and on the file system, with a real worker.

The same path runs on each storage: a PDF uploaded, parsed by a worker (its character boxes
stored), its view's page sizes and text layer read from the boxes by byte range, a page image
the worker drew served to this (web) process from the storage; an HTML page's rendered view
built by the worker and a range of its sections served; a release built by the worker and
downloaded whole; an import file uploaded and previewed. On S3 the worker and this process
share no folder at all: each has a media folder of its own, and both stay empty.
"""

from __future__ import annotations

import hashlib
import io
from contextlib import contextmanager

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from evalsets import storage as stored
from evalsets.anchoring import services as anchoring_services
from evalsets.api import downloads
from evalsets.models import (
    EvalItem,
    ParseStatus,
    ParseVersion,
    Release,
    ReleaseFile,
    ReleaseStatus,
)
from tests import services as svc
from tests.documents import make_pdf
from tests.world import import_file

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

WS = "/api/workspaces/acme"
PAGES = ["Leave policy. Staff accrue 1.5 days a month.", "Remote work: 30 days a year.", "End."]
HTML = (
    "<html><body><h1>Leave policy</h1>"
    + "".join(f"<p>Paragraph {n} of the long policy text.</p>" for n in range(3000))
    + "</body></html>"
).encode()


@contextmanager
def _worker_storing(env: dict[str, str], media):
    """A worker of this test's own (its own queues, so no other worker takes its tasks)."""
    with svc.own_queues() as queues:
        worker = svc.start_worker(media, name="storage", GROUNDWORK_TASK_QUEUE=queues, **env)
        try:
            yield
        finally:
            svc.stop_worker(worker)


@pytest.fixture
def on_s3(s3_server, s3_prefix, settings, tmp_path):
    """This process and a worker store on the S3 server (under this test's prefix); each has
    a media folder of its own, which nothing should create."""
    settings.MEDIA_ROOT = tmp_path / "web-media"
    env = {"GROUNDWORK_PAGE_CACHE_DIR": str(tmp_path / "worker-cache")}
    with _worker_storing({**env, **s3_server.env(s3_prefix)}, tmp_path / "worker-media"):
        yield s3_prefix


@pytest.fixture
def on_filesystem(settings, tmp_path):
    """This process and a worker store in one folder they share."""
    settings.MEDIA_ROOT = tmp_path / "media"
    env = {"GROUNDWORK_PAGE_CACHE_DIR": str(tmp_path / "worker-cache")}
    with _worker_storing(env, settings.MEDIA_ROOT):
        yield settings.MEDIA_ROOT


@pytest.fixture(params=["on_filesystem", "on_s3"])
def stored_on(request):
    return request.getfixturevalue(request.param)


def _upload(client, name: str, data: bytes) -> None:
    response = client.post(
        f"{WS}/documents/", {"file": SimpleUploadedFile(name, data)}, format="multipart"
    )
    assert response.status_code == 201, response.content


def _ready(source_id: str, parser: str) -> ParseVersion:
    return svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id=source_id, parser=parser, status=ParseStatus.READY
        ).first(),
        what=f"the worker to parse {source_id} with {parser}",
    )


def test_a_pdf_is_parsed_and_its_pages_served_from_the_storage(
    stored_on, workspace, annotator, viewer, client_for
):
    _upload(client_for(annotator), "policy.pdf", make_pdf(PAGES))
    pdfium = _ready("policy.pdf", "pdfium")
    assert pdfium.char_boxes  # stored by the worker
    reader = client_for(viewer)
    view = reader.get(f"{WS}/documents/policy.pdf/pdf/").json()
    assert view["page_count"] == 3 and view["sizes"][0] == [595.28, 841.89]
    text = reader.get(f"{WS}/documents/policy.pdf/pdf/pages/2/text/").json()
    assert text["text"].startswith("Remote work")
    assert [text["text"][s:e] for s, e, *_ in text["runs"]] == [text["text"]]
    image = svc.wait_for(  # the worker draws the first pages as soon as the parse is ready
        lambda: reader.get(f"{WS}/documents/policy.pdf/pdf/pages/1/image"),
        what="page 1's image",
    )
    assert image.status_code == 200
    assert Image.open(io.BytesIO(b"".join(image.streaming_content))).size[0] > 500


def test_a_rendered_view_is_served_by_section_range_from_what_the_worker_stored(
    stored_on, workspace, annotator, viewer, client_for
):
    _upload(client_for(annotator), "leave.html", HTML)
    _ready("leave.html", "selectolax")
    reader = client_for(viewer)
    served = svc.wait_for(
        lambda: (
            (r := reader.get(f"{WS}/documents/leave.html/rendered/?from=2&to=3")).status_code == 200
            and r
        ),
        what="the worker to store the rendered view",
    )
    body = served.json()
    assert body["section_count"] >= 3 and [s["number"] for s in body["sections"]] == [2, 3]
    first = reader.get(f"{WS}/documents/leave.html/rendered/?from=1&to=1").json()
    assert "Leave policy" in first["sections"][0]["html"]


def test_a_release_built_by_the_worker_downloads_whole_and_an_import_uploads(
    stored_on, workspace, owner, annotator, client_for, document, evalset
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="How much leave?"
    )
    EvalItem.objects.filter(pk=item.pk).update(state="approved")
    client = client_for(owner)
    started = client.post(
        f"{WS}/evalsets/quiz/releases/", {"formats": ["contextgrid-jsonl"]}, format="json"
    )
    assert started.status_code == 202, started.content
    svc.wait_for(
        lambda: Release.objects.filter(status=ReleaseStatus.READY).exists(),
        what="the worker to build the release",
    )
    download = client.get(f"{WS}/evalsets/quiz/releases/1/files/contextgrid-jsonl")
    assert download.status_code == 200
    data = b"".join(download.streaming_content)
    assert hashlib.sha256(data).hexdigest() == download["X-Content-SHA256"]
    assert b"How much leave?" in data

    preview = client.post(
        f"{WS}/evalsets/quiz/imports/preview/",
        {"file": SimpleUploadedFile("set.jsonl", import_file())},
        format="multipart",
    )
    assert preview.status_code == 200, preview.content


def test_on_s3_every_file_is_in_the_bucket_and_no_process_wrote_a_media_folder(
    on_s3, s3_server, workspace, annotator, viewer, client_for, tmp_path
):
    _upload(client_for(annotator), "policy.pdf", make_pdf(PAGES))
    _upload(client_for(annotator), "leave.html", HTML)
    _ready("policy.pdf", "pdfium")
    _ready("leave.html", "selectolax")
    reader = client_for(viewer)
    svc.wait_for(
        lambda: reader.get(f"{WS}/documents/leave.html/rendered/").status_code == 200,
        what="the rendered view",
    )
    assert reader.get(f"{WS}/documents/policy.pdf/pdf/pages/3/image?scale=2").status_code == 200
    folders = {key.split("/")[1] for key in s3_server.keys(on_s3)}
    assert {"documents", "parses", "renditions", "page-images"} <= folders
    assert not (tmp_path / "web-media").exists() and not (tmp_path / "worker-media").exists()


def test_the_storage_helpers_behave_alike_on_s3_and_the_file_system(request, settings, tmp_path):
    for backend in ("filesystem", "s3"):
        if backend == "s3":
            request.getfixturevalue("s3_prefix")  # this test's files on the S3 server
        else:
            settings.MEDIA_ROOT = tmp_path / "media"
        data = bytes(range(256)) * 4096  # 1 MiB: a ranged read past the first chunk
        assert stored.save_new("t/a/blob.bin", data) is True
        assert stored.save_new("t/a/blob.bin", b"second") is False  # the first one stands
        with stored.open_ranged("t/a/blob.bin") as handle:
            handle.seek(300_000)
            assert handle.read(10) == data[300_000:300_010]
            ranged = isinstance(getattr(handle, "raw", None), stored._S3Range)
            assert ranged == (backend == "s3")  # S3 fetched by range, never whole
        stored.replace("t/b/marker", b"1")
        stored.replace("t/b/marker", b"2")
        assert stored.read_bytes("t/b/marker") == b"2"
        listed = {name: size for name, size, _ in stored.listing("t")}
        assert listed == {"t/a/blob.bin": len(data), "t/b/marker": 1}, backend
        assert stored.modified_at("t/b/marker") is not None
        assert stored.modified_at("t/none") is None
        with pytest.raises(FileNotFoundError):
            stored.open_ranged("t/none")
        assert stored.delete_folder("t") == 2
        assert list(stored.stored_names("t")) == []


def _stored_release(evalset, owner, data: bytes) -> str:
    """A ready release whose one file is ``data``, stored as a build stores it; its URL."""
    release = Release.objects.create(
        evalset=evalset,
        version=1,
        created_by=owner,
        status=ReleaseStatus.READY,
        formats=["contextgrid-jsonl"],
    )
    file = ReleaseFile(
        release=release,
        format="contextgrid-jsonl",
        filename="quiz-v1.jsonl",
        media_type="application/x-ndjson",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    file.file.save("quiz-v1.jsonl", ContentFile(data), save=True)
    return f"{WS}/evalsets/quiz/releases/1/files/contextgrid-jsonl"


@pytest.mark.parametrize("backend", ["filesystem", "s3"])
def test_a_release_file_larger_than_a_chunk_streams_from_the_storage_a_chunk_at_a_time(
    backend, request, settings, tmp_path, monkeypatch, workspace, owner, client_for, evalset
):
    if backend == "s3":
        request.getfixturevalue("s3_prefix")
    else:
        settings.MEDIA_ROOT = tmp_path / "media"
    fetched = []  # the byte count of each ranged GET the web process sends to the bucket
    read_range = stored._S3Range.readinto

    def counted(self, buffer):
        got = read_range(self, buffer)
        fetched.append(got)
        return got

    monkeypatch.setattr(stored._S3Range, "readinto", counted)
    data = bytes(range(256)) * 4096 * 3 + b"tail"  # 3 MiB and a bit: 13 chunks
    url = _stored_release(evalset, owner, data)

    response = client_for(owner).get(url)

    assert response.status_code == 200 and response.streaming
    assert response["Content-Length"] == str(len(data))
    assert response["Accept-Ranges"] == "bytes"
    chunks = iter(response.streaming_content)
    first = next(chunks)
    if backend == "s3":
        # Read by range from the bucket: one chunk fetched so far, not the whole object.
        assert fetched == [downloads.CHUNK]
    rest = list(chunks)
    if backend == "s3":
        assert max(fetched) <= downloads.CHUNK and sum(fetched) == len(data)
    assert max(len(chunk) for chunk in [first, *rest]) <= downloads.CHUNK
    assert len(rest) >= len(data) // downloads.CHUNK
    assert first + b"".join(rest) == data
    response.close()


@pytest.mark.parametrize("backend", ["filesystem", "s3"])
def test_a_ranged_release_download_answers_206_with_exactly_the_bytes_asked_for(
    backend, request, settings, tmp_path, workspace, owner, client_for, evalset
):
    if backend == "s3":
        request.getfixturevalue("s3_prefix")
    else:
        settings.MEDIA_ROOT = tmp_path / "media"
    data = bytes(range(256)) * 4096 * 2  # 2 MiB
    url = _stored_release(evalset, owner, data)
    client = client_for(owner)
    etag = client.head(url)["ETag"]

    middle = client.get(url, HTTP_RANGE="bytes=300000-900099")
    tail = client.get(url, HTTP_RANGE="bytes=-10")
    onward = client.get(url, HTTP_RANGE="bytes=2000000-", HTTP_IF_RANGE=etag)
    stale = client.get(url, HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"another version"')
    past_the_end = client.get(url, HTTP_RANGE=f"bytes={len(data)}-")

    assert middle.status_code == 206
    assert middle["Content-Range"] == f"bytes 300000-900099/{len(data)}"
    assert middle["Content-Length"] == "600100"
    body = list(middle.streaming_content)
    assert max(len(chunk) for chunk in body) <= downloads.CHUNK
    assert b"".join(body) == data[300000:900100]
    assert (tail.status_code, b"".join(tail.streaming_content)) == (206, data[-10:])
    assert b"".join(onward.streaming_content) == data[2000000:]
    assert onward["Content-Range"] == f"bytes 2000000-{len(data) - 1}/{len(data)}"
    assert (stale.status_code, len(b"".join(stale.streaming_content))) == (200, len(data))
    assert past_the_end.status_code == 416
    assert past_the_end["Content-Range"] == f"bytes */{len(data)}"
    for response in (middle, tail, onward, stale):
        response.close()
