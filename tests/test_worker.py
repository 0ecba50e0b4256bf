"""The background pipeline through a real Celery worker on Redis and PostgreSQL (or the
embedded default's filesystem broker): uploads parsed, anchors resolved, and a new upload's
parse taken before a resolution backlog drains."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import queue
from evalsets.anchoring import services as anchoring_services
from evalsets.models import AnchorResolution, GoldAnchor, ParseVersion
from tests import services as svc

pytestmark = pytest.mark.services


def test_an_upload_is_parsed_and_its_anchors_resolved_by_a_real_worker(
    worker, workspace, annotator, client_for
):
    client = client_for(annotator)
    text = "Policy\n\nEmployees accrue 1.5 days of leave per month.\nRemote work is limited."
    response = client.post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("policy.txt", text.encode())},
        format="multipart",
    )
    assert response.status_code == 201

    parse = svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id="policy.txt", status="ready"
        ).first(),
        what="the worker to parse policy.txt",
    )
    assert parse.is_reference and parse.text.startswith("Policy")

    other = client.post(
        "/api/workspaces/acme/documents/policy.txt/parses/",
        {"parser": "elsewhere", "text": "Employees  accrue 1.5 days of\nleave per month."},
        format="json",
    )
    assert other.status_code == 201

    evalset = anchoring_services.evalset_create(workspace=workspace, user=annotator, slug="quiz")
    anchoring_services.item_create(evalset=evalset, user=annotator, item_id="q1", question="Leave?")
    quote = "Employees accrue 1.5 days of leave per month."
    start = parse.text.index(quote)
    made = client.post(
        "/api/workspaces/acme/evalsets/quiz/items/q1/anchors/",
        {"parse": str(parse.public_id), "start": start, "end": start + len(quote)},
        format="json",
    )
    assert made.status_code == 201

    rows = svc.wait_for(
        lambda: (
            list(AnchorResolution.objects.order_by("parse__parser"))
            if AnchorResolution.objects.count() == 2
            else None
        ),
        what="the anchor to be resolved in both parses",
    )
    assert {(r.parse.parser, r.status) for r in rows} == {
        ("elsewhere", "normalised"),
        ("plaintext", "exact"),
    }


def test_a_pdf_is_read_by_every_pdf_parser_in_a_real_worker(
    worker, workspace, annotator, client_for
):
    from tests.documents import make_pdf

    client = client_for(annotator)
    pdf = make_pdf(["Leave is accrued monthly.", "Remote work has limits."])
    response = client.post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("handbook.pdf", pdf)},
        format="multipart",
    )
    assert response.status_code == 201

    def all_done():
        body = client.get("/api/workspaces/acme/documents/handbook.pdf/").json()
        statuses = {p["parser"]: p for p in body["parses"]}
        done = all(p["status"] in ("ready", "failed") for p in statuses.values())
        return statuses if done and len(statuses) == 3 else None

    parses = svc.wait_for(all_done, what="pypdf, pdfminer and pdfium to parse handbook.pdf")
    assert {name: p["status"] for name, p in parses.items()} == {
        "pypdf": "ready",
        "pdfminer": "ready",
        "pdfium": "ready",
    }
    assert all(p["page_count"] == 2 for p in parses.values())


# -- a parse never waits behind resolution work ----------------------------------------------

BACKLOG = 10
SENTENCES = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]


def _queue_a_resolution_backlog(document, annotator, workspace) -> str:
    """Queue ``BACKLOG`` full resolutions of a long parse with 200 anchors that each take
    the slower fuzzy tier (a second or more a message); returns the resolve queue's name."""
    text = " ".join(SENTENCES)
    big = ParseVersion.objects.create(
        document=document, parser="big", text=text, text_length=len(text), status="ready"
    )
    evalset = anchoring_services.evalset_create(workspace=workspace, user=annotator, slug="many")
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q", question="Limits?"
    )
    GoldAnchor.objects.bulk_create(
        GoldAnchor(item=item, source_id=document.source_id, document=document, quote=s)
        for s in (s.replace("limit", "lirnit") for s in SENTENCES[:200])
    )
    for _ in range(BACKLOG):
        queue.send("resolve_parse", big.pk)
    return queue.queue_name(queue.RESOLVE)


def _upload_and_count_the_backlog_left_when_it_is_ready(client, resolve_queue, env=None) -> int:
    response = client.post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("late.txt", b"Uploaded while the workers were busy.")},
        format="multipart",
    )
    assert response.status_code == 201
    svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id="late.txt", status="ready"
        ).exists(),
        what="the late upload to be parsed",
    )
    return svc.waiting_messages(resolve_queue, env)


def test_a_parse_behind_a_resolution_backlog_is_taken_before_it_drains_on_redis(
    worker, workspace, annotator, document, client_for
):
    resolve_queue = _queue_a_resolution_backlog(document, annotator, workspace)
    svc.wait_for(lambda: svc.waiting_messages(resolve_queue) < BACKLOG, what="the backlog to start")

    left = _upload_and_count_the_backlog_left_when_it_is_ready(client_for(annotator), resolve_queue)

    # One worker process reads every queue in turn: the parse waited for at most the
    # resolution in hand, not for the backlog.
    assert left >= BACKLOG // 2


def test_a_parse_behind_a_resolution_backlog_is_taken_before_it_drains_on_the_filesystem(
    filesystem_broker, workspace, annotator, document, client_for
):
    handle, env = filesystem_broker
    handle.start(**env)
    resolve_queue = _queue_a_resolution_backlog(document, annotator, workspace)
    svc.wait_for(
        lambda: svc.waiting_messages(resolve_queue, env) < BACKLOG, what="the backlog to start"
    )

    left = _upload_and_count_the_backlog_left_when_it_is_ready(
        client_for(annotator), resolve_queue, env
    )

    assert left >= BACKLOG // 2
