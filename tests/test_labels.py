"""Words and colours for states and statuses: defined once (labelling/labels.py), sent once.

Every page carries them as a JSON data block the scripts read (no inline executable script:
the pages run under a strict Content-Security-Policy), stylesheets read the colours from
``/labels.css``, and the domain (``evalsets/``) builds no markup at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client

from evalsets.pure.formats import contextgrid_csv
from labelling.labels import LABELS, RESOLUTION_COLOURS, STATE_COLOURS

pytestmark = pytest.mark.django_db

PAGES = [
    "/",
    "/w/acme/",
    "/w/acme/sets/quiz/",
    "/w/acme/sets/quiz/items/q1/",
    "/w/acme/documents/handbook.txt",
    "/w/acme/sets/quiz/review/",
    "/w/acme/sets/quiz/dashboard/",
    "/w/acme/sets/quiz/releases/",
    "/w/acme/sets/quiz/import/",
]


@pytest.fixture
def browser(owner, item, document) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.mark.parametrize("url", PAGES)
def test_every_page_sends_the_labels_once_as_data_and_runs_no_inline_script(browser, url):
    body = browser.get(url).content.decode()
    blocks = re.findall(r'<script id="gw-labels" type="application/json">(.*?)</script>', body)
    assert len(blocks) == 1
    assert json.loads(blocks[0]) == LABELS
    for tag, content in re.findall(r"<script([^>]*)>(.*?)</script>", body, re.DOTALL):
        assert 'type="application/json"' in tag or ("src=" in tag and not content.strip()), tag
    assert 'href="/labels.css"' in body


def test_the_labels_say_states_and_statuses_in_plain_words():
    assert LABELS["states"]["changes_requested"]["words"] == "changes requested"
    assert LABELS["resolutions"]["not_found"]["words"] == "lost"
    assert LABELS["grades"]["2"] == "answers it"


def test_the_colours_reach_stylesheets_as_custom_properties():
    css = Client().get("/labels.css")
    assert css["Content-Type"].startswith("text/css")
    text = css.content.decode()
    for state, colour in STATE_COLOURS.items():
        assert f"--state-{state}: {colour};" in text
    for status, colour in RESOLUTION_COLOURS.items():
        assert f"--res-{status}: {colour};" in text


def test_the_dashboard_draws_states_in_their_colours_and_words(browser, item):
    body = browser.get("/w/acme/sets/quiz/dashboard/").content.decode()
    assert f'fill="{STATE_COLOURS["draft"]}"' in body
    assert ">changes requested</text>" in body


def test_the_domain_builds_no_markup():
    root = Path(__file__).resolve().parent.parent / "evalsets"
    found = [
        f"{path.relative_to(root)}: {pattern}"
        for path in root.rglob("*.py")
        for pattern in ("<svg", "<span", 'class="')
        if pattern in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_grade_0_is_called_irrelevant_as_the_formats_and_release_notes_call_it():
    assert LABELS["grades"]["0"] == "irrelevant"
    assert "0 (irrelevant)" in Path(contextgrid_csv.__file__).read_text()
    page = Path("templates/labelling/document.html").read_text()
    assert "related" not in page and "<kbd>0</kbd> irrelevant" in page
