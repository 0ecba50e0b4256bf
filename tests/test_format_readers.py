"""Format readers, one rule at a time: the spellings real tools write, and what each must keep.

The files here are written by hand from each format's specification (deepset's dataset page,
context-grid's readers, LegalBench-RAG's layout) in the shapes pandas and Excel produce.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from contextgrid.core.errors import EvalSetError
from contextgrid.core.evalset import GoldAnchor

from evalsets.pure.formats import get_format
from evalsets.pure.formats.deepset import filters_pairs, question_id
from evalsets.pure.formats.locating import anchor_from_context, check_span_text
from evalsets.pure.formats.reading import whole_number

TEXT = "Intro.\nPay in 30 days.\n\nPay in 30 days. Late fees apply.\nÜber alles ✓\n"
DOCUMENTS = {"terms.txt": TEXT}
HEADER = "question,text,context,file_name,answer_start,answer_end,filters,question_id\n"


def _read(slug: str, text: str | bytes, name: str = "f.csv", documents=DOCUMENTS):
    data = text.encode() if isinstance(text, str) else text
    return get_format(slug).reader(data, filename=name, documents=documents)


@pytest.mark.parametrize("spelling", ["7", "7.0", "7.00", "0.7e1", " 7 ", "+7", 7, 7.0])
def test_a_whole_number_is_read_in_any_spelling(spelling):
    assert whole_number(spelling) == 7


@pytest.mark.parametrize("spelling", ["7.5", "7.0000000001", "seven", "", "1e999999", True, 7.5])
def test_a_number_that_is_not_whole_is_not_read(spelling):
    assert whole_number(spelling) is None


def test_a_whole_number_has_at_most_thirty_digits():
    assert whole_number("9" * 30) == int("9" * 30)
    assert whole_number("1e30") is None and whole_number("1" + "0" * 30) is None


@pytest.mark.parametrize(("start", "end"), [("24.0", "39.0"), ("2.4e1", "3.9e1"), (" 24 ", "39")])
def test_deepset_offsets_written_by_pandas_or_in_exponent_form_are_read(start, end):
    row = f'When?,Pay in 30 days.,"{TEXT[:40]}",terms.txt,{start},{end},,d1\n'

    result = _read("deepset-qa", HEADER + row)

    assert result.ok, result.describe()
    assert result.items[0].anchors == (GoldAnchor("terms.txt", "Pay in 30 days.", occurrence=1),)


def test_a_deepset_offset_with_a_fraction_is_refused_naming_its_line_and_column():
    rows = "Fine?,,,,,,,d0\n" + 'When?,Pay,"Pay in 30 days.",terms.txt,0,187.5,,d1\n'

    result = _read("deepset-qa", HEADER + rows, "labels.csv")

    (problem,) = result.errors
    assert (problem.line, problem.field) == (3, "answer_end")
    assert "found '187.5'" in problem.message
    assert problem.describe("labels.csv").startswith(
        "error: labels.csv:3 (item 'd1', `answer_end`)"
    )


def test_a_context_grid_csv_reads_an_occurrence_written_as_a_float():
    data = "id,question,source_id,quote,grade,page,occurrence\nq1,When?,terms.txt,Pay,2.0,1.0,1.0\n"

    result = _read("contextgrid-csv", data)

    assert result.items[0].anchors == (GoldAnchor("terms.txt", "Pay", 2, 1, 1),)


def test_repeated_filter_keys_are_kept_as_a_list_of_values():
    parsed = json.loads(
        '{"key1": "value1", "key1": "value2", "key2": "value3", "key3": ["a"], "key3": "b"}',
        object_pairs_hook=filters_pairs,
    )

    assert parsed == {"key1": ["value1", "value2"], "key2": "value3", "key3": ["a", "b"]}


def test_a_deepset_file_without_question_ids_does_not_take_pandas_index_column_for_them():
    data = ",question,text,context,file_name,answer_start,answer_end,filters\n0,When?,,,,,,\n"

    result = _read("deepset-rag", data)

    assert [item.id for item in result.items] == [question_id("When?")]
    assert result.absent == {"filters", "id"}  # ids made from the questions


def test_the_deepset_reader_takes_the_answer_from_text():
    row = 'When?,30 days,"Pay in 30 days.",terms.txt,7,14,,d1\n'

    result = _read("deepset-qa", HEADER + row)

    assert result.items[0].answer == "30 days"


def test_a_deepset_label_is_placed_through_its_context_on_a_repeated_quote():
    row = 'When?,Pay in 30 days.,"Pay in 30 days. Late fees",terms.txt,0,15,,d1\n'

    result = _read("deepset-qa", HEADER + row)

    assert result.items[0].anchors == (GoldAnchor("terms.txt", "Pay in 30 days.", occurrence=1),)
    assert not result.problems


def test_a_context_saved_with_crlf_is_still_found_and_places_the_quote():
    context = "Pay in 30 days.\r\n\r\nPay in 30 days. Late"
    anchor, note = anchor_from_context(TEXT, "terms.txt", context, 19, 34, grade=1)

    assert anchor == GoldAnchor("terms.txt", "Pay in 30 days.", grade=1, occurrence=1)
    assert note == ""


def test_a_quote_across_a_crlf_line_break_is_placed_on_the_copy_its_context_means():
    text = "Pay in\n30 days. Pay in\n30 days, or else.\n"
    context = "Pay in\r\n30 days, or else."

    anchor, note = anchor_from_context(text, "t.txt", context, 0, 15, grade=2)

    assert (anchor.quote, anchor.occurrence, note) == ("Pay in\n30 days", 1, "")


def test_a_verbatim_context_keeps_its_grade():
    anchor, _ = anchor_from_context(TEXT, "terms.txt", "Pay in 30 days. Late", 0, 15, grade=0)

    assert anchor == GoldAnchor("terms.txt", "Pay in 30 days.", grade=0, occurrence=1)


def test_a_context_not_in_the_file_falls_back_to_the_quote_and_says_so_when_repeated():
    anchor, note = anchor_from_context(TEXT, "terms.txt", "Please: Pay in 30 days.", 8, 23, grade=2)
    unique, quiet = anchor_from_context(TEXT, "terms.txt", "Say Über alles ✓ now", 4, 16, grade=1)

    assert (anchor.source_id, anchor.occurrence) == ("terms.txt", 0)
    assert (unique.quote, unique.grade) == ("Über alles ✓", 1)
    assert "appears there more than once; the first copy was used" in note and quiet == ""
    with pytest.raises(EvalSetError, match=r"is not in 'terms\.txt'"):
        anchor_from_context(TEXT, "terms.txt", "Nothing here", 0, 7, grade=2)
    long = "x" * 70
    with pytest.raises(EvalSetError) as refused:
        anchor_from_context(TEXT, "terms.txt", long, 0, 70, grade=2)
    assert str(refused.value).startswith(f"the quote {'x' * 60!r} is not in")


def test_a_repeated_context_is_placed_on_its_first_copy_and_says_so():
    text = "Pay now.\nPay now.\n"

    anchor, note = anchor_from_context(text, "t.txt", "Pay now.", 0, 3, grade=2)

    assert anchor.occurrence == 0 and "appears 2 times" in note


def test_a_span_that_does_not_hold_its_answer_says_where_the_answer_is():
    check_span_text(TEXT, "terms.txt", 7, 22, "Pay in 30 days.")  # it does: no error
    check_span_text(TEXT, "terms.txt", 7, 22, "")  # no answer given: nothing to check

    with pytest.raises(EvalSetError, match=r"the answer is at \[7, 22\) \(off by -1\)"):
        check_span_text(TEXT, "terms.txt", 8, 23, "Pay in 30 days.")
    with pytest.raises(EvalSetError, match=r"the answer is nowhere in 'terms\.txt'"):
        check_span_text(TEXT, "terms.txt", 8, 23, "Never")


def _bench(file_path: str, span, answer: str | None = None) -> bytes:
    snippet = {"file_path": file_path, "span": span}
    if answer is not None:
        snippet["answer"] = answer
    return json.dumps({"tests": [{"id": "t", "query": "When?", "snippets": [snippet]}]}).encode()


def test_a_legalbench_snippet_whose_span_reads_another_text_is_refused():
    result = _read("legalbench-rag", _bench("terms.txt", [8, 23], "Pay in 30 days."), "b.json")

    (problem,) = result.errors
    assert problem.item == "t" and problem.field == "tests[0].snippets[0].span"
    assert "off by -1" in problem.message and result.items[0].anchors == ()


def test_a_legalbench_path_matches_the_document_named_by_its_last_components():
    documents = {"terms.txt": TEXT, "b/other.txt": "x"}

    exact = _read("legalbench-rag", _bench("terms.txt", [7, 22]), "b.json", documents)
    suffix = _read("legalbench-rag", _bench("cuad/terms.txt", [7, 22]), "b.json", documents)
    longer = _read("legalbench-rag", _bench("other.txt", [0, 1]), "b.json", documents)
    missing = _read("legalbench-rag", _bench("cuad/nope.txt", [0, 1]), "b.json", documents)

    assert exact.matches == [{"file": "terms.txt", "source_id": "terms.txt", "how": "exact"}]
    assert suffix.matches == [{"file": "cuad/terms.txt", "source_id": "terms.txt", "how": "suffix"}]
    assert suffix.items[0].anchors == (GoldAnchor("terms.txt", "Pay in 30 days."),)
    assert longer.matches[0]["source_id"] == "b/other.txt"
    assert missing.matches == [] and missing.pending[0].file_name == "cuad/nope.txt"


def test_a_legalbench_file_without_answers_does_not_carry_the_answer():
    result = _read("legalbench-rag", _bench("terms.txt", [7, 22]), "b.json")

    assert "answer" in result.absent


def test_a_pending_legalbench_span_checks_its_answer_when_the_file_arrives():
    result = _read("legalbench-rag", _bench("late.txt", [8, 23], "Pay in 30 days."), "b.json")

    (label,) = result.pending
    with pytest.raises(EvalSetError, match="off by -1"):
        label.attach(TEXT)


def test_the_jsonl_reader_keeps_occurrence_and_page_hint():
    record = {
        "id": "q1",
        "question": "When?",
        "anchors": [
            {"source_id": "terms.txt", "quote": "Pay", "grade": 1, "page_hint": 2, "occurrence": 1}
        ],
    }

    result = _read("contextgrid-jsonl", json.dumps(record) + "\n", "s.jsonl")

    assert result.items[0].anchors == (GoldAnchor("terms.txt", "Pay", 1, 2, 1),)


def test_a_context_grid_csv_without_a_column_says_the_field_is_absent():
    result = _read("contextgrid-csv", "id,question,source_id,quote\nq1,When?,terms.txt,Pay\n")

    assert result.absent == {"qtype", "answer", "meta", "grade", "page", "occurrence"}


def test_a_question_without_an_id_gets_q_and_ten_hex_digits_of_its_sha256():
    # sha256("Wann? ✓".encode("utf-8")) starts d43b9e7c48; surrounding spaces do not count.
    assert question_id("  Wann? ✓ ") == "q-d43b9e7c48"


def test_a_legalbench_path_written_with_backslashes_matches_the_same_path():
    documents = {"corpus/terms.txt": TEXT}

    result = _read("legalbench-rag", _bench("corpus\\terms.txt", [7, 22]), "b.json", documents)

    assert result.matches == [
        {"file": "corpus\\terms.txt", "source_id": "corpus/terms.txt", "how": "suffix"}
    ]


def test_a_legalbench_path_with_no_name_in_it_matches_no_document():
    result = _read("legalbench-rag", _bench("./", [7, 22]), "b.json")

    assert result.matches == [] and result.ok and result.pending[0].file_name == "./"


def test_a_label_whose_offsets_take_in_a_space_quotes_the_words_from_the_right_copy():
    context = "Pay in 30 days. Late fees apply."  # the second copy in TEXT

    anchor, _ = anchor_from_context(TEXT, "terms.txt", context, 6, 14, grade=2)

    assert (anchor.quote, anchor.occurrence) == ("30 days", 1)


def test_a_label_whose_offsets_quote_only_spaces_is_refused_in_context_grid_s_words():
    with pytest.raises(EvalSetError, match=r"^a gold anchor must quote some text$"):
        anchor_from_context(TEXT, "terms.txt", "Pay in 30 days.", 3, 4, grade=2)


def test_a_repeated_filter_key_given_a_list_adds_its_values():
    parsed = json.loads('{"k": "a", "k": ["b", "c"]}', object_pairs_hook=filters_pairs)

    assert parsed == {"k": ["a", "b", "c"]}


def test_a_legalbench_path_with_doubled_slashes_or_dot_folders_matches_by_its_components():
    documents = {"corpus/terms.txt": TEXT}

    doubled = _read("legalbench-rag", _bench("corpus//terms.txt", [7, 22]), "b.json", documents)
    dotted = _read("legalbench-rag", _bench("corpus/./terms.txt", [7, 22]), "b.json", documents)

    assert [m["source_id"] for m in doubled.matches + dotted.matches] == ["corpus/terms.txt"] * 2


def test_the_answer_a_span_misses_is_looked_for_nearest_the_span():
    with pytest.raises(EvalSetError, match=r"the answer is at \[24, 39\) \(off by -1\)"):
        check_span_text(TEXT, "terms.txt", 25, 40, "Pay in 30 days.")


def test_a_span_that_misses_a_long_answer_quotes_sixty_characters_of_each():
    text = "a" * 80 + "b" * 80

    with pytest.raises(EvalSetError) as refused:
        check_span_text(text, "t.txt", 0, 80, "c" * 70)

    assert str(refused.value) == (
        f"span [0, 80) of 't.txt' reads {'a' * 60!r}, not the snippet's answer {'c' * 60!r}; "
        "the answer is nowhere in 't.txt'"
    )


def test_legalbench_without_documents_keeps_every_span_waiting():
    result = _read("legalbench-rag", _bench("cuad/terms.txt", [7, 22], "x"), "b.json", None)

    assert result.ok and result.matches == [] and result.pending[0].span == (7, 22)


# BEIR's loader reads qrels with csv.reader(delimiter="\t"), minimal quoting: a cell holding a
# quote, a tab or a line feed is written between double quotes with inner quotes doubled.
QRELS_QUOTED = (
    "query-id\tcorpus-id\tscore\n"
    '"say ""hi"""\tterms.txt\t2\n'
    '"tab\there"\tterms.txt\t1\n'
    '"new\nline"\tterms.txt\t2\n'
)
QUERIES_ODD = "".join(
    json.dumps({"_id": qid, "text": "Q?"}) + "\n" for qid in ('say "hi"', "tab\there", "new\nline")
)


def test_beir_qrels_ids_with_quotes_tabs_and_newlines_read_as_beirs_loader_reads_them():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("queries.jsonl", QUERIES_ODD)
        archive.writestr("qrels/test.tsv", QRELS_QUOTED)

    result = _read("beir", buffer.getvalue(), name="odd.zip")

    assert result.ok, result.describe()
    assert {item.id: item.meta["gold_documents"] for item in result.items} == {
        'say "hi"': [("terms.txt", 2)],
        "tab\there": [("terms.txt", 1)],
        "new\nline": [("terms.txt", 2)],
    }
