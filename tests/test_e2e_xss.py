"""Stored XSS: script and event-handler payloads typed anywhere are shown as text, never run.

Payloads go into every place a person can type or upload: the workspace and eval-set names,
questions, answers, question types, item ids, comments, quotes, file names (source ids),
parser names, and uploaded HTML and Markdown documents (whose scripts and ``javascript:``
links the parsers must drop or leave as inert text). Then every page is checked twice: on the
server, the raw payloads never appear unescaped in the HTML; in Chromium, after each page's
scripts have rendered the API data, ``window.__xss`` is still undefined and no dialog opened.
"""

from __future__ import annotations

import io
from urllib.parse import quote

import pytest
from contextgrid import EvalItem as CgItem
from contextgrid import EvalSet as CgSet
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from playwright.sync_api import expect

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import EvalItem, ItemState
from evalsets.pure.formats import get_format
from evalsets.releases import services as releases_services
from evalsets.review import comments, workflow
from evalsets.workspaces import services as workspaces_services
from labelling.celery import app as celery_app
from tests.browser import log_in
from tests.conftest import HANDBOOK, PASSWORD

SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=1">'
SVG = '"><svg onload=window.__xss=1>'
ALERT = "<img src=x onerror=alert(1)>"
JS_URL = "javascript:window.__xss=1"
ALL = f"{SCRIPT} {IMG} {SVG} {ALERT} [link]({JS_URL})"

#: Raw markup that must never reach a page unescaped.
DANGEROUS = [
    "<script>window.__xss",
    "<img src=x onerror",
    "<svg onload",
    'href="javascript:',
    "href='javascript:",
]

ITEM_ID = "<img src=x onerror=window.__xss=1>"  # item ids may not contain '/'
DOC_ID = f"{SVG}.txt"
HTML_ID = "page<script>window.__xss=1</script>.html"
HTML_DOC = (
    "<html><head><title>x</title><script>window.__xss=1</script></head><body>"
    f'<p onclick="window.__xss=1">Leave policy {ALERT}</p>'
    f'<a href="{JS_URL}">click</a><svg onload="window.__xss=1"></svg></body></html>'
).encode()
MD_ID = f"{SCRIPT}.md"
MARKDOWN_DOC = f"# Leave\n\n{SCRIPT}\n\n[click]({JS_URL}) and {IMG}\n".encode()


def _build(*, owner, annotator, reviewer, workspace, capture) -> list[str]:
    """Payloads everywhere; returns the pages to visit."""
    workspaces_services.workspace_update(workspace=workspace, name=f"Acme {SCRIPT}")
    evalset = anchoring_services.evalset_create(
        workspace=workspace, user=owner, slug="quiz", name=IMG
    )
    text = f"{HANDBOOK}\nPayload: {ALL}\n"
    with capture(execute=True):
        document, _ = documents_services.document_upload(
            workspace=workspace,
            user=annotator,
            upload=SimpleUploadedFile("handbook.txt", text.encode()),
            source_id=DOC_ID,
        )
        documents_services.parse_version_add(
            document=document, parser=f"pipe{SVG}", parser_version=IMG, text=text
        )
        documents_services.document_upload(
            workspace=workspace,
            user=annotator,
            upload=SimpleUploadedFile("page.html", HTML_DOC),
            source_id=HTML_ID,
        )
        documents_services.document_upload(
            workspace=workspace,
            user=annotator,
            upload=SimpleUploadedFile("notes.md", MARKDOWN_DOC),
            source_id=MD_ID,
        )
    with capture(execute=True):
        first = anchoring_services.item_create(
            evalset=evalset,
            user=annotator,
            item_id="q1",
            question=f"Why {SCRIPT}?",
            qtype=SVG,
            answer=f"{IMG} {JS_URL}",
            meta={"note": ALL},
        )
        anchor = anchoring_services.anchor_create_typed(
            item=first, user=annotator, source_id=DOC_ID, quote=f"Payload: {SCRIPT}"
        )
        comments.comment_add(item=first, user=annotator, body=f"{SVG} {ALERT} {JS_URL}")
        comments.comment_add(item=first, user=annotator, body=ALL, anchor=anchor)
        second = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=ITEM_ID, question=ALL, qtype=ALERT
        )
        anchoring_services.anchor_create_typed(
            item=second, user=annotator, source_id=DOC_ID, quote="1.5 days of leave per month"
        )
    workflow.item_submit(item=first, user=annotator, comment=f"Please look {IMG}")
    EvalItem.objects.filter(pk=second.pk).update(state=ItemState.APPROVED)
    with capture(execute=True):
        releases_services.release_create(evalset=evalset, user=owner, formats=["contextgrid-jsonl"])
    base = "/w/acme"
    item_url = "/w/acme/sets/quiz/items/"
    return [
        "/",
        f"{base}/",
        f"{base}/documents/{quote(DOC_ID)}",
        f"{base}/documents/{quote(HTML_ID)}",
        f"{base}/documents/{quote(MD_ID)}",
        f"{base}/sets/quiz/",
        f"{item_url}q1/",
        f"{item_url}{quote(ITEM_ID)}/",
        f"{base}/sets/quiz/review/",
        f"{base}/sets/quiz/dashboard/",
        f"{base}/sets/quiz/releases/",
        f"{base}/sets/quiz/import/",
    ]


def _payload_import() -> bytes:
    item = CgItem(id="imp1", question=f"Imported {SCRIPT} {IMG}", answer=SVG, meta={"x": ALERT})
    out = io.BytesIO()
    evalset = CgSet(id="quiz", items=(item,), version=1, source=ALERT, meta={})
    get_format("contextgrid-jsonl").writer(evalset, iter((item,)), out)
    return out.getvalue()


# -- server side -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_no_page_contains_a_payload_unescaped(
    owner, annotator, reviewer, workspace, django_capture_on_commit_callbacks
):
    urls = _build(
        owner=owner,
        annotator=annotator,
        reviewer=reviewer,
        workspace=workspace,
        capture=django_capture_on_commit_callbacks,
    )
    client = Client()
    client.force_login(owner)
    escaped_somewhere = False
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for raw in DANGEROUS:
            assert raw.lower() not in html.lower(), f"{url} contains {raw!r} unescaped"
        escaped_somewhere |= "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert escaped_somewhere  # the payloads were rendered, as text


@pytest.mark.django_db
def test_uploaded_html_and_markdown_parse_to_text_without_their_scripts_or_links(
    owner, annotator, reviewer, workspace, django_capture_on_commit_callbacks
):
    _build(
        owner=owner,
        annotator=annotator,
        reviewer=reviewer,
        workspace=workspace,
        capture=django_capture_on_commit_callbacks,
    )
    html = workspace.documents.get(source_id=HTML_ID).parses.get(is_reference=True)
    markdown = workspace.documents.get(kind="markdown").parses.get(is_reference=True)

    assert html.status == "ready" and "Leave policy" in html.text
    assert "window.__xss" not in html.text  # the <script> and the handlers are gone
    assert "javascript:" not in html.text
    # Raw HTML in Markdown is dropped; a javascript: link is not a link, only inert text.
    assert "<script" not in markdown.text and "<img" not in markdown.text
    assert "click" in markdown.text


@pytest.mark.django_db
def test_the_api_returns_payloads_as_plain_json_strings_never_as_html(
    owner, annotator, reviewer, workspace, client_for, django_capture_on_commit_callbacks
):
    _build(
        owner=owner,
        annotator=annotator,
        reviewer=reviewer,
        workspace=workspace,
        capture=django_capture_on_commit_callbacks,
    )
    response = client_for(owner).get("/api/workspaces/acme/evalsets/quiz/items/q1/")

    assert response["Content-Type"] == "application/json"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.json()["question"] == f"Why {SCRIPT}?"


# -- in the browser -------------------------------------------------------------------------------


def _assert_inert(page, url: str, dialogs: list[str]) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.__xss") == "undefined", f"a payload ran on {url}"
    assert not dialogs, f"a dialog opened on {url}: {dialogs}"


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_no_payload_runs_on_any_page_in_the_browser(
    page,
    live_server,
    owner,
    annotator,
    reviewer,
    workspace,
    django_capture_on_commit_callbacks,
):
    # Parse and resolve in this process (no worker runs here): the document page then draws
    # the payload text and its marks, which the hovering below needs.
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        urls = _build(
            owner=owner,
            annotator=annotator,
            reviewer=reviewer,
            workspace=workspace,
            capture=django_capture_on_commit_callbacks,
        )
    finally:
        celery_app.conf.task_always_eager = eager
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    log_in(page, live_server, "olive", PASSWORD)
    expect(page.get_by_role("heading", name="Your workspaces")).to_be_visible()

    for url in urls:
        _assert_inert(page, f"{live_server.url}{url}", dialogs)

    # The payload texts are on screen as text.
    page.goto(f"{live_server.url}/w/acme/sets/quiz/items/q1/")
    expect(page.locator("body")).to_contain_text("window.__xss=1")

    # The document view draws the anchors and questions from JSON: hover one.
    page.goto(f"{live_server.url}/w/acme/documents/{_quoted(DOC_ID)}")
    page.wait_for_load_state("networkidle")
    marks = page.locator("mark")
    # The marks are drawn after the anchors arrive: counting them at once could hover none.
    expect(marks.first).to_be_visible()
    for index in range(marks.count()):
        marks.nth(index).hover()
    assert page.evaluate("typeof window.__xss") == "undefined"

    # An import preview renders the uploaded file's questions.
    page.goto(f"{live_server.url}/w/acme/sets/quiz/import/")
    page.set_input_files(
        "#import-file",
        files=[{"name": "x.jsonl", "mimeType": "application/json", "buffer": _payload_import()}],
    )
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#import-preview")).to_be_visible()
    expect(page.locator("#import-preview")).to_contain_text("imp1")
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert not dialogs, dialogs


def _quoted(value: str) -> str:
    return quote(value)
