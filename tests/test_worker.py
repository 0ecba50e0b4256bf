"""The background pipeline through a real Celery worker on Redis and PostgreSQL."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import services
from evalsets.models import AnchorResolution, ParseVersion
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

    evalset = services.evalset_create(workspace=workspace, user=annotator, slug="quiz")
    services.item_create(evalset=evalset, user=annotator, item_id="q1", question="Leave?")
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
