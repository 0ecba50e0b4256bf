"""Eval-set formats: exports load with their real readers, imports locate every problem.

Plain pytest, no database. Golden files in `tests/golden/` were written by hand from the
specifications (`tests/golden/README.md` cites the rule behind each); never regenerate them
from our writers. Every export is also loaded with the reader its consumers use --
context-grid's `read_jsonl`/`read_csv`/`read_beir`, BEIR's `GenericDataLoader` logic
(reproduced below: the `beir` package pulls in torch), and Python's `csv` for deepset -- and
compared field by field with the set it came from, `occurrence` and `page_hint` included.
"""

# ruff: noqa: RUF001 -- CJK and Hebrew text with full-width punctuation is the point here.

from __future__ import annotations

import csv
import io
import json
import warnings
import zipfile
from pathlib import Path

import pytest
from contextgrid.core.evalset import EvalItem, EvalSet, GoldAnchor, GoldSpan
from contextgrid.core.span import Span
from contextgrid.evalset.io import read_beir, read_csv, read_jsonl, write_csv, write_jsonl
from contextgrid.evalset.quality import assess

from evalsets.pure.formats import (
    FORMATS,
    EvalSetHeader,
    ExportRefused,
    ImportResult,
    beir,
    contextgrid_csv,
    contextgrid_jsonl,
    deepset,
    get_format,
    guess_format,
    legalbench,
)

GOLDEN = Path(__file__).parent / "golden"

HANDBOOK = (
    "Staff handbook\n\n"
    "Employees accrue 1.5 days of leave per month. Unused leave, up to 5 days, carries over.\n\n"
    'Remote work: staff may work remotely, "with approval", on Fridays.\n\n'
    "The office closes at 6pm. The office closes at 6pm on Fridays too."
)
POLICY = "规则：每天工作八小时。\nמדיניות: אין עישון 🚭 בשטח.\nEnd of policy."
DOCUMENTS = {"handbook.txt": HANDBOOK, "policy.txt": POLICY}


def _set() -> EvalSet:
    """Every awkward shape in one set: unicode, embedded newlines/commas/quotes, many anchors."""
    return EvalSet(
        id="handbook-quiz",
        version=3,
        source="groundwork",
        meta={"project": "HR", "reviewers": ["ana", "bo"]},
        items=(
            EvalItem(
                id="q1",
                question="How much leave do employees accrue per month? 🗓️",
                anchors=(
                    GoldAnchor("handbook.txt", "Employees accrue 1.5 days of leave per month."),
                ),
                qtype="factoid",
                answer="1.5 days",
                meta={"reviewed": True, "filters": {"department": "HR"}},
            ),
            EvalItem(
                id="q2",
                question='When may staff work remotely, "with approval"?\nAnswer briefly, please.',
                anchors=(
                    GoldAnchor(
                        "handbook.txt",
                        'staff may work remotely, "with approval", on Fridays.',
                        grade=1,
                        page_hint=1,
                    ),
                ),
                answer="on Fridays",
            ),
            EvalItem(
                id="q3",
                question="每天工作几个小时？",
                anchors=(GoldAnchor("policy.txt", "每天工作八小时"),),
                qtype="numeric",
            ),
            EvalItem(
                id="q4",
                question="מה המדיניות לגבי עישון?",
                anchors=(GoldAnchor("policy.txt", "אין עישון 🚭 בשטח"),),
            ),
            EvalItem(id="q5", question="What is the CEO's favourite colour?", qtype="unanswerable"),
        ),
    )


def _multi_set() -> EvalSet:
    """Items whose evidence a one-row-per-question format cannot hold."""
    return EvalSet(
        id="multi",
        items=(
            EvalItem(
                id="m1",
                question="When does the office close?",
                anchors=(
                    GoldAnchor("handbook.txt", "The office closes at 6pm.", occurrence=1),
                    GoldAnchor("handbook.txt", "on Fridays too"),
                ),
            ),
            EvalItem(
                id="m2",
                question="What carries over?",
                gold=(GoldSpan(Span("handbook.txt", 63, 101)),),
                anchors=(GoldAnchor("handbook.txt", "Unused leave, up to 5 days, carries over."),),
            ),
            EvalItem(
                id="m3",
                question="Which text opens the handbook?",
                gold=(GoldSpan(Span("handbook.txt", 0, 14), grade=1),),
            ),
        ),
    )


def _export(slug: str, evalset: EvalSet, documents=DOCUMENTS):
    out = io.BytesIO()
    notes = get_format(slug).writer(evalset, iter(evalset.items), out, documents=documents)
    return out.getvalue(), notes


def _import(slug: str, data: bytes, filename: str, documents=None, **kw) -> ImportResult:
    return get_format(slug).reader(data, filename=filename, documents=documents, **kw)


def _golden(name: str, data: bytes) -> None:
    """`data` is byte for byte the hand-written file (see tests/golden/README.md)."""
    expected = (GOLDEN / name).read_bytes()
    assert data.decode("utf-8").splitlines() == expected.decode("utf-8").splitlines()
    assert data == expected, f"{name}: line endings differ from the specification"


# ---------------------------------------------------------------------------
# the golden set: a three-page document, one quote three times, two of them on page 2
# ---------------------------------------------------------------------------

GUIDE_PAGES = (
    "Contents: the office closes at 6pm (page 2).\n\n",
    "Hours\n\nWeekdays: the office closes at 6pm. Fridays: it closes at 4pm. "
    "Holidays: it closes at 6pm too.\n\n",
    "Café 🍰 opens 8–18, every day.\n",
)
GUIDE = "".join(GUIDE_PAGES)
MEMO = "Memo: parking is free.\n"
GUIDE_DOCUMENTS = {"guide.txt": GUIDE, "memo.txt": MEMO}
REVIEW = {"reviewed": True, "reviewed_by": "rita", "reviewed_at": "2026-11-30T10:00:00+00:00"}

GUIDE_SET = EvalSet(
    id="guide-quiz",
    version=2,
    source="groundwork",
    items=(
        EvalItem(
            id="g1",
            question="When does the office close on holidays?",
            anchors=(GoldAnchor("guide.txt", "closes at 6pm", page_hint=2, occurrence=1),),
            qtype="factoid",
            answer="6pm",
            meta=REVIEW,
        ),
        EvalItem(
            id="g2",
            question="Does the office close early on Fridays?",
            anchors=(GoldAnchor("guide.txt", "Fridays: it closes at 4pm.", grade=1, page_hint=2),),
            answer="the office closes",
        ),
        EvalItem(
            id="g3",
            question="When is the café open? 🕗",
            anchors=(GoldAnchor("guide.txt", "Café 🍰 opens 8–18", page_hint=3),),
        ),
        EvalItem(id="g4", question="@HR: who approves leave?", qtype="unanswerable"),
        EvalItem(
            id="g5",
            question="Is parking free?",
            anchors=(
                GoldAnchor("memo.txt", "parking is free"),
                GoldAnchor("guide.txt", "Hours", grade=0, page_hint=2),
            ),
            answer="free",
            meta={"filters": {"dept": ["HR", "Ops"], "year": 2024}},
        ),
        EvalItem(
            id="g6",
            question="-1 day: what changes?",
            anchors=(GoldAnchor("memo.txt", "parking is paid"),),
        ),
    ),
)

#: Where each anchor lies in the parse, as a release hands them to the writers (from the
#: stored resolutions). Found here with `str.index`, independently of any code under test.
_HOLIDAYS = GUIDE.index("closes at 6pm too")
GUIDE_POSITIONS: dict[str, list[tuple[int, int] | None]] = {
    "g1": [(_HOLIDAYS, _HOLIDAYS + 13)],
    "g2": [(GUIDE.index("Fridays: it"), GUIDE.index("Fridays: it") + 26)],
    "g3": [(GUIDE.index("Café"), GUIDE.index("Café") + 17)],
    "g4": [],
    "g5": [(MEMO.index("parking"), MEMO.index("parking") + 15), (0, 5)],
    "g6": [None],
}


def _guide_positions(item: EvalItem) -> list[tuple[int, int] | None]:
    return GUIDE_POSITIONS[item.id]


def _export_guide(slug: str, evalset: EvalSet = GUIDE_SET):
    out = io.BytesIO()
    notes = get_format(slug).writer(
        evalset,
        iter(evalset.items),
        out,
        documents=GUIDE_DOCUMENTS,
        positions=_guide_positions,
    )
    return out.getvalue(), notes


def _dict_rows(data: bytes) -> list[dict[str, str]]:
    """A deepset CSV as deepset's own ingestion reads it: UTF-8, RFC 4180, header row."""
    csv.field_size_limit(1 << 26)  # pandas, which deepset's examples use, has no cell limit
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))


def _beir_generic_loader(folder: Path, split: str = "test"):
    """BEIR's `GenericDataLoader(data_folder).load(split)`, reproduced line for line.

    From beir-cellar/beir `beir/datasets/data_loader.py`: corpus and queries are read with
    `open(path, encoding="utf8")` and `json.loads` per line; qrels with `csv.reader(open(path,
    encoding="utf-8"), delimiter="\\t", quoting=csv.QUOTE_MINIMAL)`, the header skipped by
    `next(reader)`, `int(row[2])` as the score; then only judged queries are kept. The package
    itself is not installed: it depends on torch and sentence-transformers.
    """
    corpus, queries, qrels = {}, {}, {}
    with open(folder / "corpus.jsonl", encoding="utf8") as handle:
        for line in handle:
            line = json.loads(line)
            corpus[line.get("_id")] = {"text": line.get("text"), "title": line.get("title")}
    with open(folder / "queries.jsonl", encoding="utf8") as handle:
        for line in handle:
            line = json.loads(line)
            queries[line.get("_id")] = line.get("text")
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        next(reader)
        for row in reader:
            query_id, corpus_id, score = row[0], row[1], int(row[2])
            qrels.setdefault(query_id, {})[corpus_id] = score
    queries = {qid: queries[qid] for qid in qrels}
    return corpus, queries, qrels


def _messages(result: ImportResult) -> list[str]:
    return [p.message for p in result.problems]


# ---------------------------------------------------------------------------
# context-grid JSONL
# ---------------------------------------------------------------------------


def test_jsonl_export_loads_with_contextgrid_and_equals_the_source_set(tmp_path):
    evalset = _set().with_items(_set().items + _multi_set().items)
    data, notes = _export("contextgrid-jsonl", evalset)
    path = tmp_path / "set.jsonl"
    path.write_bytes(data)

    loaded = read_jsonl(path)

    assert loaded == evalset
    for ours, theirs in zip(loaded.items, evalset.items, strict=True):
        assert ours.to_dict() == theirs.to_dict()
    assert notes.items == 8 and notes.rows == 9 and notes.notes == []


def test_jsonl_header_line_is_the_one_write_jsonl_writes(tmp_path):
    evalset = _set()
    write_jsonl(evalset, tmp_path / "theirs.jsonl")
    data, _ = _export("contextgrid-jsonl", evalset)

    theirs = (tmp_path / "theirs.jsonl").read_text(encoding="utf-8").split("\n")
    ours = data.decode("utf-8").split("\n")

    assert list(json.loads(ours[0])) == ["_evalset"]
    assert list(json.loads(ours[0])["_evalset"]) == ["id", "version", "source", "meta"]
    assert [json.loads(line) for line in ours if line] == [
        json.loads(line) for line in theirs if line
    ]


def test_jsonl_export_is_byte_for_byte_deterministic():
    first = EvalItem(id="a", question="Q?", meta={"b": 1, "a": {"y": 2, "x": 1}})
    second = EvalItem(id="a", question="Q?", meta={"a": {"x": 1, "y": 2}, "b": 1})
    header = EvalSetHeader(id="s", meta={"z": 1, "k": "é"})

    one, two = io.BytesIO(), io.BytesIO()
    contextgrid_jsonl.write(header, [first], one)
    contextgrid_jsonl.write(header, [second], two)

    assert one.getvalue() == two.getvalue()
    assert b"\r" not in one.getvalue() and one.getvalue().endswith(b"\n")
    assert "é".encode() in one.getvalue()  # ensure_ascii=False
    assert b'"meta": {"a": {"x": 1, "y": 2}, "b": 1}' in one.getvalue()


def test_jsonl_keeps_unicode_line_separators_inside_one_line(tmp_path):
    item = EvalItem(id="ls", question="line\u2028separator and next\x85line?")
    data, _ = _export("contextgrid-jsonl", EvalSet(id="s", items=(item,)))
    (tmp_path / "s.jsonl").write_bytes(data)

    assert read_jsonl(tmp_path / "s.jsonl").items == (item,)
    assert _import("contextgrid-jsonl", data, "s.jsonl").items == [item]


def test_jsonl_round_trip_through_our_reader_keeps_header_and_items():
    evalset = _set()
    data, _ = _export("contextgrid-jsonl", evalset)

    result = _import("contextgrid-jsonl", data, "whatever.jsonl")

    assert result.ok and result.problems == []
    assert result.header == EvalSetHeader("handbook-quiz", 3, "groundwork", evalset.meta)
    assert result.to_evalset() == evalset


def test_jsonl_writer_writes_odd_meta_values_as_text_and_says_so():
    from datetime import date

    item = EvalItem(id="d1", question="When?", meta={"due": date(2024, 5, 1)})
    out = io.BytesIO()
    notes = contextgrid_jsonl.write(EvalSetHeader("s"), [item], out)

    assert '"due": "2024-05-01"' in out.getvalue().decode()
    assert notes.counts == {"meta_as_text": 1}


# ---------------------------------------------------------------------------
# context-grid CSV
# ---------------------------------------------------------------------------


def test_csv_export_loads_with_contextgrid_read_csv_field_for_field(tmp_path):
    evalset = _set()
    data, notes = _export("contextgrid-csv", evalset)
    path = tmp_path / "set.csv"
    path.write_bytes(data)

    loaded = read_csv(path)

    assert loaded.items == evalset.items
    assert notes.notes == [
        "The eval set's own meta has no place in a CSV file and was not written; the set "
        "takes its name from the file when it is read back."
    ]


def test_csv_export_of_a_plain_set_is_identical_to_contextgrid_write_csv(tmp_path):
    plain = EvalSet(
        id="plain",
        items=(
            EvalItem(
                "p1",
                "Who, exactly?",
                anchors=(GoldAnchor("a.pdf", 'He said "yes"', grade=1, page_hint=4),),
                answer="x",
                meta={"b": 2, "a": [1]},
            ),
            EvalItem("p2", "Why\nnot?", qtype="unanswerable"),
        ),
    )
    write_csv(plain, tmp_path / "theirs.csv")
    data, _ = _export("contextgrid-csv", plain)

    assert data == (tmp_path / "theirs.csv").read_bytes()


def test_csv_export_names_items_whose_extra_anchors_and_spans_it_cannot_carry():
    _, notes = _export("contextgrid-csv", _multi_set())

    assert notes.notes == [
        "1 item has more than one anchor; CSV holds one per row and context-grid refuses "
        "repeated ids, so only the first anchor was written for: m1. Export context-grid "
        "JSONL to keep all of them.",
        "1 item has resolved gold spans, which CSV has no column for; the anchors were "
        "written, the spans were not: m2.",
        "1 item has resolved spans but no anchor, so they read back as questions without "
        "evidence: m3. Add anchors, or export context-grid JSONL.",
    ]
    assert notes.counts == {"extra_anchors": 1, "gold_not_written": 1, "gold_only": 1}


def test_csv_round_trip_keeps_unicode_newlines_commas_and_quotes():
    evalset = _set()
    data, _ = _export("contextgrid-csv", evalset)

    result = _import("contextgrid-csv", data, "set.csv")

    assert result.problems == []
    assert result.items == list(evalset.items)
    assert result.source == "csv:set.csv"


def test_csv_reader_accepts_the_column_aliases_contextgrid_accepts(tmp_path):
    text = (
        "qid,query,doc_id,evidence,relevance,page_number,nth,type,gold_answer,metadata\n"
        'a1,What accrues?,handbook.txt,1.5 days,1,2,0,factoid,leave,"{""k"": 1}"\n'
    )
    (tmp_path / "aliases.csv").write_text(text, encoding="utf-8")

    result = _import("contextgrid-csv", text.encode(), "aliases.csv")

    assert result.problems == []
    assert result.items == list(read_csv(tmp_path / "aliases.csv").items)
    assert result.items[0].anchors == (GoldAnchor("handbook.txt", "1.5 days", 1, 2, 0),)


def test_csv_rows_without_an_id_get_the_ids_read_csv_gives(tmp_path):
    text = 'question,quote,source_id\n"Multi\nline?",x,a.txt\n,,\nSecond?,,\n'
    (tmp_path / "noid.csv").write_text(text, encoding="utf-8")

    result = _import("contextgrid-csv", text.encode(), "noid.csv")

    assert [i.id for i in result.items] == [i.id for i in read_csv(tmp_path / "noid.csv").items]
    assert [i.id for i in result.items] == ["q1", "q3"]
    assert [p.line for p in result.problems] == []


def test_csv_reader_reports_the_line_a_multiline_record_starts_on():
    text = 'id,question,source_id,quote,grade\na,"one\ntwo",d.txt,x,2\nb,Q?,d.txt,x,high\n'

    result = _import("contextgrid-csv", text.encode(), "g.csv")

    assert [(p.line, p.item, p.field, p.message) for p in result.problems] == [
        (4, "b", "grade", "`grade` must be a whole number, found 'high'.")
    ]


def test_csv_export_is_the_hand_written_file_from_write_csvs_rules():
    data, _ = _export_guide("contextgrid-csv")

    _golden("contextgrid.csv", data)


def test_csv_export_read_by_read_csv_keeps_occurrence_page_hint_grade_and_review(tmp_path):
    data, _ = _export_guide("contextgrid-csv")
    (tmp_path / "guide.csv").write_bytes(data)

    loaded = read_csv(tmp_path / "guide.csv")

    for theirs, ours in zip(loaded.items, GUIDE_SET.items, strict=True):
        assert (theirs.id, theirs.question, theirs.qtype, theirs.answer) == (
            ours.id,
            ours.question,
            ours.qtype,
            ours.answer,
        )
        assert theirs.anchors == ours.anchors[:1]  # source, quote, grade, page_hint, occurrence
        assert theirs.meta == ours.meta
    assert loaded.items[0].anchors[0].occurrence == 1
    assert loaded.items[0].anchors[0].page_hint == 2
    assert assess(loaded).reviewed == 1


def test_csv_round_trip_through_our_reader_keeps_occurrence_and_page_hint():
    data, _ = _export_guide("contextgrid-csv")

    result = _import("contextgrid-csv", data, "guide.csv")

    assert [i.anchors for i in result.items] == [i.anchors[:1] for i in GUIDE_SET.items]


def test_a_crlf_inside_a_question_reads_back_as_read_csv_reads_it(tmp_path):
    item = EvalItem("c1", "Line one\r\nline two\rthree?", answer="a\r\nb")
    data, notes = _export("contextgrid-csv", EvalSet(id="s", items=(item,)))
    (tmp_path / "s.csv").write_bytes(data)

    theirs = read_csv(tmp_path / "s.csv").items[0]
    ours = _import("contextgrid-csv", data, "s.csv").items[0]

    assert theirs.question == ours.question == "Line one\nline two\nthree?"
    assert theirs.answer == ours.answer == "a\nb"
    assert notes.counts["carriage_returns"] == 1


def test_an_excel_csv_with_bom_and_crlf_reads_as_read_csv_reads_it(tmp_path):
    text = '\ufeffid,question,source_id,quote,occurrence,page\r\nx1,"Two\r\nlines?",a.txt,q,2,3\r\n'
    (tmp_path / "excel.csv").write_bytes(text.encode("utf-8"))

    result = _import("contextgrid-csv", text.encode("utf-8"), "excel.csv")

    assert result.items == list(read_csv(tmp_path / "excel.csv").items)
    assert result.items[0].anchors == (GoldAnchor("a.txt", "q", page_hint=3, occurrence=2),)


def test_csv_writes_formula_like_cells_exactly_and_names_the_items():
    data, notes = _export_guide("contextgrid-csv")

    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
    assert rows[3]["question"] == "@HR: who approves leave?"
    assert rows[5]["question"] == "-1 day: what changes?"
    assert notes.counts["formula_like"] == 2
    assert notes.notes[0] == (
        "2 items have a question, answer or quote starting with =, +, -, @, a tab or a "
        "carriage return, which a spreadsheet may run as a formula; they were written exactly, "
        "because evaluation needs the exact text. Do not open this file in a spreadsheet to "
        "edit it (export 'context-grid CSV for spreadsheets' for that): g4, g6."
    )


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_every_formula_start_is_noticed(start):
    item = EvalItem("f", "Q?", anchors=(GoldAnchor("a.txt", f"{start}1+1 x"),))

    _, notes = _export("contextgrid-csv", EvalSet(id="s", items=(item,)))

    assert notes.counts.get("formula_like") == 1


def test_the_spreadsheet_csv_prefixes_formula_cells_and_says_it_is_not_for_evaluation():
    data, notes = _export_guide("contextgrid-csv-spreadsheet")

    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
    assert rows[3]["question"] == "'@HR: who approves leave?"
    assert rows[5]["question"] == "'-1 day: what changes?"
    assert rows[0]["question"] == GUIDE_SET.items[0].question  # others untouched
    assert rows[1]["quote"] == "Fridays: it closes at 4pm."
    assert notes.format == "contextgrid-csv-spreadsheet"
    assert "not for evaluation" in notes.notes[0] and "g4, g6" in notes.notes[0]


def test_jsonl_export_is_the_hand_written_file_from_write_jsonls_rules():
    data, _ = _export_guide("contextgrid-jsonl")

    _golden("contextgrid.jsonl", data)


def test_jsonl_export_read_by_read_jsonl_equals_the_set_field_by_field(tmp_path):
    data, _ = _export_guide("contextgrid-jsonl")
    (tmp_path / "guide.jsonl").write_bytes(data)

    loaded = read_jsonl(tmp_path / "guide.jsonl")
    ours = _import("contextgrid-jsonl", data, "guide.jsonl")

    assert [i.to_dict() for i in loaded.items] == [i.to_dict() for i in GUIDE_SET.items]
    assert [i.to_dict() for i in ours.items] == [i.to_dict() for i in GUIDE_SET.items]
    assert assess(loaded).reviewed == 1


# ---------------------------------------------------------------------------
# deepset Cloud
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["qa", "retrieval", "rag"])
def test_deepset_export_is_the_hand_written_file_from_their_documentation(layout):
    data, _ = _export_guide(f"deepset-{layout}")

    _golden(f"deepset-{layout}.csv", data)


def test_deepset_qa_places_the_evidence_at_its_position_not_at_the_first_copy_of_the_quote():
    data, _ = _export_guide("deepset-qa")

    g1 = _dict_rows(data)[0]
    context = g1["context"]
    start, end = int(g1["answer_start"]), int(g1["answer_end"])
    where = GUIDE.index(context)
    # the Holidays copy (second on page 2), not the Weekdays one a whole-document count finds
    assert where + start == _HOLIDAYS + len("closes at ")
    assert context[start:end] == g1["text"] == "6pm"
    assert context[start - 10 : end + 4] == "closes at 6pm too"


def test_deepset_qa_text_is_always_inside_the_evidence_and_the_notes_say_which_rule():
    data, notes = _export_guide("deepset-qa")

    rows = {row["question_id"]: row for row in _dict_rows(data)}
    for item in GUIDE_SET.items:
        row = rows[item.id]
        if not row["context"]:
            continue
        start, end = int(row["answer_start"]), int(row["answer_end"])
        assert row["context"][start:end] == row["text"]
    # g2's answer "the office closes" is in the context, but only before the evidence
    assert "the office closes" in rows["g2"]["context"]
    assert rows["g2"]["text"] == "Fridays: it closes at 4pm."
    assert notes.counts["text_is_answer"] == 2 and notes.counts["text_is_evidence"] == 3
    assert "`text` is the item's answer, found inside the evidence, in 2 row(s): g1, g5." in (
        notes.notes
    )
    assert any(
        n.startswith("`text` is the evidence itself") and "g2, g3, g6" in n for n in notes.notes
    )


def test_deepset_qa_labels_each_row_of_an_item_with_several_pieces_of_evidence():
    item = EvalItem(
        "two",
        "Which hours?",
        anchors=(GoldAnchor("guide.txt", "closes at 4pm"), GoldAnchor("memo.txt", "parking")),
        answer="4pm",
    )
    at = GUIDE.index("closes at 4pm")
    out = io.BytesIO()
    notes = deepset.write_qa(
        EvalSetHeader("s"),
        [item],
        out,
        documents=GUIDE_DOCUMENTS,
        positions=lambda _: [(at, at + 13), (6, 13)],
    )

    assert notes.rows == 2
    assert notes.notes[-2:] == [
        "`text` is the item's answer, found inside the evidence, in 1 row(s): two (evidence 1).",
        "`text` is the evidence itself (the item has no answer, or its answer is not inside the "
        "evidence) in 1 row(s): two (evidence 2).",
    ]


@pytest.mark.parametrize(
    ("evidence", "answer", "expected"),
    [
        ("it closes at 4pm", "4pm", (13, 16)),  # inside: the answer
        ("Weekdays: the office", "6pm", (0, 20)),  # only after the evidence: the evidence
        ("6pm and 6pm again", "6pm", (0, 3)),  # twice inside: the first copy
        ("an XXXX here", None, (0, 12)),  # no answer: the evidence, whatever it holds
    ],
)
def test_deepset_text_is_the_answers_first_copy_inside_the_evidence_or_the_evidence(
    evidence, answer, expected
):
    text = f"{evidence} -- and 6pm after it."
    item = EvalItem("a", "Q?", anchors=(GoldAnchor("d.txt", evidence),), answer=answer)
    out = io.BytesIO()
    deepset.write_qa(
        EvalSetHeader("s"),
        [item],
        out,
        documents={"d.txt": text},
        positions=lambda _: [(0, len(evidence))],
    )

    row = _dict_rows(out.getvalue())[0]
    assert (int(row["answer_start"]), int(row["answer_end"])) == expected
    assert row["context"] == text


def test_deepset_names_anchors_the_chosen_parse_does_not_contain():
    _, notes = _export_guide("deepset-qa")

    assert notes.counts["quote_not_in_parse"] == 1
    assert (
        "1 item has anchors the chosen parse does not contain, so `context` is the quote "
        "alone: g6." in notes.notes
    )


def test_deepset_a_position_outside_the_text_counts_as_not_found():
    item = EvalItem("x", "Q?", anchors=(GoldAnchor("memo.txt", "parking"),))
    out = io.BytesIO()
    notes = deepset.write_qa(
        EvalSetHeader("s"), [item], out, documents=GUIDE_DOCUMENTS, positions=lambda _: [(6, 99)]
    )

    assert notes.counts["quote_not_in_parse"] == 1
    assert _dict_rows(out.getvalue())[0]["context"] == "parking"


def test_deepset_rag_leaves_every_column_but_the_question_empty():
    data, notes = _export_guide("deepset-rag")

    rows = _dict_rows(data)
    assert list(rows[0]) == [
        "question",
        "text",
        "context",
        "file_name",
        "answer_start",
        "answer_end",
        "filters",
    ]
    assert [r["question"] for r in rows] == [i.question for i in GUIDE_SET.items]
    assert all(v == "" for r in rows for k, v in r.items() if k != "question")
    assert notes.counts["filters_not_written"] == 1  # g5's filters: the column must be empty


@pytest.mark.parametrize("layout", ["qa", "retrieval"])
def test_deepset_leaves_the_filters_column_out_when_no_item_has_filters(layout):
    plain = GUIDE_SET.with_items(tuple(i for i in GUIDE_SET.items if i.id != "g5"))

    data, _ = _export_guide(f"deepset-{layout}", plain)

    header = next(csv.reader(io.StringIO(data.decode("utf-8"))))
    assert "filters" not in header
    assert header[:4] == ["question", "text", "context", "file_name"]


def test_deepset_filters_use_the_documented_form_with_repeated_keys():
    data, _ = _export_guide("deepset-qa")

    cell = _dict_rows(data)[4]["filters"]
    assert cell == '{"dept":"HR", "dept":"Ops", "year":2024}'
    pairs = json.loads(cell, object_pairs_hook=list)
    assert pairs == [("dept", "HR"), ("dept", "Ops"), ("year", 2024)]


@pytest.mark.parametrize("filters", [["a"], "text"])
def test_deepset_filters_it_cannot_write_in_that_form_are_named(filters):
    item = EvalItem("f", "Q?", meta={"filters": filters})
    out = io.BytesIO()
    notes = deepset.write_qa(EvalSetHeader("s"), [item], out, documents={})

    assert notes.counts["filters_not_object"] == 1
    assert "filters" not in next(csv.reader(io.StringIO(out.getvalue().decode())))


@pytest.mark.parametrize("bad", [{"nested": 1}, [], float("nan")])
def test_deepset_one_filter_it_cannot_write_leaves_the_others_written_and_is_named(bad):
    item = EvalItem("f", "Q?", meta={"filters": {"k": bad, "year": 2024}})
    out = io.BytesIO()
    notes = deepset.write_qa(EvalSetHeader("s"), [item], out, documents={})

    [row] = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert json.loads(row["filters"]) == {"year": 2024}
    assert notes.counts["filter_keys_not_written"] == 1
    assert notes.counts.get("filters_not_object", 0) == 0


def test_deepset_a_filter_list_of_one_value_is_written_as_the_value_and_named():
    item = EvalItem("f", "Q?", meta={"filters": {"dept": ["HR"]}})
    out = io.BytesIO()
    notes = deepset.write_qa(EvalSetHeader("s"), [item], out, documents={})

    [row] = list(csv.DictReader(io.StringIO(out.getvalue().decode())))
    assert json.loads(row["filters"]) == {"dept": "HR"}
    assert notes.counts["filter_lists_of_one"] == 1


def test_deepset_filters_keep_unicode_as_utf8_text():
    item = EvalItem("u", "Q?", meta={"filters": {"ville": "Café ☕"}})
    out = io.BytesIO()
    deepset.write_qa(EvalSetHeader("s"), [item], out, documents={})

    assert _dict_rows(out.getvalue())[0]["filters"] == '{"ville":"Café ☕"}'


def test_deepset_without_stored_positions_honours_occurrence_and_skips_missing_documents():
    item = EvalItem(
        "o",
        "Which copy?",
        anchors=(
            GoldAnchor("missing.txt", "gone"),
            GoldAnchor("guide.txt", "closes at 6pm", occurrence=2),
        ),
    )
    out = io.BytesIO()
    notes = deepset.write_qa(EvalSetHeader("s"), [item], out, documents=GUIDE_DOCUMENTS)

    rows = _dict_rows(out.getvalue())
    assert rows[0]["context"] == "gone" and notes.counts["no_document_text"] == 1
    start = GUIDE.index(rows[1]["context"]) + int(rows[1]["answer_start"])
    assert start == _HOLIDAYS  # the third copy in the whole text: no pages without positions


def test_deepset_retrieval_takes_its_passage_from_the_position_too():
    text = "First: The rule applies.\n\nSecond: The rule applies."
    second = text.rindex("The rule")
    item = EvalItem("r", "Which rule?", anchors=(GoldAnchor("d.txt", "The rule applies."),))
    out = io.BytesIO()
    deepset.write_retrieval(
        EvalSetHeader("s"),
        [item],
        out,
        documents={"d.txt": text},
        positions=lambda _: [(second, second + 17)],
    )

    row = _dict_rows(out.getvalue())[0]
    assert row["context"] == "Second: The rule applies."
    assert row["file_name"] == "d.txt" and row["text"] == ""


def test_deepset_context_of_long_evidence_starts_where_the_evidence_starts():
    evidence = "word " * 80 + "end."
    text = evidence + " More text after it."
    item = EvalItem("l", "Long?", anchors=(GoldAnchor("d.txt", evidence),))
    out = io.BytesIO()
    deepset.write_qa(
        EvalSetHeader("s"),
        [item],
        out,
        documents={"d.txt": text},
        positions=lambda _: [(0, len(evidence))],
    )

    row = _dict_rows(out.getvalue())[0]
    assert row["context"] == text
    assert (row["answer_start"], row["answer_end"]) == ("0", str(len(evidence)))


PARA_ONE, PARA_TWO = "Para one has alpha and beta.", "Para two has gamma."


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ("qa", [("alpha", PARA_ONE), ("beta", PARA_ONE), ("gamma", PARA_TWO)]),
        ("retrieval", [("", PARA_ONE), ("", PARA_TWO)]),
    ],
)
def test_deepset_writes_each_label_once_per_item(layout, expected):
    text = "Para one has alpha and beta.\n\nPara two has gamma."
    spans = [(text.index(w), text.index(w) + len(w)) for w in ("alpha", "beta", "alpha", "gamma")]
    item = EvalItem(
        "d",
        "Which?",
        anchors=tuple(GoldAnchor("d.txt", w) for w in ("alpha", "beta", "alpha", "gamma")),
    )
    out = io.BytesIO()
    notes = getattr(deepset, f"write_{layout}")(
        EvalSetHeader("s"), [item], out, documents={"d.txt": text}, positions=lambda _: spans
    )

    rows = _dict_rows(out.getvalue())
    assert [(r["text"], r["context"]) for r in rows] == expected
    assert notes.rows == len(expected)


def test_deepset_qa_notes_count_every_caveat_of_the_golden_set():
    _, notes = _export_guide("deepset-qa")

    assert notes.counts == {
        "unanswerable": 1,  # g4
        "grade_zero": 1,  # g5's Hours
        "grade_one": 1,  # g2
        "quote_not_in_parse": 1,  # g6
        "text_is_answer": 2,  # g1, g5
        "text_is_evidence": 3,  # g2, g3, g6
        "formula_like": 2,  # g4, g6
    }
    assert (notes.format, notes.items, notes.rows) == ("deepset-qa", 6, 6)


@pytest.mark.parametrize("slug", ["deepset-qa", "deepset-retrieval", "deepset-rag", "beir"])
def test_a_large_export_spills_to_disk_and_stays_exact(slug):
    question = "Q" + "é" * (1 << 20)  # over the 1 MiB kept in memory before spilling
    item = EvalItem("big", question, anchors=(GoldAnchor("memo.txt", "parking is free"),))
    evalset = EvalSet(id="s", items=(item, *GUIDE_SET.items))
    data, notes = _export(slug, evalset, documents=GUIDE_DOCUMENTS)

    if slug == "beir":
        queries = _members(data)["queries.jsonl"].decode("utf-8").splitlines()
        assert json.loads(queries[0])["text"] == question
    else:
        assert _dict_rows(data)[0]["question"] == question
    assert notes.items == 7


def test_deepset_rag_notes_name_what_the_layout_leaves_out():
    gold_only = EvalItem("s", "Spans only?", gold=(GoldSpan(Span("guide.txt", 0, 8)),))
    _, notes = _export_guide("deepset-rag", GUIDE_SET.with_items((*GUIDE_SET.items, gold_only)))

    assert notes.counts == {
        "evidence_not_written": 6,
        "unanswerable": 1,
        "filters_not_written": 1,
        "formula_like": 2,
        "question_ids_not_written": 7,
    }
    assert notes.notes[:2] == [
        "The RAG layout carries questions only: evidence of 6 items was not written: g1, g2, "
        "g3 and 3 more.",
        "1 item has no evidence; deepset cannot mark a question unanswerable, so they were "
        "written as question-only rows: g4.",
    ]


def _qa(item: EvalItem, positions, documents=None):
    out = io.BytesIO()
    notes = deepset.write_qa(
        EvalSetHeader("s"),
        [item],
        out,
        documents={"d.txt": "Alpha beta.\n\nGamma delta"} if documents is None else documents,
        positions=positions,
    )
    return _dict_rows(out.getvalue()), notes


def test_deepset_grades_are_noted_whatever_order_the_anchors_come_in():
    anchors = (
        GoldAnchor("d.txt", "Alpha", grade=0),
        GoldAnchor("d.txt", "beta", grade=1),
        GoldAnchor("d.txt", "Gamma", grade=2),
    )
    rows, notes = _qa(EvalItem("g", "Q?", anchors=anchors), lambda _: [(0, 5), (6, 10), (13, 18)])

    assert [r["text"] for r in rows] == ["beta", "Gamma"]
    assert notes.counts["grade_zero"] == 1 and notes.counts["grade_one"] == 1


@pytest.mark.parametrize(
    ("positions", "placed"),
    [
        ([], False),  # the writer was given fewer positions than anchors
        ([(3, 3)], False),  # an empty span places nothing
        ([(13, 24)], True),  # a span may end at the very end of the text
        ([(13, 25)], False),  # but not past it
    ],
)
def test_deepset_uses_a_position_only_when_it_fits_the_text(positions, placed):
    rows, notes = _qa(
        EvalItem("p", "Q?", anchors=(GoldAnchor("d.txt", "Gamma delta"),)), lambda _: positions
    )

    assert ("quote_not_in_parse" not in notes.counts) is placed
    assert rows[0]["context"] == "Gamma delta" and rows[0]["text"] == "Gamma delta"
    assert rows[0]["answer_start"] == "0"


def test_deepset_writes_gold_spans_of_items_without_anchors_and_notes_them():
    gold = (
        GoldSpan(Span("d.txt", 0, 5), grade=0),
        GoldSpan(Span("d.txt", 11, 13)),  # only the blank line: nothing to write
        GoldSpan(Span("d.txt", 13, 18), grade=1),
        GoldSpan(Span("d.txt", 20, 99)),  # past the end of this parse
        GoldSpan(Span("other.txt", 0, 3)),  # no text for that document
        GoldSpan(Span("d.txt", 19, 24)),  # up to the very end of the text
    )
    rows, notes = _qa(EvalItem("s", "Q?", gold=gold), lambda _: [])

    assert [(r["text"], r["context"], r["file_name"]) for r in rows] == [
        ("Gamma", "Gamma delta", "d.txt"),
        ("delta", "Gamma delta", "d.txt"),
    ]
    assert notes.counts["gold_as_evidence"] == 1
    assert notes.counts["grade_zero"] == 1 and notes.counts["grade_one"] == 1
    assert notes.counts["no_document_text"] == 1


def test_only_the_question_answering_layout_carries_question_ids():
    qa, _ = _export_guide("deepset-qa")
    retrieval, notes = _export_guide("deepset-retrieval")

    assert [r["question_id"] for r in _dict_rows(qa)] == ["g1", "g2", "g3", "g4", "g5", "g6"]
    assert "question_id" not in _dict_rows(retrieval)[0]
    assert notes.counts["question_ids_not_written"] == 6


def test_deepset_without_stored_positions_resolves_the_quote_with_the_resolver():
    data, notes = _export("deepset-qa", _set())

    rows = _dict_rows(data)
    assert rows[0]["text"] == "1.5 days"  # the answer, inside the evidence
    assert "Remote work" in rows[1]["context"] and rows[1]["text"] == "on Fridays"
    assert rows[2]["text"] == "每天工作八小时"  # no answer: the evidence itself
    assert rows[4]["context"] == "" and rows[4]["question_id"] == "q5"
    assert notes.counts["unanswerable"] == 1


def test_deepset_qa_round_trip_brings_the_answer_back_from_text():
    """deepset's page: "text: the answer to the question". g1's answer lies inside its
    evidence, so `text` carries it out and a reader must carry it back in."""
    data, _ = _export_guide("deepset-qa")

    result = _import("deepset-qa", data, "guide.csv", documents=GUIDE_DOCUMENTS)

    g1 = next(i for i in result.items if i.id == "g1")
    assert g1.answer == "6pm"
    assert g1.anchors[0].source_id == "guide.txt"


def test_deepset_qa_context_is_the_quote_alone_when_the_document_is_missing():
    data, notes = _export("deepset-qa", _set(), documents={"handbook.txt": HANDBOOK})

    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))

    assert rows[2]["context"] == "每天工作八小时" == rows[2]["text"]
    assert notes.counts["no_document_text"] == 2


def test_deepset_qa_round_trip_recovers_questions_anchors_and_filters():
    evalset = _set()
    data, _ = _export("deepset-qa", evalset)

    result = _import("deepset-qa", data, "labels.csv", documents=DOCUMENTS)

    assert result.ok and result.pending == []
    by_id = {item.id: item for item in result.items}
    assert [i.id for i in result.items] == ["q1", "q2", "q3", "q4", "q5"]
    assert by_id["q1"].anchors == (GoldAnchor("handbook.txt", "1.5 days"),)
    assert by_id["q1"].meta["filters"] == {"department": "HR"}
    assert by_id["q2"].question == evalset.items[1].question
    assert by_id["q3"].anchors == (GoldAnchor("policy.txt", "每天工作八小时"),)
    assert by_id["q4"].anchors == (GoldAnchor("policy.txt", "אין עישון 🚭 בשטח"),)
    assert by_id["q5"].anchors == () and by_id["q5"].answer is None
    assert "contexts" not in by_id["q1"].meta  # the context places the label; meta is not it


def test_deepset_retrieval_round_trip_quotes_the_whole_context():
    data, _ = _export("deepset-retrieval", _set())

    result = _import("deepset-retrieval", data, "retrieval.csv", documents=DOCUMENTS)

    quote = result.items[0].anchors[0].quote
    assert quote.startswith("Employees accrue") and quote in HANDBOOK
    assert result.items[0].answer is None


def test_deepset_import_lists_labels_for_unknown_files_as_pending():
    text = (
        "question,text,context,file_name,answer_start,answer_end,filters\n"
        "Q known?,1.5 days,accrue 1.5 days of,handbook.txt,7,15,\n"
        "Q unknown?,blue,The sky is blue.,sky.pdf,11,15,\n"
    )

    result = _import("deepset-qa", text.encode(), "dc.csv", documents=DOCUMENTS)

    assert result.ok
    assert [p.file_name for p in result.pending] == ["sky.pdf"]
    pending = result.pending[0]
    assert pending.line == 3 and pending.item == deepset.question_id("Q unknown?")
    assert pending.attach() == GoldAnchor("sky.pdf", "blue")
    assert pending.would_create == "anchor on 'sky.pdf' quoting 'blue'"
    unknown = next(i for i in result.items if i.question == "Q unknown?")
    assert unknown.anchors == () and pending.context == "The sky is blue."
    placed = pending.attach("Clouds. The sky is blue. The sky is blue.")
    assert placed == GoldAnchor("sky.pdf", "blue")


def test_deepset_import_without_ids_is_stable_and_groups_rows_by_question():
    rows = [
        "Where?,6pm,The office closes at 6pm.,handbook.txt,,,",
        "Where?,Fridays,on Fridays too,handbook.txt,,,",
        "Other?,,,,,,",
    ]
    head = "question,text,context,file_name,answer_start,answer_end,filters\n"
    forward = (head + "\n".join(rows)).encode()
    backward = (head + "\n".join(reversed(rows))).encode()

    one = _import("deepset-qa", forward, "a.csv")
    two = _import("deepset-qa", forward, "a.csv")
    shuffled = _import("deepset-qa", backward, "a.csv")

    assert one.items == two.items
    assert sorted(i.id for i in one.items) == sorted(i.id for i in shuffled.items)
    where = next(i for i in one.items if i.question == "Where?")
    assert where.id == deepset.question_id("Where?") and len(where.anchors) == 2


def test_deepset_import_works_out_occurrence_from_where_the_context_sits():
    second = HANDBOOK.index("The office closes at 6pm on Fridays")
    context = HANDBOOK[second : second + 40]
    text = (
        "question,text,context,file_name,answer_start,answer_end\n"
        f'When?,6pm,"{context}",handbook.txt,21,24\n'
    )

    result = _import("deepset-qa", text.encode(), "occ.csv", documents=DOCUMENTS)

    assert result.items[0].anchors == (GoldAnchor("handbook.txt", "6pm", occurrence=1),)


def test_deepset_import_reads_an_inclusive_answer_end_with_a_warning():
    text = "question,text,context,file_name,answer_start,answer_end\nQ?,blue,sky is blue.,s,7,10\n"

    result = _import("deepset-qa", text.encode(), "incl.csv")

    assert result.ok and result.items[0].anchors[0].quote == "blue"
    assert [p.severity for p in result.problems] == ["warning"]
    assert result.problems[0].field == "answer_end"


# ---------------------------------------------------------------------------
# BEIR
# ---------------------------------------------------------------------------


def _members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_beir_export_is_the_hand_written_files_from_beirs_loader():
    data, notes = _export_guide("beir")

    members = _members(data)
    assert list(members) == ["queries.jsonl", "qrels/test.tsv", "corpus.jsonl"]
    _golden("beir/queries.jsonl", members["queries.jsonl"])
    _golden("beir/qrels/test.tsv", members["qrels/test.tsv"])
    corpus = [json.loads(line) for line in members["corpus.jsonl"].decode().splitlines()]
    assert corpus == [
        {"_id": "guide.txt", "title": "", "text": GUIDE},
        {"_id": "memo.txt", "title": "", "text": MEMO},
    ]
    assert notes.counts == {"unanswerable": 1, "grade_zero": 1, "span_precision_lost": 5}


def test_beir_export_loads_with_beirs_own_loader_exactly(tmp_path):
    data, _ = _export_guide("beir")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)

    corpus, queries, qrels = _beir_generic_loader(tmp_path)

    assert corpus == {
        "guide.txt": {"text": GUIDE, "title": ""},
        "memo.txt": {"text": MEMO, "title": ""},
    }
    assert queries == {i.id: i.question for i in GUIDE_SET.items if i.id != "g4"}
    assert qrels == {
        "g1": {"guide.txt": 2},
        "g2": {"guide.txt": 1},
        "g3": {"guide.txt": 2},
        "g5": {"memo.txt": 2},  # its grade-0 judgement is left out
        "g6": {"memo.txt": 2},
    }


ODD_IDS = ['say "hi"', '"quoted" at the start', "tab\there", "new\nline", "plain ünïcødé"]


@pytest.mark.parametrize("odd", ODD_IDS)
def test_beir_ids_with_quotes_tabs_and_newlines_read_back_identically(tmp_path, odd):
    item = EvalItem(odd, "Q?", anchors=(GoldAnchor(f"doc {odd}", "x"),))
    data, _ = _export("beir", EvalSet(id="s", items=(item,)), documents={})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)

    _, queries, qrels = _beir_generic_loader(tmp_path)
    theirs = read_beir(tmp_path / "queries.jsonl", tmp_path / "qrels" / "test.tsv")

    assert qrels == {odd: {f"doc {odd}": 2}} and queries == {odd: "Q?"}
    assert [(i.id, i.meta["gold_documents"]) for i in theirs.items] == [(odd, [(f"doc {odd}", 2)])]


@pytest.mark.parametrize(
    ("item_id", "source_id", "message"),
    [
        (
            "cr\rid",
            "a.txt",
            "the eval item id 'cr\\rid' contains a carriage return, which BEIR's loader reads "
            "as a line feed, so a BEIR export would point at another id; rename the eval item "
            "id or choose another format",
        ),
        (
            "ok",
            "nul\x00.txt",
            "the document id 'nul\\x00.txt' contains a NUL character, which BEIR's loader "
            "(Python's csv) refuses, so a BEIR export would point at another id; rename the "
            "document id or choose another format",
        ),
    ],
)
def test_beir_refuses_ids_its_loader_would_read_as_another_id(item_id, source_id, message):
    item = EvalItem(item_id, "Q?", anchors=(GoldAnchor(source_id, "x"),))

    with pytest.raises(ExportRefused) as refused:
        _export("beir", EvalSet(id="s", items=(item,)), documents={})
    assert str(refused.value) == message


def test_beir_export_loads_with_contextgrid_read_beir(tmp_path):
    evalset = _set().with_items(_set().items + _multi_set().items)
    data, _ = _export("beir", evalset)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)

    loaded = read_beir(tmp_path / "queries.jsonl", tmp_path / "qrels" / "test.tsv")

    assert [i.id for i in loaded.items] == ["q1", "q2", "q3", "q4", "m1", "m2", "m3"]
    by_id = {i.id: i for i in loaded.items}
    assert by_id["q2"].meta["gold_documents"] == [("handbook.txt", 1)]
    assert by_id["m3"].meta["gold_documents"] == [("handbook.txt", 1)]
    assert by_id["q3"].question == "每天工作几个小时？"
    corpus = [json.loads(x) for x in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert corpus == [
        {"_id": "handbook.txt", "title": "", "text": HANDBOOK},
        {"_id": "policy.txt", "title": "", "text": POLICY},
    ]


def test_beir_zip_is_byte_deterministic_and_streams_to_an_unseekable_output():
    class WriteOnly(io.RawIOBase):
        def __init__(self) -> None:
            self.chunks: list[bytes] = []

        def writable(self) -> bool:
            return True

        def write(self, b) -> int:  # type: ignore[override]
            self.chunks.append(bytes(b))
            return len(b)

    sink = WriteOnly()
    beir.write(_set(), _set().items, sink, documents=DOCUMENTS)  # type: ignore[arg-type]
    data, _ = _export("beir", _set())

    assert _members(b"".join(sink.chunks)) == _members(data)
    assert _export("beir", _set())[0] == data


def test_beir_round_trip_equals_what_read_beir_reads(tmp_path):
    data, _ = _export("beir", _set())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path)

    result = _import("beir", data, "set.zip", documents=DOCUMENTS)

    theirs = read_beir(tmp_path / "queries.jsonl", tmp_path / "qrels" / "test.tsv")
    assert result.items == list(theirs.items)
    assert result.to_evalset("beir") == theirs
    assert _messages(result) == [
        "1 of 5 queries have no positive judgement in qrels/test.tsv and were not imported "
        "(BEIR keeps every split's queries in one file)."
    ]
    again, _ = _export("beir", result.to_evalset())
    assert _members(again)["qrels/test.tsv"] == _members(data)["qrels/test.tsv"]


def test_beir_import_reads_a_zip_wrapped_in_one_folder_and_reports_bad_qrels():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("scifact/queries.jsonl", '{"_id": "1", "text": "Q one"}\n')
        archive.writestr(
            "scifact/qrels/test.tsv",
            "query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\tx\n9\td1\t1\n1\td3\n",
        )

    result = _import("beir", out.getvalue(), "scifact.zip", documents={"d1": "text"})

    assert result.items == [EvalItem("1", "Q one", meta={"gold_documents": [("d1", 1)]})]
    assert [(p.line, p.severity, p.message) for p in result.problems] == [
        (3, "error", "scifact/qrels/test.tsv line 3: score must be a whole number, found 'x'."),
        (
            5,
            "error",
            "scifact/qrels/test.tsv line 5 has 2 tab-separated cell(s); expected query-id, "
            "corpus-id and score.",
        ),
        (
            4,
            "warning",
            "1 judgement(s) in scifact/qrels/test.tsv name a query that queries.jsonl does not "
            "have (the first, line 4, judges '9'); they were not imported.",
        ),
    ]


# ---------------------------------------------------------------------------
# LegalBench-RAG
# ---------------------------------------------------------------------------


def _legalbench(tests) -> bytes:
    return json.dumps({"tests": tests}, ensure_ascii=False).encode()


def test_legalbench_spans_become_quotes_that_resolve_to_the_same_place():
    second = HANDBOOK.index("The office closes at 6pm on Fridays")
    data = _legalbench(
        [
            {
                "query": "When does it close?",
                "snippets": [{"file_path": "handbook.txt", "span": [second - 1, second + 25]}],
            },
            {
                "id": 7,
                "query": "政策？",
                "snippets": [{"file_path": "policy.txt", "span": [3, 10]}],
            },
        ]
    )

    result = _import("legalbench-rag", data, "lb.json", documents=DOCUMENTS)

    assert result.ok and result.pending == []
    first, other = result.items
    assert first.id == "lb0" and other.id == "7"
    assert first.anchors == (GoldAnchor("handbook.txt", "The office closes at 6pm", occurrence=1),)
    assert first.meta == {"legalbench_spans": [["handbook.txt", second - 1, second + 25]]}
    assert other.anchors == (GoldAnchor("policy.txt", "每天工作八小时"),)


def test_legalbench_spans_on_missing_files_are_pending_and_attach_when_the_file_arrives():
    data = json.dumps(
        [{"query": "Q?", "snippets": [{"file_path": "late.txt", "span": [4, 9]}]}]
    ).encode()

    result = _import("legalbench-rag", data, "lb.json", documents=DOCUMENTS)

    assert result.ok and result.items[0].anchors == ()
    pending = result.pending[0]
    assert (pending.item, pending.file_name, pending.span) == ("lb0", "late.txt", (4, 9))
    assert pending.attach("abc abcde abcde") == GoldAnchor("late.txt", "abcde", occurrence=0)


def test_legalbench_without_documents_keeps_every_span_pending():
    data = _legalbench(
        [{"query": "Q?", "snippets": [{"file_path": "handbook.txt", "span": [0, 5]}]}]
    )

    result = _import("legalbench-rag", data, "lb.json")

    assert [p.span for p in result.pending] == [(0, 5)]


# ---------------------------------------------------------------------------
# importing the same file twice
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slug", sorted(s for s, f in FORMATS.items() if f.writer is not None and f.reader is not None)
)
def test_importing_the_same_export_twice_gives_the_same_items(slug):
    data, _ = _export(slug, _set())
    name = f"set{FORMATS[slug].extension}"

    one = _import(slug, data, name, documents=DOCUMENTS)
    two = _import(slug, data, name, documents=DOCUMENTS)

    assert one.items == two.items and one.items
    assert one.problems == two.problems


# ---------------------------------------------------------------------------
# malformed input: every shape, the exact message
# ---------------------------------------------------------------------------

JSONL_HEAD = '{"_evalset": {"id": "hr", "version": 1, "source": "manual", "meta": {}}}\n'


def _jsonl(*records) -> bytes:
    return (JSONL_HEAD + "".join(json.dumps(r) + "\n" for r in records)).encode()


MALFORMED = [
    pytest.param(
        "contextgrid-csv",
        "q.csv",
        b"id,question\nq1,caf\xe9\n",
        [(2, None, None, "q.csv is not UTF-8 text: invalid continuation byte at byte 18.")],
        id="csv-not-utf8",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        b"",
        [
            (
                None,
                None,
                None,
                "q.jsonl is empty. Expected a JSONL eval set (one JSON object per line, as "
                "context-grid writes it).",
            )
        ],
        id="jsonl-empty",
    ),
    pytest.param(
        "contextgrid-csv",
        "questions.pdf",
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
        [
            (
                None,
                None,
                None,
                "questions.pdf is a PDF, not a CSV file with a header row and one question "
                "per row.",
            )
        ],
        id="csv-given-a-pdf",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        b'[{"id": "q1", "question": "Q?"},\n {"id": "q2", "question": "R?"}]\n',
        [
            (
                1,
                None,
                None,
                "q.jsonl is a JSON array, and a JSONL eval set has one JSON object per line, "
                "not one array.",
            )
        ],
        id="jsonl-given-a-json-array",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        _jsonl({"id": "q1", "question": "Q?"})[:-1] + b'\n{"id": "q2", "question": \n',
        [(3, None, None, "line 3 is not valid JSON: Expecting value (column 26).")],
        id="jsonl-invalid-json-on-line-3",
    ),
    pytest.param(
        "contextgrid-csv",
        "q.csv",
        b"id;question;quote\nq1;Q?;x\n",
        [
            (
                1,
                None,
                "question",
                "q.csv has no question column. Expected one of: question, query, q. Found: "
                "id;question;quote",
            )
        ],
        id="csv-missing-question-column",
    ),
    pytest.param(
        "deepset-qa",
        "d.csv",
        b"query,answer\nQ?,A\n",
        [
            (
                1,
                None,
                "question",
                "d.csv has no `question` column, which every deepset evaluation dataset "
                "needs. Found: query, answer.",
            )
        ],
        id="deepset-missing-question-column",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        _jsonl({"id": "q1", "question": "   "}),
        [(2, "q1", "question", "eval item 'q1' has an empty question")],
        id="jsonl-blank-question",
    ),
    pytest.param(
        "contextgrid-csv",
        "q.csv",
        b"id,question,source_id,quote\nq7,  ,a.txt,x\n",
        [(2, "q7", "question", "eval item 'q7' has an empty question")],
        id="csv-blank-question",
    ),
    pytest.param(
        "deepset-qa",
        "d.csv",
        b"question,text,context,file_name,question_id\n ,a,b,c,d9\n",
        [(2, "d9", "question", "eval item 'd9' has an empty question")],
        id="deepset-blank-question",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        _jsonl({"id": "q1", "question": "Q?", "anchors": [{"source_id": "a", "quote": " "}]}),
        [(2, "q1", "anchors[0].quote", "a gold anchor must quote some text")],
        id="jsonl-blank-quote",
    ),
    pytest.param(
        "contextgrid-csv",
        "q.csv",
        b"id,question,source_id,quote\nq1,Q?,a.txt,  \n",
        [(2, "q1", "quote", "a gold anchor must quote some text")],
        id="csv-blank-quote",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        _jsonl(
            {
                "id": "q1",
                "question": "Q?",
                "anchors": [{"source_id": "a", "quote": "x", "grade": -1}],
            }
        ),
        [(2, "q1", "anchors[0]", "gold grade must be >= 0, got -1")],
        id="jsonl-negative-grade",
    ),
    pytest.param(
        "contextgrid-csv",
        "q.csv",
        b"id,question,source_id,quote,occurrence\nq1,Q?,a.txt,x,-2\n",
        [(2, "q1", "occurrence", "occurrence must be >= 0, got -2")],
        id="csv-negative-occurrence",
    ),
    pytest.param(
        "contextgrid-jsonl",
        "q.jsonl",
        _jsonl({"id": "q1", "question": "Q?"}, {"id": "q1", "question": "R?"}),
        [(3, "q1", "id", "duplicate eval item id 'q1' in eval set 'hr'")],
        id="jsonl-duplicate-id",
    ),
    pytest.param(
        "contextgrid-csv",
        "hr.csv",
        b"id,question\nq1,Q?\nq1,R?\n",
        [(3, "q1", "id", "duplicate eval item id 'q1' in eval set 'hr'")],
        id="csv-duplicate-id",
    ),
    pytest.param(
        "deepset-qa",
        "d.csv",
        b"question,text,context,file_name,answer_start,answer_end,question_id\n"
        b"Q?,sky,blue sky,f.txt,5,eight,d1\n",
        [
            (
                2,
                "d1",
                "answer_end",
                "`answer_end` must be a whole number of characters, found 'eight'.",
            )
        ],
        id="deepset-non-integer-offset",
    ),
    pytest.param(
        "deepset-qa",
        "d.csv",
        b"question,text,context,file_name,answer_start,answer_end,question_id\n"
        b"Q?,sky,blue sky,f.txt,5,80,d1\n",
        [
            (
                2,
                "d1",
                "answer_start",
                "answer offsets [5, 80) fall outside the context, which has 8 characters.",
            )
        ],
        id="deepset-offsets-out-of-range",
    ),
    pytest.param(
        "legalbench-rag",
        "lb.json",
        _legalbench(
            [{"query": "Q?", "snippets": [{"file_path": "handbook.txt", "span": [1, "x"]}]}]
        ),
        [
            (
                None,
                "lb0",
                "tests[0].snippets[0].span",
                "`span` offsets must be whole numbers counted from 0, found 'x'.",
            )
        ],
        id="legalbench-non-integer-offset",
    ),
    pytest.param(
        "legalbench-rag",
        "lb.json",
        _legalbench(
            [{"query": "Q?", "snippets": [{"file_path": "handbook.txt", "span": [10, 99999]}]}]
        ),
        [
            (
                None,
                "lb0",
                "tests[0].snippets[0].span",
                f"span [10, 99999) does not fit 'handbook.txt', which has {len(HANDBOOK)} "
                "characters: a span needs 0 <= start < end <= the document's length",
            )
        ],
        id="legalbench-span-out-of-range",
    ),
    pytest.param(
        "legalbench-rag",
        "lb.json",
        b'{"tests": [{"query": "Q?"},]}',
        [(1, None, None, "lb.json is not valid JSON: Expecting value at line 1, column 28.")],
        id="legalbench-invalid-json",
    ),
    pytest.param(
        "beir",
        "b.zip",
        b'{"_id": "1", "text": "Q"}\n',
        [
            (
                None,
                None,
                None,
                "b.zip is JSON, not a BEIR zip holding queries.jsonl and qrels/test.tsv.",
            )
        ],
        id="beir-given-jsonl",
    ),
]


@pytest.mark.parametrize(("slug", "filename", "data", "expected"), MALFORMED)
def test_malformed_input_is_reported_with_its_exact_message(slug, filename, data, expected):
    result = _import(slug, data, filename, documents=DOCUMENTS)

    assert [(p.line, p.item, p.field, p.message) for p in result.errors] == expected
    assert not result.ok


def test_a_problem_describes_itself_with_file_line_item_and_what_to_do():
    result = _import("contextgrid-csv", b"id,question\nq7,\n", "hr.csv")

    assert result.describe() == [
        "error: hr.csv:2 (item 'q7', `question`): eval item 'q7' has an empty question. "
        "Write the question in this row, or delete the row."
    ]


def test_a_csv_with_embedded_newlines_commas_and_quotes_imports_cleanly():
    text = (
        "id,question,source_id,quote,grade,answer\n"
        'q1,"Is it ""fine"", then?\nReally?",a.txt,"line one,\nline ""two""",1,"yes, ""fine"""\n'
    )

    result = _import("contextgrid-csv", text.encode("utf-8-sig"), "e.csv")

    assert result.problems == []
    item = result.items[0]
    assert item.question == 'Is it "fine", then?\nReally?'
    assert item.anchors == (GoldAnchor("a.txt", 'line one,\nline "two"', grade=1),)
    assert item.answer == 'yes, "fine"'


@pytest.mark.parametrize("slug", sorted(s for s, f in FORMATS.items() if f.reader is not None))
@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x01\xff\xfe garbage",
        b"%PDF-1.4 x",
        b"[1, 2, 3]",
        b'not,a\n"broken',
        b"PK\x03\x04",
    ],
    ids=["empty", "binary", "pdf", "array", "broken-csv", "broken-zip"],
)
def test_every_reader_reports_garbage_instead_of_raising(slug, data):
    result = _import(slug, data, "junk.bin", documents=DOCUMENTS)

    assert isinstance(result, ImportResult)
    assert result.errors or not result.items


# ---------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------


def test_the_registry_names_every_format_with_a_label_extension_and_media_type():
    assert list(FORMATS) == [
        "contextgrid-jsonl",
        "contextgrid-csv",
        "contextgrid-csv-spreadsheet",
        "deepset-qa",
        "deepset-retrieval",
        "deepset-rag",
        "beir",
        "legalbench-rag",
    ]
    assert all(f.label and f.extension.startswith(".") and f.media_type for f in FORMATS.values())
    assert FORMATS["legalbench-rag"].writer is None
    assert FORMATS["contextgrid-csv-spreadsheet"].reader is None
    assert "NOT for evaluation" in FORMATS["contextgrid-csv-spreadsheet"].label
    assert [s for s, f in FORMATS.items() if not f.for_evaluation] == [
        "contextgrid-csv-spreadsheet"
    ]
    with pytest.raises(KeyError, match="known: contextgrid-jsonl"):
        get_format("xlsx")


def test_guess_format_recognises_each_layout_from_its_bytes():
    assert guess_format(_export("beir", _set())[0], "x.zip") == "beir"
    assert guess_format(_export("contextgrid-jsonl", _set())[0], "x.jsonl") == "contextgrid-jsonl"
    assert guess_format(_export("contextgrid-csv", _set())[0], "x.csv") == "contextgrid-csv"
    assert guess_format(_export("deepset-qa", _set())[0], "x.csv") == "deepset-qa"
    assert guess_format(_legalbench([]), "x.json") == "legalbench-rag"


def test_contextgrid_warns_about_the_same_csv_losses_our_notes_name(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_csv(_multi_set(), tmp_path / "m.csv")
    _, notes = _export("contextgrid-csv", _multi_set())

    assert len(caught) == 2
    assert set(notes.counts) >= {"extra_anchors", "gold_not_written"}
    assert (
        tuple(next(csv.reader(io.StringIO((tmp_path / "m.csv").read_text()))))
        == contextgrid_csv.COLUMNS
    )
    assert legalbench.SLUG in FORMATS


def test_deepset_gold_spans_graded_2_are_not_noted_as_partial():
    rows, notes = _qa(EvalItem("s", "Q?", gold=(GoldSpan(Span("d.txt", 13, 18)),)), lambda _: [])

    assert rows[0]["text"] == "Gamma" and "grade_one" not in notes.counts


@pytest.mark.parametrize("write", [deepset.write_retrieval, deepset.write_rag])
def test_deepset_layouts_without_ids_name_items_that_ask_an_earlier_question(write):
    items = [EvalItem("a", "Same?"), EvalItem("b", "Other?"), EvalItem("c", " Same? ")]
    notes = write(EvalSetHeader("s"), items, io.BytesIO(), documents={})

    assert notes.counts["questions_asked_twice"] == 1
    [said] = [note for note in notes.notes if "question of an earlier item" in note]
    assert said.endswith(": c.")
