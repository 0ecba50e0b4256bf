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


def test_a_row_written_by_insert_is_the_row_save_writes_with_the_same_signals(
    item, annotator, reference
):
    from django.db.models import signals

    from evalsets.models import GoldAnchor, ItemEvent

    def anchor() -> GoldAnchor:
        return GoldAnchor(
            item=item,
            source_id="handbook.txt",
            document=reference.document,
            quote="Remote work",
            reference_parse=reference,
            ref_start=3,
            ref_end=14,
            created_by=annotator,
            suggested={"parse": str(reference.public_id), "start": 1, "rank": None},
        )

    heard = []

    def listen(signal):
        def receiver(sender, instance, **kwargs):
            heard.append((signal, sender, instance.pk, kwargs.get("created")))

        signal.connect(receiver, sender=GoldAnchor, weak=False)
        return receiver

    receivers = {signal: listen(signal) for signal in (signals.pre_save, signals.post_save)}
    try:
        saved, inserted = anchor(), anchor()
        saved.save()
        written.insert(inserted)
    finally:
        for signal, receiver in receivers.items():
            signal.disconnect(receiver, sender=GoldAnchor)
    assert heard == [
        (signals.pre_save, GoldAnchor, None, None),
        (signals.post_save, GoldAnchor, saved.pk, True),
        (signals.pre_save, GoldAnchor, None, None),
        (signals.post_save, GoldAnchor, inserted.pk, True),
    ]
    assert inserted.pk == saved.pk + 1 and not inserted._state.adding
    fields = [f for f in written.concrete(GoldAnchor) if f not in ("id", "public_id")]
    rows = {
        a.pk: _values(a, fields) for a in GoldAnchor.objects.filter(pk__in=[saved.pk, inserted.pk])
    }
    rows[saved.pk].pop("created_at"), rows[inserted.pk].pop("created_at")
    assert rows[inserted.pk] == rows[saved.pk]
    assert GoldAnchor.objects.get(pk=inserted.pk).public_id == inserted.public_id
    with pytest.raises(ValueError):
        written.insert(inserted)  # a row written already: save() would update it
    events = ItemEvent.objects.count()
    with pytest.raises(ValueError):
        written.insert(ItemEvent.objects.first())
    assert ItemEvent.objects.count() == events
