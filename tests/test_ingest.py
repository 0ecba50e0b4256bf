"""Ingestion: uploads become parse versions through the parse task, with clear failures."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets.documents import tasks as documents_tasks
from evalsets.models import Document, ParseVersion
from evalsets.pure import parsers
from tests.documents import encrypt_pdf, make_docx, make_pdf, make_scan_pdf

pytestmark = pytest.mark.django_db

DOCS = "/api/workspaces/acme/documents/"
PAGES = ["First page about leave.", "Second page about remote work.", "Third page, expenses."]


@pytest.fixture
def upload(client_for, annotator, django_capture_on_commit_callbacks):
    def send(name: str, data: bytes):
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(annotator).post(
                DOCS, {"file": SimpleUploadedFile(name, data)}, format="multipart"
            )
        return response

    return send


def _parses(client, source_id: str) -> dict[str, dict]:
    body = client.get(f"{DOCS}{source_id}/").json()
    return {p["parser"]: p for p in body["parses"]}


def test_a_pdf_gets_a_pypdf_a_pdfminer_and_a_pdfium_parse_with_real_page_starts(
    upload, client_for, annotator, workspace
):
    assert upload("report.pdf", make_pdf(PAGES)).status_code == 201
    parses = _parses(client_for(annotator), "report.pdf")
    assert set(parses) == {"pypdf", "pdfminer", "pdfium"}
    for name, summary in parses.items():
        assert summary["status"] == "ready", summary
        assert summary["page_count"] == 3
        assert summary["progress"] == {"done": 3, "total": 3}
        assert summary["parser_version"] == parsers.get_parser(name).version
        parse = ParseVersion.objects.get(document__source_id="report.pdf", parser=name)
        for number, page_text in enumerate(PAGES):
            start = parse.page_starts[number]
            assert parse.text[start:].startswith(page_text.split()[0])
    assert parses["pypdf"]["is_reference"] and not parses["pdfminer"]["is_reference"]


def test_the_workspace_chooses_the_parsers_and_the_reference(
    upload, client_for, annotator, owner, workspace
):
    client_for(owner).patch(
        "/api/workspaces/acme/",
        {"parser_settings": {"parsers": {"pdf": ["pdfminer"]}, "reference": {"pdf": "pdfminer"}}},
        format="json",
    )
    upload("report.pdf", make_pdf(PAGES))
    parses = _parses(client_for(annotator), "report.pdf")
    assert list(parses) == ["pdfminer"] and parses["pdfminer"]["is_reference"]


@pytest.mark.parametrize(
    ("name", "data", "kind", "expected"),
    [
        ("memo.docx", make_docx(), "docx", "Before the table, it\u2019s prose."),
        (
            "page.html",
            b"<html><body><p>Caf&eacute; &amp; bar</p></body></html>",
            "html",
            "Café & bar",
        ),
        (
            "notes.md",
            b"# Title\n\nSome *emphasis* and a [link](http://x.y).",
            "markdown",
            "emphasis",
        ),
        ("latin.txt", "Crème brûlée à la carte.".encode("cp1252"), "text", "Crème brûlée"),
    ],
)
def test_each_kind_of_file_is_sniffed_and_parsed(
    upload, client_for, annotator, workspace, name, data, kind, expected
):
    assert upload(name, data).json()["kind"] == kind
    reference = ParseVersion.objects.get(document__source_id=name, is_reference=True)
    assert reference.status == "ready"
    assert expected in reference.text


def test_an_encrypted_pdf_ends_as_failed_parses_that_say_why(
    upload, client_for, annotator, workspace
):
    assert upload("locked.pdf", encrypt_pdf(make_pdf(PAGES), "secret")).status_code == 201
    document = Document.objects.get(source_id="locked.pdf")
    assert document.parses.count() == 3
    for parse in document.parses.all():
        assert parse.status == "failed"
        assert parse.error_code == "encrypted"
        assert "password" in parse.error


def test_a_scanned_pdf_without_text_fails_and_asks_for_ocr(upload, workspace):
    upload("scan.pdf", make_scan_pdf())
    for parse in ParseVersion.objects.filter(document__source_id="scan.pdf"):
        assert (parse.status, parse.error_code) == ("failed", "no_text")
        assert "OCR" in parse.error


def test_a_pdf_over_the_page_limit_fails_with_both_numbers(upload, workspace, settings):
    settings.GROUNDWORK_MAX_PAGES = 2
    upload("long.pdf", make_pdf(PAGES))
    parse = ParseVersion.objects.get(document__source_id="long.pdf", parser="pypdf")
    assert parse.error_code == "too_many_pages"
    assert "3 pages" in parse.error and "2" in parse.error


def test_a_failed_parse_leaves_the_document_and_other_parses_untouched(
    upload, client_for, annotator, workspace
):
    upload("report.pdf", make_pdf(PAGES))
    document = Document.objects.get(source_id="report.pdf")
    ParseVersion.objects.filter(document=document, parser="pdfminer").update(
        status="queued", parser_version="0-broken"
    )
    broken = ParseVersion.objects.get(document=document, parser="pdfminer")
    document.file.delete(save=False)  # storage lost the file
    documents_tasks.parse_version(broken.pk)
    broken.refresh_from_db()
    assert broken.status == "failed" and "upload it again" in broken.error
    assert ParseVersion.objects.get(document=document, parser="pypdf").status == "ready"


def test_a_hanging_parser_is_cut_off_and_the_worker_lives(workspace, document, settings):
    settings.GROUNDWORK_PARSE_TIMEOUT_S = 2
    parse = ParseVersion.objects.create(
        document=document, parser="evalsets.pure.parsers.diagnostic:HangingParser", status="queued"
    )
    assert documents_tasks.parse_version(parse.pk) == "failed"
    parse.refresh_from_db()
    assert parse.error_code == "timeout"
    assert parse.error == "Parsing took longer than 2 s and was stopped."


def test_a_parser_stuck_on_one_page_is_stopped_at_the_page_budget_long_before_its_timeout(
    workspace, document, settings
):
    settings.GROUNDWORK_PARSE_TIMEOUT_S = 120
    settings.GROUNDWORK_PARSE_PAGE_S = 1
    parse = ParseVersion.objects.create(
        document=document, parser="evalsets.pure.parsers.diagnostic:HangingParser", status="queued"
    )
    assert documents_tasks.parse_version(parse.pk) == "failed"
    parse.refresh_from_db()
    assert parse.error_code == "timeout"
    assert parse.error == "Parsing spent longer than 1 s on one page (page 2) and was stopped."


def test_a_parse_task_for_a_deleted_document_does_nothing(workspace, document):
    parse = ParseVersion.objects.create(document=document, parser="plaintext", parser_version="9")
    document.delete()
    assert documents_tasks.parse_version(parse.pk) == "gone, done or held by another worker"


def test_running_the_same_parse_task_twice_does_the_work_once(upload, workspace):
    upload("a.txt", b"Plain words.")
    parse = ParseVersion.objects.get(document__source_id="a.txt")
    assert documents_tasks.parse_version(parse.pk) == "gone, done or held by another worker"


def test_reparsing_with_a_new_parser_version_adds_a_version_and_keeps_the_old(
    upload, client_for, annotator, workspace
):
    upload("report.pdf", make_pdf(PAGES))
    client = client_for(annotator)
    assert client.post(f"{DOCS}report.pdf/reparse/").json() == []  # nothing new to run
    ParseVersion.objects.filter(document__source_id="report.pdf", parser="pypdf").update(
        parser_version="0.1-old"
    )
    queued = client.post(f"{DOCS}report.pdf/reparse/").json()
    assert [(p["parser"], p["status"]) for p in queued] == [("pypdf", "queued")]
    versions = ParseVersion.objects.filter(document__source_id="report.pdf", parser="pypdf")
    assert sorted(versions.values_list("parser_version", flat=True)) == sorted(
        ["0.1-old", parsers.get_parser("pypdf").version]
    )


def test_the_sweep_queues_again_a_parse_that_a_lost_worker_left_behind(upload, workspace):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    upload("a.txt", b"Plain words for the sweep.")
    parse = ParseVersion.objects.get(document__source_id="a.txt")
    ParseVersion.objects.filter(pk=parse.pk).update(
        status="parsing",
        text="",
        updated_at=timezone.now() - timedelta(minutes=10),
        heartbeat_at=timezone.now() - timedelta(minutes=10),  # its worker died then
    )
    fresh = ParseVersion.objects.create(
        document=parse.document, parser="plaintext", parser_version="x"
    )
    from io import StringIO

    out = StringIO()
    call_command("sweep", stdout=out)
    parse.refresh_from_db()
    fresh.refresh_from_db()
    assert parse.status == "ready" and parse.text == "Plain words for the sweep."
    assert fresh.status == "queued"  # recent work is left to the worker that has it
    assert "Queued again: 1 parses" in out.getvalue()


# -- what the parser noted: failed and empty pages, the encoding --------------------------------


def test_a_page_with_no_text_is_kept_on_the_parse_and_shown_where_it_is_read(
    upload, client_for, annotator, workspace
):
    upload("report.pdf", make_pdf(["First page about leave.", None, "Third page, expenses."]))
    parses = _parses(client_for(annotator), "report.pdf")
    for summary in parses.values():
        assert summary["diagnostics"]["empty_pages"] == [2], summary
        assert summary["warnings"] == ["page 2 had no text"]
    client = client_for(annotator)
    client.force_login(annotator)
    assert "page 2 had no text" in client.get("/w/acme/").content.decode()
    assert "page 2 had no text" in client.get("/w/acme/documents/report.pdf").content.decode()


def test_a_legacy_encoding_is_kept_and_said(upload, client_for, annotator, workspace):
    upload("latin.txt", "Crème brûlée à la carte.".encode("cp1252"))
    (summary,) = _parses(client_for(annotator), "latin.txt").values()
    assert summary["diagnostics"]["encoding"] == "cp1252"
    assert summary["warnings"] == ["the text was decoded as cp1252, not UTF-8"]


def test_utf8_text_has_no_warning(upload, client_for, annotator, workspace):
    upload("plain.txt", "Plain words, café.".encode())
    (summary,) = _parses(client_for(annotator), "plain.txt").values()
    assert summary["warnings"] == []


@pytest.mark.parametrize(
    ("diagnostics", "warnings"),
    [
        ({"failed_pages": [12, 40]}, ["pages 12, 40 could not be read"]),
        (
            {"failed_pages": [7], "empty_pages": [8]},
            ["page 7 could not be read", "page 8 had no text"],
        ),
        (
            {"empty_pages": list(range(1, 31))},
            ["pages 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, … (30 in all) had no text"],
        ),
        ({"encoding": "utf_8"}, []),
        ({}, []),
    ],
)
def test_the_parse_words_its_diagnostics(diagnostics, warnings):
    assert ParseVersion(diagnostics=diagnostics).warnings == warnings
