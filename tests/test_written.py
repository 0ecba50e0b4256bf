"""Rows of queries written out in SQL become the same model instances the ORM reads."""

from __future__ import annotations

import pytest

from evalsets import written
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.documents import selectors as documents_selectors
from evalsets.models import EvalItem, ParseVersion

pytestmark = pytest.mark.django_db


def _values(instance, fields) -> dict:
    return {name: getattr(instance, name) for name in fields}


def test_a_written_out_read_converts_every_field_as_the_orm_does(item, reference):
    """JSON, dates, UUIDs and booleans come back as the ORM gives them, on SQLite (text for
    most of them) as on PostgreSQL (JSON as text)."""
    EvalItem.objects.filter(pk=item.pk).update(meta={"source": "x", "n": [1, 2]}, qtype="fact")
    found = anchoring_selectors.item_in_set(item.evalset.workspace, "quiz", item.item_id)
    fields = written.concrete(EvalItem)
    assert _values(found, fields) == _values(EvalItem.objects.get(pk=item.pk), fields)
    assert found.meta == {"source": "x", "n": [1, 2]}
    assert found.created_at.tzinfo is not None

    parse = documents_selectors.parse_in_workspace(item.evalset.workspace, reference.public_id)
    fields = written.concrete(ParseVersion, leaving=("text",))
    assert _values(parse, fields) == _values(ParseVersion.objects.get(pk=reference.pk), fields)
    assert isinstance(parse.page_starts, list) and parse.is_reference is True
    assert parse.get_deferred_fields() == {"text"}


def test_a_written_out_read_of_nothing_is_none(item):
    assert anchoring_selectors.item_in_set(item.evalset.workspace, "quiz", "no-such") is None
    assert anchoring_selectors.item_in_set(item.evalset.workspace, "nope", item.item_id) is None
