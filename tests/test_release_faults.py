"""Faults around releases: a release is what it was when it was made, forever.

The invariants every test here checks once the fault has settled: each release is ``ready``
or ``failed`` with a reason; its files are the bytes first served, byte for byte; its items
are the ones chosen when it was made, whatever was approved or edited since.

Real parts throughout. A full disk is a real one: a small tmpfs mounted as the media folder
and filled up (mounting needs root, as CI runs; elsewhere these tests skip saying so). A
worker killed mid-build is a build stopped by an exception nothing catches, here; on
PostgreSQL + Redis (``services``) it is a real ``celery worker`` killed with SIGKILL.
"""

from __future__ import annotations

import errno
import hashlib
import io
import shutil
import subprocess
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from evalsets import queue, sweep
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import ingest
from evalsets.documents import services as documents_services
from evalsets.models import Document, EvalItem, Release, ReleaseFile
from evalsets.models.releases import release_folder
from evalsets.releases import services as releases_services
from evalsets.releases import tasks as releases_tasks
from tests import services as svc
from tests.test_faults import _approved_items

pytestmark = pytest.mark.django_db

BASE = "/api/workspaces/acme/evalsets/quiz"
FORMATS = ["contextgrid-jsonl", "contextgrid-csv", "deepset-qa", "beir"]
QUESTIONS = {
    "q1": ("How much leave do employees accrue?", "1.5 days of leave per month"),
    "q2": ("How long may staff work remotely?", "limited to 30 days a year"),
    "q3": ("May leave be carried over?", "Leave may be carried over."),
}


class Killed(BaseException):
    """What a worker killed mid-build leaves: the build stops, nothing records why."""


@pytest.fixture
def approved(evalset, reference, annotator):
    """q1-q3 approved, each with one anchor resolved in the reference parse."""
    made = {}
    for item_id, (question, quote) in QUESTIONS.items():
        item = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=question
        )
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=quote
        )
        made[item_id] = item
    EvalItem.objects.filter(evalset=evalset).update(state="approved")
    return made


def _create(evalset, owner, formats=FORMATS, **options) -> Release:
    """A release made now; its build is left for the test to run (no message is sent)."""
    return releases_services.release_create(evalset=evalset, user=owner, formats=formats, **options)


def _build(release: Release) -> str:
    return releases_tasks.build_release(release.pk)


def _served(client, release: Release) -> dict[str, bytes]:
    """Every file of the release as a member downloads it."""
    out = {}
    for fmt in release.formats:
        response = client.get(f"{BASE}/releases/{release.version}/files/{fmt}")
        assert response.status_code == 200, response
        out[fmt] = b"".join(response.streaming_content)
    return out


def _stored_names(release: Release) -> list[str]:
    storage = ReleaseFile._meta.get_field("file").storage
    try:
        return sorted(storage.listdir(release_folder(release))[1])
    except FileNotFoundError:
        return []


def _check_settled(release: Release, *, served: dict[str, bytes], items: list[str], client):
    """The invariants: ready, the bytes first served, the items chosen when it was made,
    and nothing in storage but its files."""
    release.refresh_from_db()
    assert (release.status, release.error) == ("ready", "")
    assert _served(client, release) == served
    assert list(release.items.values_list("item_id", flat=True)) == items
    assert release.item_count == len(items)
    recorded = sorted(Path(f.file.name).name for f in release.files.all())
    assert _stored_names(release) == recorded and len(recorded) == len(release.formats)
    for stored in release.files.all():
        assert hashlib.sha256(served[stored.format]).hexdigest() == stored.sha256


# -- membership and content are frozen when the release is made ---------------------------------


def test_a_release_holds_the_items_approved_when_it_was_made_however_late_it_is_built(
    approved, evalset, annotator, client_for, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as build_message:  # held back, as a slow queue
        response = client_for(owner).post(
            f"{BASE}/releases/", {"formats": ["contextgrid-jsonl"]}, format="json"
        )
    assert response.status_code == 202 and response.json()["item_count"] == 3

    late = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q4", question="Late?"
    )
    EvalItem.objects.filter(pk=late.pk).update(state="approved")
    EvalItem.objects.filter(item_id="q1").update(question="Edited after the release?")
    for callback in build_message:
        callback()

    release = Release.objects.get()
    (data,) = _served(client_for(owner), release).values()
    assert (release.status, release.item_count) == ("ready", 3)
    assert list(release.items.values_list("item_id", flat=True)) == ["q1", "q2", "q3"]
    assert b"How much leave do employees accrue?" in data
    assert b"Late?" not in data and b"Edited after" not in data


def test_a_release_keeps_the_texts_of_the_parses_chosen_when_it_was_made(
    approved, evalset, document, client_for, owner
):
    release = _create(evalset, owner, formats=["beir"], gold_parser="plaintext")
    newer = "A different text of the handbook, parsed later. " * 3
    documents_services.parse_version_add(
        document=document, parser="plaintext", parser_version="2", text=newer
    )

    assert _build(release) == "ready"

    (data,) = _served(client_for(owner), release).values()
    corpus = zipfile.ZipFile(io.BytesIO(data)).read("corpus.jsonl").decode()
    assert "Employees accrue 1.5 days" in corpus and "parsed later" not in corpus


# -- a release's bytes never change once served ------------------------------------------------


def test_a_finished_build_redelivered_does_nothing_and_serves_the_same_bytes(
    approved, evalset, annotator, client_for, owner
):
    release = _create(evalset, owner)
    assert _build(release) == "ready"
    client = client_for(owner)
    served = _served(client, release)
    rows = list(ReleaseFile.objects.values_list("pk", "file", "sha256"))

    EvalItem.objects.filter(item_id="q2").update(question="Changed since?")
    assert _build(release) == "gone or already built"  # the broker handed it back

    assert list(ReleaseFile.objects.values_list("pk", "file", "sha256")) == rows
    assert sweep.stale_releases(timedelta(0)) == []
    _check_settled(release, served=served, items=["q1", "q2", "q3"], client=client)


def test_a_build_redone_from_its_snapshot_writes_the_bytes_first_served(
    approved, evalset, document, annotator, client_for, owner
):
    release = _create(evalset, owner, gold_parser="plaintext")
    assert _build(release) == "ready"
    client = client_for(owner)
    served = _served(client, release)

    # Everything a build could read moves on: items, their anchors, the chosen parse.
    EvalItem.objects.filter(item_id="q1").update(question="Changed since?", answer="2 days")
    documents_services.parse_version_add(
        document=document, parser="plaintext", parser_version="2", text="Another text. " * 9
    )
    late = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q9", question="New?"
    )
    EvalItem.objects.filter(pk=late.pk).update(state="approved")
    # ...and every file is lost and written again, as a redelivered build once did.
    for stored in ReleaseFile.objects.all():
        stored.file.delete(save=False)
        stored.delete()
    Release.objects.filter(pk=release.pk).update(status="queued")
    assert _build(release) == "ready"

    _check_settled(release, served=served, items=["q1", "q2", "q3"], client=client)


def test_a_build_killed_mid_write_keeps_its_whole_files_and_writes_the_rest_the_same(
    approved, evalset, client_for, owner, monkeypatch
):
    release = _create(evalset, owner, formats=["contextgrid-jsonl", "contextgrid-csv"])
    build_file = releases_services._build_file

    def killed_on_the_second(release, slug, *args):
        if slug == "contextgrid-csv":
            storage = ReleaseFile._meta.get_field("file").storage
            storage.save(f"{release_folder(release)}/quiz-v1-contextgrid-csv.csv", io.BytesIO(b"q"))
            raise Killed  # mid-write: a partial file is left in storage
        return build_file(release, slug, *args)

    monkeypatch.setattr(releases_services, "_build_file", killed_on_the_second)
    with pytest.raises(Killed):
        releases_services.release_build(releases_services.release_claim(release.pk))
    first = ReleaseFile.objects.get()
    monkeypatch.setattr(releases_services, "_build_file", build_file)
    long_ago = timezone.now() - ingest.lease_length() - timedelta(seconds=1)
    Release.objects.filter(pk=release.pk).update(updated_at=long_ago)

    assert sweep.stale_releases() == [release.pk]
    assert _build(release) == "ready"

    kept = ReleaseFile.objects.get(format="contextgrid-jsonl")
    assert (kept.pk, kept.file.name, kept.sha256) == (first.pk, first.file.name, first.sha256)
    texts = releases_services.frozen_texts(release)
    fresh = {}
    for fmt in release.formats:
        out = io.BytesIO()
        releases_services.write_format(release, fmt, out, texts)
        fresh[fmt] = out.getvalue()
    _check_settled(release, served=fresh, items=["q1", "q2", "q3"], client=client_for(owner))


def test_a_builder_taken_for_dead_that_still_runs_changes_nothing_of_its_successors_release(
    approved, evalset, client_for, owner
):
    release = _create(evalset, owner)
    stalled = releases_services.release_claim(release.pk)  # its host stalls past the lease...
    long_ago = timezone.now() - ingest.lease_length() - timedelta(seconds=1)
    Release.objects.filter(pk=release.pk).update(updated_at=long_ago)
    assert _build(release) == "ready"  # ...and another worker takes the build over
    client = client_for(owner)
    served = _served(client, release)

    # The stalled builder wakes: mid-file, and at the start of its build.
    with pytest.raises(releases_services._Superseded):
        releases_services._build_file(
            stalled,
            "contextgrid-jsonl",
            releases_services.frozen_texts(stalled),
            releases_services._Progress(stalled),
        )
    assert releases_services.release_build(stalled).status == "ready"

    _check_settled(release, served=served, items=["q1", "q2", "q3"], client=client)


def test_no_file_of_a_release_is_served_before_the_whole_release_is_ready(
    approved, evalset, client_for, owner
):
    release = _create(evalset, owner, formats=["contextgrid-jsonl"])
    releases_services.release_claim(release.pk)

    response = client_for(owner).get(f"{BASE}/releases/1/files/contextgrid-jsonl")

    assert response.status_code == 409
    assert (
        "is building" in response.json()["detail"]
        and "once it is ready" in (response.json()["detail"])
    )


# -- a full disk -----------------------------------------------------------------------------


class SmallDisk:
    """A tmpfs of a few hundred kilobytes mounted at ``path``, which a test can fill up."""

    def __init__(self, path: Path, size_kb: int = 512) -> None:
        self.path = path
        self.size_kb = size_kb
        self.filler = path / "filler"

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        mount = shutil.which("mount")
        done = mount and subprocess.run(
            [mount, "-t", "tmpfs", "-o", f"size={self.size_kb}k", "tmpfs", str(self.path)],
            capture_output=True,
            check=False,
        )
        if not done or done.returncode != 0:
            pytest.skip("mounting a small tmpfs as a full disk needs root (CI runs as root)")

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)

    def fill(self) -> None:
        """Write until the disk refuses: every later write fails with ENOSPC."""
        chunk = b"\0" * 4096
        with open(self.filler, "ab", buffering=0) as handle:
            try:
                while True:
                    handle.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        assert not _writes(self.path)

    def free(self) -> None:
        self.filler.unlink()


def _writes(folder: Path) -> bool:
    try:
        (folder / "probe").write_bytes(b"x" * 8192)
    except OSError:
        return False
    (folder / "probe").unlink()
    return True


@pytest.fixture
def full_disk(tmp_path, settings):
    """The media folder on a small disk of its own (files saved before it was mounted, the
    reference document's among them, stay readable beside it)."""
    disk = SmallDisk(tmp_path / "small-disk")
    disk.mount()
    settings.MEDIA_ROOT = disk.path
    yield disk
    disk.unmount()


def test_a_build_that_finds_the_disk_full_keeps_nothing_and_is_built_once_there_is_room(
    approved, evalset, client_for, owner, full_disk, sent
):
    release = _create(evalset, owner)
    full_disk.fill()

    assert _build(release) == "queued"

    waiting = Release.objects.get(pk=release.pk)
    assert waiting.storage_failures == 1
    assert "No space left on device" in waiting.error and "tried again" in waiting.error
    assert not ReleaseFile.objects.exists() and _stored_names(release) == []  # no 0-byte file

    full_disk.free()
    assert sweep.sweep(timedelta(0))["releases"] == 1
    assert ("build_release", (release.pk,)) in sent
    assert _build(release) == "ready"

    client = client_for(owner)
    served = _served(client, release)
    _check_settled(release, served=served, items=["q1", "q2", "q3"], client=client)
    assert served["contextgrid-jsonl"].count(b"\n") == 4  # the header and three items


def test_a_build_the_disk_refuses_every_time_fails_saying_so_after_its_tries(
    approved, evalset, owner, full_disk, sent, settings
):
    settings.GROUNDWORK_RELEASE_STORAGE_TRIES = 2
    release = _create(evalset, owner)
    full_disk.fill()

    assert _build(release) == "queued"
    assert _build(release) == "failed"

    failed = Release.objects.get(pk=release.pk)
    assert "each of the 2 times" in failed.error and "No space left on device" in failed.error
    assert failed.finished_at is not None
    assert not ReleaseFile.objects.exists() and _stored_names(release) == []
    assert sweep.stale_releases(timedelta(0)) == []  # given up: not queued again


def test_an_upload_to_a_full_disk_answers_507_in_json_and_saves_nothing(
    workspace, annotator, client_for, full_disk
):
    full_disk.fill()
    body = b"Remote work needs a manager's approval.\n" * 2000

    response = client_for(annotator).post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("notes.txt", body)},
        format="multipart",
    )

    assert response.status_code == 507, response.content
    assert response["Content-Type"] == "application/json"
    assert "storage is full, so nothing was saved" in response.json()["detail"]
    assert not Document.objects.filter(source_id="notes.txt").exists()
    assert [p for p in (full_disk.path / "documents").rglob("*") if p.is_file()] == []

    full_disk.free()
    again = client_for(annotator).post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("notes.txt", body)},
        format="multipart",
    )
    assert again.status_code == 201, again.content
    stored = Document.objects.get(source_id="notes.txt")
    assert stored.file.read() == body


def test_an_unexpected_error_under_the_api_is_json_even_with_debug_on(
    approved, evalset, owner, client_for, settings, monkeypatch
):
    settings.DEBUG = True  # as `make run` serves

    def broken(*args, **kwargs):
        raise RuntimeError("a fault of our own")

    monkeypatch.setattr(releases_services, "release_compare", broken)
    _build(_create(evalset, owner, formats=["contextgrid-jsonl"]))
    client = client_for(owner)
    client.raise_request_exception = False

    response = client.get(f"{BASE}/releases/1/compare/1/")

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "the error was logged" in response.json()["detail"]
    assert b"Traceback" not in response.content and b"a fault of our own" not in response.content


# -- on PostgreSQL + Redis with a real worker ---------------------------------------------------


def _approved_ids(evalset) -> list[str]:
    return list(
        EvalItem.objects.filter(evalset=evalset, state="approved")
        .order_by("created_at", "id")
        .values_list("item_id", flat=True)
    )


@pytest.mark.services
def test_a_worker_killed_mid_release_while_items_are_approved_builds_what_was_made(
    worker, workspace, owner, evalset, reference, client_for
):
    _approved_items(evalset, reference.document, 6000)
    EvalItem.objects.filter(item_id__in=["q0", "q1"]).update(state="draft")
    made = _approved_ids(evalset)
    release = releases_services.release_create(evalset=evalset, user=owner, formats=FORMATS)
    svc.wait_for(
        lambda: Release.objects.filter(
            pk=release.pk, status="building", progress_done__gt=0
        ).exists(),
        what="the worker to be part-way through building the release",
    )
    EvalItem.objects.filter(item_id__in=["q0", "q1"]).update(state="approved")
    EvalItem.objects.filter(item_id="q2").update(question="Edited while it was built?")
    worker.kill()
    assert Release.objects.get(pk=release.pk).status == "building"
    worker.start()
    svc.wait_for(
        lambda: Release.objects.filter(pk=release.pk, status="ready").exists(),
        timeout=180,
        what="the restarted worker to finish the interrupted build",
    )
    client = client_for(owner)
    served = _served(client, release)
    assert b"Edited while" not in served["contextgrid-jsonl"]

    # The broker hands the finished build back; a later release queued behind it shows
    # the worker has read it.
    queue.send("build_release", release.pk)
    later = releases_services.release_create(
        evalset=evalset, user=owner, formats=["contextgrid-jsonl"]
    )
    svc.wait_for(
        lambda: Release.objects.filter(pk=later.pk, status="ready").exists(),
        timeout=120,
        what="the release queued behind the redelivered one",
    )

    _check_settled(release, served=served, items=made, client=client)
    assert Release.objects.get(pk=later.pk).item_count == len(made) + 2


@pytest.mark.services
def test_a_real_worker_whose_disk_fills_mid_build_builds_the_release_once_there_is_room(
    celery_worker, workspace, owner, evalset, reference, client_for, full_disk
):
    celery_worker.stop()  # this test's worker writes to the small disk instead
    handle = svc.WorkerHandle(full_disk.path)
    _approved_items(evalset, reference.document, 300)
    made = _approved_ids(evalset)
    full_disk.fill()
    try:
        handle.start(GROUNDWORK_SWEEP_STALE_S="4")
        release = releases_services.release_create(evalset=evalset, user=owner, formats=FORMATS)
        waiting = svc.wait_for(
            lambda: Release.objects.filter(pk=release.pk, storage_failures__gte=1).first(),
            what="the worker to find the disk full",
        )
        assert "No space left on device" in waiting.error
        assert not ReleaseFile.objects.filter(release=release).exists()
        full_disk.free()
        svc.wait_for(
            lambda: Release.objects.filter(pk=release.pk, status="ready").exists(),
            timeout=90,
            what="the worker's sweep to build the release again once there was room",
        )
    finally:
        handle.stop()
    client = client_for(owner)
    _check_settled(release, served=_served(client, release), items=made, client=client)


def test_a_url_under_the_api_that_names_no_endpoint_is_a_json_404(client_for, owner, client):
    response = client_for(owner).get("/api/workspaces/acme/no-such-thing/")

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "no API endpoint at '/api/workspaces/acme/no-such-thing/'" in response.json()["detail"]
    assert client.get("/no-such-page/")["Content-Type"].startswith("text/html")
