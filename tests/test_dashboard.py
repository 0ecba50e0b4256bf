"""The eval set's dashboard: figures in JSON, and a page with inline SVG charts."""

from __future__ import annotations

import pytest
from contextgrid.evalset.quality import minimum_detectable_difference

from evalsets.anchoring import services as anchoring_services
from evalsets.documents import services as documents_services
from evalsets.models import AnchorResolution, Membership, ParseStatus, Role
from evalsets.review import dashboard, workflow
from labelling import charts

pytestmark = pytest.mark.django_db

DASHBOARD = "/api/workspaces/acme/evalsets/quiz/dashboard/"
PAGE = "/w/acme/sets/quiz/dashboard/"


@pytest.fixture
def filled(evalset, annotator, reviewer, document, reference, django_capture_on_commit_callbacks):
    """Three items: one approved with an anchor, one submitted, one near-duplicate draft."""
    with django_capture_on_commit_callbacks(execute=True):
        return _fill(evalset, annotator, reviewer, reference)


def _fill(evalset, annotator, reviewer, reference):
    q1 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="q1",
        question="How much leave do employees accrue per month?",
        qtype="numeric",
    )
    anchoring_services.anchor_create_from_highlight(
        item=q1, user=annotator, parse=reference, start=19, end=64
    )
    q2 = anchoring_services.item_create(
        evalset=evalset,
        user=annotator,
        item_id="q2",
        question="How many remote days are allowed?",
        qtype="numeric",
    )
    anchoring_services.item_create(
        evalset=evalset,
        user=reviewer,
        item_id="q3",
        question="how much leave do employees accrue per month",
        qtype="factoid",
    )
    workflow.item_submit(item=q1, user=annotator)
    q1.refresh_from_db()
    workflow.item_approve(item=q1, user=reviewer, row_version=q1.row_version)
    workflow.item_submit(item=q2, user=annotator)
    return evalset


def test_it_counts_items_per_state_and_per_person(client_for, filled, viewer):
    data = client_for(viewer).get(DASHBOARD).json()
    assert data["states"] == {
        "draft": 1,
        "submitted": 1,
        "changes_requested": 0,
        "approved": 1,
    }
    people = {p["user"]: p for p in data["people"]}
    assert people["ann"]["authored"] == {
        "draft": 0,
        "submitted": 1,
        "changes_requested": 0,
        "approved": 1,
    }
    assert people["ann"]["anchors"] == 1
    assert people["rita"]["approved"] == 1
    assert people["rita"]["authored_total"] == 1


def test_throughput_counts_todays_decisions_from_the_audit_trail(client_for, filled, viewer):
    days = client_for(viewer).get(DASHBOARD).json()["throughput"]
    assert len(days) == dashboard.THROUGHPUT_DAYS
    assert days[-1]["submitted"] == 2
    assert days[-1]["approved"] == 1
    assert sum(d["approved"] for d in days[:-1]) == 0


def test_it_reports_resolution_health_per_parse(
    client_for, filled, viewer, document, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(
            document=document, parser="theirs", text="Nothing useful here.", origin="uploaded"
        )
    rows = client_for(viewer).get(DASHBOARD).json()["resolution"]
    by_parser = {r["parser"]: r for r in rows}
    assert by_parser["plaintext"]["found"] == 1
    assert by_parser["plaintext"]["by_status"]["exact"] == 1
    assert by_parser["plaintext"]["is_reference"] is True
    assert by_parser["theirs"]["lost"] == 1
    assert by_parser["theirs"]["found"] == 0


def test_pending_counts_anchors_a_parse_has_not_resolved_yet(client_for, filled, viewer):
    AnchorResolution.objects.all().delete()
    rows = client_for(viewer).get(DASHBOARD).json()["resolution"]
    assert rows[0]["pending"] == 1
    assert rows[0]["found"] == 0


def test_it_reports_question_types_unanswerable_and_near_duplicates(client_for, filled, viewer):
    data = client_for(viewer).get(DASHBOARD).json()
    assert data["qtypes"] == {"numeric": 2, "factoid": 1}
    # q2 was submitted without evidence; q3 is a draft nobody has annotated: not started.
    assert (data["unanswerable"], data["not_started"]) == (1, 1)
    assert data["duplicates"]["count"] == 1
    pair = data["duplicates"]["pairs"][0]
    assert (pair["a"], pair["b"], pair["exact"]) == ("q1", "q3", True)


def test_it_reports_context_grids_minimum_detectable_difference(client_for, filled, viewer):
    quality = client_for(viewer).get(DASHBOARD).json()["quality"]
    assert quality["size"] == 3
    assert quality["answerable"] == 1
    assert quality["detectable_difference"] == round(minimum_detectable_difference(1), 4)
    assert quality["approved_answerable"] == 1
    assert "differences below about" in quality["summary"]


def test_agreement_compares_the_spans_of_overlapping_annotators(
    client_for, evalset, owner, annotator, make_user, workspace, reference
):
    bob = make_user("bob")
    Membership.objects.create(workspace=workspace, user=bob, role=Role.ANNOTATOR)
    same = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="same", question="A?"
    )
    half = anchoring_services.item_create(
        evalset=evalset, user=owner, item_id="half", question="B?"
    )
    client_for(owner).post(
        "/api/workspaces/acme/evalsets/quiz/assignments/",
        {"users": ["ann", "bob"], "kind": "annotate", "overlap": 2},
        format="json",
    )
    for user in (annotator, bob):
        anchoring_services.anchor_create_from_highlight(
            item=same, user=user, parse=reference, start=19, end=64
        )
    # Ann marks 20 characters, Bob the last 10 of them: Jaccard 10 / 20.
    anchoring_services.anchor_create_from_highlight(
        item=half, user=annotator, parse=reference, start=19, end=39
    )
    anchoring_services.anchor_create_from_highlight(
        item=half, user=bob, parse=reference, start=29, end=39
    )
    for user in (bob, annotator):
        for item in (same, half):
            workflow.item_submit(item=item, user=user)
    data = client_for(owner).get("/api/workspaces/acme/evalsets/quiz/dashboard/").json()
    per_item = {r["item"]: r["agreement"] for r in data["agreement"]["items"]}
    assert per_item == {"same": 1.0, "half": 0.5}
    assert data["agreement"]["mean"] == 0.75
    assert data["agreement"]["pairs"] == [
        {"annotators": ["ann", "bob"], "items": 2, "agreement": 0.75}
    ]


def test_agreement_waits_until_every_assigned_annotator_has_worked_on_an_item(
    client_for, client, evalset, owner, annotator, make_user, workspace, reference
):
    bob = make_user("bob")
    Membership.objects.create(workspace=workspace, user=bob, role=Role.ANNOTATOR)
    one = anchoring_services.item_create(evalset=evalset, user=owner, item_id="one", question="A?")
    anchoring_services.item_create(evalset=evalset, user=owner, item_id="two", question="B?")
    client_for(owner).post(
        "/api/workspaces/acme/evalsets/quiz/assignments/",
        {"users": ["ann", "bob"], "kind": "annotate", "overlap": 2},
        format="json",
    )
    fresh = client_for(owner).get(DASHBOARD).json()["agreement"]
    assert fresh == {"items": [], "pairs": [], "mean": None, "waiting": 2, "grades": None}
    client.force_login(owner)
    assert "Not yet: 2 overlapped items wait" in client.get(PAGE).content.decode()
    # Ann anchors "one"; Bob finds nothing there and says so by submitting his part.
    anchoring_services.anchor_create_from_highlight(
        item=one, user=annotator, parse=reference, start=19, end=39
    )
    assert client_for(owner).get(DASHBOARD).json()["agreement"]["waiting"] == 2
    workflow.item_submit(item=one, user=bob)
    # Ann has anchored but not finished: an item half done is not agreement yet.
    assert client_for(owner).get(DASHBOARD).json()["agreement"]["waiting"] == 2
    workflow.item_submit(item=one, user=annotator)
    worked = client_for(owner).get(DASHBOARD).json()["agreement"]
    assert worked["items"] == [{"item": "one", "annotators": ["ann", "bob"], "agreement": 0.0}]
    assert (worked["mean"], worked["waiting"]) == (0.0, 1)


def test_agreement_on_grades_counts_each_marked_place_and_only_finished_items(
    client_for, client, evalset, owner, annotator, make_user, workspace, reference
):
    bob = make_user("bob")
    Membership.objects.create(workspace=workspace, user=bob, role=Role.ANNOTATOR)
    items = [
        anchoring_services.item_create(evalset=evalset, user=owner, item_id=n, question=f"{n}?")
        for n in ("a", "b", "c")
    ]
    client_for(owner).post(
        "/api/workspaces/acme/evalsets/quiz/assignments/",
        {"users": ["ann", "bob"], "kind": "annotate", "overlap": 2},
        format="json",
    )

    def mark(item, user, start, end, grade):
        anchoring_services.anchor_create_from_highlight(
            item=item, user=user, parse=reference, start=start, end=end, grade=grade
        )

    # a: both mark the same place, both grade 2. b: overlapping places, grades 2 and 1.
    # c: only Ann marks a place (Bob: not evidence); nobody finishes c, so it is left out.
    mark(items[0], annotator, 19, 40, 2)
    mark(items[0], bob, 19, 40, 2)
    mark(items[1], annotator, 50, 70, 2)
    mark(items[1], bob, 60, 80, 1)
    mark(items[2], annotator, 19, 40, 0)
    for user in (annotator, bob):
        for item in items[:2]:
            workflow.item_submit(item=item, user=user)
    grades = client_for(owner).get(DASHBOARD).json()["agreement"]["grades"]
    # Places (Ann, Bob): (2, 2) and (2, 1). Ann always says 2, so chance explains all of
    # her agreement: kappa 0, and alpha 0.
    assert grades["units"] == 2
    assert grades["pairs"] == [{"annotators": ["ann", "bob"], "units": 2, "kappa": 0.0}]
    assert grades["alpha"] == 0.0

    workflow.item_submit(item=items[2], user=bob)
    workflow.item_submit(item=items[2], user=annotator)
    grades = client_for(owner).get(DASHBOARD).json()["agreement"]["grades"]
    # A third place, (0, none): Ann marked it, Bob did not. Kappa: observed 1/3, chance
    # 2/3 * 1/3, so 1/7. Alpha: 6 values, 4 disagreeing pairs, 36 - 12 pairs by chance.
    assert grades["units"] == 3
    assert grades["pairs"][0]["kappa"] == round(1 / 7, 4)
    assert grades["alpha"] == round(1 - 5 * 4 / 24, 4)
    client.force_login(owner)
    assert "Agreement on grades" in client.get(PAGE).content.decode()


def test_review_assignments_on_approved_items_are_not_counted_as_open(
    client_for, filled, owner, reviewer
):
    # q1 is already approved and q2 waits for review: only q2 is left for Rita to do.
    response = client_for(owner).post(
        "/api/workspaces/acme/evalsets/quiz/assignments/",
        {"users": ["rita"], "kind": "review", "items": ["q1", "q2"]},
        format="json",
    )
    assert len(response.json()["created"]) == 2
    people = {p["user"]: p for p in client_for(owner).get(DASHBOARD).json()["people"]}
    queue = client_for(reviewer).get("/api/workspaces/acme/evalsets/quiz/next/", {"role": "review"})
    assert people["rita"]["open_review"] == queue.json()["remaining"] == 1


def test_span_agreement_is_one_when_neither_annotator_found_evidence():
    assert dashboard.span_agreement({}, {}) == 1.0
    assert dashboard.span_agreement({"t": [(0, 10)]}, {}) == 0.0
    assert dashboard.span_agreement({"t": [(0, 10)]}, {"u": [(0, 10)]}) == 0.0


def test_an_empty_set_has_a_dashboard(client_for, evalset, viewer):
    data = client_for(viewer).get(DASHBOARD).json()
    assert data["items"] == 0
    assert data["agreement"] == {
        "items": [],
        "pairs": [],
        "mean": None,
        "waiting": 0,
        "grades": None,
    }
    assert data["quality"]["size"] == 0


def test_the_dashboard_page_draws_inline_svg_charts(client, filled, viewer):
    from tests.conftest import PASSWORD

    client.login(username="vic", password=PASSWORD)
    response = client.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("<svg") >= 4
    assert 'aria-label="Items per state"' in html
    assert "minimum detectable difference" in html


def test_chart_labels_are_escaped(filled):
    svg = charts.bar_chart([("<script>", 1)], title="t")
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg


def test_the_dashboard_page_is_404_for_non_members(client, filled, outsider):
    from tests.conftest import PASSWORD

    client.login(username="otto", password=PASSWORD)
    assert client.get(PAGE).status_code == 404


def test_a_failed_parse_still_shows_in_resolution_health(client_for, filled, viewer, document):
    document.parses.update(status=ParseStatus.FAILED)
    rows = client_for(viewer).get(DASHBOARD).json()["resolution"]
    assert rows[0]["status"] == "failed"


def test_approved_items_count_as_reviewed_for_context_grids_quality_check(
    evalset, annotator, document
):
    from evalsets.models import EvalItem

    for n in range(5):
        item = anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=f"r{n}", question="Q?"
        )
        anchoring_services.anchor_create_typed(
            item=item, user=annotator, source_id="handbook.txt", quote="Leave may be"
        )
    EvalItem.objects.filter(item_id__in=["r0", "r1"]).update(state="approved")
    figures = dashboard.evalset_dashboard(evalset)
    assert "40% reviewed" in figures["quality"]["summary"]


# -- the parser table -----------------------------------------------------------------------


@pytest.fixture
def two_parsers(filled, document, django_capture_on_commit_callbacks):
    """The handbook also read by a parser that lost the leave sentence."""
    text = document.parses.get(is_reference=True).text.replace("accrue 1.5 days", "get some")
    with django_capture_on_commit_callbacks(execute=True):
        documents_services.parse_version_add(
            document=document, parser="lossy", parser_version="0.9", text=text
        )
    return filled


def test_the_parser_table_says_per_parser_what_survives_and_which_items_it_loses(
    client_for, two_parsers, viewer
):
    rows = {r["parser"]: r for r in client_for(viewer).get(DASHBOARD).json()["parsers"]}
    assert set(rows) == {"plaintext", "lossy"}
    kept, lossy = rows["plaintext"], rows["lossy"]
    assert kept["documents"] == 1 and kept["anchors"] == 1
    assert kept["found"] == 1 and kept["by_status"]["exact"] == 1 and kept["lost_items"] == []
    assert lossy["parser_version"] == "0.9"
    assert lossy["found"] == 0 and lossy["lost"] == 1 and lossy["lost_items"] == ["q1"]
    assert lossy["lost_item_count"] == 1
    # every tier has a column, the confirmed one included
    assert set(lossy["by_status"]) >= {"exact", "normalised", "fuzzy", "confirmed", "not_found"}


def test_the_parser_table_counts_confirmed_evidence_as_found(
    client_for, two_parsers, annotator, viewer
):
    lossy = two_parsers.workspace.documents.get().parses.get(parser="lossy")
    res = AnchorResolution.objects.get(parse=lossy)
    workflow.item_reopen(
        item=res.anchor.item, user=two_parsers.workspace.memberships.get(role=Role.OWNER).user
    )
    anchoring_services.resolution_confirm(
        anchor=res.anchor, parse=lossy, user=annotator, start=0, end=10
    )
    row = next(
        r for r in client_for(viewer).get(DASHBOARD).json()["parsers"] if r["parser"] == "lossy"
    )
    assert row["found"] == 1 and row["by_status"]["confirmed"] == 1 and row["lost_items"] == []


def test_the_dashboard_page_shows_the_parser_table_with_links_to_lost_items(
    client, two_parsers, viewer
):
    from tests.conftest import PASSWORD

    client.login(username="vic", password=PASSWORD)
    page = client.get(PAGE).content.decode()
    assert "Parser table" in page
    assert 'data-parser="lossy"' in page
    assert 'href="/w/acme/sets/quiz/items/q1/"' in page


def test_the_assignments_page_counts_open_review_work_as_the_api_does(
    client_for, client, filled, owner, reviewer
):
    client_for(owner).post(
        "/api/workspaces/acme/evalsets/quiz/assignments/",
        {"users": ["rita"], "kind": "review", "items": ["q1", "q2"]},
        format="json",
    )
    listed = client_for(owner).get(
        "/api/workspaces/acme/evalsets/quiz/assignments/", {"user": "rita", "open": "true"}
    )
    assert [a["item"] for a in listed.json()["results"]] == ["q2"]
    client.force_login(owner)
    html = client.get("/w/acme/sets/quiz/assignments/").content.decode()
    row = html[html.index('data-queue="rita"') :].split("</tr>")[0]
    assert 'data-assignment="q2"' in row
    assert 'data-assignment="q1"' not in row  # approved already: nothing left to review
