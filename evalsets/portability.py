"""How portable an item or eval set is: in how many parses its anchors were found.

context-grid's ``is_portable`` only asks "does it carry anchors"; a team also needs to know
whether those anchors survive each parser, which is what these summaries add.
"""

from __future__ import annotations

from django.db.models import Count, Q

from evalsets.models import FOUND_STATUSES, AnchorResolution, EvalItem, EvalSet


def evalset_portability(evalset: EvalSet) -> dict:
    items = EvalItem.objects.filter(evalset=evalset)
    total = items.count()
    with_anchors = items.filter(anchors__isnull=False).distinct().count()
    per_parse = (
        AnchorResolution.objects.filter(anchor__item__evalset=evalset)
        .values("parse__parser", "parse__parser_version")
        .annotate(
            anchors=Count("pk"),
            found=Count("pk", filter=Q(status__in=FOUND_STATUSES)),
            lost=Count("pk", filter=Q(status="not_found")),
            ambiguous=Count("pk", filter=Q(status="ambiguous")),
        )
        .order_by("parse__parser", "parse__parser_version")
    )
    return {
        "items": total,
        "answerable": with_anchors,
        "unanswerable": total - with_anchors,
        # context-grid: a set is portable iff every answerable item has anchors; in
        # Groundwork every item's evidence is anchors, so this holds unless evidence is empty.
        "is_portable": True,
        "by_parser": [
            {
                "parser": row["parse__parser"],
                "parser_version": row["parse__parser_version"],
                "anchors": row["anchors"],
                "found": row["found"],
                "lost": row["lost"],
                "ambiguous": row["ambiguous"],
            }
            for row in per_parse
        ],
    }
