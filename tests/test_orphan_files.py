"""Racing uploads leave no file in storage that no document points at."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import sweep
from evalsets.documents import ingest
from evalsets.documents import services as documents_services
from evalsets.errors import Conflict
from evalsets.models import Document

pytestmark = pytest.mark.django_db


def _stored(settings) -> list[str]:
    root = Path(settings.MEDIA_ROOT) / "documents"
    return sorted(str(p.relative_to(settings.MEDIA_ROOT)) for p in root.rglob("*") if p.is_file())


@pytest.fixture
def race(monkeypatch, workspace, owner):
    """Let another upload of ``rival`` commit after this one's checks, before its write."""

    def arrange(rival: bytes, name: str = "policy.txt"):
        real = ingest.sniff_upload
        raced = []

        def sniff_then_lose_the_race(upload):
            if not raced:
                raced.append(True)
                documents_services.document_upload(
                    workspace=workspace, user=owner, upload=SimpleUploadedFile(name, rival)
                )
            return real(upload)

        monkeypatch.setattr(ingest, "sniff_upload", sniff_then_lose_the_race)

    return arrange


def test_the_loser_of_two_uploads_of_the_same_file_returns_the_winner_and_keeps_no_file(
    race, workspace, owner, settings
):
    race(b"Leave policy.")

    document, created = documents_services.document_upload(
        workspace=workspace, user=owner, upload=SimpleUploadedFile("policy.txt", b"Leave policy.")
    )

    assert not created and Document.objects.get() == document
    assert _stored(settings) == [document.file.name]


def test_the_loser_of_two_uploads_under_one_source_id_is_refused_and_keeps_no_file(
    race, workspace, owner, settings
):
    race(b"The first policy.")

    with pytest.raises(Conflict, match="uploaded at the same moment"):
        documents_services.document_upload(
            workspace=workspace, user=owner, upload=SimpleUploadedFile("policy.txt", b"Another.")
        )

    assert _stored(settings) == [Document.objects.get().file.name]


def test_the_sweep_removes_stored_files_no_document_points_at_once_they_are_old_enough(
    workspace, owner, settings
):
    kept, _ = documents_services.document_upload(
        workspace=workspace, user=owner, upload=SimpleUploadedFile("kept.txt", b"Kept.")
    )
    orphan = default_storage.save("documents/acme/ab/abandoned", ContentFile(b"Nobody's."))

    assert sweep.remove_orphan_files() == 0  # within the grace period: an upload may be under way
    assert orphan in _stored(settings)

    assert sweep.remove_orphan_files(timedelta(0)) == 1
    assert _stored(settings) == [kept.file.name]
