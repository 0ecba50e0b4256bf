"""The held-out resolver benchmark keeps working: run on a tiny corpus built here, read by the
product's own parsers, its gold spans are where the quotes are and its tempting absent
passages are nowhere in the target parse."""

from __future__ import annotations

import json
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


def test_a_batch_added_later_changes_no_case_of_an_older_one(tiny_corpus):
    first = [{**d, "batch": "first"} for d in tiny_corpus[:4]]
    later = [{**d, "id": f"later/{d['id']}", "batch": "later"} for d in tiny_corpus[4:]]
    for pair in corpus.pairs():
        name = f"{pair[1]} -> {pair[2]}"
        if not heldout.pair_documents(first, pair):
            continue
        alone, _ = heldout.build_cases(heldout.pair_documents(first, pair), name, per_doc=20)
        grown, _ = heldout.build_cases(heldout.pair_documents(first + later, pair), name, 20)
        assert any(c["truth"] is None for c in alone), name
        assert grown[: len(alone)] == alone, name
        assert all(c["doc"] >= len(first) // 2 for c in grown[len(alone) :]), name


def test_freezing_adds_a_new_batch_and_keeps_what_was_frozen_byte_for_byte(
    tiny_corpus, tmp_path, monkeypatch
):
    old, new = tiny_corpus[0], tiny_corpus[2]
    specs = [
        {"id": old["id"], "kind": "html", "package": "p", "path": "a.html", "batch": "first"},
        {"id": new["id"], "kind": "html", "package": "p", "path": "b.html", "batch": "second"},
    ]
    sources = {specs[0]["id"]: b"<p>old</p>", specs[1]["id"]: b"<p>new words here</p>"}
    monkeypatch.setattr(corpus, "source_specs", lambda: specs)
    monkeypatch.setattr(
        corpus,
        "_document_bytes",
        lambda spec: (sources[spec["id"]], {"source_sha256": corpus.sha256(sources[spec["id"]])}),
    )
    (tmp_path / "cache").mkdir()
    monkeypatch.setattr(corpus, "HELDOUT_CACHE", tmp_path / "cache")
    monkeypatch.setattr(corpus, "MANIFEST", tmp_path / "manifest.json")
    monkeypatch.setattr(corpus, "FROZEN_PARSES", tmp_path / "parses.json.gz")
    # what an older machine froze: parses this machine's parsers would not make again
    frozen = {name: {"text": f"frozen by {name}", "page_starts": [0]} for name in old["parses"]}
    corpus._write_frozen_parses([{"id": old["id"], "parses": frozen}])
    entry = {"kind": "html", "parses": {n: corpus.parse_digest(p) for n, p in frozen.items()}}
    entry |= {"package": "p", "path": "a.html", "source_sha256": "from another machine"}
    corpus.MANIFEST.write_text(json.dumps({old["id"]: entry}, indent=1, sort_keys=True) + "\n")

    docs, drift = corpus.load(freeze=True, log=lambda line: None)

    manifest = corpus.load_manifest()
    assert manifest[old["id"]] == entry
    assert set(manifest[new["id"]]["parses"]) == set(corpus.shipped_parsers("html"))
    parses = corpus.load_frozen_parses()
    assert parses[old["id"]] == frozen
    assert parses[new["id"]]["selectolax"]["text"].strip() == "new words here"
    assert [d["batch"] for d in docs] == ["first", "second"]
    assert drift == [f"{old['id']}: source differs", f"{new['id']}: not in the manifest"]


def test_every_document_of_the_corpus_is_frozen_and_the_older_batches_are_whole():
    specs = corpus.source_specs()
    manifest, parses = corpus.load_manifest(), corpus.load_frozen_parses()
    assert len({s["id"] for s in specs}) == len(specs) == len(manifest) == len(parses) == 99
    for spec in specs:
        assert set(parses[spec["id"]]) == set(corpus.shipped_parsers(spec["kind"])), spec["id"]
        assert set(manifest[spec["id"]]["parses"]) == set(parses[spec["id"]]), spec["id"]
    batches = [s["batch"] for s in specs]
    assert batches == ["first"] * 43 + ["second"] * 22 + ["third"] * 34
