"""The sweep removes what dead writers left: box files no parse points at, and half-written
broker messages.

A parse written again, or one whose row was never written, left its character-box file in
storage for ever; a process killed (or a disk that filled) between writing a message's
``.part`` file and renaming it left that file in the broker folder, where no queue reads it.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from evalsets import sweep
from evalsets.models import IdempotencyKey
from labelling import fsbroker

HOUR = 3600


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.mark.django_db
def test_a_box_file_no_parse_points_at_is_removed_and_a_parses_own_is_kept(reference, settings):
    reference.char_boxes.save("kept.boxes", ContentFile(b"boxes"), save=True)
    orphan = default_storage.save("parses/acme/lost.boxes", ContentFile(b"old boxes"))
    for name in (reference.char_boxes.name, orphan):
        _age(Path(settings.MEDIA_ROOT) / name, 2 * HOUR)

    assert sweep.orphan_files() == [orphan]
    sweep.remove_orphan_files()

    assert not default_storage.exists(orphan)
    assert default_storage.exists(reference.char_boxes.name)


@pytest.mark.django_db
def test_a_fresh_box_file_is_left_for_the_parse_still_writing_it(settings):
    young = default_storage.save("parses/acme/young.boxes", ContentFile(b"boxes"))

    assert sweep.orphan_files() == []
    assert default_storage.exists(young)


def test_a_half_written_broker_message_older_than_a_minute_is_removed(tmp_path):
    old = tmp_path / ".1_abc.celery.resolve.msg.part"
    young = tmp_path / ".2_def.celery.resolve.msg.part"
    message = tmp_path / "3_ghi.celery.resolve.msg"
    for path in (old, young, message):
        path.write_bytes(b"")
    _age(old, 2 * fsbroker.PART_GRACE_S)
    _age(message, 2 * fsbroker.PART_GRACE_S)

    assert fsbroker.remove_stale_parts(str(tmp_path)) == 1

    assert not old.exists()
    assert young.exists(), "a writer may be about to rename it"
    assert message.exists(), "a whole message is the queue's, not the sweep's"


@pytest.mark.django_db
def test_the_sweep_cleans_the_filesystem_brokers_folder(tmp_path, settings):
    folder = tmp_path / "queue"
    folder.mkdir()
    left = folder / ".1_abc.celery.msg.part"
    left.write_bytes(b"")
    _age(left, 2 * fsbroker.PART_GRACE_S)
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_out": str(folder)}

    counts = sweep.sweep(timedelta(days=365), periodic=True)

    assert counts["broker_parts"] == 1 and not left.exists()


def test_a_broker_folder_that_is_not_there_yet_is_nothing_to_clean(tmp_path):
    assert fsbroker.remove_stale_parts(str(tmp_path / "missing")) == 0


@pytest.mark.django_db
def test_the_sweep_forgets_idempotency_keys_past_their_window(
    client_for, item, annotator, document, settings
):
    client = client_for(annotator)
    body = {"source_id": "handbook.txt", "quote": "Leave may be"}
    url = "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/"
    client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="old")
    client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="new")
    IdempotencyKey.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(seconds=settings.GROUNDWORK_IDEMPOTENCY_WINDOW_S + 1)
    )

    counts = sweep.sweep(timedelta(days=365), periodic=True)

    assert counts["idempotency_keys"] == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["new"]
