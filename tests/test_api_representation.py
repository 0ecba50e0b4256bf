"""The item, anchor, resolution and release shapes render exactly what DRF's generic code
renders, and the pages embed exactly what the API answers.

``evalsets.releases.representations`` renders each shape once, for the API's serializers and for the
pages; these tests put every kind of value the shapes carry (nulls, missing relations, JSON,
UTC and other time zones, unresolved and resolved anchors, a typed anchor still waiting for
its file, a built release with its files) through it and through DRF's field-by-field code,
and compare.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework import serializers

from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.anchoring import services as anchoring_services
from evalsets.anchoring.api import serializers as anchoring_serializers
from evalsets.releases import representations
from evalsets.releases import selectors as releases_selectors
from evalsets.releases import services as releases_services
from evalsets.releases.api import serializers as rs
from tests.conftest import HANDBOOK

pytestmark = pytest.mark.django_db


def drf_rendering(serializer, instance) -> dict:
    """What DRF's own ``Serializer.to_representation`` gives, nested serializers included."""
    out = serializers.Serializer.to_representation(serializer, instance)
    for name, field in serializer.fields.items():
        if isinstance(field, serializers.ListSerializer) and name in out:
            children = field.get_attribute(instance)
            children = children.all() if hasattr(children, "all") else children
            out[name] = [drf_rendering(field.child, child) for child in children]
    return out


@pytest.fixture
def busy_item(item, annotator, reference, evalset, django_capture_on_commit_callbacks):
    """q1 with a highlighted anchor, a typed anchor still pending its file, an answer, meta."""
    start = HANDBOOK.index("Remote work")
    with django_capture_on_commit_callbacks(execute=True):  # resolves it, in-process
        anchoring_services.anchor_create_from_highlight(
            item=item, user=annotator, parse=reference, start=start, end=start + 11, grade=1
        )
    anchoring_services.anchor_create_typed(
        item=item,
        user=annotator,
        source_id="not-yet-uploaded.pdf",
        quote="a quote from a file on its way",
        allow_pending=True,
    )
    item.refresh_from_db()
    anchoring_services.item_update(
        item=item,
        user=annotator,
        row_version=item.row_version,
        answer="1.5 days",
        meta={"topic": "leave", "weights": [1, 2.5, None]},
    )
    (shown,) = anchoring_selectors.with_anchors(
        [anchoring_selectors.items(evalset).get(pk=item.pk)], reader=None
    )
    return shown


def test_the_api_serializers_render_through_the_domains_representation(busy_item):
    assert anchoring_serializers.ItemSerializer(busy_item).data == representations.item_data(
        busy_item
    )
    anchor = busy_item.prefetched_anchors[0]
    assert anchoring_serializers.AnchorSerializer(anchor).data == representations.anchor_data(
        anchor
    )


def test_an_item_with_anchors_and_resolutions_renders_as_drf_renders_it(busy_item):
    serializer = anchoring_serializers.ItemSerializer()
    fast = serializer.to_representation(busy_item)
    assert fast == drf_rendering(anchoring_serializers.ItemSerializer(), busy_item)
    assert len(fast["anchors"]) == 2
    assert fast["anchors"][0]["resolutions"], "the highlighted anchor is resolved"
    assert fast["answer"] == "1.5 days"


def test_an_item_without_author_assignee_or_anchors_renders_nulls_as_drf_does(evalset):
    bare = anchoring_services.item_create(
        evalset=evalset, user=None, item_id="bare", question="Bare?"
    )
    (bare,) = anchoring_selectors.with_anchors(
        [anchoring_selectors.items(evalset).get(pk=bare.pk)], reader=None
    )
    assert bare.author is None and bare.assignee is None
    fast = anchoring_serializers.ItemSerializer().to_representation(bare)
    assert fast == drf_rendering(anchoring_serializers.ItemSerializer(), bare)
    assert fast["author"] is None and fast["assignee"] is None and fast["anchors"] == []


def test_times_render_in_the_current_time_zone_as_drf_renders_them(busy_item):
    with timezone.override("Asia/Kolkata"):
        fast = anchoring_serializers.ItemSerializer().to_representation(busy_item)
        assert fast == drf_rendering(anchoring_serializers.ItemSerializer(), busy_item)
    assert fast["created_at"].endswith("+05:30")
    assert (
        anchoring_serializers.ItemSerializer()
        .to_representation(busy_item)["created_at"]
        .endswith("Z")
    )


def test_a_list_of_items_renders_as_drf_renders_it(busy_item, evalset, annotator):
    anchoring_services.item_create(
        evalset=evalset, user=annotator, item_id="q2", question="Second?"
    )
    items = anchoring_selectors.with_anchors(anchoring_selectors.items(evalset), reader=None)
    fast = anchoring_serializers.ItemSerializer(items, many=True).data
    assert fast == [drf_rendering(anchoring_serializers.ItemSerializer(), item) for item in items]
    assert [len(item["anchors"]) for item in fast] == [2, 0]


def test_anchors_are_queried_only_for_items_that_have_some(
    busy_item, evalset, annotator, django_assert_num_queries
):
    for n in range(3):
        anchoring_services.item_create(
            evalset=evalset, user=annotator, item_id=f"d{n}", question="Draft?"
        )
    drafts = list(anchoring_selectors.items(evalset).filter(item_id__startswith="d"))
    with django_assert_num_queries(0):
        assert [
            item.prefetched_anchors
            for item in anchoring_selectors.with_anchors(drafts, reader=None)
        ] == [[]] * 3
    everything = list(anchoring_selectors.items(evalset))
    with django_assert_num_queries(2):  # the anchors, then their resolutions
        shown = anchoring_selectors.with_anchors(everything, reader=None)
    assert [len(item.prefetched_anchors) for item in shown] == [2, 0, 0, 0]


def _embedded(body: str, script_id: str):
    found = re.search(
        rf'<script id="{script_id}" type="application/json">(.*?)</script>', body, re.S
    )
    assert found, f"the page embeds no {script_id}"
    return json.loads(found.group(1))


def test_the_item_page_embeds_the_item_as_the_api_answers_it(busy_item, annotator, client_for):
    page = Client()
    page.force_login(annotator)
    body = page.get("/w/acme/sets/quiz/items/q1/").content.decode()
    api = client_for(annotator).get("/api/workspaces/acme/evalsets/quiz/items/q1/").json()
    assert _embedded(body, "item-data") == api
    assert len(api["anchors"]) == 2


def test_a_release_renders_as_drf_renders_it_and_its_page_embeds_the_api_answer(
    busy_item, evalset, owner, client_for, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):  # builds it, in-process
        releases_services.release_create(
            evalset=evalset, user=owner, formats=["contextgrid-jsonl"], include_states=["draft"]
        )
    (release,) = releases_selectors.releases_of(evalset)
    assert release.files.all(), "the release was built"
    rendered = rs.ReleaseSerializer(release).data
    expected = serializers.Serializer.to_representation(rs.ReleaseSerializer(), release)
    expected["files"] = [
        serializers.Serializer.to_representation(rs.ReleaseFileSerializer(), f)
        for f in release.files.all()
    ]
    assert rendered == expected
    page = Client()
    page.force_login(owner)
    body = page.get("/w/acme/sets/quiz/releases/").content.decode()
    api = client_for(owner).get("/api/workspaces/acme/evalsets/quiz/releases/").json()
    assert _embedded(body, "releases-data") == api["results"]
