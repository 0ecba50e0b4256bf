"""Web pages for experiments: server-rendered, with static/js/experiments.js starting
experiments and uploading runs through the API and following each cell's progress.

The experiment page renders its results itself: the leaderboard with intervals, the recall@k
curves as inline SVG (``labelling.charts``), a comparison of two rows, and every missed
question with why, linked to the item, to its evidence in the document and to what each
configuration retrieved instead.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from evalsets import access
from evalsets.anchoring import selectors as anchoring_selectors
from evalsets.errors import GroundworkError
from evalsets.experiments import frozen, selectors
from evalsets.models import ParseVersion, ReleaseStatus, Role
from evalsets.pure.scoring import grid, judging, metrics
from labelling import charts
from labelling.permissions import requires


@require_safe
@requires(Role.VIEWER)
def experiments_page(request: HttpRequest, ws: str, set_slug: str) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    kwargs = {"ws": ws, "set_slug": set_slug}
    releases = evalset.releases.exclude(status=ReleaseStatus.FAILED).exclude(frozen_at=None)
    return render(
        request,
        "experiments/experiments.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "can_run": access.allows(membership, "experiment", "post"),
            "releases": list(releases.values_list("version", flat=True)),
            "parsers": frozen.parsers_available(membership.workspace),
            "retrievers": list(grid.RETRIEVERS),
            "experiments": selectors.experiments(evalset),
            "api_start": reverse("experiment-list", kwargs=kwargs),
            "api_preview": reverse("run-preview", kwargs=kwargs),
            "api_commit": reverse("run-commit", kwargs=kwargs),
            "page_url": reverse("evalset-experiments", kwargs=kwargs),
        },
    )


def _parse_ids(experiment) -> dict[int, str]:
    pks = [pk for texts in experiment.corpus.values() for pk in texts.values()]
    return {
        pk: str(pid)
        for pk, pid in ParseVersion.objects.filter(pk__in=pks).values_list("pk", "public_id")
    }


class _Links:
    """Links into a document at a span of one parser's parse."""

    def __init__(self, request, experiment) -> None:
        self.ws = request.membership.workspace.slug
        self.corpus = experiment.corpus
        self.public = _parse_ids(experiment)

    def at(self, parser: str, source_id: str, start: int, end: int) -> str:
        url = reverse("document", kwargs={"ws": self.ws, "doc": source_id})
        pk = self.corpus.get(parser, {}).get(source_id)
        query = f"?parse={self.public[pk]}" if pk in self.public else ""
        return f"{url}{query}#at={start}-{end}"

    def retrieved(self, parser: str, where: list | None) -> dict | None:
        if where is None:
            return None
        doc, start, end = where
        if "\x1f" in doc:  # an uploaded run names each chunk's parse
            parser, doc = doc.split("\x1f", 1)
        return {"label": f"{doc} {start}-{end}", "url": self.at(parser, doc, start, end)}


def _evidence(links: _Links, gold: dict, parser: str) -> list[dict]:
    """Links to a question's evidence in ``parser``'s parse, or in any parse that has it
    (the parser lost it)."""
    for name in [parser, *gold]:
        spans = gold.get(name) or []
        if spans:
            return [
                {"label": f"{s} {a}-{b} ({name})", "url": links.at(name, s, a, b)}
                for s, a, b, _ in spans
            ]
    return []


def _misses(request, experiment) -> list[dict]:
    links = _Links(request, experiment)
    ws, slug = links.ws, experiment.evalset.slug
    rows = []
    for row in selectors.misses(experiment):
        for miss in row["misses"]:
            parser = miss["parser"] if miss["parser"] in experiment.gold else None
            parser = parser or next(iter(experiment.gold), "")
            miss["evidence"] = _evidence(links, row["gold"], parser)
            miss["instead"] = [
                x for x in (links.retrieved(parser, w) for w in miss["retrieved"]) if x
            ]
        row["item_url"] = reverse(
            "item", kwargs={"ws": ws, "set_slug": slug, "item_id": row["question_id"]}
        )
        rows.append(row)
    return rows


def _leaderboard(experiment) -> list[dict]:
    rows = selectors.leaderboard(experiment)
    for row in rows:
        row["columns"] = [
            row["metrics"].get(m, {"mean": 0, "low": 0, "high": 0}) for m in metrics.METRICS
        ]
    return rows


def _row(experiment, ref: str, field: str):
    """A cell of this experiment, or ``<experiment id>:<cell>`` of another one of the set."""
    if ":" in ref:
        return selectors.cell_by_ref(experiment.evalset, ref, field)
    return selectors.cell_of(experiment, ref)


def _comparison(request, experiment) -> tuple[dict | None, str]:
    left, right = request.GET.get("left"), request.GET.get("right")
    if left is None or right is None:
        return None, ""
    try:
        return selectors.compare(
            _row(experiment, left, "left"),
            _row(experiment, right, "right"),
            request.GET.get("metric"),
        ), ""
    except GroundworkError as exc:
        return None, exc.message


def _other_rows(experiment) -> list[dict]:
    """Scored rows of the set's other experiments a row here can be compared with (same
    release and k, so the same questions and cut-off)."""
    others = (
        selectors.experiments(experiment.evalset)
        .filter(release=experiment.release, k=experiment.k)
        .exclude(pk=experiment.pk)
    )
    return [
        {
            "ref": f"{other.public_id}:{row['cell']}",
            "name": f"{other.name or 'grid'}: {row['name']}",
        }
        for other in others
        for row in selectors.leaderboard(other)
    ]


@require_safe
@requires(Role.VIEWER)
def experiment_page(request: HttpRequest, ws: str, set_slug: str, experiment) -> HttpResponse:
    membership = request.membership
    evalset = anchoring_selectors.evalset_in(membership.workspace, set_slug)
    found = selectors.experiment_in(evalset, experiment)
    kwargs = {"ws": ws, "set_slug": set_slug, "experiment": found.public_id}
    board = _leaderboard(found)
    comparison, compare_error = _comparison(request, found)
    curve = charts.curve_chart(
        [(row["name"], row["curve"]) for row in board], title=f"recall@1..{found.k} per row"
    )
    return render(
        request,
        "experiments/experiment.html",
        {
            "workspace": membership.workspace,
            "evalset": evalset,
            "experiment": found,
            "cells": found.cells.all(),
            "can_run": access.allows(membership, "experiment", "post"),
            "labels": [metrics.metric_label(m, found.k) for m in metrics.METRICS],
            "leaderboard": board,
            "curve": mark_safe(curve) if board else "",  # every label in it is escaped
            "policy": judging.describe_policy(found.policy),
            "misses": _misses(request, found) if board else [],
            "comparison": comparison,
            "other_rows": _other_rows(found) if board else [],
            "compare_error": compare_error,
            "metrics": metrics.METRICS,
            "downloads": [
                (fmt, reverse("experiment-results", kwargs={**kwargs, "fmt": fmt}))
                for fmt in selectors.DOWNLOADS
            ],
            "api_detail": reverse("experiment-detail", kwargs=kwargs),
            "api_cancel": reverse("experiment-cancel", kwargs=kwargs),
            "api_rerun": reverse("experiment-rerun", kwargs=kwargs),
            "list_url": reverse("evalset-experiments", kwargs={"ws": ws, "set_slug": set_slug}),
        },
    )
