"""A create sent again with the same Idempotency-Key makes nothing new.

When the connection drops just after COMMIT the client is told 503 with the change saved;
its retry with the same key is answered with the object the first request made, the same
status and body, instead of a second anchor (or a 409 on a second item with the same id).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError, connection
from django.utils import timezone

from evalsets import idempotency
from evalsets.api.errors import exception_handler
from evalsets.models import Document, EvalItem, GoldAnchor, IdempotencyKey

pytestmark = pytest.mark.django_db

ITEMS = "/api/workspaces/acme/evalsets/quiz/items/"
ANCHORS = f"{ITEMS}q1/anchors/"
TYPED = {"source_id": "handbook.txt", "quote": "Leave may be carried over."}


def _post(client, url, data, key=None, **extra):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(url, data, format="json", **headers, **extra)


def test_a_retried_anchor_create_with_the_same_key_makes_one_anchor_and_answers_the_same(
    client_for, item, annotator, document
):
    client = client_for(annotator)
    first = _post(client, ANCHORS, TYPED, key="k-1")
    again = _post(client, ANCHORS, TYPED, key="k-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert GoldAnchor.objects.filter(item=item).count() == 1


def test_two_anchor_creates_with_different_keys_make_two_anchors(
    client_for, item, annotator, document
):
    client = client_for(annotator)
    first = _post(client, ANCHORS, TYPED, key="k-1")
    second = _post(client, ANCHORS, TYPED, key="k-2")

    assert first.status_code == second.status_code == 201
    assert first.json()["id"] != second.json()["id"]
    assert GoldAnchor.objects.filter(item=item).count() == 2


def test_a_highlight_retried_with_its_key_makes_one_anchor(client_for, item, annotator, reference):
    client = client_for(annotator)
    selection = {"parse": str(reference.public_id), "start": 0, "end": 17}
    first = _post(client, ANCHORS, selection, key="h-1")
    again = _post(client, ANCHORS, selection, key="h-1")

    assert again.json()["id"] == first.json()["id"]
    assert GoldAnchor.objects.filter(item=item).count() == 1


def test_a_retried_item_create_with_its_key_answers_201_not_a_duplicate_id_409(
    client_for, evalset, annotator
):
    client = client_for(annotator)
    body = {"id": "q9", "question": "How long may remote work last?"}
    first = _post(client, ITEMS, body, key="i-1")
    again = _post(client, ITEMS, body, key="i-1")
    without_key = _post(client, ITEMS, body)

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert without_key.status_code == 409
    assert EvalItem.objects.filter(evalset=evalset, item_id="q9").count() == 1


def test_a_retried_upload_with_its_key_answers_201_with_the_same_document(
    client_for, workspace, annotator
):
    client = client_for(annotator)
    url = "/api/workspaces/acme/documents/"

    def send():
        upload = SimpleUploadedFile("notes.txt", b"Some notes to keep.")
        return client.post(url, {"file": upload}, format="multipart", HTTP_IDEMPOTENCY_KEY="u-1")

    first, again = send(), send()

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert Document.objects.filter(workspace=workspace).count() == 1


def test_a_key_is_one_users_own(client_for, item, annotator, owner, document):
    mine = _post(client_for(annotator), ANCHORS, TYPED, key="same")
    theirs = _post(client_for(owner), ANCHORS, TYPED, key="same")

    assert theirs.status_code == 201 and theirs.json()["id"] != mine.json()["id"]


def test_a_key_used_for_an_item_cannot_create_an_anchor(client_for, item, annotator, document):
    client = client_for(annotator)
    _post(client, ITEMS, {"id": "q9", "question": "Why?"}, key="k")
    response = _post(client, ANCHORS, TYPED, key="k")

    assert response.status_code == 409
    assert "Idempotency-Key" in response.json()["errors"]
    assert not GoldAnchor.objects.exists()


def test_a_key_past_the_window_creates_again(client_for, item, annotator, document, settings):
    client = client_for(annotator)
    first = _post(client, ANCHORS, TYPED, key="old")
    IdempotencyKey.objects.update(
        created_at=timezone.now() - timedelta(seconds=settings.GROUNDWORK_IDEMPOTENCY_WINDOW_S + 1)
    )
    again = _post(client, ANCHORS, TYPED, key="old")

    assert again.status_code == 201 and again.json()["id"] != first.json()["id"]
    assert IdempotencyKey.objects.count() == 1
    assert idempotency.forget_expired() == 0


def test_a_key_too_long_is_a_400_naming_the_limit(client_for, item, annotator, document):
    response = _post(client_for(annotator), ANCHORS, TYPED, key="x" * 101)

    assert response.status_code == 400
    assert "1 to 100 printable ASCII characters" in response.json()["detail"]
    assert not GoldAnchor.objects.exists()


def test_a_create_that_fails_leaves_its_key_free_for_the_retry(
    client_for, item, annotator, document
):
    client = client_for(annotator)
    refused = _post(client, ANCHORS, {**TYPED, "source_id": "missing.txt"}, key="k")
    fixed = _post(client, ANCHORS, TYPED, key="k")

    assert refused.status_code == 400
    assert fixed.status_code == 201
    assert GoldAnchor.objects.count() == 1


def test_the_503_for_a_failed_database_says_the_change_may_have_been_saved():
    response = exception_handler(OperationalError("server closed the connection"), {})

    assert response.status_code == 503
    detail = response.data["detail"]
    assert "may or may not have been saved" in detail
    assert "same key" in detail and "nothing was saved" not in detail


class DropAfterCommit:
    """The database connection failing on the first statement after the create's key is
    written, i.e. just after its COMMIT: the change is saved and the answer is lost."""

    def __init__(self) -> None:
        self.committed = False
        self.dropped = False

    def __call__(self, execute, sql, params, many, context):
        if self.committed and not self.dropped:
            self.dropped = True
            raise OperationalError("server closed the connection unexpectedly")
        if sql.lstrip().upper().startswith('INSERT INTO "EVALSETS_IDEMPOTENCYKEY"'):
            self.committed = True
        return execute(sql, params, many, context)


@pytest.mark.django_db(transaction=True)
def test_a_create_whose_answer_was_lost_after_commit_is_answered_on_retry_without_a_duplicate(
    client_for, item, annotator, document
):
    client = client_for(annotator)
    drop = DropAfterCommit()
    with connection.execute_wrapper(drop):
        lost = _post(client, ANCHORS, TYPED, key="after-commit")
    assert drop.dropped and lost.status_code == 503
    assert GoldAnchor.objects.filter(item=item).count() == 1, "the create had committed"

    retried = _post(client, ANCHORS, TYPED, key="after-commit")

    assert retried.status_code == 201
    assert retried.json()["id"] == str(GoldAnchor.objects.get(item=item).public_id)
    assert GoldAnchor.objects.filter(item=item).count() == 1
