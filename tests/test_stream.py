"""The task stream's reads and its redirect: where an item stands in my queue, and the next
one to open."""

from __future__ import annotations

import pytest
from django.test import Client

from evalsets.anchoring import services as anchoring_services
from evalsets.review import assignments, workflow
from evalsets.review import selectors as review_selectors

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(evalset, owner, annotator):
    items = [
        anchoring_services.item_create(
            evalset=evalset, user=owner, item_id=f"s{n}", question=f"Q{n}?"
        )
        for n in (1, 2, 3)
    ]
    assignments.assignments_create(
        evalset=evalset, by=owner, usernames=["ann", "olive"], kind="annotate", overlap=2
    )
    return items


def test_the_stream_counts_every_assigned_item_and_points_at_the_next_waiting_one(
    evalset, three, annotator
):
    first = review_selectors.stream(evalset=evalset, user=annotator, role="annotate", item=three[0])
    assert first == {"role": "annotate", "position": 1, "total": 3, "left": 3, "next": "s2"}
    workflow.item_submit(item=three[1], user=annotator)  # her part of s2 is done
    after_one = review_selectors.stream(
        evalset=evalset, user=annotator, role="annotate", item=three[0]
    )
    assert (after_one["left"], after_one["next"]) == (2, "s3")
    last = review_selectors.stream(evalset=evalset, user=annotator, role="annotate", item=three[2])
    assert (last["position"], last["next"]) == (3, "s1")  # wraps to the one still waiting


def test_next_in_my_queue_redirects_to_the_item_after_and_says_when_the_queue_is_done(
    evalset, three, annotator
):
    web = Client()
    web.force_login(annotator)
    response = web.get("/w/acme/sets/quiz/next/", {"after": "s1"})
    assert response.status_code == 302 and response["Location"] == "/w/acme/sets/quiz/items/s2/"
    for item in three:
        workflow.item_submit(item=item, user=annotator)
    done = web.get("/w/acme/sets/quiz/next/", follow=True)
    assert done.redirect_chain[-1][0] == "/w/acme/sets/quiz/"
    assert "your queue is done" in done.content.decode()
    assert web.get("/w/acme/sets/quiz/next/", {"role": "nap"}).status_code == 404


def test_the_home_page_lists_each_queue_with_work_waiting(evalset, three, annotator, reviewer):
    web = Client()
    web.force_login(annotator)
    assert [(q["evalset"].slug, q["role"], q["left"]) for q in web.get("/").context["queues"]] == [
        ("quiz", "annotate", 3)
    ]
    web.force_login(reviewer)
    assert web.get("/").context["queues"] == []
