"""The confirmed tier: a person confirms the candidate the resolver offered, or selects the
span by hand; a re-run never overwrites it, and it counts as found everywhere."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile

from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.anchoring.portability import tally
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, Document, ResolutionStatus
from evalsets.releases import bridge
from evalsets.review import workflow
from tests.resolving import resolve_anchor

pytestmark = pytest.mark.django_db

ITEM = "/api/workspaces/acme/evalsets/quiz/items/q1/"

#: The passage as the quote has it ...
PASSAGE = (
    "The committee reviewed the annual budget and approved the proposal to expand the "
    "community library, subject to a final inspection by the council and a public hearing "
    "held in the town hall during the spring session of the following year."
)
#: ... and as a parser with a broken font map reads it: most characters, few whole words.
DAMAGED = (
    "Minutes.\nThe comittee reviewd the anual budgett and aproved the proposall to expnd the "
    "comunity libary, subjct to a finall inspecton by the councill and a publc hearng held in "
    "the twn hal durng the sprng sesion of the folowing yeer.\nEnd of minutes."
)


@pytest.fixture
def offered(item, annotator, document, django_capture_on_commit_callbacks):
    """An anchor the damaged parse does not find, with its closest passage offered."""
    with django_capture_on_commit_callbacks(execute=True):
        damaged = documents_services.parse_version_add(
            document=document, parser="broken-fonts", parser_version="1", text=DAMAGED
        )
        anchor = anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote=PASSAGE
        )
    row = AnchorResolution.objects.get(anchor=anchor, parse=damaged)
    assert row.status == ResolutionStatus.NOT_FOUND
    assert row.detail["reason"] == "mostly_absent"
    return anchor, damaged, row


def _confirm(client, anchor, parse, **span):
    return client.post(
        f"{ITEM}anchors/{anchor.public_id}/confirm/",
        {"parse": str(parse.public_id), **span},
        format="json",
    )


def _row(anchor, parse) -> AnchorResolution:
    return AnchorResolution.objects.get(anchor=anchor, parse=parse)


def test_the_resolver_offers_the_closest_passage_of_a_mostly_absent_quote(offered):
    _, _, row = offered
    start, end = row.detail["offered_start"], row.detail["offered_end"]
    assert DAMAGED[start:end].startswith("The comittee") and DAMAGED[start:end].endswith("yeer.")
    assert row.start is None and not row.is_found


def test_an_annotator_confirms_the_offered_candidate(client_for, annotator, offered):
    anchor, damaged, row = offered
    response = _confirm(client_for(annotator), anchor, damaged)
    assert response.status_code == 200, response.json()
    shown = next(r for r in response.json()["resolutions"] if r["parse"] == str(damaged.public_id))
    assert shown["status"] == "confirmed"
    confirmed = _row(anchor, damaged)
    assert (confirmed.start, confirmed.end) == (
        row.detail["offered_start"],
        row.detail["offered_end"],
    )
    assert confirmed.confirmed_by == annotator and confirmed.confirmed_at is not None
    assert confirmed.detail["reason"] == "confirmed"
    assert confirmed.detail["previous_status"] == "not_found"
    assert confirmed.is_found
    assert anchor.item.events.filter(kind="anchor_confirmed").exists()


def test_a_correction_records_the_span_selected_trimmed_of_spaces(client_for, annotator, offered):
    anchor, damaged, _ = offered
    start = DAMAGED.index("The comittee") - 1  # the line break before it
    end = DAMAGED.index(" in the twn")
    response = _confirm(client_for(annotator), anchor, damaged, start=start, end=end + 1)
    assert response.status_code == 200, response.json()
    confirmed = _row(anchor, damaged)
    assert (confirmed.start, confirmed.end) == (start + 1, end)
    assert confirmed.detail["reason"] == "corrected"


def test_a_rerun_of_the_resolver_never_overwrites_a_confirmed_resolution(
    client_for, annotator, offered
):
    anchor, damaged, _ = offered
    _confirm(client_for(annotator), anchor, damaged)
    resolution.resolve_parse(damaged)
    resolve_anchor(anchor)
    assert _row(anchor, damaged).status == ResolutionStatus.CONFIRMED


def test_confirmed_evidence_counts_as_found_in_tallies_and_gold_spans(
    client_for, annotator, offered
):
    anchor, damaged, row = offered
    _confirm(client_for(annotator), anchor, damaged)
    counted = tally({"confirmed": 1, "not_found": 1})
    assert counted["found"] == 1 and counted["by_status"]["confirmed"] == 1
    anchor.refresh_from_db()
    assert bridge.anchor_span(anchor, damaged) == (
        row.detail["offered_start"],
        row.detail["offered_end"],
    )


def test_confirming_where_nothing_was_offered_asks_for_a_selection(
    client_for, annotator, offered, reference
):
    anchor, _, _ = offered
    # the reference parse holds nothing like the passage: nothing offered there
    assert _row(anchor, reference).detail.get("offered_start") is None
    response = _confirm(client_for(annotator), anchor, reference)
    assert response.status_code == 409
    assert "select the passage" in response.json()["detail"]


@pytest.mark.parametrize(
    ("span", "field", "words"),
    [
        ({"start": 5, "end": 5}, "start", "0 <= start < end"),
        ({"start": 0, "end": 10_000}, "start", "the parse's length"),
        ({"start": 3}, "end", "both start and end"),
        ({"start": -1, "end": 4}, "start", ""),
    ],
)
def test_a_bad_span_is_a_400_naming_the_field_and_writes_nothing(
    client_for, annotator, offered, span, field, words
):
    anchor, damaged, _ = offered
    response = _confirm(client_for(annotator), anchor, damaged, **span)
    assert response.status_code == 400
    body = response.json()
    assert field in body["errors"] and words in body["detail"] + str(body["errors"])
    assert _row(anchor, damaged).status == ResolutionStatus.NOT_FOUND


def test_a_span_of_only_spaces_is_refused(client_for, annotator, offered):
    anchor, damaged, _ = offered
    gap = DAMAGED.index("\n")
    response = _confirm(client_for(annotator), anchor, damaged, start=gap, end=gap + 1)
    assert response.status_code == 400 and "only spaces" in response.json()["detail"]


def test_a_parse_of_another_document_is_refused(client_for, annotator, offered, workspace):
    anchor, _, _ = offered
    other = Document(workspace=workspace, source_id="other.txt", sha256="1" * 64, size=5)
    other.file.save("other.txt", ContentFile(b"Other"), save=False)
    other.kind = "text"
    other.save()
    parse = documents_services.parse_version_add(document=other, parser="plaintext", text="Other")
    response = _confirm(client_for(annotator), anchor, parse, start=0, end=5)
    assert response.status_code == 400
    assert "not a parse of 'handbook.txt'" in response.json()["detail"]


def test_viewers_may_not_confirm_and_outsiders_see_nothing(client_for, viewer, outsider, offered):
    anchor, damaged, _ = offered
    assert _confirm(client_for(viewer), anchor, damaged).status_code == 403
    assert _confirm(client_for(outsider), anchor, damaged).status_code == 404
    assert _row(anchor, damaged).status == ResolutionStatus.NOT_FOUND


def test_an_approved_item_refuses_confirmation_until_reopened(
    client_for, annotator, reviewer, offered
):
    anchor, damaged, _ = offered
    item = anchor.item
    workflow.item_submit(item=item, user=annotator)
    item.refresh_from_db()
    workflow.item_approve(item=item, user=reviewer, row_version=item.row_version)
    response = _confirm(client_for(reviewer), anchor, damaged)
    assert response.status_code == 409
    assert _row(anchor, damaged).status == ResolutionStatus.NOT_FOUND
