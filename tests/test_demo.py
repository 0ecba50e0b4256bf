"""`make run` loads the demo workspace first: the command must keep working as the rules grow."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from evalsets.models import EvalItem, ParseVersion, Workspace


@pytest.mark.django_db
def test_load_demo_builds_the_workspace_the_readme_walks_through():
    call_command("load_demo")

    workspace = Workspace.objects.get(slug="demo")
    items = EvalItem.objects.filter(evalset__workspace=workspace).order_by("item_id")
    assert [i.item_id for i in items] == ["q1", "q2", "q3", "q4", "q5"]
    assert {i.assignee.username for i in items} == {"annotator"}
    assert sum(1 for i in items if i.anchors.exists()) == 4
    assert ParseVersion.objects.filter(document__workspace=workspace).count() == 2


@pytest.mark.django_db
def test_load_demo_twice_changes_nothing():
    call_command("load_demo")
    call_command("load_demo")

    assert Workspace.objects.filter(slug="demo").count() == 1
