"""The optional embedding extra: the NumPy forward pass, passage vectors, and fused ranking.

These run when the extra is installed (`make embeddings`); without it they skip, except in
CI or with GROUNDWORK_REQUIRE_SERVICES set, where a missing extra fails them.
"""

from __future__ import annotations

import os
from datetime import timedelta

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

import evalsets
from evalsets import sweep
from evalsets.apps import EvalsetsConfig
from evalsets.models import Passage
from evalsets.passages import ranking, selectors, services, vectors
from evalsets.pure import embedding
from tests.test_passages import CORPUS, add_document

required = bool(os.environ.get("CI") or os.environ.get("GROUNDWORK_REQUIRE_SERVICES"))
pytestmark = pytest.mark.skipif(
    not embedding.available() and not required,
    reason="the embedding extra is not installed (make embeddings)",
)

#: sentence-transformers' all-MiniLM-L6-v2 vector of "This is an example sentence", its first
#: eight values, as the model's card prints them.
REFERENCE = [
    0.0676569,
    0.0634960,
    0.0487132,
    0.0793050,
    0.0374481,
    0.0026528,
    0.0393750,
    -0.0070984,
]


@pytest.fixture(scope="module")
def model():
    return embedding.load(128)


def test_the_forward_pass_gives_the_reference_vector_of_the_model_card(model):
    vector = embedding.encode(model, ["This is an example sentence"])[0]
    assert vector.shape == (embedding.DIMENSIONS,)
    assert np.linalg.norm(vector) == pytest.approx(1, abs=1e-5)
    assert vector[:8] == pytest.approx(REFERENCE, abs=2e-6)


def test_the_cosine_of_two_sentences_is_sentence_transformers_documented_one(model):
    food, bread = embedding.encode(
        model, ["A man is eating food.", "A man is eating a piece of bread."]
    )
    assert float(food @ bread) == pytest.approx(0.7553, abs=5e-4)


def test_paraphrases_score_far_above_unrelated_sentences(model):
    a, b, c = embedding.encode(
        model,
        [
            "How do I reset my password?",
            "Steps to change the login password of an account",
            "The stock market fell sharply on Monday.",
        ],
    )
    assert a @ b > 0.6
    assert a @ c < 0.1


def test_padding_in_a_batch_leaves_a_text_s_vector_unchanged(model):
    alone = embedding.encode(model, ["A man is eating food."])[0]
    padded = embedding.encode(model, ["A man is eating food.", "word " * 100])[0]
    assert padded == pytest.approx(alone, abs=1e-5)


@pytest.fixture
def dense(settings):
    settings.GROUNDWORK_SEARCH_EMBEDDINGS = True
    settings.GROUNDWORK_EMBEDDING_BATCH = 2
    ranking.indexes.clear()
    yield
    ranking.indexes.clear()


@pytest.fixture
def embedded(dense, workspace, settings, django_capture_on_commit_callbacks):
    settings.GROUNDWORK_PASSAGE_CHARS = 80
    with django_capture_on_commit_callbacks(execute=True):
        return {sid: add_document(workspace, sid, text) for sid, text in CORPUS.items()}


@pytest.mark.django_db
def test_the_indexing_worker_writes_a_unit_vector_for_every_passage(embedded):
    rows = list(Passage.objects.values_list("vector", flat=True))
    assert len(rows) > 4
    for raw in rows:
        assert np.linalg.norm(vectors.from_bytes(raw)) == pytest.approx(1, abs=1e-5)


@pytest.mark.django_db
def test_dense_retrieval_finds_a_passage_sharing_no_word_with_the_question(embedded, workspace):
    question = "notebook computer theft"
    found = selectors.search(workspace, question, limit=3)["results"]
    assert found and found[0]["document"] == "security.txt"


@pytest.mark.django_db
def test_bm25_alone_finds_nothing_for_that_question_with_the_extra_off(workspace, settings):
    settings.GROUNDWORK_PASSAGE_CHARS = 80
    for sid, text in CORPUS.items():
        add_document(workspace, sid, text)
    ranking.indexes.clear()
    assert selectors.search(workspace, "notebook computer theft")["results"] == []


@pytest.mark.django_db
def test_a_run_past_its_cpu_budget_writes_a_batch_and_queues_the_rest(
    dense, workspace, settings, sent
):
    settings.GROUNDWORK_PASSAGE_CHARS = 80
    settings.GROUNDWORK_EMBEDDING_CPU_S = 0
    settings.GROUNDWORK_EMBEDDING_BATCH = 1
    document = add_document(workspace, "leave.txt", CORPUS["leave.txt"])
    parse = document.parses.get()
    services.parse_index(parse.pk)
    total = Passage.objects.filter(parse=parse).count()
    assert total == 2
    assert vectors.embed_parse(parse.pk) == 1
    assert ("embed_passages", (parse.pk,)) in sent
    assert Passage.objects.filter(parse=parse, vector__isnull=True).count() == 1


@pytest.mark.django_db
def test_the_index_is_built_again_once_vectors_are_written(dense, workspace, settings, sent):
    settings.GROUNDWORK_PASSAGE_CHARS = 80
    document = add_document(workspace, "security.txt", CORPUS["security.txt"])
    services.parse_index(document.parses.get().pk)
    before = ranking.indexes.get(workspace.pk)
    assert not before.vectors.any()
    vectors.embed_parse(document.parses.get().pk)
    after = ranking.indexes.get(workspace.pk)
    assert after is not before and after.vectors.any()


def test_the_app_refuses_to_start_with_the_setting_on_and_the_extra_missing(settings, monkeypatch):
    settings.GROUNDWORK_SEARCH_EMBEDDINGS = True
    monkeypatch.setattr(embedding, "available", lambda: False)
    with pytest.raises(ImproperlyConfigured, match="make embeddings"):
        EvalsetsConfig("evalsets", evalsets).ready()


@pytest.mark.django_db
def test_the_sweep_queues_vectors_for_passages_indexed_while_the_extra_was_off(
    workspace, settings, sent
):
    settings.GROUNDWORK_PASSAGE_CHARS = 80
    document = add_document(workspace, "leave.txt", CORPUS["leave.txt"])
    parse = document.parses.get()
    services.parse_index(parse.pk)  # the extra off: no vectors
    assert sweep.sweep(timedelta(0))["vectors"] == 0
    settings.GROUNDWORK_SEARCH_EMBEDDINGS = True
    assert sweep.sweep(timedelta(0))["vectors"] == 1
    assert ("embed_passages", (parse.pk,)) in sent
