"""The experiments pages: the list with its forms, and one experiment's results."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from evalsets.experiments import services
from tests import experiments_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def experiment(workspace, evalset, annotator, owner, reviewer, django_capture_on_commit_callbacks):
    experiments_world.build(
        workspace, evalset, annotator, owner, django_capture_on_commit_callbacks
    )
    with django_capture_on_commit_callbacks(execute=True):
        made = services.experiment_start(
            evalset=evalset,
            user=reviewer,
            release=1,
            parsers=["plaintext", "lossy"],
            chunkers=["recursive:64"],
            retrievers=["bm25"],
            k=3,
        )
    made.refresh_from_db()
    return made


def page(experiment, **query):
    url = reverse(
        "experiment", kwargs={"ws": "acme", "set_slug": "quiz", "experiment": experiment.public_id}
    )
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_the_list_offers_a_reviewer_the_forms_and_a_viewer_only_the_list(
    client, experiment, reviewer, viewer
):
    url = reverse("evalset-experiments", kwargs={"ws": "acme", "set_slug": "quiz"})
    client.force_login(reviewer)
    shown = client.get(url).content.decode()
    assert 'id="experiment-form"' in shown and 'id="run-form"' in shown
    assert str(experiment.public_id) in shown
    client.force_login(viewer)
    shown = client.get(url).content.decode()
    assert 'id="experiment-form"' not in shown and str(experiment.public_id) in shown


def test_an_experiment_page_shows_the_leaderboard_the_curve_and_why_a_question_was_missed(
    client, experiment, viewer
):
    client.force_login(viewer)
    shown = client.get(page(experiment)).content.decode()
    assert '0.800</strong> <span class="interval">[' in shown
    assert '<svg class="chart"' in shown and "<polyline" in shown
    assert "the parser lost the evidence" in shown
    item_url = reverse("item", kwargs={"ws": "acme", "set_slug": "quiz", "item_id": "s2"})
    assert f'href="{item_url}"' in shown
    start, end = experiment.gold["plaintext"]["s2"][0][1:3]
    assert f"#at={start}-{end}" in shown and "?parse=" in shown


def test_two_rows_compare_on_the_page(client, experiment, viewer):
    client.force_login(viewer)
    shown = client.get(page(experiment, left=0, right=1)).content.decode()
    assert 'id="comparison"' in shown and "not distinguishable" in shown
    shown = client.get(page(experiment, left=0, right=9)).content.decode()
    assert "has no cell" in shown


def test_a_row_compares_with_a_row_of_another_experiment_on_the_same_release(
    client, experiment, evalset, reviewer, viewer
):
    chunk = {"source_id": "safety.txt", "text": "Fire doors must be kept closed at all times."}
    lines = json.dumps({"question_id": "s2", "retrieved": [chunk]}).encode()
    uploaded = services.run_commit(
        evalset=evalset, user=reviewer, release=1, data=lines, filename="ours.jsonl", k=3
    )
    client.force_login(viewer)
    shown = client.get(page(experiment)).content.decode()
    ref = f"{uploaded.public_id}:0"
    assert f'<option value="{ref}">ours.jsonl: ours.jsonl</option>' in shown
    shown = client.get(page(experiment, left=0, right=ref)).content.decode()
    assert 'id="comparison"' in shown and "ours.jsonl" in shown
