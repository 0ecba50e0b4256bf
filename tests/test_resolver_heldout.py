"""The held-out resolver benchmark keeps working: run on a tiny corpus built here, read by the
product's own parsers, its gold spans are where the quotes are and its tempting absent
passages are nowhere in the target parse."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import resolver_heldout as heldout
import resolver_heldout_corpus as corpus
from resolver_bench import tokens

from tests.documents import make_pdf

PARAGRAPHS = [
    [
        "The lighthouse keeper counted seventeen ships before the storm arrived at dusk.",
        "Her logbook recorded wind speed, tide height and the colour of every passing sail.",
        "Inspectors later praised the careful handwriting and the unusual barometric notes.",
    ],
    [
        "A small bakery on the corner sold rye loaves, almond croissants and spiced buns.",
        "Each morning the owner tested the oven with a single biscuit before opening.",
        "Neighbours queued outside in winter because the windows fogged with warm steam.",
    ],
    [
        "Engineers replaced the bridge cables after measuring corrosion along the northern span.",
        "Traffic was diverted through the valley road for nine weeks during the repairs.",
        "The council published weekly photographs so residents could follow the progress.",
    ],
]


def _doc(doc_id: str, kind: str, data: bytes) -> dict:
    parses = {name: corpus._parse(name, data) for name in corpus.shipped_parsers(kind)}
    return {"id": doc_id, "kind": kind, "parses": parses}


@pytest.fixture(scope="module")
def tiny_corpus() -> list[dict]:
    docs = []
    for k, paragraphs in enumerate(PARAGRAPHS):
        html = "<html><body>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</body></html>"
        docs.append(_doc(f"tiny/{k}.html", "html", html.encode("utf-8")))
        docs.append(_doc(f"tiny/{k}.pdf", "pdf", make_pdf(paragraphs)))
    return docs


def test_documents_are_split_by_their_id_alone():
    assert heldout.half_of("glpk-doc/glpk.pdf@p11") == heldout.half_of("glpk-doc/glpk.pdf@p11")
    halves = {heldout.half_of(s["id"]) for s in corpus.source_specs()}
    assert halves == set(heldout.HALVES)


def test_every_pair_starts_at_the_reference_or_at_the_pdf_view():
    pairs = corpus.pairs()
    assert ("pdf", "pypdf", "pdfminer") in pairs
    assert ("pdf", "pdfium", "pypdf") in pairs
    assert ("html", "selectolax", "markitdown") in pairs
    assert all(source in ("pypdf", "pdfium", "selectolax", "python-docx") for _, source, _ in pairs)


def test_gold_spans_hold_the_quoted_words_and_absent_passages_are_absent(tiny_corpus):
    for pair in corpus.pairs():
        docs = heldout.pair_documents(tiny_corpus, pair)
        if not docs:
            continue
        cases, _ = heldout.build_cases(docs, f"{pair[1]} -> {pair[2]}", per_doc=20)
        survivors = [c for c in cases if c["truth"] is not None]
        absent = [c for c in cases if c["truth"] is None]
        assert survivors and absent, pair
        for c in survivors:
            target = docs[c["doc"]]
            start, end = c["truth"]
            found = [w for w, _, _ in tokens(target["b"][start:end], target["markdown"])]
            assert found == [w for w, _, _ in tokens(c["quote"])], (pair, c["quote"])
        assert heldout.run_naive(docs, absent) == [None] * len(absent)


def test_the_benchmark_prints_every_resolver_for_every_pair_on_a_tiny_corpus(tiny_corpus):
    lines: list[str] = []
    results = heldout.run(tiny_corpus, per_doc=12, log=lines.append)
    printed = "\n".join(lines)
    for half, by_pair in results.items():
        if not by_pair:
            continue
        assert f"### {half} half" in printed
        for name, figures in by_pair.items():
            assert set(figures) >= {"naive", "context-grid", "ours"}, name
            ours = figures["ours"]
            assert ours["survivors"] == ours["right"] + ours["wrong"] + ours["miss"]
            assert ours["recall"] >= figures["naive"]["recall"]
            assert ours["ms_per_anchor"] > 0
    assert "| overall" in printed


def _glued_pair(target: str) -> list[dict]:
    source = " ".join(" ".join(p) for p in PARAGRAPHS)
    return [
        {
            "id": "glued",
            "a": source,
            "a_pages": None,
            "b": target,
            "b_pages": None,
            "markdown": False,
        }
    ]


def test_a_passage_the_target_keeps_with_its_words_glued_is_never_counted_lost():
    # the target runs every word of a sentence together and puts a line of another column
    # between two sentences: few words align, yet nothing is lost
    sentences = [" ".join(p) for p in PARAGRAPHS]
    glued = [s.replace(" ", "") for s in sentences]
    target = f"{glued[0]}\nFigure 3: tide tables.\n{glued[1]}\n{glued[2]}"
    _, counts = heldout.build_cases(_glued_pair(target), "glued", per_doc=40)
    assert counts["lost"] == 0
    assert counts["left out: present with other word breaks"] > 0
    # a target that lost the last two paragraphs does lose passages
    _, counts = heldout.build_cases(_glued_pair(glued[0]), "glued", per_doc=40)
    assert counts["lost"] > 0


def test_a_glyph_placeholder_is_not_a_word_in_a_markdown_parse():
    assert [w for w, _, _ in tokens("in(cid:12)nite", markdown=True)] == ["in", "nite"]


def test_the_calibration_prints_a_table_for_every_threshold(tiny_corpus):
    lines: list[str] = []
    heldout.calibrate(tiny_corpus, per_doc=6, log=lines.append)
    printed = "\n".join(lines)
    for field in heldout.dataclasses.fields(heldout.Thresholds):
        chosen = getattr(heldout.THRESHOLDS, field.name)
        assert f"`{field.name}` (chosen: {chosen}), tuning half" in printed
        assert f"| {chosen} * |" in printed
    assert "both halves at the chosen values" in printed


def test_the_benchmark_lists_every_answer_that_is_not_right_when_asked(tiny_corpus):
    lines: list[str] = []
    heldout.run(tiny_corpus, per_doc=12, peers=False, log=lines.append, show=True)
    assert "every answer not right:" in "\n".join(lines)
