"""A slow parser on a long document never holds up the parses people wait for: it goes to a
queue of its own (``parse-slow``), and Retry of a parse that ran out of time reads it there
with more time, or says why it will not."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile

from evalsets import queue
from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.documents import ingest
from evalsets.documents import services as documents_services
from evalsets.documents import tasks as documents_tasks
from evalsets.models import Document, ParseStatus, ParseVersion, Workspace
from tests import services as svc
from tests.conftest import HANDBOOK
from tests.documents import make_pdf
from tests.slow_parser import gate

pytestmark = pytest.mark.django_db

SLOW = "tests.slow_parser:PARSER"
HANGING = "evalsets.pure.parsers.diagnostic:HangingParser"


@pytest.fixture
def published(monkeypatch):
    """Every task published, with the queue kind it was published to (None: its own), not run."""
    published: list[tuple[str, tuple, str | None]] = []

    def record(name, *ids, kind=None, **options):
        published.append((name, ids, kind))
        return True

    monkeypatch.setattr(queue, "send", record)
    return published


@pytest.fixture
def pdf(document):
    Document.objects.filter(pk=document.pk).update(kind="pdf")
    document.refresh_from_db()
    return document


def _parse(document, parser: str, *, reference: bool = False, **fields) -> ParseVersion:
    return ParseVersion.objects.create(
        document=document, parser=parser, parser_version="t", is_reference=reference, **fields
    )


def _counted(document, pages: int) -> None:
    """One parse of ``document`` has counted its pages."""
    ParseVersion.objects.filter(document=document, is_reference=True).update(progress_total=pages)


def test_markitdown_on_a_pdf_nobody_has_counted_is_taken_to_be_long(pdf):
    ParseVersion.objects.filter(document=pdf).update(is_reference=False)
    assert ingest.parse_kind(_parse(pdf, "markitdown")) == queue.PARSE_SLOW


def test_markitdown_goes_to_the_slow_queue_on_a_long_pdf_and_the_parse_queue_on_a_short_one(pdf):
    parse = _parse(pdf, "markitdown")
    _counted(pdf, 1000)
    assert ingest.parse_kind(parse) == queue.PARSE_SLOW
    _counted(pdf, 10)
    assert ingest.parse_kind(parse) == queue.PARSE


def test_the_reference_parse_never_goes_to_the_slow_queue(pdf):
    ParseVersion.objects.filter(document=pdf).update(is_reference=False)
    reference = _parse(pdf, "markitdown", reference=True)

    assert ingest.parse_kind(reference) == queue.PARSE
    assert ingest.range_kind(reference, 2000) == queue.PARSE


def test_a_parser_that_reads_ranges_reads_its_first_range_on_the_parse_queue(pdf):
    assert ingest.parse_kind(_parse(pdf, "pdfminer")) == queue.PARSE


def test_the_other_ranges_go_to_the_slow_queue_only_when_the_whole_document_is_slow(pdf):
    pdfminer, pypdf = _parse(pdf, "pdfminer"), _parse(pdf, "pypdf")

    assert ingest.range_kind(pdfminer, 1000) == queue.PARSE_SLOW
    assert ingest.range_kind(pdfminer, 200) == queue.PARSE
    assert ingest.range_kind(pypdf, 1000) == queue.PARSE


def test_a_slow_parser_on_a_word_file_stays_on_the_parse_queue(document):
    Document.objects.filter(pk=document.pk).update(kind="docx")
    document.refresh_from_db()
    assert ingest.parse_kind(_parse(document, "markitdown")) == queue.PARSE


def test_a_slow_parser_on_an_upload_waits_for_the_reference_count_then_goes_where_it_belongs(
    workspace, annotator, client_for, published, django_capture_on_commit_callbacks
):
    Workspace.objects.filter(pk=workspace.pk).update(
        parser_settings={"parsers": {"pdf": ["pypdf", SLOW]}, "reference": {"pdf": "pypdf"}}
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(annotator).post(
            "/api/workspaces/acme/documents/",
            {"file": ContentFile(make_pdf(["One page of policy."]), name="short.pdf")},
            format="multipart",
        )
    assert response.status_code == 201
    reference = ParseVersion.objects.get(document__source_id="short.pdf", parser="pypdf")
    slow = ParseVersion.objects.get(document__source_id="short.pdf", parser=SLOW)
    assert ("parse_version", (reference.pk,), queue.PARSE) in published
    assert [ids for name, ids, _ in published if name == "parse_version"] == [(reference.pk,)]

    with django_capture_on_commit_callbacks(execute=True):
        assert documents_tasks.parse_version(reference.pk) == ParseStatus.READY

    assert ("parse_version", (slow.pk,), queue.PARSE) in published  # one page: not slow
    assert ingest.send_waiting(slow.document_id) == 0  # published once


def test_a_long_pdfs_slow_parse_is_sent_to_the_slow_queue_once_the_reference_counted_it(
    workspace, annotator, client_for, published, django_capture_on_commit_callbacks
):
    Workspace.objects.filter(pk=workspace.pk).update(
        parser_settings={"parsers": {"pdf": ["pypdf", SLOW]}, "reference": {"pdf": "pypdf"}}
    )
    long_pdf = make_pdf([f"Page {n} of the policy." for n in range(25)])
    with django_capture_on_commit_callbacks(execute=True):
        client_for(annotator).post(
            "/api/workspaces/acme/documents/",
            {"file": ContentFile(long_pdf, name="long.pdf")},
            format="multipart",
        )
        reference = ParseVersion.objects.get(document__source_id="long.pdf", parser="pypdf")
        documents_tasks.parse_version(reference.pk)

    slow = ParseVersion.objects.get(document__source_id="long.pdf", parser=SLOW)
    assert ("parse_version", (slow.pk,), queue.PARSE_SLOW) in published


def test_retry_of_a_parse_that_ran_out_of_time_reads_it_on_the_slow_queue_with_more_time(
    document, settings, published, django_capture_on_commit_callbacks
):
    settings.GROUNDWORK_PARSE_TIMEOUT_S = 1
    settings.GROUNDWORK_PARSE_PAGE_S = 0
    settings.GROUNDWORK_PARSE_SLOW_TIMEOUT_S = 2
    settings.GROUNDWORK_PARSE_SLOW_PAGE_S = 0
    parse = _parse(document, HANGING, status=ParseStatus.QUEUED)
    assert documents_tasks.parse_version(parse.pk) == ParseStatus.FAILED
    parse.refresh_from_db()
    assert parse.error_code == "timeout" and "longer than 1 s" in parse.error
    assert ingest.retry_plan(parse) == ingest.RETRY_SLOWER

    with django_capture_on_commit_callbacks(execute=True):
        retried = ingest.document_reparse(document=document)

    assert parse.pk in [p.pk for p in retried]
    assert ("parse_version", (parse.pk,), queue.PARSE_SLOW) in published
    assert documents_tasks.parse_version(parse.pk) == ParseStatus.FAILED
    parse.refresh_from_db()
    assert "longer than 2 s" in parse.error  # the slow queue's time, not the same 1 s again


def test_retry_leaves_a_parse_that_ran_out_of_the_slow_queues_time_failed_and_says_why(
    document, settings, published, django_capture_on_commit_callbacks
):
    settings.GROUNDWORK_PARSE_SLOW_TIMEOUT_S = 2
    parse = _parse(
        document,
        HANGING,
        status=ParseStatus.FAILED,
        error_code="timeout",
        error="Parsing took longer than 2 s and was stopped.",
        diagnostics={ingest.TIMED_OUT: {"limit": "total", "seconds": 2}},
    )

    with django_capture_on_commit_callbacks(execute=True):
        retried = ingest.document_reparse(document=document)
        ingest.document_reparse(document=document)

    assert parse.pk not in [p.pk for p in retried]
    assert not [ids for name, ids, _ in published if ids == (parse.pk,)]
    parse.refresh_from_db()
    assert parse.status == ParseStatus.FAILED
    assert parse.error.count("reading the file again would stop at the same point") == 1


def test_the_sweep_sends_a_lost_slow_parse_back_to_the_slow_queue(pdf, published):
    parse = _parse(pdf, "markitdown", status=ParseStatus.QUEUED)
    _counted(pdf, 1000)

    ingest.send_parse(parse.pk)

    assert published == [("parse_version", (parse.pk,), queue.PARSE_SLOW)]


# -- real workers: a parse worker and a slow parse worker --------------------------------------


@pytest.mark.services
def test_a_new_small_uploads_parses_are_all_ready_while_a_long_documents_slow_parse_runs(
    celery_worker, worker_media, settings, workspace, annotator, client_for, tmp_path
):
    celery_worker.stop()  # the session's worker reads every queue: two of this test's own
    gates = tmp_path / "gates"
    gates.mkdir()
    settings.MEDIA_ROOT = worker_media
    slow_queue = queue.queue_name(queue.PARSE_SLOW, svc.SESSION_QUEUE)
    others = [name for name in queue.all_queue_names(svc.SESSION_QUEUE) if name != slow_queue]
    env = {"GROUNDWORK_TEST_GATE_DIR": str(gates)}
    workers = [
        svc.start_worker(worker_media, name="parse", queues=others, **env),
        svc.start_worker(worker_media, name="slow-parse", queues=[slow_queue], **env),
    ]
    try:
        Workspace.objects.filter(pk=workspace.pk).update(
            parser_settings={
                "parsers": {"pdf": ["pypdf", "pdfium", SLOW]},
                "reference": {"pdf": "pypdf"},
            }
        )
        long_pdf = make_pdf(
            [f"Page {n}. Remote work needs a manager's approval." for n in range(30)]
        )
        upload = client_for(annotator).post(
            "/api/workspaces/acme/documents/",
            {"file": ContentFile(long_pdf, name="long.pdf")},
            format="multipart",
        )
        assert upload.status_code == 201
        slow = ParseVersion.objects.filter(document__source_id="long.pdf", parser=SLOW)
        svc.wait_for(
            lambda: slow.filter(status=ParseStatus.PARSING, progress_total=30).exists(),
            what="the long document's slow parse to be running",
        )

        upload = client_for(annotator).post(
            "/api/workspaces/acme/documents/",
            {"file": ContentFile(make_pdf(["A short memo."]), name="small.pdf")},
            format="multipart",
        )
        assert upload.status_code == 201
        svc.wait_for_parses("small.pdf", 3)
        assert slow.get().status == ParseStatus.PARSING  # still at its gate meanwhile

        gate(gates, long_pdf).touch()
        svc.wait_for_parses("long.pdf", 3)
    finally:
        for process in workers:
            svc.stop_worker(process)


def test_a_parse_whose_parser_is_no_longer_registered_is_still_queued(pdf, published):
    parse = _parse(pdf, "a-plugin-since-removed", status=ParseStatus.QUEUED)

    ingest.send_parse(parse.pk)

    assert published == [("parse_version", (parse.pk,), queue.PARSE)]


# -- a long document's parses in the resolver's cache -----------------------------------------


def test_a_documents_parses_that_do_not_all_fit_the_cache_cost_one_fold_per_anchor_not_all(
    document, item, annotator, settings, monkeypatch
):
    for n in range(2):
        documents_services.parse_version_add(
            document=document, parser=f"copy{n}", parser_version="1", text=HANDBOOK
        )
    one = resolution.resolver.prepare(HANDBOOK)
    one.resolve("Remote work is limited to 30 days a year.")  # the indexes a resolution builds
    settings.GROUNDWORK_RESOLVER_CACHE_MB = one.nbytes() * 2.5 / 2**20  # two of three
    resolution.prepared_parses.clear()
    folded = []
    real_prepare = resolution.resolver.prepare

    def prepare(text, **kwargs):
        folded.append(len(text))
        return real_prepare(text, **kwargs)

    monkeypatch.setattr(resolution.resolver, "prepare", prepare)
    folds = []
    for quote in ("Remote work is limited to 30 days a year.", "Receipts are kept"):
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=quote
        )
        before = len(folded)
        resolution.resolve_pending(document.pk)
        folds.append(len(folded) - before)

    assert folds == [3, 1]  # the first anchor folds all three; the next only the one not held
