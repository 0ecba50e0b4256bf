"""Quotas: how many workspaces a user owns, documents and bytes a workspace holds, releases a
workspace makes a day. Each is refused at its edge, through the API, with a message naming
the setting and its value, and nothing half-written behind.

The races run on real PostgreSQL (``services``): two requests for the last place, each in its
own thread with its own connection, and exactly one gets it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.errors import LimitReached, RateLimited, TooLarge
from evalsets.models import (
    Document,
    EvalSet,
    Membership,
    ParseVersion,
    Release,
    Role,
    Workspace,
)
from evalsets.releases import services as releases_services
from evalsets.workspaces import quotas
from evalsets.workspaces import services as workspaces_services
from tests.services import race, services_configured

DOCS = "/api/workspaces/acme/documents/"
RELEASES = "/api/workspaces/acme/evalsets/quiz/releases/"
MB = 1024 * 1024


def _upload(client, name: str, data: bytes):
    return client.post(DOCS, {"file": SimpleUploadedFile(name, data)}, format="multipart")


def _stored_files(settings) -> list:
    root = settings.MEDIA_ROOT / "documents"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


# -- workspaces per user -----------------------------------------------------------------------


@pytest.mark.django_db
def test_a_user_who_owns_the_most_workspaces_allowed_is_refused_another_with_a_409(
    client_for, make_user, settings
):
    settings.GROUNDWORK_MAX_WORKSPACES_PER_USER = 3
    user = make_user("wendy")
    client = client_for(user)
    for n in range(3):
        assert client.post("/api/workspaces/", {"slug": f"w{n}"}, format="json").status_code == 201
    response = client.post("/api/workspaces/", {"slug": "w3"}, format="json")
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["detail"] == (
        "you own 3 workspaces, the most GROUNDWORK_MAX_WORKSPACES_PER_USER allows (3); "
        "ask the site's administrator to raise it"
    )
    assert body["errors"] == {"slug": [body["detail"]]}
    assert body["limit"] == {"setting": "GROUNDWORK_MAX_WORKSPACES_PER_USER", "value": 3}
    assert not Workspace.objects.filter(slug="w3").exists()


@pytest.mark.django_db
def test_workspaces_a_user_is_only_a_member_of_do_not_count_towards_their_quota(
    workspace, annotator, settings
):
    settings.GROUNDWORK_MAX_WORKSPACES_PER_USER = 1
    assert Membership.objects.filter(user=annotator, workspace=workspace).exists()
    workspaces_services.workspace_create(user=annotator, slug="mine")
    with pytest.raises(LimitReached, match="you own 1 workspace, the most"):
        workspaces_services.workspace_create(user=annotator, slug="another")


# -- documents per workspace -------------------------------------------------------------------


@pytest.mark.django_db
def test_an_upload_past_the_most_documents_a_workspace_holds_is_a_409_and_stores_nothing(
    client_for, annotator, document, settings
):
    settings.GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE = 2
    client = client_for(annotator)
    assert _upload(client, "second.txt", b"The second document.\n").status_code == 201
    files = _stored_files(settings)
    response = _upload(client, "third.txt", b"The third document.\n")
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["detail"] == (
        "workspace 'acme' holds 2 documents, the most GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE "
        "allows (2); delete some before uploading more"
    )
    assert body["errors"] == {"file": [body["detail"]]}
    assert body["limit"] == {"setting": "GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE", "value": 2}
    assert not Document.objects.filter(source_id="third.txt").exists()
    assert _stored_files(settings) == files


@pytest.mark.django_db
def test_the_same_bytes_again_are_still_answered_with_the_first_copy_at_the_document_limit(
    client_for, annotator, document, settings
):
    settings.GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE = 2
    client = client_for(annotator)
    assert _upload(client, "second.txt", b"The second document.\n").status_code == 201
    again = _upload(client, "second-again.txt", b"The second document.\n")
    assert again.status_code == 200
    assert again.json()["duplicate_of_existing"] is True


@pytest.mark.django_db
def test_the_document_limit_is_checked_again_under_the_lock_after_the_file_is_stored(
    workspace, annotator, settings, monkeypatch
):
    """The check before the file is stored can pass while another upload lands; the one
    under the workspace's lock refuses, and the stored file is removed."""
    settings.GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE = 1
    first_check = quotas.check_document_count
    calls = []

    def another_upload_lands_between(ws):
        calls.append(ws)
        if len(calls) == 1:
            first_check(ws)  # passes: the workspace is empty
            Document.objects.create(workspace=ws, source_id="landed.txt", sha256="9" * 64)
            return
        first_check(ws)

    monkeypatch.setattr(quotas, "check_document_count", another_upload_lands_between)
    with pytest.raises(LimitReached, match="holds 1 document, the most"):
        documents_services.document_upload(
            workspace=workspace, user=annotator, upload=SimpleUploadedFile("late.txt", b"late\n")
        )
    assert len(calls) == 2
    assert _stored_files(settings) == []


# -- bytes per workspace -----------------------------------------------------------------------


@pytest.mark.django_db
def test_an_upload_that_would_pass_the_workspace_byte_limit_is_a_413_naming_it(
    client_for, annotator, document, settings
):
    settings.GROUNDWORK_MAX_WORKSPACE_MB = 1
    used = quotas.stored_bytes(document.workspace)
    assert used == 2 * document.size  # the file and its one parse's text
    fits = MB - used
    client = client_for(annotator)
    assert _upload(client, "fits.txt", b"x" * fits).status_code == 201
    assert quotas.stored_bytes(document.workspace) == MB
    response = _upload(client, "one-more.txt", b"y")
    assert response.status_code == 413, response.content
    body = response.json()
    assert body["detail"] == (
        "storing 'one-more.txt' would take workspace 'acme' to 1.0 MB stored, past the 1.0 MB "
        "GROUNDWORK_MAX_WORKSPACE_MB allows (1.0 MB is stored now in uploads, parses and "
        "releases); delete some of them first"
    )
    assert body["limit"] == {"setting": "GROUNDWORK_MAX_WORKSPACE_MB", "value": 1}
    assert not Document.objects.filter(source_id="one-more.txt").exists()


@pytest.mark.django_db
def test_a_parse_upload_that_would_pass_the_byte_limit_is_a_413_and_adds_no_parse(
    client_for, annotator, document, settings
):
    settings.GROUNDWORK_MAX_WORKSPACE_MB = 1
    before = ParseVersion.objects.count()
    response = client_for(annotator).post(
        f"{DOCS}handbook.txt/parses/",
        {"parser": "mine", "text": "z" * MB, "page_starts": [0]},
        format="json",
    )
    assert response.status_code == 413, response.content
    body = response.json()
    assert body["detail"].startswith(
        "a parse of 1,048,576 characters would take workspace 'acme' to 1.0 MB stored"
    )
    assert "GROUNDWORK_MAX_WORKSPACE_MB allows" in body["detail"]
    assert body["errors"] == {"text": [body["detail"]]}
    assert ParseVersion.objects.count() == before


@pytest.mark.django_db
def test_release_files_count_towards_the_bytes_a_workspace_stores(item, owner, document):
    release = releases_services.release_create(
        evalset=item.evalset, user=owner, formats=["contextgrid-jsonl"], include_states=["draft"]
    )
    before = quotas.stored_bytes(document.workspace)
    release.files.create(format="contextgrid-jsonl", filename="x.jsonl", sha256="0", size=1234)
    assert quotas.stored_bytes(document.workspace) == before + 1234


@pytest.mark.django_db
def test_a_release_of_a_workspace_already_at_its_byte_limit_is_a_413(
    client_for, owner, item, document, settings
):
    settings.GROUNDWORK_MAX_WORKSPACE_MB = 1
    Document.objects.filter(pk=document.pk).update(size=MB)
    response = client_for(owner).post(
        RELEASES, {"formats": ["contextgrid-jsonl"], "include_states": ["draft"]}, format="json"
    )
    assert response.status_code == 413, response.content
    assert "GROUNDWORK_MAX_WORKSPACE_MB allows" in response.json()["detail"]
    assert not Release.objects.exists()


@pytest.mark.django_db
def test_a_release_of_a_workspace_exactly_at_its_byte_limit_is_refused_too(
    owner, item, document, settings
):
    settings.GROUNDWORK_MAX_WORKSPACE_MB = 1
    others = quotas.stored_bytes(document.workspace) - document.size
    Document.objects.filter(pk=document.pk).update(size=MB - others)
    assert quotas.stored_bytes(document.workspace) == MB
    with pytest.raises(TooLarge, match="GROUNDWORK_MAX_WORKSPACE_MB allows"):
        _release(item.evalset, owner)


@pytest.mark.django_db
def test_a_workspace_with_nothing_stored_stores_no_bytes(owner):
    assert quotas.stored_bytes(workspaces_services.workspace_create(user=owner, slug="empty")) == 0


# -- releases a day ----------------------------------------------------------------------------


def _release(evalset, owner):
    return releases_services.release_create(
        evalset=evalset, user=owner, formats=["contextgrid-jsonl"], include_states=["draft"]
    )


@pytest.mark.django_db
def test_a_release_past_the_most_a_workspace_makes_a_day_is_a_429_with_retry_after(
    client_for, owner, item, settings
):
    settings.GROUNDWORK_MAX_RELEASES_PER_DAY = 2
    first = _release(item.evalset, owner)
    _release(item.evalset, owner)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Release.objects.filter(pk=first.pk).update(created_at=an_hour_ago)
    response = client_for(owner).post(
        RELEASES, {"formats": ["contextgrid-jsonl"], "include_states": ["draft"]}, format="json"
    )
    assert response.status_code == 429, response.content
    body = response.json()
    assert body["detail"] == (
        "workspace 'acme' made 2 releases in the last 24 hours, the most "
        "GROUNDWORK_MAX_RELEASES_PER_DAY allows (2); the next is allowed in 23 hours"
    )
    assert body["limit"] == {"setting": "GROUNDWORK_MAX_RELEASES_PER_DAY", "value": 2}
    # The first release leaves the window 23 hours from now.
    assert 23 * 3600 - 60 <= int(response["Retry-After"]) <= 23 * 3600 + 1
    assert Release.objects.count() == 2


@pytest.mark.django_db
def test_releases_of_every_set_in_the_workspace_count_and_older_ones_do_not(
    owner, item, workspace, annotator, settings
):
    settings.GROUNDWORK_MAX_RELEASES_PER_DAY = 1
    other = anchoring_services.evalset_create(workspace=workspace, user=owner, slug="other")
    anchoring_services.item_create(evalset=other, user=annotator, item_id="o1", question="Who?")
    made = _release(item.evalset, owner)
    with pytest.raises(RateLimited, match="made 1 release in the last 24 hours"):
        _release(other, owner)
    Release.objects.filter(pk=made.pk).update(created_at=timezone.now() - timedelta(hours=25))
    assert _release(other, owner).version == 1


@pytest.mark.django_db
def test_another_workspaces_releases_do_not_count_towards_this_ones_day(owner, item, settings):
    settings.GROUNDWORK_MAX_RELEASES_PER_DAY = 1
    _release(item.evalset, owner)
    quotas.check_releases_today(workspaces_services.workspace_create(user=owner, slug="beta"))


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (20, "1 min"),
        (90, "2 min"),
        (119 * 60, "119 min"),
        (120 * 60, "2 hours"),
        (23 * 3600, "23 hours"),
    ],
)
def test_the_wait_for_the_next_release_is_said_in_minutes_then_hours(seconds, said):
    assert quotas._wait(seconds) == said


# -- the races, on PostgreSQL ------------------------------------------------------------------


@pytest.fixture
def postgresql():
    reason = services_configured()
    if reason:
        pytest.skip(f"needs PostgreSQL: {reason}")


@pytest.mark.services
@pytest.mark.parametrize("attempt", range(3))
@pytest.mark.usefixtures("sent")  # no background work outlives the race
def test_two_uploads_racing_for_a_workspace_s_last_document_place_get_one_winner(
    postgresql, workspace, annotator, settings, attempt
):
    settings.GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE = 1

    def upload(name):
        return lambda: documents_services.document_upload(
            workspace=Workspace.objects.get(pk=workspace.pk),
            user=annotator,
            upload=SimpleUploadedFile(name, f"{name} {attempt}\n".encode()),
        )

    results = race(upload("left.txt"), upload("right.txt"))
    losers = [r for r in results if isinstance(r, LimitReached)]
    assert len(losers) == 1, results
    assert "the most GROUNDWORK_MAX_DOCUMENTS_PER_WORKSPACE allows (1)" in losers[0].message
    assert Document.objects.filter(workspace=workspace).count() == 1
    assert len(_stored_files(settings)) == 1  # the loser's file was removed


@pytest.mark.services
@pytest.mark.parametrize("attempt", range(3))
@pytest.mark.usefixtures("sent")  # no background work outlives the race
def test_two_workspaces_created_at_once_by_one_user_at_their_limit_get_one_winner(
    postgresql, make_user, settings, attempt
):
    settings.GROUNDWORK_MAX_WORKSPACES_PER_USER = 1
    user = make_user("racer")
    results = race(
        lambda: workspaces_services.workspace_create(user=user, slug=f"left-{attempt}"),
        lambda: workspaces_services.workspace_create(user=user, slug=f"right-{attempt}"),
    )
    assert sum(isinstance(r, Workspace) for r in results) == 1, results
    assert sum(isinstance(r, LimitReached) for r in results) == 1, results
    assert Membership.objects.filter(user=user, role=Role.OWNER).count() == 1


@pytest.mark.services
@pytest.mark.parametrize("attempt", range(3))
@pytest.mark.usefixtures("sent")  # no background work outlives the race
def test_two_releases_racing_for_the_day_s_last_one_get_one_winner(
    postgresql, owner, item, workspace, annotator, settings, attempt
):
    settings.GROUNDWORK_MAX_RELEASES_PER_DAY = 1
    other = anchoring_services.evalset_create(workspace=workspace, user=owner, slug="other")
    anchoring_services.item_create(evalset=other, user=annotator, item_id="o1", question="Who?")
    results = race(
        lambda: _release(EvalSet.objects.get(pk=item.evalset.pk), owner),
        lambda: _release(EvalSet.objects.get(pk=other.pk), owner),
    )
    assert sum(isinstance(r, Release) for r in results) == 1, results
    assert sum(isinstance(r, RateLimited) for r in results) == 1, results
    assert Release.objects.count() == 1
