"""The eval-set rules, exactly as context-grid states them, one test per rule."""

from __future__ import annotations

import contextgrid as cg
import pytest
from django.db import IntegrityError, transaction

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.errors import Conflict, InvalidInput
from evalsets.models import AnchorResolution, GoldAnchor
from evalsets.releases import bridge

pytestmark = pytest.mark.django_db


def _cg_message(build) -> str:
    with pytest.raises(cg.EvalSetError) as caught:
        build()
    return str(caught.value)


def test_a_blank_question_is_refused_with_context_grids_message(evalset, annotator):
    with pytest.raises(InvalidInput) as caught:
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id="q7", question="   "
        )
    assert caught.value.message == "eval item 'q7' has an empty question"
    assert caught.value.message == _cg_message(lambda: cg.EvalItem(id="q7", question="   "))


def test_a_blank_quote_is_refused_with_context_grids_message(item, annotator, document):
    with pytest.raises(InvalidInput) as caught:
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=" \n"
        )
    assert caught.value.message == "a gold anchor must quote some text"
    assert caught.value.message == _cg_message(lambda: cg.GoldAnchor(source_id="h", quote=" "))


def test_a_negative_grade_is_refused(item, annotator, document):
    with pytest.raises(InvalidInput) as caught:
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="leave", grade=-1
        )
    assert caught.value.message == _cg_message(
        lambda: cg.GoldAnchor(source_id="h", quote="q", grade=-1)
    )


def test_a_grade_above_two_is_refused_with_the_scale_explained(item, annotator, document):
    with pytest.raises(InvalidInput, match=r"0, 1 or 2 .* got 3"):
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="leave", grade=3
        )


def test_a_negative_occurrence_is_refused(item, annotator, document):
    with pytest.raises(InvalidInput) as caught:
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="leave", occurrence=-1
        )
    assert caught.value.message == _cg_message(
        lambda: cg.GoldAnchor(source_id="h", quote="q", occurrence=-1)
    )


def test_a_duplicate_item_id_is_refused_with_context_grids_message(item, evalset, annotator):
    with pytest.raises(Conflict) as caught:
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id="q1", question="Again?"
        )
    a = cg.EvalItem(id="q1", question="Q1?")
    b = cg.EvalItem(id="q1", question="Q2?")
    assert caught.value.message == "duplicate eval item id 'q1' in eval set 'quiz'"
    assert caught.value.message == _cg_message(lambda: cg.EvalSet(id="quiz", items=(a, b)))


def test_qtype_is_any_string_and_question_type_all_is_only_a_suggestion(evalset, annotator):
    item = anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q9", question="Why?", qtype="my-own-type"
    )
    assert item.qtype == "my-own-type"
    assert "my-own-type" not in cg.QuestionType.ALL
    assert cg.QuestionType.ALL == (
        "factoid",
        "multi_hop",
        "comparative",
        "numeric",
        "tabular",
        "summarisation",
        "unanswerable",
    )


def test_an_item_without_anchors_is_not_answerable_and_not_portable(item):
    converted = bridge.item_to_cg(item)
    assert not converted.is_answerable
    assert not converted.has_evidence
    assert not converted.is_resolved
    assert not converted.is_portable


def test_a_grade_zero_anchor_still_counts_as_answerable(item, annotator, document):
    anchoring_services.anchor_create_typed(
        item=item, user=annotator, source_id="handbook.txt", quote="Leave may be", grade=0
    )
    converted = bridge.item_to_cg(item)
    assert converted.is_answerable and converted.has_evidence and converted.is_portable
    assert not converted.is_resolved


def test_an_item_is_resolved_when_gold_spans_come_from_a_chosen_parse(
    item, annotator, reference, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        start = reference.text.index("Remote work")
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + 20
        )
    converted = bridge.item_to_cg(item, gold_parses={reference.document_id: reference})
    assert converted.is_resolved
    assert converted.gold[0].span.start == start
    assert converted.gold[0].span.end == start + 20


def test_a_set_is_portable_iff_every_answerable_item_has_anchors(evalset, item, annotator):
    converted = bridge.evalset_to_cg(evalset)
    assert converted.is_portable  # nothing answerable, so nothing can fail to be portable
    assert len(converted.answerable) == 0


def test_an_item_and_set_round_trip_through_real_context_grid_objects(
    evalset, item, annotator, document
):
    anchoring_services.anchor_create_typed(
        item=item,
        user=annotator,
        source_id="handbook.txt",
        quote="Employees accrue 1.5 days",
        grade=1,
        page_hint=1,
        occurrence=1,
    )
    item.refresh_from_db()
    anchoring_services.item_update(
        item=item, user=annotator, row_version=item.row_version, answer="1.5", meta={"k": [1]}
    )
    original = bridge.evalset_to_cg(evalset)
    restored = cg.EvalSet(
        id=original.id,
        items=tuple(cg.EvalItem.from_dict(i.to_dict()) for i in original.items),
        version=original.version,
        source=original.source,
        meta=original.meta,
    )
    assert restored == original


def test_the_database_refuses_a_grade_outside_zero_to_two(item, document):
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldAnchor.objects.create(item=item, source_id="handbook.txt", quote="x", grade=3)


def test_the_database_refuses_a_resolution_that_ends_before_it_starts(item, document, reference):
    anchor = GoldAnchor.objects.create(item=item, source_id="handbook.txt", quote="x")
    with pytest.raises(IntegrityError), transaction.atomic():
        AnchorResolution.objects.create(anchor=anchor, parse=reference, start=5, end=5)


def test_the_database_keeps_one_reference_parse_per_document(document, reference):
    other = documents_services.parse_version_add(
        document=document, parser="mine", text="Employee Handbook", make_reference=False
    )
    assert not other.is_reference
    other.is_reference = True
    with pytest.raises(IntegrityError), transaction.atomic():
        other.save()
