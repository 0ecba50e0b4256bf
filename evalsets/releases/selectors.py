"""Reads of releases."""

from __future__ import annotations

from django.db.models import (
    QuerySet,
)

from evalsets.models import (
    EvalSet,
    Release,
)

# -- the releases page --------------------------------------------------------------------------


def releases_of(evalset: EvalSet) -> QuerySet[Release]:
    return (
        Release.objects.filter(evalset=evalset)
        .select_related("evalset__workspace", "created_by")
        .prefetch_related("files")
    )
