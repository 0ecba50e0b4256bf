"""The figures an eval set's owner watches while it is built.

``evalset_dashboard`` answers the JSON API and feeds the page: items per state and per person,
review throughput from the audit trail, how well each parse found the set's anchors, the
question-type mix, unanswerable and near-duplicate questions, context-grid's own verdict on
what a set this size can detect, and inter-annotator agreement where items were annotated by
several people. Numbers only: the page draws them (``labelling/charts.py``). Each figure costs
a fixed number of queries however large the set (``tests/test_query_counts.py``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import replace
from itertools import combinations

from contextgrid.evalset.quality import assess, minimum_detectable_difference
from django.db.models import Count, Prefetch
from django.db.models.functions import TruncDate
from django.utils import timezone
from rapidfuzz import fuzz, process, utils

from evalsets.anchoring.portability import Tally, reference_span, tally
from evalsets.anchoring.selectors import PARSE_BULK
from evalsets.models import (
    AnchorResolution,
    AssignmentKind,
    EvalItem,
    EvalSet,
    EventKind,
    GoldAnchor,
    ItemAssignment,
    ItemEvent,
    ItemState,
    ParseVersion,
    ResolutionStatus,
)
from evalsets.pure.agreement import cohen_kappa, krippendorff_alpha
from evalsets.releases.bridge import evalset_to_cg
from evalsets.review import selectors as review_selectors

#: Questions this similar (rapidfuzz token-sort ratio, 0-100) are near-duplicates.
NEAR_DUPLICATE_SCORE = 90
#: Above this many items the all-pairs duplicate check is skipped (it grows as n squared).
DUPLICATE_CHECK_LIMIT = 5000
MAX_DUPLICATE_PAIRS = 200
THROUGHPUT_DAYS = 30


def _items(evalset: EvalSet) -> list[EvalItem]:
    # Each resolution knows whether its parse is the reference (``reference_span``), without
    # reading the parse's text.
    resolutions = AnchorResolution.objects.select_related("parse").defer(
        "detail", *(f"parse__{name}" for name in PARSE_BULK)
    )
    anchors = GoldAnchor.objects.select_related("created_by").prefetch_related(
        Prefetch("resolutions", queryset=resolutions)
    )
    return list(
        EvalItem.objects.filter(evalset=evalset)
        .select_related("author")
        .prefetch_related(Prefetch("anchors", queryset=anchors))
        .order_by("created_at", "id")
    )


def evalset_dashboard(evalset: EvalSet) -> dict:
    items = _items(evalset)
    return {
        "evalset": evalset.slug,
        "items": len(items),
        "states": _states(items),
        "people": _people(evalset, items),
        "throughput": _throughput(evalset),
        **_resolution(items),
        "qtypes": _qtypes(items),
        "unanswerable": sum(1 for item in items if _unanswerable(item)),
        "not_started": sum(
            1 for item in items if not item.anchors.all() and not _unanswerable(item)
        ),
        "duplicates": duplicates(items),
        "quality": _quality(evalset, items),
        "agreement": agreement(evalset, items),
    }


# -- counts ----------------------------------------------------------------------------------


def _unanswerable(item: EvalItem) -> bool:
    """An item with no evidence that someone said is unanswerable: typed so, or sent on
    without evidence. A draft nobody has annotated yet is not started, not unanswerable."""
    if item.anchors.all():
        return False
    return item.qtype == "unanswerable" or item.state != ItemState.DRAFT


def _states(items: list[EvalItem]) -> dict[str, int]:
    counts = Counter(item.state for item in items)
    return {state.value: counts.get(state.value, 0) for state in ItemState}


def _people(evalset: EvalSet, items: list[EvalItem]) -> list[dict]:
    rows: dict[str, dict] = {}

    def row(name: str) -> dict:
        return rows.setdefault(
            name,
            {
                "user": name,
                "authored": {state.value: 0 for state in ItemState},
                "anchors": 0,
                "approved": 0,
                "changes_requested": 0,
                "open_annotate": 0,
                "open_review": 0,
            },
        )

    for item in items:
        if item.author is not None:
            row(item.author.username)["authored"][item.state] += 1
        for anchor in item.anchors.all():
            if anchor.created_by is not None:
                row(anchor.created_by.username)["anchors"] += 1
    decisions = (
        ItemEvent.objects.filter(
            workspace=evalset.workspace_id,
            evalset_slug=evalset.slug,
            kind__in=[EventKind.APPROVED, EventKind.CHANGES_REQUESTED],
        )
        .exclude(actor_name="")
        .values_list("actor_name", "kind")
        .annotate(n=Count("id"))
    )
    for name, kind, n in decisions:
        row(name)[kind] += n
    open_work = (
        ItemAssignment.objects.filter(review_selectors.open_assignments(), item__evalset=evalset)
        .values_list("user__username", "kind")
        .annotate(n=Count("id"))
    )
    for name, kind, n in open_work:
        row(name)[f"open_{kind}"] += n
    for entry in rows.values():
        entry["authored_total"] = sum(entry["authored"].values())
    return sorted(rows.values(), key=lambda r: r["user"])


def _throughput(evalset: EvalSet, days: int = THROUGHPUT_DAYS) -> list[dict]:
    """Per day for the last ``days`` days: items submitted, approved and sent back."""
    today = timezone.localdate()
    first = today - dt.timedelta(days=days - 1)
    kinds = [EventKind.SUBMITTED, EventKind.APPROVED, EventKind.CHANGES_REQUESTED]
    counts = (
        ItemEvent.objects.filter(
            workspace=evalset.workspace_id,
            evalset_slug=evalset.slug,
            kind__in=kinds,
            at__date__gte=first,
        )
        .annotate(day=TruncDate("at"))
        .values_list("day", "kind")
        .annotate(n=Count("id"))
    )
    by_day: dict[dt.date, Counter] = defaultdict(Counter)
    for day, kind, n in counts:
        by_day[day][kind] += n
    out = []
    for offset in range(days):
        day = first + dt.timedelta(days=offset)
        out.append({"date": day.isoformat(), **{k.value: by_day[day][k.value] for k in kinds}})
    return out


def _qtypes(items: list[EvalItem]) -> dict[str, int]:
    counts = Counter(item.qtype or "(none)" for item in items)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# -- resolution health -------------------------------------------------------------------------


#: How many of the items a parser loses are named in its row (the count is always whole).
LOST_ITEMS_SHOWN = 50


def _resolution(items: list[EvalItem]) -> dict[str, list[dict]]:
    """Per parse of every document the set quotes (``resolution``), and per parser across
    those documents (``parsers``): anchors found by tier, confirmed, ambiguous and lost, and
    for a parser the items it loses. Both are ``tally`` of the same counts; no query of its
    own beyond the parses'."""
    anchors_by_doc: Counter = Counter()
    statuses: dict[int, Counter] = defaultdict(Counter)
    losing: dict[int, dict[str, None]] = defaultdict(dict)  # parse -> item ids, in order
    for item in items:
        for anchor in item.anchors.all():
            if anchor.document_id is None:
                continue
            anchors_by_doc[anchor.document_id] += 1
            for res in anchor.resolutions.all():
                statuses[res.parse_id][res.status] += 1
                if res.status == ResolutionStatus.NOT_FOUND:
                    losing[res.parse_id][item.item_id] = None
    parses = (
        ParseVersion.objects.filter(document__in=list(anchors_by_doc))
        .select_related("document")
        .defer("text")
        .order_by("document__source_id", "created_at", "id")
    )
    rows = []
    by_parser: dict[tuple[str, str], dict] = {}
    for parse in parses:
        counted = tally(statuses[parse.pk], anchors=anchors_by_doc[parse.document_id])
        rows.append(
            {
                "document": parse.document.source_id,
                "parse": str(parse.public_id),
                "parser": parse.parser,
                "parser_version": parse.parser_version,
                "is_reference": parse.is_reference,
                "status": parse.status,
                **_figures(counted),
            }
        )
        group = by_parser.setdefault(
            (parse.parser, parse.parser_version),
            {"documents": 0, "anchors": 0, "statuses": Counter(), "losing": {}},
        )
        group["documents"] += 1
        group["anchors"] += anchors_by_doc[parse.document_id]
        group["statuses"].update(statuses[parse.pk])
        group["losing"].update(losing[parse.pk])
    table = []
    for (parser, version), group in sorted(by_parser.items()):
        lost_items = list(group["losing"])
        table.append(
            {
                "parser": parser,
                "parser_version": version,
                "documents": group["documents"],
                **_figures(tally(group["statuses"], anchors=group["anchors"])),
                "lost_items": lost_items[:LOST_ITEMS_SHOWN],
                "lost_item_count": len(lost_items),
            }
        )
    return {"resolution": rows, "parsers": table}


def _figures(counted: Tally) -> dict:
    return {
        "anchors": counted["anchors"],
        "by_status": counted["by_status"],
        "found": counted["found"],
        "lost": counted["lost"],
        "ambiguous": counted["ambiguous"],
        "pending": counted["pending"],
        "found_rate": None if counted["found_rate"] is None else round(counted["found_rate"], 4),
    }


# -- duplicates ----------------------------------------------------------------------------------


def question_scores(queries: list[str], choices: list[str], threshold: int = NEAR_DUPLICATE_SCORE):
    """How alike each query is to each choice (0-100; below ``threshold`` counts as 0): the
    one near-duplicate test, used by the dashboard (every pair in a set) and by the warning
    before a question is saved (``near_duplicates_of``)."""
    return process.cdist(
        queries,
        choices,
        scorer=fuzz.token_sort_ratio,
        processor=utils.default_process,
        score_cutoff=threshold,
        dtype="uint8",
        workers=1,
    )


def _same_question(a: str, b: str) -> bool:
    return utils.default_process(a) == utils.default_process(b)


def duplicates(items: list[EvalItem], threshold: int = NEAR_DUPLICATE_SCORE) -> dict:
    """Pairs of questions that are the same or nearly (word order and case ignored)."""
    if len(items) > DUPLICATE_CHECK_LIMIT:
        return {"checked": False, "reason": f"more than {DUPLICATE_CHECK_LIMIT} items", "pairs": []}
    questions = [item.question for item in items]
    pairs: list[dict] = []
    if len(questions) >= 2:
        scores = question_scores(questions, questions, threshold)
        for i, j in zip(*scores.nonzero(), strict=True):
            if i < j:
                score = int(scores[i, j])
                pairs.append(
                    {
                        "a": items[i].item_id,
                        "b": items[j].item_id,
                        "score": score,
                        "exact": _same_question(questions[i], questions[j]),
                    }
                )
    pairs.sort(key=lambda p: (-p["score"], p["a"], p["b"]))
    return {
        "checked": True,
        "threshold": threshold,
        "count": len(pairs),
        "pairs": pairs[:MAX_DUPLICATE_PAIRS],
    }


def near_duplicates_of(
    question: str,
    others: list[tuple[str, str]],
    threshold: int = NEAR_DUPLICATE_SCORE,
    limit: int = 5,
) -> list[dict]:
    """The questions among ``others`` (``(item id, question)`` pairs) that ``question`` repeats
    or nearly repeats, most alike first, ``limit`` at most."""
    if not question.strip() or not others:
        return []
    (scores,) = question_scores([question], [text for _, text in others], threshold)
    found = [
        {
            "id": others[j][0],
            "question": others[j][1],
            "score": int(scores[j]),
            "exact": _same_question(question, others[j][1]),
        }
        for j in scores.nonzero()[0]
    ]
    found.sort(key=lambda d: (-d["score"], d["id"]))
    return found[:limit]


# -- context-grid's verdict ----------------------------------------------------------------------


def _quality(evalset: EvalSet, items: list[EvalItem]) -> dict:
    try:
        converted = evalset_to_cg(evalset, items)
        # context-grid counts a question as checked by a person when meta["reviewed"] is
        # set; in Groundwork that is exactly what approval means.
        approved = {item.item_id for item in items if item.state == ItemState.APPROVED}
        converted = converted.with_items(
            tuple(
                replace(i, meta={**i.meta, "reviewed": True}) if i.id in approved else i
                for i in converted.items
            )
        )
        quality = assess(converted)
    except (TypeError, ValueError) as exc:  # context-grid refused the set as it stands
        return {"error": f"context-grid could not assess this set: {exc}"}
    approved_answerable = sum(
        1 for item in items if item.state == ItemState.APPROVED and item.anchors.all()
    )
    return {
        "size": quality.size,
        "answerable": quality.answerable,
        "unanswerable": quality.unanswerable,
        "detectable_difference": round(quality.detectable_difference, 4),
        "reported_detectable_difference": quality.reported_detectable_difference,
        "summary": quality.summary(),
        "warnings": [w.message for w in quality.warnings().entries],
        # A release holds approved items only: what that release could detect.
        "approved_answerable": approved_answerable,
        "approved_detectable_difference": round(
            minimum_detectable_difference(approved_answerable), 4
        ),
    }


# -- agreement -----------------------------------------------------------------------------------


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _length(spans: dict) -> int:
    return sum(end - start for intervals in spans.values() for start, end in intervals)


def _intersection(a: dict, b: dict) -> int:
    total = 0
    for key in a.keys() & b.keys():
        i = j = 0
        left, right = a[key], b[key]
        while i < len(left) and j < len(right):
            start = max(left[i][0], right[j][0])
            end = min(left[i][1], right[j][1])
            total += max(0, end - start)
            if left[i][1] < right[j][1]:
                i += 1
            else:
                j += 1
    return total


def span_agreement(a: dict, b: dict) -> float:
    """Character-level Jaccard overlap of two annotators' evidence (1.0 when both found none).

    ``a`` and ``b`` map a text (a parse, or a quote with no place yet) to merged intervals.
    """
    inter = _intersection(a, b)
    union = _length(a) + _length(b) - inter
    return 1.0 if union == 0 else inter / union


def _anchor_span(anchor: GoldAnchor) -> tuple[object, int, int]:
    """Where the anchor lies for comparing annotators: in its document's reference parse
    (``reference_span``), else (a typed quote not placed yet) its quote text itself."""
    span = reference_span(anchor, anchor.resolutions.all())
    if span is not None:
        return ("parse", span.parse_id), span.start, span.end
    return ("quote", anchor.source_id, anchor.quote), 0, len(anchor.quote)


def _clusters(spans: list[tuple[int, tuple, int, int, int]]) -> list[dict[int, int]]:
    """Group ``(user, key, start, end, grade)`` anchors whose spans overlap (in the same text)
    into units; each unit maps a user to the highest grade they gave in it."""
    units: list[dict[int, int]] = []
    current_key, current_end = None, -1
    for user, key, start, end, grade in sorted(spans, key=lambda s: (repr(s[1]), s[2], s[3])):
        if key != current_key or start >= current_end:
            units.append({})
            current_key, current_end = key, end
        current_end = max(current_end, end)
        units[-1][user] = max(units[-1].get(user, 0), grade)
    return units


#: A unit's value for an annotator who marked nothing there: they judged it not evidence.
NOT_EVIDENCE = "none"


def grade_agreement(units_by_item: list[tuple[list, list[dict[int, int]]]]) -> dict:
    """Agreement on grades over finished overlapped items: each unit (a place someone marked)
    takes each annotator's grade there, or ``none``. Cohen's kappa per pair of annotators,
    Krippendorff's alpha (nominal) over everyone."""
    pairs: dict[tuple[str, str], list] = defaultdict(list)
    everyone = []
    for annotators, units in units_by_item:
        for unit in units:
            values = {name: unit.get(pk, NOT_EVIDENCE) for pk, name in annotators}
            everyone.append(list(values.values()))
            for (_, n1), (_, n2) in combinations(annotators, 2):
                pairs[(n1, n2)].append((values[n1], values[n2]))
    alpha = krippendorff_alpha(everyone)
    return {
        "units": len(everyone),
        "alpha": None if alpha is None else round(alpha, 4),
        "pairs": [
            {"annotators": list(pair), "units": len(v), "kappa": _rounded(cohen_kappa(v))}
            for pair, v in sorted(pairs.items())
        ],
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _annotators_of(evalset: EvalSet) -> tuple[dict[int, list], dict[int, set[int]]]:
    """Each item's annotate assignees ``(user pk, username)`` and those who finished it."""
    annotators: dict[int, list] = defaultdict(list)
    finished: dict[int, set[int]] = defaultdict(set)
    for item_pk, user_pk, username, done_at in (
        ItemAssignment.objects.filter(item__evalset=evalset, kind=AssignmentKind.ANNOTATE)
        .order_by("user__username")
        .values_list("item", "user", "user__username", "done_at")
    ):
        annotators[item_pk].append((user_pk, username))
        if done_at is not None:
            finished[item_pk].add(user_pk)
    return annotators, finished


def _item_scores(
    annotators: list[tuple[int, str]], anchors: Iterable[GoldAnchor]
) -> tuple[dict[tuple[str, str], float], list[dict[int, int]]]:
    """One item's span agreement per pair of ``annotators`` (``(user pk, username)``), and
    its units for grade agreement (``_clusters``), from its ``anchors``."""
    spans: dict[int, dict] = {user_pk: defaultdict(list) for user_pk, _ in annotators}
    placed = []
    for anchor in anchors:
        if anchor.created_by_id in spans:
            key, start, end = _anchor_span(anchor)
            spans[anchor.created_by_id][key].append((start, end))
            placed.append((anchor.created_by_id, key, start, end, anchor.grade))
    merged = {user: {k: _merge(v) for k, v in s.items()} for user, s in spans.items()}
    scores = {
        (n1, n2): span_agreement(merged[u1], merged[u2])
        for (u1, n1), (u2, n2) in combinations(annotators, 2)
    }
    return scores, _clusters(placed)


def versions_record(annotators: list[tuple[int, str]], anchors: Iterable[GoldAnchor]) -> dict:
    """What agreement needs of one item's versions, by username, for the audit trail: kept
    when adjudication removes the versions' anchors, so the dashboard still compares them."""
    scores, units = _item_scores(annotators, anchors)
    names = dict(annotators)
    return {
        "spans": [[n1, n2, score] for (n1, n2), score in sorted(scores.items())],
        "units": [{names[pk]: grade for pk, grade in unit.items()} for unit in units],
    }


def from_record(
    annotators: list[tuple[int, str]], record: dict
) -> tuple[dict[tuple[str, str], float], list[dict[int, int]]]:
    """``_item_scores`` of the versions ``versions_record`` kept (annotators by username)."""
    pks = {name: pk for pk, name in annotators}
    scores = {(n1, n2): score for n1, n2, score in record.get("spans", [])}
    units = [
        {pks[name]: grade for name, grade in unit.items() if name in pks}
        for unit in record.get("units", [])
    ]
    return scores, units


def _adjudicated_versions(items: list[EvalItem]) -> dict[int, dict]:
    """The versions recorded when each adjudicated item was settled (its last adjudication)."""
    settled = [item.pk for item in items if item.adjudicated_at is not None]
    if not settled:
        return {}
    found: dict[int, dict] = {}
    for item_pk, data in (
        ItemEvent.objects.filter(item__in=settled, kind=EventKind.ADJUDICATED)
        .order_by("id")
        .values_list("item", "data")
    ):
        if "versions" in data:
            found[item_pk] = data["versions"]
    return found


def item_agreement(annotators: list[tuple[int, str]], anchors: Iterable[GoldAnchor]) -> dict:
    """Agreement on one item between its ``annotators`` (``(user pk, username)``): span
    agreement per pair and its mean, and grade agreement (``grade_agreement``) over its units.
    Each anchor's resolutions are read through ``anchor.resolutions.all()``."""
    scores, units = _item_scores(annotators, anchors)
    return {
        "spans": round(sum(scores.values()) / len(scores), 4) if scores else None,
        "pairs": [
            {"annotators": list(pair), "agreement": round(score, 4)}
            for pair, score in sorted(scores.items())
        ],
        "grades": grade_agreement([(annotators, units)]),
    }


def agreement(evalset: EvalSet, items: list[EvalItem]) -> dict:
    """Agreement between the annotators assigned to the same item, only on items every one of
    them finished (submitted their part): people who have not started would otherwise
    "agree" perfectly on finding nothing. Span overlap per item and pair, and agreement on
    grades (``grade_agreement``)."""
    annotators, finished = _annotators_of(evalset)
    assigned = [item for item in items if len(annotators.get(item.pk, ())) >= 2]
    overlapped = [
        item
        for item in assigned
        if all(user_pk in finished[item.pk] for user_pk, _ in annotators[item.pk])
    ]
    # Overlapped items still waiting for someone: the page says "not yet" rather than
    # "nothing assigned" while they are counted out.
    waiting = len(assigned) - len(overlapped)
    if not overlapped:
        return {"items": [], "pairs": [], "mean": None, "waiting": waiting, "grades": None}
    per_item = []
    per_pair: dict[tuple[str, str], list[float]] = defaultdict(list)
    units_by_item = []
    recorded = _adjudicated_versions(overlapped)
    for item in overlapped:
        if item.pk in recorded:  # its anchors now hold the decision, not the versions
            scores, units = from_record(annotators[item.pk], recorded[item.pk])
        else:
            scores, units = _item_scores(annotators[item.pk], item.anchors.all())
        units_by_item.append((annotators[item.pk], units))
        for pair, score in scores.items():
            per_pair[pair].append(score)
        scores = list(scores.values())
        per_item.append(
            {
                "item": item.item_id,
                "annotators": [name for _, name in annotators[item.pk]],
                "agreement": round(sum(scores) / len(scores), 4),
            }
        )
    return {
        "items": per_item,
        "pairs": [
            {"annotators": list(pair), "items": len(v), "agreement": round(sum(v) / len(v), 4)}
            for pair, v in sorted(per_pair.items())
        ],
        "mean": round(sum(r["agreement"] for r in per_item) / len(per_item), 4),
        "waiting": waiting,
        "grades": grade_agreement(units_by_item),
    }
