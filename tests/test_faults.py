"""Faults: a worker killed mid-task loses nothing once a worker runs again.

Real parts throughout: a ``celery worker`` process on Redis and PostgreSQL, killed with
SIGKILL (the whole process group, as a crashed host would be), then started again.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evalsets import services
from evalsets.models import AnchorResolution, GoldAnchor, ParseVersion
from tests import services as svc
from tests.documents import make_pdf

pytestmark = pytest.mark.services


def test_a_worker_killed_mid_parse_completes_the_parse_after_restart(
    worker, workspace, annotator, client_for, owner
):
    client_for(owner).patch(
        "/api/workspaces/acme/",
        {"parser_settings": {"parsers": {"pdf": ["pdfminer"]}}},
        format="json",
    )
    pages = [
        f"Page {n}. " + "Dense words about leave and remote work policy. " * 40 for n in range(80)
    ]
    response = client_for(annotator).post(
        "/api/workspaces/acme/documents/",
        {"file": SimpleUploadedFile("big.pdf", make_pdf(pages))},
        format="multipart",
    )
    assert response.status_code == 201

    svc.wait_for(
        lambda: ParseVersion.objects.filter(
            document__source_id="big.pdf", status="parsing", progress_done__gte=1
        ).exists(),
        what="the worker to be part-way through parsing big.pdf",
    )
    worker.kill()
    interrupted = ParseVersion.objects.get(document__source_id="big.pdf")
    assert interrupted.status == "parsing" and interrupted.progress_done < 80

    worker.start(GROUNDWORK_SWEEP_STALE_S="1")
    parse = svc.wait_for(
        lambda: ParseVersion.objects.filter(document__source_id="big.pdf", status="ready").first(),
        timeout=120,
        what="the restarted worker to finish big.pdf",
    )
    assert ParseVersion.objects.filter(document__source_id="big.pdf").count() == 1
    assert len(parse.page_starts) == 80
    assert parse.progress_done == parse.progress_total == 80


def test_a_worker_killed_mid_resolution_leaves_exactly_one_row_per_anchor_and_parse(
    worker, workspace, annotator, document
):
    evalset = services.evalset_create(workspace=workspace, user=annotator, slug="many")
    sentences = [f"Clause {n} says the limit is {n * 7} days for case {n}." for n in range(2000)]
    text = " ".join(sentences)
    for i in range(5):
        item = services.item_create(
            evalset=evalset, user=annotator, item_id=f"q{i}", question=f"Clauses {i}?"
        )
        # One damaged character per quote sends each through the slower fuzzy tier, so the
        # task is still running when the worker is killed.
        GoldAnchor.objects.bulk_create(
            GoldAnchor(
                item=item,
                source_id="handbook.txt",
                document=document,
                quote=sentences[n].replace("limit", "lirnit"),
            )
            for n in range(i * 400, (i + 1) * 400)
        )
    total = svc.start_resolving_a_new_parse(document, text)
    worker.kill()
    assert AnchorResolution.objects.filter(parse__parser="big").count() < total

    worker.start(GROUNDWORK_SWEEP_STALE_S="1")
    svc.check_every_anchor_resolved_once(total, what="the restarted worker to resolve every anchor")
