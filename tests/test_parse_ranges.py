"""A long PDF is read in page ranges that any worker can take, joined in page order.

Each range is one task with a lease of its own; the task finishing the last range joins
them into the parse's text, which must be byte for byte what one task reading the whole
file writes. A document of one range keeps the single-task path. A worker lost mid-range
costs only that range (the last test kills a real worker on PostgreSQL and Redis).
"""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone

from evalsets import sweep
from evalsets.documents import ingest
from evalsets.documents import tasks as documents_tasks
from evalsets.models import Document, ParseRange, ParseVersion
from evalsets.pure import parsers
from evalsets.pure.parsers import PARSERS, charboxes
from tests import services as svc
from tests.documents import make_pdf

pytestmark = pytest.mark.django_db

PDF_PARSERS = ["pypdf", "pdfminer", "pdfium"]
#: Ten pages, two of them blank, with ligatures, accents and smart quotes: what a real
#: report holds, and what a naive join would shift by a separator.
PAGES = [
    None
    if n in (0, 6)
    else f"Page {n}: the \ufb01nal \u201cpolicy\u201d for caf\u00e9 staff, "
    f"clause {n * 3}.\n" + "Remote work is allowed two days a week. " * (n % 3 + 1)
    for n in range(10)
]


@pytest.fixture(scope="module")
def ten_pages() -> bytes:
    return make_pdf(PAGES)


@pytest.fixture
def pdf_document(workspace, owner, ten_pages):
    document = Document(
        workspace=workspace, source_id="long.pdf", kind="pdf", sha256="1" * 64, size=len(ten_pages)
    )
    document.file.save("long.pdf", ContentFile(ten_pages), save=False)
    document.save()
    return document


def _queued(document, parser: str) -> ParseVersion:
    return ParseVersion.objects.create(
        document=document,
        parser=parser,
        parser_version=PARSERS[parser].version,
        status="queued",
    )


def _parse_in_ranges(parse: ParseVersion, capture) -> list:
    """Run the parse task, then each range task it queued, in order; return the callbacks."""
    with capture(execute=False) as queued:
        documents_tasks.parse_version(parse.pk)
    for send in queued:
        send()
    return queued


# -- the parser interface ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_each_pdf_parser_reads_page_ranges_that_join_into_its_whole_parse(name, ten_pages):
    parser = PARSERS[name]
    whole = parser.parse(ten_pages, max_pages=100)

    parts = [
        parser.parse_pages(ten_pages, start=start, stop=stop, max_pages=100)
        for start, stop in [(0, 3), (3, 6), (6, 9), (9, None)]
    ]
    joined = parser.join_ranges(parts)

    assert parsers.supports_ranges(parser)
    assert joined.text.encode() == whole.text.encode()
    assert joined.page_starts == whole.page_starts
    assert joined.meta == whole.meta
    assert parts[2].meta["empty_pages"] == [7]  # numbered in the whole document


@pytest.mark.parametrize("name", PDF_PARSERS)
@pytest.mark.parametrize(
    ("failed", "code"), [([1, 2], "corrupt"), ([1], "no_text"), ([], "no_text")]
)
def test_every_pdf_parser_refuses_joined_ranges_that_read_nothing_alike(name, failed, code):
    """No page read at all is a damaged file; pages read without text are a scan."""
    blank = parsers.ParsedText(
        text="\n\n",
        page_starts=[0, 2],
        parser=name,
        parser_version="1",
        meta={"pages": 2, "empty_pages": [1, 2], "failed_pages": failed},
    )
    with pytest.raises(parsers.ParseError) as refused:
        PARSERS[name].join_ranges([blank])
    assert refused.value.code == code


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_range_reports_the_document_page_count_before_its_first_page(name, ten_pages):
    calls: list[tuple[int, int]] = []

    PARSERS[name].parse_pages(
        ten_pages, start=4, stop=6, max_pages=100, progress=lambda d, t: calls.append((d, t))
    )

    assert calls == [(4, 10), (5, 10), (6, 10)]


def test_parsers_of_unpaged_formats_do_not_claim_to_read_ranges():
    assert [n for n, p in PARSERS.items() if parsers.supports_ranges(p)] == PDF_PARSERS


def test_a_parser_that_cannot_read_ranges_is_refused_a_range_before_a_child_starts():
    with pytest.raises(TypeError, match="cannot read a range"):
        parsers.parse_isolated("plaintext", b"words", pages=(0, 1))


def test_each_parser_sizes_its_own_ranges_unless_the_setting_says_otherwise(settings):
    settings.GROUNDWORK_PARSE_RANGE_PAGES = None
    assert ingest.pages_per_range("pypdf") == PARSERS["pypdf"].pages_per_range
    assert ingest.pages_per_range("pdfminer") == PARSERS["pdfminer"].pages_per_range
    assert ingest.pages_per_range("pdfium") == PARSERS["pdfium"].pages_per_range
    assert ingest.pages_per_range("plaintext") is None
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 40
    assert [ingest.pages_per_range(n) for n in PDF_PARSERS] == [40, 40, 40]
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 0
    assert [ingest.pages_per_range(n) for n in PDF_PARSERS] == [None, None, None]


def test_ranges_after_the_first_shrink_so_the_last_ones_to_start_are_short():
    bounds = ingest.range_bounds(1000, 100)
    sizes = [(stop or 1000) - start for start, stop in bounds]

    assert sizes == [100, 133, 125, 117, 108, 100, 92, 83, 75, 67]
    assert [start for start, _ in bounds] == [0, *(stop for _, stop in bounds[:-1])]
    assert bounds[-1][1] is None  # the last reads to the end of the page tree


@pytest.mark.parametrize(("total", "span"), [(10, 1), (11, 10), (21, 10), (7, 3), (1001, 100)])
def test_every_range_has_pages_and_together_they_cover_the_document_once(total, span):
    bounds = ingest.range_bounds(total, span)
    stops = [stop if stop is not None else total for _, stop in bounds]

    assert len(bounds) == -(-total // span) and bounds[0] == (0, span)
    assert all(stop > start for (start, _), stop in zip(bounds, stops, strict=True))
    assert [start for start, _ in bounds[1:]] == stops[:-1] and stops[-1] == total


# -- split, assembled, byte for byte ---------------------------------------------------------


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_parse_split_into_ranges_is_byte_for_byte_the_single_task_parse(
    name, pdf_document, settings, django_capture_on_commit_callbacks
):
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 0  # one task reads the whole file
    single = _queued(pdf_document, name)
    documents_tasks.parse_version(single.pk)
    single.refresh_from_db()
    ParseVersion.objects.filter(pk=single.pk).update(parser_version="single")

    settings.GROUNDWORK_PARSE_RANGE_PAGES = 3
    split = _queued(pdf_document, name)
    queued = _parse_in_ranges(split, django_capture_on_commit_callbacks)
    split.refresh_from_db()

    assert (single.status, split.status) == ("ready", "ready")
    assert single.range_count == 0 and split.range_count == 4 and len(queued) == 3
    assert split.text.encode("utf-8") == single.text.encode("utf-8")
    assert split.page_starts == single.page_starts
    assert split.diagnostics == single.diagnostics
    assert split.text_length == single.text_length
    assert (split.progress_done, split.progress_total) == (10, 10)
    ranges = list(split.ranges.values_list("start_page", "stop_page", "status", "attempts"))
    assert ranges == [
        (0, 3, "ready", 1),
        (3, 6, "ready", 1),
        (6, 8, "ready", 1),
        (8, None, "ready", 1),
    ]
    assert not split.ranges.exclude(text="").exists()  # the parts are not kept twice
    assert not split.ranges.exclude(char_boxes=b"").exists()
    boxes = _box_file(split)
    assert boxes == _box_file(single)
    if name == "pdfium":  # the PDF view's parse: one box file, its index over every page
        handle = io.BytesIO(boxes)
        assert charboxes.page_count(handle) == 10
        read = parsers.ParsedText(split.text, split.page_starts, name, split.parser_version)
        assert [charboxes.read_page(handle, i).chars for i in range(10)] == [
            len(read.page_text(i)) for i in range(10)
        ]
        stored = sorted(p.name for p in Path(settings.MEDIA_ROOT).rglob("*.boxes"))
        assert len(stored) == 2  # the single parse's and the split one's: no range's left
    else:
        assert boxes is None


def _box_file(parse: ParseVersion) -> bytes | None:
    if not parse.char_boxes:
        return None
    with parse.char_boxes.open("rb") as handle:
        return handle.read()


def test_a_document_of_one_range_keeps_the_single_task_path(
    pdf_document, settings, django_capture_on_commit_callbacks
):
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 10
    parse = _queued(pdf_document, "pypdf")

    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert documents_tasks.parse_version(parse.pk) == "ready"

    parse.refresh_from_db()
    assert queued == [] and parse.range_count == 0 and not ParseRange.objects.exists()
    assert parse.text == PARSERS["pypdf"].parse(pdf_document.file.read(), max_pages=100).text


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_progress_counts_the_pages_of_every_range_read_so_far(
    name, pdf_document, settings, django_capture_on_commit_callbacks
):
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 4
    parse = _queued(pdf_document, name)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert documents_tasks.parse_version(parse.pk) == "parsing"  # the first range only
    seen = []
    for send in queued:
        parse.refresh_from_db()
        seen.append((parse.status, parse.progress_done, parse.progress_total))
        send()
    parse.refresh_from_db()
    seen.append((parse.status, parse.progress_done, parse.progress_total))

    assert seen == [("parsing", 4, 10), ("parsing", 8, 10), ("ready", 10, 10)]


def test_the_api_shows_a_split_parse_in_progress_as_pages_read_of_all(
    pdf_document, settings, django_capture_on_commit_callbacks, client_for, annotator
):
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 4
    parse = _queued(pdf_document, "pdfminer")
    with django_capture_on_commit_callbacks(execute=False):
        documents_tasks.parse_version(parse.pk)

    body = client_for(annotator).get("/api/workspaces/acme/documents/long.pdf/").json()

    summary = next(p for p in body["parses"] if p["parser"] == "pdfminer")
    assert (summary["status"], summary["progress"]) == ("parsing", {"done": 4, "total": 10})


# -- leases: a lost range is read again, and only it ----------------------------------------


def _split_with_ranges_queued(document, settings, capture, parser="pypdf") -> ParseVersion:
    settings.GROUNDWORK_PARSE_RANGE_PAGES = 4
    parse = _queued(document, parser)
    with capture(execute=False):
        documents_tasks.parse_version(parse.pk)
    return parse


def test_a_range_held_by_a_live_worker_is_not_taken_again(
    pdf_document, settings, django_capture_on_commit_callbacks
):
    parse = _split_with_ranges_queued(pdf_document, settings, django_capture_on_commit_callbacks)
    second = parse.ranges.get(start_page=4)

    assert ingest.claim_range(second.pk) is not None
    assert ingest.claim_range(second.pk) is None
    assert documents_tasks.parse_range(second.pk) == "gone, done or held by another worker"
    assert documents_tasks.parse_range(parse.ranges.get(start_page=0).pk).startswith("gone")  # done


@pytest.mark.parametrize("name", PDF_PARSERS)
def test_a_range_whose_holder_stopped_renewing_is_taken_over_and_the_old_holder_writes_nothing(
    name, pdf_document, settings, django_capture_on_commit_callbacks, ten_pages
):
    parse = _split_with_ranges_queued(
        pdf_document, settings, django_capture_on_commit_callbacks, name
    )
    second = parse.ranges.get(start_page=4)
    dead = ingest.claim_range(second.pk)
    long_ago = timezone.now() - timedelta(hours=1)
    ParseRange.objects.filter(pk=second.pk).update(heartbeat_at=long_ago, updated_at=long_ago)

    taken = ingest.claim_range(second.pk)
    assert taken is not None and taken.token != dead.token
    assert ingest.run_range(dead) is None  # it wakes up and finishes: not its range any more
    second.refresh_from_db()
    assert (second.status, second.text, bytes(second.char_boxes)) == ("parsing", "", b"")
    assert second.attempts == 2

    assert ingest.run_range(taken) is None  # read; the last range is still queued
    last = parse.ranges.get(start_page=8)
    assert documents_tasks.parse_range(last.pk) == "ready"
    parse.refresh_from_db()
    whole = PARSERS[name].parse(ten_pages, max_pages=100)
    assert (parse.text, parse.page_starts) == (whole.text, whole.page_starts)
    assert _box_file(parse) == whole.char_boxes  # None but for pdfium


def test_the_sweep_queues_only_the_range_whose_lease_expired_never_its_whole_parse(
    pdf_document, settings, django_capture_on_commit_callbacks
):
    parse = _split_with_ranges_queued(pdf_document, settings, django_capture_on_commit_callbacks)
    lost = parse.ranges.get(start_page=4)
    ingest.claim_range(lost.pk)
    long_ago = timezone.now() - timedelta(hours=1)
    ParseRange.objects.filter(pk=lost.pk).update(heartbeat_at=long_ago, updated_at=long_ago)
    ParseVersion.objects.filter(pk=parse.pk).update(heartbeat_at=long_ago, updated_at=long_ago)

    assert sweep.stale_parses() == []
    assert ingest.claim_parse(parse.pk) is None  # a split parse is never read whole again
    assert sweep.stale_ranges() == [lost.pk]  # the last range is queued, but not stale yet
    assert sorted(sweep.stale_ranges(timedelta(0))) == sorted(
        parse.ranges.exclude(status="ready").values_list("pk", flat=True)
    )


def test_a_range_that_cannot_be_read_fails_the_parse_with_the_reason_and_stops_the_others(
    pdf_document, settings, django_capture_on_commit_callbacks
):
    parse = _split_with_ranges_queued(pdf_document, settings, django_capture_on_commit_callbacks)
    pdf_document.file.delete(save=False)

    assert documents_tasks.parse_range(parse.ranges.get(start_page=4).pk) == "failed"
    assert documents_tasks.parse_range(parse.ranges.get(start_page=8).pk).startswith("gone")
    parse.refresh_from_db()
    assert (parse.status, parse.error_code) == ("failed", "missing")
    assert "no longer in storage" in parse.error
    assert sweep.stale_ranges(timedelta(0)) == []


def test_a_failed_split_parse_retried_by_a_reparse_is_read_and_split_afresh(
    pdf_document, settings, django_capture_on_commit_callbacks
):
    parse = _split_with_ranges_queued(pdf_document, settings, django_capture_on_commit_callbacks)
    stored = pdf_document.file.read()
    pdf_document.file.delete(save=False)
    assert documents_tasks.parse_range(parse.ranges.get(start_page=4).pk) == "failed"
    pdf_document.file.save("long.pdf", ContentFile(stored))

    with django_capture_on_commit_callbacks(execute=True):
        ingest.document_reparse(document=pdf_document)

    parse.refresh_from_db()
    whole = PARSERS["pypdf"].parse(stored, max_pages=100)
    assert (parse.status, parse.text, parse.page_starts) == ("ready", whole.text, whole.page_starts)
    assert list(parse.ranges.values_list("attempts", flat=True)) == [1, 1, 1]


def test_a_deleted_document_leaves_no_range_to_read(
    pdf_document, settings, django_capture_on_commit_callbacks
):
    parse = _split_with_ranges_queued(pdf_document, settings, django_capture_on_commit_callbacks)
    second = parse.ranges.get(start_page=4).pk
    pdf_document.delete()

    assert documents_tasks.parse_range(second).startswith("gone")


def test_the_task_that_joins_a_split_parse_has_its_anchors_resolved_once(
    pdf_document, settings, django_capture_on_commit_callbacks, monkeypatch
):
    parse = _split_with_ranges_queued(pdf_document, settings, django_capture_on_commit_callbacks)
    resolved = []
    monkeypatch.setattr(
        documents_tasks.resolution,
        "resolve_parse",
        lambda p: resolved.append((p.pk, p.text_length)) or 0,
    )

    for prange in parse.ranges.exclude(status="ready"):
        documents_tasks.parse_range(prange.pk)

    parse.refresh_from_db()
    assert parse.text_length > 0 and resolved == [(parse.pk, parse.text_length)]


# -- a worker lost mid-range on PostgreSQL and Redis ----------------------------------------

STALE_S = "20"  # a range lease of 10 s, a sweep every 5 s
# Ranges long enough (60 pages, 1-2 s for pdfminer even on an idle machine; progress is
# written at most every 0.5 s) that the test sees one range read and another part-way, with
# its progress written, before it kills the worker.
BIG_PAGES, BIG_RANGE = 240, "60"
BIG = [
    f"Page {n}. " + "Dense words about leave and remote work policy. " * 40
    for n in range(BIG_PAGES)
]


@pytest.mark.services
def test_a_worker_killed_mid_range_costs_only_that_range(
    worker, workspace, annotator, client_for, owner
):
    worker.stop()
    worker.start(GROUNDWORK_SWEEP_STALE_S=STALE_S, GROUNDWORK_PARSE_RANGE_PAGES=BIG_RANGE)
    try:
        client_for(owner).patch(
            "/api/workspaces/acme/",
            {"parser_settings": {"parsers": {"pdf": ["pdfminer"]}}},
            format="json",
        )
        response = client_for(annotator).post(
            "/api/workspaces/acme/documents/",
            {"file": ContentFile(make_pdf(BIG), name="big.pdf")},
            format="multipart",
        )
        assert response.status_code == 201
        ranges = ParseRange.objects.filter(parse__document__source_id="big.pdf")
        svc.wait_for(
            lambda: (
                ranges.filter(status="ready").count() >= 1
                and ranges.filter(status="parsing", progress_done__gte=1).exists()
            ),
            what="one range of big.pdf read and another part-way",
        )
        worker.kill()
        before = {r.pk: (r.status, r.claimed_by) for r in ranges.all()}
        interrupted = [pk for pk, (status, _) in before.items() if status == "parsing"]
        finished = [pk for pk, (status, _) in before.items() if status == "ready"]
        assert len(interrupted) == 1 and finished

        worker.start(GROUNDWORK_SWEEP_STALE_S=STALE_S, GROUNDWORK_PARSE_RANGE_PAGES=BIG_RANGE)
        parse = svc.wait_for(
            lambda: ParseVersion.objects.filter(
                document__source_id="big.pdf", status="ready"
            ).first(),
            timeout=180,
            what="the restarted worker to read the lost range and join big.pdf",
        )
    finally:
        worker.stop()  # the next test gets a worker with the default settings

    after = {r.pk: (r.status, r.claimed_by, r.attempts) for r in ranges.all()}
    assert len(after) == 4 and all(status == "ready" for status, _, _ in after.values())
    for pk in finished:  # read once, by the worker that died: not read again
        assert after[pk][1:] == (before[pk][1], 1)
    (lost,) = interrupted
    assert after[lost][2] == 2 and after[lost][1] != before[lost][1]
    assert len(parse.page_starts) == BIG_PAGES
    assert parse.progress_done == parse.progress_total == BIG_PAGES
    assert parse.text == PARSERS["pdfminer"].parse(make_pdf(BIG), max_pages=BIG_PAGES).text
