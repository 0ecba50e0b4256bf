"""Releases and imports in the browser: an owner releases a set, waits, downloads, imports."""

from __future__ import annotations

from pathlib import Path

import pytest
from contextgrid.evalset.io import read_jsonl
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.models import EvalItem, ReleaseFile
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def approved(evalset, document, annotator):
    for item_id, question, quote in (
        ("q1", "Can leave be carried over?", "Leave may be carried over."),
        ("q2", "How long may staff work remotely?", "limited to 30 days a year"),
        ("q3", "Still a draft?", "Employee Handbook"),
    ):
        item = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=item_id, question=question
        )
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=quote
        )
    EvalItem.objects.filter(item_id__in=["q1", "q2"]).update(state="approved")


def test_an_owner_releases_a_set_from_the_page_and_downloads_the_file(
    page, live_server, background, approved
):
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/releases/")

    page.get_by_role("button", name="Create release").click()

    row = page.locator("tr[data-version='1']")
    expect(row.locator(".status")).to_have_text("ready", timeout=60_000)
    link = row.get_by_role("link", name="quiz-v1-contextgrid-jsonl.jsonl")
    with page.expect_download() as download:
        link.click()
    path = Path(download.value.path())
    stored = ReleaseFile.objects.get(format="contextgrid-jsonl")
    with stored.file.open("rb") as handle:
        assert path.read_bytes() == handle.read()
    assert [item.id for item in read_jsonl(path).items] == ["q1", "q2"]
    expect(row).to_contain_text("quiz-v1-contextgrid-csv.csv")


def test_an_owner_previews_an_import_and_confirms_it(
    page, live_server, background, evalset, tmp_path
):
    upload = tmp_path / "questions.csv"
    upload.write_text("id,question\nn1,What is new?\nn2,\n", encoding="utf-8")
    fixed = tmp_path / "fixed.csv"
    fixed.write_text("id,question\nn1,What is new?\nn2,And this?\n", encoding="utf-8")
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/import/")

    page.get_by_label("File").set_input_files(str(upload))
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#import-tables")).to_contain_text("questions.csv:3")
    expect(page.get_by_role("button", name="Fix the refused rows first")).to_be_disabled()

    page.get_by_label("File").set_input_files(str(fixed))
    page.get_by_role("button", name="Preview").click()
    page.get_by_role("button", name="Import 2 item(s)").click()

    expect(page.locator("#import-done")).to_contain_text("2 created")
    assert sorted(evalset.items.values_list("item_id", flat=True)) == ["n1", "n2"]


def test_an_import_problem_shows_a_field_name_as_code_not_in_backticks(
    page, live_server, background, evalset, tmp_path
):
    upload = tmp_path / "set.jsonl"
    upload.write_text('{"id": "n1", "question": "What is new?", "meta": 5}\n', encoding="utf-8")
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}/w/acme/sets/quiz/import/")

    page.get_by_label("File").set_input_files(str(upload))
    page.get_by_role("button", name="Preview").click()

    refused = page.locator("#import-tables tr.refused")
    expect(refused).to_contain_text("expected an object")
    expect(refused.locator("code", has_text="meta").first).to_be_visible()
    assert "`" not in refused.inner_text()
