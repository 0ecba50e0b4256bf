"""Documents and parse versions through the API."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.models import Document, ParseVersion

pytestmark = pytest.mark.django_db

DOCS = "/api/workspaces/acme/documents/"


def _upload(client, name: str, data: bytes, **extra):
    return client.post(DOCS, {"file": SimpleUploadedFile(name, data), **extra}, format="multipart")


def test_uploading_a_text_file_stores_it_and_parses_it(
    client_for, workspace, annotator, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload(client_for(annotator), "notes.txt", "Größe matters.\nLine two.".encode())
    assert response.status_code == 201
    body = response.json()
    assert body["source_id"] == "notes.txt" and body["kind"] == "text"
    parse = ParseVersion.objects.get(document__source_id="notes.txt")
    assert parse.status == "ready" and parse.is_reference
    assert parse.text.startswith("Größe matters.")


def test_the_same_bytes_again_are_recognised_not_duplicated(client_for, workspace, annotator):
    client = client_for(annotator)
    first = _upload(client, "a.txt", b"same bytes")
    second = _upload(client, "b.txt", b"same bytes")
    assert first.status_code == 201 and second.status_code == 200
    assert second.json()["source_id"] == "a.txt"
    assert second.json()["duplicate_of_existing"] is True
    assert Document.objects.count() == 1


def test_a_taken_source_id_with_other_bytes_is_a_409(client_for, workspace, annotator):
    client = client_for(annotator)
    _upload(client, "a.txt", b"one")
    response = _upload(client, "a.txt", b"two")
    assert response.status_code == 409
    assert "already stored as 'a.txt'" in response.json()["detail"]


def test_an_upload_over_the_size_limit_is_refused_with_the_numbers(
    client_for, workspace, annotator, settings
):
    settings.GROUNDWORK_MAX_UPLOAD_BYTES = 1024 * 1024
    response = _upload(client_for(annotator), "big.txt", b"x" * (1024 * 1024 + 10))
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "'big.txt' is too large: 1.0 MB, the limit is 1.0 MB (GROUNDWORK_MAX_UPLOAD_MB)"
    )
    assert response.json()["limit"] == {"setting": "GROUNDWORK_MAX_UPLOAD_MB", "value": 1}
    assert not Document.objects.exists()


def test_an_empty_upload_is_refused(client_for, workspace, annotator):
    response = _upload(client_for(annotator), "empty.txt", b"")
    assert response.status_code == 400
    assert "file" in response.json()["errors"]


def test_a_file_we_cannot_read_is_refused_with_what_it_looks_like(client_for, workspace, annotator):
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    response = _upload(client_for(annotator), "scan.pdf", png)
    assert response.status_code == 400
    assert response.json()["detail"].startswith("'scan.pdf': ")
    assert not Document.objects.exists()


def test_a_viewer_cannot_upload(client_for, workspace, viewer):
    response = _upload(client_for(viewer), "a.txt", b"text")
    assert response.status_code == 403


def test_a_parse_made_elsewhere_is_added_as_another_version(client_for, document, annotator):
    response = client_for(annotator).post(
        f"{DOCS}handbook.txt/parses/",
        {
            "parser": "my-pipeline",
            "parser_version": "3",
            "text": "Page one.\fPage two.",
            "page_starts": [0, 10],
        },
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["origin"] == "uploaded" and body["status"] == "ready"
    assert body["page_starts"] == [0, 10] and body["is_reference"] is False
    listed = client_for(annotator).get(f"{DOCS}handbook.txt/parses/").json()
    assert [p["parser"] for p in listed["results"]] == ["plaintext", "my-pipeline"]


@pytest.mark.parametrize(
    ("page_starts", "message"),
    [
        ([5], "page_starts[0] must be 0"),
        ([0, 4, 4], "must rise strictly"),
        ([0, 999], "past the end of the text"),
        ([], "page_starts must be a list"),
    ],
)
def test_bad_page_starts_are_refused_with_the_index(
    client_for, document, annotator, page_starts, message
):
    response = client_for(annotator).post(
        f"{DOCS}handbook.txt/parses/",
        {"parser": "mine", "text": "Some text here.", "page_starts": page_starts},
        format="json",
    )
    assert response.status_code == 400
    assert message in response.json()["detail"]


def test_the_same_parser_version_twice_is_a_409(client_for, document, annotator):
    client = client_for(annotator)
    body = {"parser": "mine", "parser_version": "1", "text": "Text."}
    assert client.post(f"{DOCS}handbook.txt/parses/", body, format="json").status_code == 201
    again = client.post(f"{DOCS}handbook.txt/parses/", body, format="json")
    assert again.status_code == 409


def test_an_owner_switches_the_reference_parse(client_for, document, owner, reference):
    client = client_for(owner)
    made = client.post(
        f"{DOCS}handbook.txt/parses/", {"parser": "mine", "text": "Text."}, format="json"
    ).json()
    response = client.post(f"{DOCS}handbook.txt/parses/{made['id']}/reference/")
    assert response.status_code == 200 and response.json()["is_reference"] is True
    reference.refresh_from_db()
    assert reference.is_reference is False


def test_a_parse_shows_its_text_pages_and_health(client_for, document, annotator, reference):
    body = client_for(annotator).get(f"{DOCS}handbook.txt/parses/{reference.public_id}/").json()
    assert body["text"] == reference.text
    assert body["page_starts"] == reference.page_starts
    assert body["health"]["anchors"] == 0


def test_a_source_id_with_slashes_and_spaces_is_addressable(client_for, workspace, annotator):
    client = client_for(annotator)
    _upload(client, "x.txt", b"nested", source_id="reports/2024/Q1 summary.txt")
    response = client.get(f"{DOCS}reports/2024/Q1 summary.txt/")
    assert response.status_code == 200
    assert response.json()["source_id"] == "reports/2024/Q1 summary.txt"
    assert client.get(f"{DOCS}reports/2024/Q1 summary.txt/parses/").status_code == 200


def test_deleting_a_document_keeps_its_anchors_pending(client_for, document, owner, item):
    from evalsets.anchoring import services as anchoring_services

    anchor = anchoring_services.anchor_create_typed(
        item=item, user=owner, source_id="handbook.txt", quote="Leave"
    )
    assert client_for(owner).delete(f"{DOCS}handbook.txt/").status_code == 204
    anchor.refresh_from_db()
    assert anchor.document is None and anchor.source_id == "handbook.txt"


def test_another_workspaces_document_is_a_404(client_for, document, outsider):
    assert client_for(outsider).get(f"{DOCS}handbook.txt/").status_code == 404


def test_a_context_grid_style_parse_with_paged_blocks_becomes_page_starts(
    client_for, document, annotator
):
    text = "Intro line.\nPage two text.\nPage three."
    blocks = [
        {"start": 0, "end": 11, "page": 1},
        {"start": 12, "end": 26, "page": 2},
        {"start": 27, "end": 38, "page": 3},
    ]
    response = client_for(annotator).post(
        f"{DOCS}handbook.txt/parses/",
        {"parser": "contextgrid-pymupdf", "text": text, "blocks": blocks},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["page_starts"] == [0, 12, 27]


def test_a_block_that_ends_before_it_starts_is_refused_naming_it(client_for, document, annotator):
    response = client_for(annotator).post(
        f"{DOCS}handbook.txt/parses/",
        {"parser": "x", "text": "Some text.", "blocks": [{"start": 5, "end": 2, "page": 1}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "blocks[0]: end 2 is before start 5"


def test_form_fields_past_djangos_body_limit_are_a_413_in_the_api_shape(
    client_for, workspace, annotator, settings
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = _upload(client_for(annotator), "a.txt", b"text", source_id="x" * 2000)
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "the request's form fields pass the 1,000 bytes a request may send outside its files; "
        "nothing was read"
    )
    assert not Document.objects.exists()


def test_more_form_fields_than_django_reads_are_a_400_in_the_api_shape(
    client_for, workspace, annotator, settings
):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 5
    fields = {f"f{n}": "v" for n in range(10)}
    response = _upload(client_for(annotator), "a.txt", b"text", **fields)
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "body": ["the request sends more than 5 form fields; nothing was read"]
    }
    assert not Document.objects.exists()
