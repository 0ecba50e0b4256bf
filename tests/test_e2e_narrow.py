"""A phone's width (390 px) in Chromium: the header and the pages a team works in fit the
screen, with nothing overflowing sideways."""

from __future__ import annotations

import pytest

from evalsets.anchoring import services as anchoring_services
from tests.browser import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

OVERFLOWING = """() => [...document.querySelectorAll('body *')]
  .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .filter((el) => !el.closest('.table-scroll, [hidden], table'))
  .slice(0, 8)
  .map((el) => el.tagName.toLowerCase() + (el.className ? '.' + el.className : '')
       + ' right=' + Math.round(el.getBoundingClientRect().right))"""


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/w/acme/",
        "/w/acme/sets/quiz/",
        "/w/acme/sets/quiz/items/q1/",
        "/w/acme/sets/quiz/review/",
        "/w/acme/sets/quiz/dashboard/",
    ],
)
def test_a_page_at_390_px_does_not_overflow_sideways(page, live_server, item, owner, path):
    anchoring_services.item_create(
        evalset=item.evalset,
        user=owner,
        item_id="a-rather-long-item-id-that-goes-on",
        question="A question long enough to wrap on a phone screen, as real ones do?",
    )
    page.set_viewport_size(PHONE)
    log_in(page, live_server, "olive", PASSWORD)
    page.goto(f"{live_server.url}{path}")
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, page.evaluate(OVERFLOWING)
