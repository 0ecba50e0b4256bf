"""The rendered view is built by a worker and stored, so every web process serves it.

A ready reference parse of an HTML, Markdown or Word document queues ``render_document``; the
API reads the sections it serves from the stored files and never builds; until they are there
it answers 202 and asks a worker once; a new reference parse is a new rendition; deleting the
document or the parse removes the files.
"""

from __future__ import annotations

import json
import os

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import queue
from evalsets import storage as stored
from evalsets.documents import renditions
from evalsets.documents import services as documents_services
from evalsets.documents import tasks as documents_tasks
from evalsets.models import ParseStatus, ParseVersion
from evalsets.pure import rendering
from tests import services as svc

pytestmark = pytest.mark.django_db

HTML = (
    "<html><body><h1>Leave policy</h1><p>Staff accrue <b>1.5 days</b> of leave per month.</p>"
    + "".join(f"<p>Paragraph {n} of the long policy text.</p>" for n in range(3000))
    + "</body></html>"
).encode()


@pytest.fixture
def upload(workspace, annotator, django_capture_on_commit_callbacks):
    def make(name: str = "leave.html", data: bytes = HTML):
        with django_capture_on_commit_callbacks(execute=True):
            document, _ = documents_services.document_upload(
                workspace=workspace, user=annotator, upload=SimpleUploadedFile(name, data)
            )
        return document

    return make


@pytest.fixture
def builds(monkeypatch):
    """How many times a rendition is built (its limited child started, counted, still
    working)."""
    calls = []
    real = renditions.run_limited

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(renditions, "run_limited", counted)
    return calls


@pytest.fixture
def intercept(monkeypatch):
    """From the call on, render_document messages are recorded (a list returned), not run."""

    def start() -> list[int]:
        asked: list[int] = []
        real = queue.after_commit

        def record(name: str, *ids: int) -> None:
            if name == "render_document":
                asked.append(ids[0])
            else:
                real(name, *ids)

        monkeypatch.setattr(renditions.queue, "after_commit", record)
        return asked

    return start


def _get(client, source_id: str = "leave.html", query: str = ""):
    return client.get(f"/api/workspaces/acme/documents/{source_id}/rendered/{query}")


def _reference(document) -> ParseVersion:
    return document.parses.get(is_reference=True)


def _stored(folder: str) -> list[str]:
    """The names stored under a rendition folder."""
    return list(stored.stored_names(folder))


def _sections(folder: str) -> bytes:
    index = json.loads(stored.read_bytes(f"{folder}/index.json"))
    return stored.read_bytes(f"{folder}/{index['sections']}")


def test_a_ready_reference_parse_of_an_html_document_ends_with_a_stored_rendition(upload):
    document = upload()
    folder = renditions.parse_dir(document, _reference(document))
    index = json.loads(stored.read_bytes(f"{folder}/index.json"))
    assert index["section_count"] > 1  # a long page: several sections, one line each
    lines = _sections(folder).splitlines()
    assert len(lines) == index["section_count"]
    assert "Leave policy" in json.loads(lines[0])["html"]


def test_the_api_serves_sections_from_the_store_without_building(
    upload, builds, client_for, viewer
):
    document = upload()
    assert builds == [1]  # the worker's build, at upload
    client = client_for(viewer)
    first = _get(client, query="?from=1&to=2")
    later = _get(client, query="?from=2&to=3")
    assert first.status_code == later.status_code == 200, first.content
    assert builds == [1]  # no request built it again
    body = first.json()
    assert body["parse"] == str(_reference(document).public_id)
    assert [s["number"] for s in body["sections"]] == [1, 2]
    assert later.json()["sections"][0] == body["sections"][1]
    assert len(body["section_sizes"]) == body["section_count"]


def test_a_stored_section_is_what_building_it_in_the_request_gave(upload, client_for, viewer):
    document = upload()
    reference = _reference(document)
    built = rendering.Rendition.build(rendering.render_html("html", HTML), reference.text)
    served = _get(client_for(viewer), query="?from=2&to=2").json()
    assert served["sections"] == [built.section_payload(built.sections[1])]
    assert served["section_count"] == len(built.sections)
    # where every section starts in the parse, for search to load a hit's section
    assert served["section_parse_starts"] == built.parse_starts()
    assert served["section_parse_starts"][1] == served["sections"][0]["parse_start"]


def test_a_rendition_not_stored_yet_is_a_202_that_asks_a_worker_once(
    upload, intercept, builds, client_for, viewer
):
    document = upload()
    queued = intercept()
    renditions.forget(renditions.document_dir(document))  # e.g. uploaded before this change
    client = client_for(viewer)
    waiting = _get(client)
    again = _get(client)
    assert waiting.status_code == again.status_code == 202
    assert waiting.json()["preparing"] is True
    assert "being prepared" in waiting.json()["detail"]
    assert waiting["Retry-After"] == "2"
    assert queued == [_reference(document).pk]  # one message, not one per poll
    assert builds == [1]  # only the upload's: a request never builds
    documents_tasks.render_document(_reference(document).pk)
    assert _get(client).status_code == 200


def test_making_another_parse_the_reference_stores_a_rendition_aligned_to_it(
    upload, owner, client_for, viewer, django_capture_on_commit_callbacks
):
    document = upload()
    old = _reference(document)
    with django_capture_on_commit_callbacks(execute=True):
        new = documents_services.parse_version_add(
            document=document,
            parser="my-pipeline",
            text="Leave policy\nStaff accrue 1.5 days of leave per month.",
            make_reference=True,
            user=owner,
        )
    assert _stored(renditions.parse_dir(document, old)) == []  # the old reference's went
    assert renditions.is_stored(renditions.parse_dir(document, new))
    body = _get(client_for(viewer), query="?from=1&to=1").json()
    assert body["parse"] == str(new.public_id)
    assert body["sections"][0]["parse_text"].startswith("Leave policy")

    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_make_reference(parse=old)
    assert renditions.is_stored(renditions.parse_dir(document, old))
    assert _stored(renditions.parse_dir(document, new)) == []


def test_running_the_task_twice_builds_once(upload, builds):
    document = upload()
    assert documents_tasks.render_document(_reference(document).pk) == 0
    assert builds == [1]


def test_a_text_document_gets_no_rendition(upload):
    document = upload("notes.txt", b"Plain words.\fPage two.")
    assert documents_tasks.render_document(_reference(document).pk) == 0
    assert _stored(renditions.document_dir(document)) == []


def test_a_document_that_cannot_be_drawn_is_told_at_once_without_building_again(
    upload, builds, client_for, viewer
):
    document = upload("travel.md", b"# Travel\n\nTrains.\n")
    document.kind = "docx"  # its bytes are not a Word file: mammoth cannot read them
    document.save()
    renditions.forget(renditions.document_dir(document))
    documents_tasks.render_document(_reference(document).pk)
    calls = len(builds)
    for _ in range(2):
        response = _get(client_for(viewer), "travel.md")
        assert response.status_code == 409
        assert "cannot be drawn as it looks" in response.json()["detail"]
    assert len(builds) == calls


def test_deleting_the_document_removes_its_rendition(upload, django_capture_on_commit_callbacks):
    document = upload()
    folder = renditions.document_dir(document)
    assert _stored(folder)
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.document_delete(document=document)
    assert _stored(folder) == []


def test_deleting_the_reference_parse_removes_its_rendition(
    upload, django_capture_on_commit_callbacks
):
    document = upload()
    reference = _reference(document)
    folder = renditions.parse_dir(document, reference)
    assert _stored(folder)
    with django_capture_on_commit_callbacks(execute=True):
        for other in document.parses.exclude(pk=reference.pk):
            documents_services.parse_delete(parse=other)
        documents_services.parse_delete(parse=reference)  # the last parse may go
    assert _stored(folder) == []


def test_permissions_are_unchanged_while_preparing_and_once_stored(
    upload, intercept, client_for, viewer, outsider
):
    document = upload()
    queued = intercept()
    assert _get(client_for(outsider)).status_code == 404
    assert _get(client_for(viewer)).status_code == 200
    renditions.forget(renditions.document_dir(document))
    assert _get(client_for(outsider)).status_code == 404
    assert queued == []  # an outsider's request asks no worker for anything
    assert _get(client_for(viewer)).status_code == 202


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_uploaded_html_document_ends_with_a_rendition_stored_by_a_real_worker(
    worker, workspace, annotator, viewer, client_for
):
    response = client_for(annotator).post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("leave.html", HTML)},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    reference = svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id="leave.html", is_reference=True, status="ready"
        ).first(),
        what="the worker to parse leave.html",
    )
    folder = renditions.parse_dir(reference.document, reference)
    svc.wait_for(lambda: renditions.is_stored(folder), what="the worker to store the view")
    served = _get(client_for(viewer), query="?from=1&to=1")
    assert served.status_code == 200, served.content
    assert "Leave policy" in served.json()["sections"][0]["html"]


def test_a_rendition_removed_while_a_request_reads_it_is_a_202_not_a_500(
    upload, client_for, viewer, monkeypatch
):
    document = upload()

    real = stored.open_ranged

    def gone_meanwhile(name, *args, **kwargs):  # the index was read; then a worker dropped it
        renditions.forget(renditions.document_dir(document))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(renditions.stored, "open_ranged", gone_meanwhile)
    assert _get(client_for(viewer)).status_code == 202


def test_a_reference_parse_still_being_read_is_a_202_that_asks_no_worker(
    upload, intercept, client_for, viewer
):
    document = upload()
    queued = intercept()
    document.parses.filter(is_reference=True).update(status=ParseStatus.PARSING)
    response = _get(client_for(viewer))
    assert response.status_code == 202
    assert "the reference parse is parsing" in response.json()["detail"]
    assert queued == []  # its end queues the build


def test_a_new_rendition_removes_an_abandoned_build_marker_but_not_one_in_progress(upload):
    document = upload()
    folder = renditions.parse_dir(document, _reference(document))
    parent = renditions.document_dir(document)
    abandoned, running = f"{parent}/.1-1.attempts", f"{parent}/.2-2.attempts"
    stored.replace(abandoned, b"1")
    stored.replace(running, b"1")
    os.utime(default_storage.path(abandoned), (0, 0))  # test-only: age it on the disk
    renditions.forget(folder)
    documents_tasks.render_document(_reference(document).pk)
    assert not default_storage.exists(abandoned) and default_storage.exists(running)


# -- the folder's budget -------------------------------------------------------------------------


def _index(document) -> str:
    return f"{renditions.parse_dir(document, _reference(document))}/index.json"


def test_past_the_budget_a_new_rendition_pushes_out_the_others_and_their_readers_wait(
    upload, settings, intercept, client_for, viewer
):
    first = upload("first.html", HTML + b"<!-- first -->")
    settings.GROUNDWORK_RENDITIONS_MB = 0  # room for the newest alone
    second = upload("second.html", HTML + b"<!-- second -->")

    assert default_storage.exists(_index(second)) and not default_storage.exists(_index(first))
    queued = intercept()
    client = client_for(viewer)
    assert _get(client, "second.html").status_code == 200
    gone = _get(client, "first.html")
    assert gone.status_code == 202 and gone.json()["preparing"] is True
    assert queued == [_reference(first).pk]  # a worker is asked to build it again
    documents_tasks.render_document(_reference(first).pk)
    assert _get(client, "first.html").status_code == 200


def test_the_least_recently_read_renditions_go_first_and_reading_one_keeps_it(
    upload, client_for, viewer
):
    documents = [upload(f"{name}.html", HTML + name.encode()) for name in ("a", "b", "c")]
    for age, document in enumerate(documents):  # built in turn, read in that order since
        os.utime(default_storage.path(_index(document)), (1000 + age, 1000 + age))
    assert _get(client_for(viewer), "a.html").status_code == 200  # a is read now
    sizes = {
        d.source_id: sum(size for _, size, _ in stored.listing(_index(d).rpartition("/")[0]))
        for d in documents
    }

    freed = renditions.prune(budget_bytes=sizes["a.html"] + sizes["c.html"])

    assert freed == sizes["b.html"]
    assert [default_storage.exists(_index(d)) for d in documents] == [True, False, True]
    keep = _index(documents[2]).rpartition("/")[0]
    assert renditions.prune(budget_bytes=0, keep=keep) == sizes["a.html"]
    assert default_storage.exists(_index(documents[2]))  # the one just built never goes
