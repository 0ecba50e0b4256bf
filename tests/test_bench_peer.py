"""The sustained benchmark's peer (``bench/per_anchor``): the path before bursts were
coalesced, which the product no longer has, must still resolve every anchor, one task each."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from evalsets import queue
from evalsets.anchoring import resolution
from evalsets.anchoring import services as anchoring_services
from evalsets.models import AnchorResolution, Document

# The benchmark's processes find the peer on PYTHONPATH; this one is told where it is.
sys.path.append(str(Path(__file__).resolve().parent.parent / "bench"))
peer = importlib.import_module("per_anchor.peer")

QUOTES = ["Employees accrue 1.5 days of leave per month.", "Leave may be carried over."]


def test_the_bench_peer_resolves_each_new_anchor_in_a_task_of_its_own(
    sent, reference, item, annotator, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(resolution, "resolution_request", peer.resolution_request)
    queued = []
    run = peer.resolve_anchor_task.apply_async

    def record(args, **options):
        queued.append((args, options["queue"]))
        return run(args, **options)

    monkeypatch.setattr(peer.resolve_anchor_task, "apply_async", record)
    made = []
    for quote in QUOTES:
        with django_capture_on_commit_callbacks(execute=True):
            made.append(
                anchoring_services.anchor_create_typed(
                    item=item, user=annotator, source_id="handbook.txt", quote=quote
                )
            )

    assert queued == [((a.pk,), queue.queue_name(queue.RESOLVE)) for a in made]
    assert sent == [] and Document.objects.get().resolve_queued_at is None
    resolved = AnchorResolution.objects.filter(parse=reference).values_list("anchor", flat=True)
    assert sorted(resolved) == sorted(a.pk for a in made)
