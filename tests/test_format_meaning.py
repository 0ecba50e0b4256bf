"""Every export means to its reader what the annotator highlighted, or its notes say it does not.

Each expectation here comes from a real reader, never from our writer: context-grid's
`read_jsonl` / `read_csv` and its `AnchorResolver` on context-grid's own parse of the file's
bytes, ir-measures for BEIR scores, pandas and Excel's byte-order mark rule for the
spreadsheet CSV, and for deepset the rule its readers place a label by (find `context` in the
document, then the offsets in it). The highlighted copy's offsets are computed from the
document text itself.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
import zipfile
from dataclasses import replace

import ir_measures
import pandas
import pytest
from contextgrid.core.documents import Block, Document, ParsedDocument, SourceFile
from contextgrid.core.evalset import EvalItem, EvalSet, GoldAnchor
from contextgrid.core.span import Span
from contextgrid.evalset.io import read_csv, read_jsonl
from contextgrid.parse.text import TextParser
from contextgrid.score.anchor import AnchorResolver
from django.core.files.base import ContentFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import Document as DocumentRow
from evalsets.models import EvalItem as ItemRow
from evalsets.models import Release
from evalsets.pure.formats import get_format
from evalsets.pure.formats.landing import anchor_for_reader, reader_lands, unpaged_occurrence
from evalsets.pure.formats.locating import all_occurrences, unique_passage
from evalsets.pure.parsers import PARSERS
from evalsets.pure.resolver import occurrence_at
from evalsets.releases import services as releases_services
from tests.documents import make_pdf

RESOLVER = AnchorResolver()


def _cg_text_parse(source_id: str, data: bytes) -> ParsedDocument:
    """context-grid's own reading of a text file: no pages, form feeds kept, BOM dropped."""
    return TextParser().parse(SourceFile(id=source_id, raw=data))


def _paged(source_id: str, text: str, page_starts: list[int]) -> ParsedDocument:
    """A parse with a block per page, as context-grid's PDF parsers (pymupdf, pdfplumber)
    attach each block's page; neither is installed here, so the pages are our parse's."""
    ends = [*page_starts[1:], len(text)]
    blocks = tuple(
        Block(span=Span(source_id, start, end), text=text[start:end], page=number)
        for number, (start, end) in enumerate(zip(page_starts, ends, strict=True), start=1)
        if end > start
    )
    return ParsedDocument(document=Document(id=source_id, text=text), blocks=blocks)


def _lands(anchor: GoldAnchor, parsed: ParsedDocument) -> tuple[int, int] | None:
    span = RESOLVER.locate(anchor, parsed).span
    return None if span is None else (span.start, span.end)


def _write(slug: str, items, documents, positions=None):
    out = io.BytesIO()
    evalset = EvalSet(id="s", items=tuple(items))
    notes = get_format(slug).writer(
        evalset, iter(evalset.items), out, documents=documents, positions=positions
    )
    return out.getvalue(), notes


def _positions(places: dict[str, list[tuple[int, int] | None]]):
    return lambda item: places[item.id]


# -- a text document with pages (form feeds): occurrence counted the way its reader counts ------

PAGED_TXT = (
    "Terms\nPay in 30 days.\n\f"
    "Page two has nothing to pay.\n\f"
    "Page three. Pay in 30 days. Late fees apply.\n"
)
QUOTE = "Pay in 30 days."


@pytest.fixture
def paged_txt(workspace):
    data = PAGED_TXT.encode()
    document = DocumentRow(workspace=workspace, source_id="terms.txt", sha256="2" * 64)
    document.size = len(data)
    document.kind = "text"
    document.file.save("terms.txt", ContentFile(data), save=False)
    document.save()
    parsed = PARSERS["plaintext"].parse(data)
    return documents_services.parse_version_add(
        document=document,
        parser="plaintext",
        parser_version=parsed.parser_version,
        text=parsed.text,
        page_starts=parsed.page_starts,
        origin="parsed",
    )


def _release(evalset, owner, capture, formats, **options):
    ItemRow.objects.filter(evalset=evalset).update(state="approved")
    with capture(execute=True):
        releases_services.release_create(evalset=evalset, user=owner, formats=formats, **options)
    return Release.objects.get(evalset=evalset)


def _file(release, slug, tmp_path):
    stored = release.files.get(format=slug)
    path = tmp_path / stored.filename
    with stored.file.open("rb") as handle:
        path.write_bytes(handle.read())
    return path, stored


@pytest.mark.django_db
def test_a_quote_highlighted_on_page_three_of_a_text_file_is_where_context_grid_lands(
    paged_txt, evalset, annotator, owner, django_capture_on_commit_callbacks, tmp_path
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="When?"
    )
    page_three = paged_txt.text.rindex(QUOTE)
    anchor = anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=paged_txt, start=page_three, end=page_three + len(QUOTE)
    )
    assert (anchor.page_hint, anchor.occurrence) == (3, 0)  # how the app stores it

    release = _release(
        evalset, owner, django_capture_on_commit_callbacks, ["contextgrid-jsonl", "contextgrid-csv"]
    )

    theirs = _cg_text_parse("terms.txt", PAGED_TXT.encode())
    wanted = PAGED_TXT.rindex(QUOTE)  # the copy after the last form feed, in their text
    for slug, reader in (("contextgrid-jsonl", read_jsonl), ("contextgrid-csv", read_csv)):
        path, stored = _file(release, slug, tmp_path)
        (read,) = reader(path).items
        assert _lands(read.anchors[0], theirs) == (wanted, wanted + len(QUOTE)), slug
        assert not {"lands_elsewhere", "lands_elsewhere_without_pages"} & set(stored.counts)


@pytest.mark.django_db
def test_a_highlight_the_chosen_parse_lacks_is_counted_where_it_was_made(
    paged_txt, evalset, annotator, owner, django_capture_on_commit_callbacks, tmp_path
):
    documents_services.parse_version_add(
        document=paged_txt.document,
        parser="theirs",
        parser_version="1",
        text="Terms only.",
        page_starts=[0],
    )
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="When?"
    )
    page_three = paged_txt.text.rindex(QUOTE)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=paged_txt, start=page_three, end=page_three + len(QUOTE)
    )

    release = _release(
        evalset,
        owner,
        django_capture_on_commit_callbacks,
        ["contextgrid-jsonl"],
        gold_parser="theirs",
    )

    path, _ = _file(release, "contextgrid-jsonl", tmp_path)
    (read,) = read_jsonl(path).items
    assert (read.anchors[0].page_hint, read.anchors[0].occurrence) == (None, 1)
    theirs = _cg_text_parse("terms.txt", PAGED_TXT.encode())
    wanted = PAGED_TXT.rindex(QUOTE)
    assert _lands(read.anchors[0], theirs) == (wanted, wanted + len(QUOTE))


@pytest.mark.django_db
def test_a_typed_anchor_no_parse_places_keeps_its_page_and_count(
    paged_txt, evalset, annotator, owner, django_capture_on_commit_callbacks, tmp_path
):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q1", question="Fees?"
    )
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="terms.txt", quote="No such words", page_hint=2
    )

    release = _release(evalset, owner, django_capture_on_commit_callbacks, ["contextgrid-jsonl"])

    path, _ = _file(release, "contextgrid-jsonl", tmp_path)
    (read,) = read_jsonl(path).items
    assert (read.anchors[0].page_hint, read.anchors[0].occurrence) == (2, 0)


@pytest.mark.django_db
def test_a_pdf_quote_also_on_an_earlier_page_keeps_its_page_and_the_notes_name_it(
    workspace, evalset, annotator, owner, django_capture_on_commit_callbacks, tmp_path
):
    pages = ["Leave is accrued monthly. First page.", "Leave is accrued monthly. Second page."]
    data = make_pdf(pages)
    document = DocumentRow(workspace=workspace, source_id="leave.pdf", sha256="3" * 64)
    document.kind = "pdf"
    document.size = len(data)
    document.file.save("leave.pdf", ContentFile(data), save=False)
    document.save()
    parsed = PARSERS["pdfium"].parse(data)
    parse = documents_services.parse_version_add(
        document=document,
        parser="pdfium",
        parser_version=parsed.parser_version,
        text=parsed.text,
        page_starts=parsed.page_starts,
        origin="parsed",
    )
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="p1", question="Leave?"
    )
    quote = "Leave is accrued monthly."
    second = parse.text.rindex(quote)
    anchoring_services.anchor_create_from_highlight(
        item=item, user=annotator, parse=parse, start=second, end=second + len(quote)
    )

    release = _release(evalset, owner, django_capture_on_commit_callbacks, ["contextgrid-jsonl"])

    path, stored = _file(release, "contextgrid-jsonl", tmp_path)
    (read,) = read_jsonl(path).items
    paged = _paged("leave.pdf", parse.text, list(parse.page_starts))
    assert _lands(read.anchors[0], paged) == (second, second + len(quote))
    unpaged = ParsedDocument(document=Document(id="leave.pdf", text=parse.text))
    assert _lands(read.anchors[0], unpaged) != (second, second + len(quote))
    (note,) = [n for n in stored.notes if "p1 anchor 1" in n]
    assert note.startswith("1 anchor(s) in paged documents (PDF) quote text that also appears")
    assert note.endswith("lands on another copy: p1 anchor 1 ('Leave is accrued monthly.').")
    assert stored.counts["lands_elsewhere_without_pages"] == 1


# -- gold spans that disagree with where context-grid resolves the anchor ----------------------


def test_a_gold_span_placed_approximately_is_named_as_disagreeing_with_context_grid():
    text = "The fee is\n  due  in thirty days, the fee is due in thirty days."
    # The app's fuzzy tier placed the evidence on the first, reflowed copy; context-grid's
    # exact tier takes the verbatim second copy.
    item = EvalItem("g1", "When?", anchors=(GoldAnchor("t.txt", "fee is due in thirty days"),))
    first = (text.index("fee"), text.index("days") + 4)

    _, notes = _write("contextgrid-jsonl", [item], {"t.txt": text}, _positions({"g1": [first]}))

    assert reader_lands(text, item.anchors[0]) != first
    assert notes.counts == {"lands_elsewhere": 1}
    assert notes.notes == [
        "1 anchor(s) are not where context-grid's AnchorResolver places them in the text this "
        "file was made from (the evidence was located approximately in this parse, or the "
        "resolver takes another copy): a context-grid reader lands on other text or none, and "
        "where gold spans are written they disagree with where context-grid resolves the same "
        "anchors: g1 anchor 1 ('fee is due in thirty days')."
    ]


def test_a_paged_anchor_whose_quote_is_not_verbatim_there_is_named_as_landing_elsewhere():
    text = "The fee is\n  due, then: the fee is due."
    item = EvalItem("g1", "When?", anchors=(GoldAnchor("t.pdf", "fee is due", page_hint=1),))
    reflowed = (text.index("fee"), text.index("due") + 3)

    _, notes = _write("contextgrid-jsonl", [item], {"t.pdf": text}, _positions({"g1": [reflowed]}))

    assert notes.counts == {"lands_elsewhere": 1}


def test_the_notes_name_each_anchor_with_its_quote_cut_at_forty_characters():
    long = "a long quote that goes on well past forty characters"
    text = f"{long} and {long}"
    item = EvalItem("g1", "Q?", anchors=(GoldAnchor("t", "x"), GoldAnchor("t", long)))
    second = (text.rindex(long), len(text))

    _, notes = _write("contextgrid-jsonl", [item], {"t": text}, _positions({"g1": [None, second]}))
    _, first_only = _write(
        "contextgrid-csv", [item], {"t": text}, _positions({"g1": [None, second]})
    )
    _, short = _write("contextgrid-jsonl", [item], {"t": text}, _positions({"g1": [None]}))
    _, textless = _write("contextgrid-jsonl", [item], {}, _positions({"g1": [None, second]}))

    assert notes.notes[0].endswith("g1 anchor 2 ('a long quote that goes on well past for…').")
    assert first_only.counts == {"extra_anchors": 1}  # the CSV holds, and checks, one
    assert short.counts == textless.counts == {}


def test_an_anchor_context_grid_places_where_it_was_highlighted_adds_no_note():
    text = "Pay now. Pay now. Pay later."
    item = EvalItem("g1", "When?", anchors=(GoldAnchor("t.txt", "Pay now.", occurrence=1),))

    _, notes = _write("contextgrid-csv", [item], {"t.txt": text}, _positions({"g1": [(9, 17)]}))

    assert notes.counts == {}


# -- BEIR: a perfect run scores 1 -------------------------------------------------------------

BEIR_DOCS = {"a.txt": "Alpha text.", "b.txt": "Beta text.", "c.txt": "Gamma text."}
BEIR_SET = (
    EvalItem("b1", "Alpha?", anchors=(GoldAnchor("a.txt", "Alpha"),)),
    EvalItem("b2", "Beta?", anchors=(GoldAnchor("b.txt", "Beta", 1), GoldAnchor("c.txt", "G", 0))),
    EvalItem("b3", "Nothing?", anchors=(GoldAnchor("c.txt", "Gamma", grade=0),)),
)


def _beir_members(data: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name).decode() for name in archive.namelist()}


def _qrels_as_beir_reads_them(text: str) -> dict[str, dict[str, int]]:
    """BEIR's `GenericDataLoader._load_qrels`: csv, tab-delimited, header skipped."""
    rows = csv.reader(io.StringIO(text), delimiter="\t")
    next(rows)
    qrels: dict[str, dict[str, int]] = {}
    for query, doc, score in rows:
        qrels.setdefault(query, {})[doc] = int(score)
    return qrels


def test_a_perfect_run_scores_ndcg_one_in_ir_measures_when_some_evidence_is_graded_zero():
    data, notes = _write("beir", BEIR_SET, BEIR_DOCS)
    members = _beir_members(data)
    qrels = _qrels_as_beir_reads_them(members["qrels/test.tsv"])
    queries = [json.loads(line)["_id"] for line in members["queries.jsonl"].splitlines()]
    # A perfect system ranks each question's useful evidence first, best grade first, and
    # returns the rest of the corpus after it.
    run = {}
    for item in BEIR_SET:
        useful = sorted((a for a in item.anchors if a.grade > 0), key=lambda a: -a.grade)
        ranked = [a.source_id for a in useful]
        ranked += [doc for doc in sorted(BEIR_DOCS) if doc not in ranked]
        run[item.id] = {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)}

    scores = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.P @ 1], qrels, run)

    assert scores[ir_measures.nDCG @ 10] == pytest.approx(1.0)
    assert scores[ir_measures.P @ 1] == pytest.approx(1.0)
    assert all(score > 0 for judged in qrels.values() for score in judged.values())
    assert queries == ["b1", "b2", "b3"] and "b3" not in qrels
    assert notes.counts["judged_irrelevant_only"] == 1 and notes.counts["grade_zero"] == 2


def test_the_beir_notes_say_in_words_which_questions_readers_skip_and_why():
    unanswered = EvalItem("b4", "Anyone?")

    _, notes = _write("beir", (*BEIR_SET, unanswered), BEIR_DOCS)

    assert notes.format == "beir" and (notes.items, notes.rows) == (4, 4)
    assert notes.notes[:3] == [
        "1 item has no evidence; BEIR cannot mark a question unanswerable, so they are in "
        "queries.jsonl with no qrels row and BEIR readers (context-grid's included) skip "
        "them: b4.",
        "1 item has only evidence graded 0 (irrelevant), so no qrels row: they are in "
        "queries.jsonl and BEIR readers skip them, as they skip unanswerable ones: b3.",
        "2 items have documents judged 0 (irrelevant). They were left out of the qrels: a "
        "score-0 row adds nothing a reader counts as relevant, and a query whose rows are all "
        "score 0 is still evaluated by ir-measures, pytrec_eval and ranx with an ideal of 0, "
        "scoring 0 for any run: b2, b3.",
    ]


# -- deepset: a context that says which copy --------------------------------------------------

REPEATED = (
    "Terms.\n\nPayment is due in 30 days.\n\nSection 1 ends here.\n\n"
    "Payment is due in 30 days.\n\nSection 2 ends here.\n"
)


def _placed_as_deepset_reads(row: dict[str, str], text: str) -> tuple[int, int]:
    """Where a reader puts a label: the context's place in the document (its first copy),
    plus the answer's offsets in the context."""
    at = text.index(row["context"])
    return at + int(row["answer_start"]), at + int(row["answer_end"])


def test_a_deepset_context_is_widened_until_it_says_which_copy_of_a_paragraph_is_meant():
    quote = "Payment is due in 30 days."
    second = REPEATED.rindex(quote)
    item = EvalItem("d1", "When?", anchors=(GoldAnchor("t.txt", quote, occurrence=1),))

    data, notes = _write(
        "deepset-qa", [item], {"t.txt": REPEATED}, _positions({"d1": [(second, second + 26)]})
    )

    (row,) = pandas.read_csv(io.BytesIO(data), dtype=str).to_dict("records")
    assert _placed_as_deepset_reads(row, REPEATED) == (second, second + len(quote))
    assert len(all_occurrences(REPEATED, row["context"])) == 1
    assert "context_repeats" not in notes.counts


def test_a_deepset_context_that_repeats_even_when_widened_is_named_in_the_notes():
    paragraph = "word " * 500
    text = f"{paragraph.strip()}\n\n{paragraph.strip()}\n"
    second = text.rindex("word")
    item = EvalItem("d1", "Which?", anchors=(GoldAnchor("t.txt", "word"),))

    _, notes = _write(
        "deepset-qa", [item], {"t.txt": text}, _positions({"d1": [(second, second + 4)]})
    )

    assert notes.counts["context_repeats"] == 1
    assert "d1 anchor 1" in " ".join(notes.notes)


def test_a_unique_passage_reaches_across_paragraphs_and_stops_at_its_limit():
    second = REPEATED.rindex("Payment")
    left, right, unique = unique_passage(REPEATED, second, second + 26)
    assert unique and REPEATED[left:right] == (
        "Section 1 ends here.\n\nPayment is due in 30 days.\n\nSection 2 ends here."
    )
    left, right, unique = unique_passage(REPEATED, second, second + 26, radius=10)
    assert (
        unique and REPEATED[left:right] == "ends here.\n\nPayment is due in 30 days.\n\nSection 2"
    )
    left, right, unique = unique_passage("ab ab ab ab", 6, 8, radius=1, limit=4)
    assert not unique and right - left >= 4
    assert unique_passage("ab ab", 3, 5, radius=1) == (0, 5, True)
    assert unique_passage("ab ab", 0, 2, radius=1) == (0, 5, True)
    assert unique_passage("x ab y ab x", 2, 4, radius=0) == (0, 6, True)
    assert unique_passage("ab", 0, 2) == (0, 2, True)


# -- the spreadsheet CSV opens in Excel as UTF-8 ----------------------------------------------


def test_the_spreadsheet_csv_starts_with_a_bom_and_every_reader_still_reads_its_first_column(
    tmp_path,
):
    item = EvalItem("ü1", "Was kostet Café 🍰?", anchors=(GoldAnchor("menü.txt", "=4 €"),))

    data, _ = _write("contextgrid-csv-spreadsheet", [item], {})
    path = tmp_path / "sheet.csv"
    path.write_bytes(data)

    assert data.startswith(b"\xef\xbb\xbfid,question,")
    (theirs,) = read_csv(path).items
    assert (theirs.id, theirs.question) == ("ü1", "Was kostet Café 🍰?")
    ours = get_format("contextgrid-csv").reader(data, filename="sheet.csv")
    assert [i.id for i in ours.items] == ["ü1"] and ours.ok
    frame = pandas.read_csv(path, dtype=str)
    assert list(frame.columns[:2]) == ["id", "question"] and frame["id"][0] == "ü1"
    plain, _ = _write("contextgrid-csv", [item], {})
    assert not plain.startswith(b"\xef\xbb\xbf")  # the evaluation file stays plain UTF-8


# -- the rules themselves, against context-grid's resolver ------------------------------------


def test_an_unpaged_occurrence_counts_verbatim_copies_before_reflowed_ones():
    text = "pay  now, pay now, pay\nnow"

    assert unpaged_occurrence(text, "pay now", text.index("pay now")) == 0
    assert unpaged_occurrence(text, "pay now", 0) is None  # exact copies win
    assert unpaged_occurrence("pay  now, pay\nnow", "pay now", 10) == 1
    assert unpaged_occurrence("pay now", "pay later", 0) is None


def test_an_anchor_on_page_one_loses_only_its_hint_and_needs_no_text():
    anchor = GoldAnchor("t", "x", page_hint=1, occurrence=3)

    assert anchor_for_reader(anchor, kind="html", text=None, span=None) == replace(
        anchor, page_hint=None
    )
    assert anchor_for_reader(anchor, kind="pdf", text=None, span=None) == anchor
    unhinted = GoldAnchor("t", "x", occurrence=3)
    assert anchor_for_reader(unhinted, kind="text", text="x x", span=(2, 3)) == unhinted


def test_a_pdf_anchor_keeps_its_page_and_a_text_anchor_without_a_place_is_kept():
    anchor = GoldAnchor("t", "x", page_hint=2, occurrence=0)

    assert anchor_for_reader(anchor, kind="pdf", text="x\n\nx", span=(3, 4)) == anchor
    assert anchor_for_reader(anchor, kind="text", text=None, span=(3, 4)) == anchor
    assert anchor_for_reader(anchor, kind="text", text="x\n\nx", span=None) == anchor
    assert anchor_for_reader(anchor, kind="text", text="y\n\ny", span=(3, 4)) == anchor
    moved = anchor_for_reader(anchor, kind="markdown", text="x\n\nx", span=(3, 4))
    assert (moved.page_hint, moved.occurrence) == (None, 1)


# -- the property: every format's reader lands on the highlighted copy, or the notes say not ---

PASSAGES = ("Pay in 30 days.", "Late fees apply.", "Pay in 30", "Notice.", "30 days.")


@st.composite
def documents(draw):
    """A text file of repeated passages, with form feeds or without, and one highlighted copy
    of one passage: (file bytes, kind, passage, which copy in our parse)."""
    pieces = draw(st.lists(st.sampled_from(PASSAGES), min_size=2, max_size=12))
    glue = draw(st.lists(st.sampled_from([" ", "\n", "\n\n", "\f"]), min_size=len(pieces)))
    text = "".join(piece + sep for piece, sep in zip(pieces, glue, strict=False))
    quote = draw(st.sampled_from(pieces))
    kind = draw(st.sampled_from(["text", "pdf"]))
    return text, kind, quote, draw(st.integers(min_value=0, max_value=20))


def _as_the_app_stores(text: str, page_starts: list[int], quote: str, start: int) -> GoldAnchor:
    """The anchor a highlight at `start` becomes: its page (1 when the parse has no pages),
    and its copy counted on that page."""
    page = max(number for number, at in enumerate(page_starts, start=1) if at <= start)
    begin = page_starts[page - 1]
    return GoldAnchor(
        "doc", quote, page_hint=page, occurrence=occurrence_at(text, quote, start, begin=begin)
    )


def _named(notes, item_id: str) -> bool:
    return f"{item_id} anchor 1" in " ".join(notes.notes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_every_format_lands_on_the_highlighted_copy_or_its_notes_name_the_anchor(sample):
    raw, kind, quote, pick = sample
    parsed = PARSERS["plaintext"].parse(raw.encode())
    ours, page_starts = parsed.text, list(parsed.page_starts)
    copies = all_occurrences(ours, quote)
    start = copies[pick % len(copies)]
    place = (start, start + len(quote))
    stored = _as_the_app_stores(ours, page_starts, quote, start)
    anchor = anchor_for_reader(stored, kind=kind, text=ours, span=place)
    item = EvalItem("h1", "Where?", anchors=(anchor,))
    docs, positions = {"doc": ours}, _positions({"h1": [place]})
    # The reader of each kind: context-grid's PDF parsers page (as ours do); its text parser
    # reads the file's own bytes, without pages.
    if kind == "pdf":
        reader, wanted = _paged("doc", ours, page_starts), place
    else:
        reader = _cg_text_parse("doc", raw.encode())
        theirs = all_occurrences(reader.text, quote)
        index = copies.index(start)
        wanted = (theirs[index], theirs[index] + len(quote)) if index < len(theirs) else None

    for slug, read in (("contextgrid-jsonl", read_jsonl), ("contextgrid-csv", read_csv)):
        data, notes = _write(slug, [item], docs, positions)
        (back,) = _read_back(read, data, slug)
        lands = _lands(back.anchors[0], reader)
        assert lands == wanted or _named(notes, "h1"), (slug, back.anchors[0], lands, wanted)
        if kind == "pdf":
            unpaged = ParsedDocument(document=Document(id="doc", text=ours))
            assert _lands(back.anchors[0], unpaged) == place or _named(notes, "h1")

    data, notes = _write("deepset-qa", [item], docs, positions)
    (row,) = pandas.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False).to_dict("records")
    assert _placed_as_deepset_reads(row, ours) == place or _named(notes, "h1")


def _read_back(read, data: bytes, slug: str):
    """The file read by context-grid's own reader, from a real path as it wants one."""
    suffix = ".jsonl" if slug.endswith("jsonl") else ".csv"
    with tempfile.NamedTemporaryFile("wb", suffix=suffix) as handle:
        handle.write(data)
        handle.flush()
        return read(handle.name).items


def test_the_property_s_reader_check_catches_an_anchor_left_counted_on_its_page():
    raw = "Pay in 30 days.\fPay in 30 days.\n"
    parsed = PARSERS["plaintext"].parse(raw.encode())
    start = parsed.text.rindex(QUOTE)
    stored = _as_the_app_stores(parsed.text, list(parsed.page_starts), QUOTE, start)
    reader = _cg_text_parse("doc", raw.encode())

    assert (stored.page_hint, stored.occurrence) == (2, 0)
    assert _lands(stored, reader) == (0, len(QUOTE))  # as the old exports were read
    fixed = anchor_for_reader(stored, kind="text", text=parsed.text, span=(start, start + 15))
    assert _lands(fixed, reader) == (raw.rindex(QUOTE), raw.rindex(QUOTE) + len(QUOTE))
    assert replace(fixed, page_hint=None) == fixed
