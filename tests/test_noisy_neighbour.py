"""One workspace's costly PDF does not stall another workspace's upload or pages.

A page of a 5 KB PDF asks pdfium for millions of full-page fills (an hour of drawing). While a
reader waits for it, a member of another workspace uploads a small PDF: its parses and its page
image must arrive while the costly drawing is still going on. Before drawing moved to limited
child processes, the costly page held this process's pdfium lock, and the neighbour's page
waited for it. The deadline is generous: it bounds an event, it does not measure speed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from evalsets.documents import services as documents_services
from evalsets.models import Document, ParseStatus, Workspace
from evalsets.pure import pdfdraw
from tests.documents import make_pdf
from tests.hostile_pdfs import nested_fills_pdf
from tests.world import pdf_document

pytestmark = pytest.mark.django_db(transaction=True)

#: 2 ** 22 full-page fills: about an hour of pdfium on this machine.
HOSTILE_LEVELS = 22
DEADLINE_S = 180


def _drawing_children() -> list[int]:
    """This process's children that are drawing a page (their command line names the job)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"draw_page_job" in command:
            found.append(int(stat.parent.name))
    return found


def _wait_for(condition, deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _in_thread(target, results: dict, key: str) -> threading.Thread:
    def run():
        try:
            results[key] = target()
        except Exception as exc:  # reported by the assertions below
            results[key] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, name=key, daemon=True)
    thread.start()
    return thread


def _image_url(workspace: str, document: Document) -> str:
    return f"/api/workspaces/{workspace}/documents/{document.source_id}/pdf/pages/1/image"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds its children in /proc")
def test_a_small_upload_elsewhere_is_parsed_and_drawn_while_a_costly_page_is_being_drawn(
    settings, workspace, viewer, outsider, client_for
):
    settings.GROUNDWORK_PAGE_DRAW_CPU_S = 3600  # the costly page's budget is not what is tested
    settings.GROUNDWORK_PAGE_DRAW_TIMEOUT_S = 3600
    # Reading the text of this file's nested forms costs minutes too (the parsers' own budget
    # bounds that): only its drawing is on trial here, so its parse is read from a plain PDF.
    hostile = pdf_document(
        workspace,
        source_id="fills.pdf",
        data=nested_fills_pdf(HOSTILE_LEVELS),
        text="Hostile page.",
    )
    results: dict = {}
    costly = _in_thread(
        lambda: client_for(viewer).get(_image_url("acme", hostile)), results, "costly"
    )
    begun = lambda: _drawing_children() or pdfdraw.PDFIUM_LOCK.locked()  # noqa: E731
    assert _wait_for(lambda: begun() or not costly.is_alive(), 60)
    assert costly.is_alive(), f"the costly page answered at once: {results.get('costly')}"

    def neighbour():
        document, _ = documents_services.document_upload(
            workspace=Workspace.objects.get(slug="elsewhere"),
            user=outsider,
            upload=SimpleUploadedFile("note.pdf", make_pdf(["A short note."])),
        )
        response = client_for(outsider).get(_image_url("elsewhere", document))
        return document, response, costly.is_alive()

    try:
        small = _in_thread(neighbour, results, "neighbour")
        small.join(timeout=DEADLINE_S)
        assert not small.is_alive(), "the neighbour's upload and page did not arrive in time"
        assert not isinstance(results["neighbour"], Exception), results["neighbour"]
        document, response, costly_still_drawing = results["neighbour"]
        assert response.status_code == 200
        assert response["Content-Type"] == "image/jpeg"
        assert document.parses.filter(status=ParseStatus.READY).count() == 3
        assert costly_still_drawing  # it did not have to finish first
    finally:
        for pid in _drawing_children():  # the costly drawing, started by this test
            os.killpg(pid, signal.SIGKILL)
        costly.join(timeout=60)
    assert not costly.is_alive()
    assert 400 <= results["costly"].status_code < 500  # stopped: a reason, never a 500
