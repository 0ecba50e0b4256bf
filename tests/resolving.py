"""Resolving one anchor at once, in the test's own process: the tests that need an anchor's
resolutions written before they look call this instead of running the coalesced task."""

from __future__ import annotations

from evalsets.anchoring import resolution
from evalsets.models import GoldAnchor, ParseStatus, ParseVersion


def resolve_anchor(anchor: GoldAnchor) -> int:
    """One anchor, resolved in every ready parse of its document."""
    if anchor.document_id is None:
        return 0
    parses = ParseVersion.objects.filter(document=anchor.document_id, status=ParseStatus.READY)
    return sum(resolution.resolve_in_parse(parse, [anchor]) for parse in parses)
