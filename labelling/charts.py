"""The dashboard's charts: small inline SVGs drawn from ``evalsets.review.dashboard``'s figures.

Drawing lives here, in the UI layer, with the colours and words of ``labelling.labels``;
the domain computes the numbers only. Inline SVG keeps the page free of a JS chart library.
Every label is escaped: questions types and document names are user input.
"""

from __future__ import annotations

from django.utils.html import escape

from labelling.labels import RESOLUTION_COLOURS, STATE_COLOURS, resolution_words, state_words


def bar_chart(rows: list[tuple[str, int]], *, title: str, colours: dict | None = None) -> str:
    """Horizontal bars, one per ``(label, value)``."""
    width, label_w, bar_h, gap = 460, 150, 18, 6
    height = max(1, len(rows)) * (bar_h + gap) + 4
    top = max([v for _, v in rows] + [1])
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}"><title>{escape(title)}</title>'
    ]
    for index, (label, value) in enumerate(rows):
        y = index * (bar_h + gap) + 2
        w = int((width - label_w - 50) * value / top)
        colour = (colours or {}).get(label, "#2f5bd3")
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{w}" height="{bar_h}" fill="{colour}"/>'
            f'<text x="{label_w + w + 4}" y="{y + 13}">{value}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def stacked_bars(rows: list[tuple[str, list[tuple[str, int]]]], *, title: str) -> str:
    """One horizontal bar per row, split into coloured segments (resolution tiers)."""
    width, label_w, bar_h, gap = 560, 220, 18, 6
    height = max(1, len(rows)) * (bar_h + gap) + 4
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}"><title>{escape(title)}</title>'
    ]
    span = width - label_w - 10
    for index, (label, segments) in enumerate(rows):
        y = index * (bar_h + gap) + 2
        total = sum(v for _, v in segments) or 1
        x = float(label_w)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>'
        )
        for name, value in segments:
            if not value:
                continue
            w = span * value / total
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                f'fill="{RESOLUTION_COLOURS.get(name, "#888")}">'
                f"<title>{escape(resolution_words(name))}: {value}</title></rect>"
            )
            x += w
    parts.append("</svg>")
    return "".join(parts)


def column_chart(days: list[dict], series: list[str], *, title: str) -> str:
    """Grouped columns per day (review throughput)."""
    width, height, bottom = 640, 160, 20
    top = max([d[s] for d in days for s in series] + [1])
    slot = width / max(1, len(days))
    bar_w = max(1.0, (slot - 2) / len(series))
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}"><title>{escape(title)}</title>'
    ]
    for index, day in enumerate(days):
        for k, name in enumerate(series):
            value = day[name]
            if not value:
                continue
            h = (height - bottom - 4) * value / top
            x = index * slot + k * bar_w
            parts.append(
                f'<rect x="{x:.1f}" y="{height - bottom - h:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}" fill="{STATE_COLOURS.get(name, "#888")}"><title>{day["date"]} '
                f"{escape(state_words(name))}: {value}</title></rect>"
            )
    if days:
        parts.append(
            f'<text x="0" y="{height - 4}">{days[0]["date"]}</text>'
            f'<text x="{width}" y="{height - 4}" text-anchor="end">{days[-1]["date"]}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def charts(data: dict) -> dict[str, str]:
    """The dashboard's SVG charts, from ``evalset_dashboard``'s figures."""
    return {
        "states": bar_chart(
            [(state_words(state), n) for state, n in data["states"].items()],
            title="Items per state",
            colours={state_words(state): colour for state, colour in STATE_COLOURS.items()},
        ),
        "qtypes": bar_chart(list(data["qtypes"].items()), title="Question types"),
        "throughput": column_chart(
            data["throughput"],
            ["submitted", "approved", "changes_requested"],
            title=f"Review throughput, last {len(data['throughput'])} days",
        ),
        "resolution": stacked_bars(
            [
                (
                    f"{r['document']} · {r['parser']} {r['parser_version']}".strip(),
                    [*r["by_status"].items(), ("pending", r["pending"])],
                )
                for r in data["resolution"]
            ],
            title="Anchors found per parse, by tier",
        ),
    }


#: Line colours for the recall@k curves, cycled by row.
CURVE_COLOURS = ("#2f5bd3", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207")


def curve_chart(series: list[tuple[str, list[float]]], *, title: str) -> str:
    """Recall at 1..k, one line per ``(name, values)``, with a legend beside it."""
    width, height, left, bottom, legend_w = 620, 240, 40, 28, 240
    plot_w, plot_h = width - left - legend_w - 10, height - bottom - 10
    k = max([len(values) for _, values in series] + [1])

    def point(cut: int, value: float) -> str:
        x = left + (plot_w * (cut / max(1, k - 1)) if k > 1 else plot_w / 2)
        return f"{x:.1f},{10 + plot_h * (1 - value):.1f}"

    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}"><title>{escape(title)}</title>',
        f'<line x1="{left}" y1="{10 + plot_h}" x2="{left + plot_w}" y2="{10 + plot_h}" '
        'stroke="#888"/>',
        f'<line x1="{left}" y1="10" x2="{left}" y2="{10 + plot_h}" stroke="#888"/>',
        f'<text x="{left - 4}" y="14" text-anchor="end">1</text>',
        f'<text x="{left - 4}" y="{10 + plot_h}" text-anchor="end">0</text>',
    ]
    for cut in range(k):
        x = point(cut, 0).split(",")[0]
        parts.append(f'<text x="{x}" y="{height - 8}" text-anchor="middle">{cut + 1}</text>')
    for index, (name, values) in enumerate(series):
        colour = CURVE_COLOURS[index % len(CURVE_COLOURS)]
        points = " ".join(point(cut, value) for cut, value in enumerate(values))
        y = 16 + index * 18
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}">'
            f"<title>{escape(name)}</title></polyline>"
            f'<rect x="{width - legend_w}" y="{y - 9}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{width - legend_w + 14}" y="{y}">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
