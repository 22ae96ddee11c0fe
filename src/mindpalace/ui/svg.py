"""Drawings made on the server as SVG: an entity's neighbourhood, stacked
bars of counts over time, sessions on a time line.

Built with the same escaping builder as the pages (names are text, never
markup); colours come from classes in the stylesheet, since the
Content-Security-Policy allows no inline style.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date

from mindpalace.conversations import clock_time
from mindpalace.graphview import Neighbourhood
from mindpalace.timeline import SessionSummary
from mindpalace.ui.html import Markup, h, url

__all__ = [
    "bucket_of",
    "bucket_size",
    "buckets_between",
    "neighbourhood_svg",
    "sessions_svg",
    "stacked_bars",
]

SERIES = 10  # colour classes s0..s9 in app.css


def _label(name: str, limit: int = 22) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def neighbourhood_svg(hood: Neighbourhood) -> Markup:
    """The entity in the middle, its neighbours on a circle around it; an
    edge's width grows with its weight. Each edge links to its list of
    memories below the drawing, each neighbour to its own neighbourhood."""
    width, height = 720, 460
    cx, cy, radius = width / 2, height / 2, 170
    centre = hood.entities[0].name if hood.entities else hood.norm
    edges = []
    nodes = []
    count = max(1, len(hood.edges))
    strongest = max((e.weight for e in hood.edges), default=1.0) or 1.0
    for i, edge in enumerate(hood.edges):
        angle = 2 * math.pi * i / count - math.pi / 2
        x, y = cx + radius * math.cos(angle), cy + radius * math.sin(angle)
        stroke = 1.5 + 6 * edge.weight / strongest
        edges.append(
            h(
                "a",
                {"href": f"#edge-{i}", "class": "edge"},
                h(
                    "title",
                    None,
                    f"{centre} — {edge.name}: weight {edge.weight:.3f}, "
                    f"{len(edge.memories)} memories shown",
                ),
                h(
                    "line",
                    {
                        "x1": f"{cx:.1f}",
                        "y1": f"{cy:.1f}",
                        "x2": f"{x:.1f}",
                        "y2": f"{y:.1f}",
                        "stroke-width": f"{stroke:.1f}",
                    },
                ),
            )
        )
        anchor = "start" if math.cos(angle) > 0.2 else "end" if math.cos(angle) < -0.2 else "middle"
        dx = 14 if anchor == "start" else -14 if anchor == "end" else 0
        dy = 26 if anchor == "middle" and math.sin(angle) > 0 else -14 if anchor == "middle" else 4
        nodes.append(
            h(
                "a",
                {"href": url("/entities/graph", name=edge.norm), "class": "node"},
                h("title", None, f"{edge.name} ({edge.type.value})"),
                h(
                    "circle",
                    {
                        "cx": f"{x:.1f}",
                        "cy": f"{y:.1f}",
                        "r": "9",
                        "class": f"type-{edge.type.value}",
                    },
                ),
                h(
                    "text",
                    {"x": f"{x + dx:.1f}", "y": f"{y + dy:.1f}", "text-anchor": anchor},
                    _label(edge.name),
                ),
            )
        )
    centre_type = hood.entities[0].type.value if hood.entities else "unknown"
    middle = h(
        "g",
        {"class": "node centre"},
        h(
            "circle",
            {"cx": f"{cx:.1f}", "cy": f"{cy:.1f}", "r": "16", "class": f"type-{centre_type}"},
        ),
        h(
            "text",
            {"x": f"{cx:.1f}", "y": f"{cy + 36:.1f}", "text-anchor": "middle"},
            _label(centre, 30),
        ),
    )
    return h(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {width} {height}",
            "class": "graph",
            "role": "img",
            "aria-label": f"neighbourhood of {centre}",
        },
        h("g", {"class": "edges"}, edges),
        h("g", {"class": "nodes"}, nodes),
        middle,
    )


def stacked_bars(
    buckets: Sequence[str],
    series: Mapping[str, Sequence[int]],
    *,
    label: str,
) -> Markup:
    """One bar per bucket (a day, week or month), stacked by series, with
    the series in the legend; every bar has a tooltip of its counts."""
    width, height = 760, 260
    left, bottom, top = 48, 36, 12
    names = list(series)
    totals = [sum(series[n][i] for n in names) for i in range(len(buckets))]
    peak = max(totals, default=0) or 1
    step = (width - left - 8) / max(1, len(buckets))
    bar = max(1.0, step * 0.8)
    scale = (height - bottom - top) / peak
    bars = []
    for i, bucket in enumerate(buckets):
        x = left + i * step + (step - bar) / 2
        y: float = height - bottom
        parts = [
            h(
                "title",
                None,
                f"{bucket}: {totals[i]}"
                + "".join(f"\n{n}: {series[n][i]}" for n in names if series[n][i]),
            ),
        ]
        for k, name in enumerate(names):
            value = series[name][i]
            if not value:
                continue
            tall = value * scale
            y -= tall
            parts.append(
                h(
                    "rect",
                    {
                        "x": f"{x:.1f}",
                        "y": f"{y:.1f}",
                        "width": f"{bar:.1f}",
                        "height": f"{tall:.1f}",
                        "class": f"s{k % SERIES}",
                    },
                )
            )
        bars.append(h("g", {"class": "bar"}, parts))
    ticks = []
    for fraction in (0, 0.5, 1):
        tick = round(peak * fraction)
        y = height - bottom - tick * scale
        ticks.append(
            h(
                "text",
                {"x": f"{left - 6}", "y": f"{y + 4:.1f}", "text-anchor": "end", "class": "axis"},
                tick,
            )
        )
        ticks.append(
            h(
                "line",
                {
                    "x1": f"{left}",
                    "x2": f"{width - 8}",
                    "y1": f"{y:.1f}",
                    "y2": f"{y:.1f}",
                    "class": "grid",
                },
            )
        )
    every = max(1, math.ceil(len(buckets) / 8))
    for i in range(0, len(buckets), every):
        x = left + i * step + step / 2
        ticks.append(
            h(
                "text",
                {
                    "x": f"{x:.1f}",
                    "y": f"{height - bottom + 16}",
                    "text-anchor": "middle",
                    "class": "axis",
                },
                buckets[i],
            )
        )
    legend = h(
        "ul",
        {"class": "legend"},
        [
            h("li", None, h("span", {"class": f"key s{k % SERIES}"}), name)
            for k, name in enumerate(names)
        ],
    )
    chart = h(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {width} {height}",
            "class": "chart",
            "role": "img",
            "aria-label": label,
        },
        h("g", None, ticks),
        h("g", None, bars),
    )
    return h("figure", {"class": "chart"}, chart, legend)


def sessions_svg(sessions: Sequence[SessionSummary]) -> Markup:
    """Sessions as bars on one time line, from their first to their last
    memory, newest at the top; each bar links to the session's turns."""
    if not sessions:
        return h("p", {"class": "muted"}, "No session.")
    width, row, left = 760, 18, 170
    start = min(s.first_at for s in sessions).timestamp()
    end = max(s.last_at for s in sessions).timestamp()
    span = max(end - start, 1.0)
    usable = width - left - 10
    rows = []
    for i, s in enumerate(sessions):
        x0 = left + (s.first_at.timestamp() - start) / span * usable
        x1 = left + (s.last_at.timestamp() - start) / span * usable
        y = 8 + i * row
        rows.append(
            h(
                "a",
                {"href": url("/conversations/turns", session=s.session)},
                h(
                    "title",
                    None,
                    f"{s.session}: {s.turns} turns, {clock_time(s.first_at)}"
                    f" to {clock_time(s.last_at)}",
                ),
                h(
                    "text",
                    {"x": f"{left - 8}", "y": f"{y + 11}", "text-anchor": "end", "class": "axis"},
                    _label(s.session, 24),
                ),
                h(
                    "rect",
                    {
                        "x": f"{x0:.1f}",
                        "y": f"{y + 2}",
                        "width": f"{max(3.0, x1 - x0):.1f}",
                        "height": f"{row - 6}",
                        "class": "s0",
                    },
                ),
            )
        )
    height = 8 + len(sessions) * row + 24
    axis = [
        h(
            "text",
            {"x": f"{left}", "y": f"{height - 6}", "class": "axis"},
            f"{min(s.first_at for s in sessions):%Y-%m-%d}",
        ),
        h(
            "text",
            {"x": f"{width - 10}", "y": f"{height - 6}", "class": "axis", "text-anchor": "end"},
            f"{max(s.last_at for s in sessions):%Y-%m-%d}",
        ),
    ]
    return h(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "viewBox": f"0 0 {width} {height}",
            "class": "timeline",
            "role": "img",
            "aria-label": "sessions over time",
        },
        rows,
        axis,
    )


def bucket_of(day: date, size: str) -> str:
    """The label of the bucket (day, week or month) a day falls in."""
    if size == "month":
        return f"{day:%Y-%m}"
    if size == "week":
        year, week, _ = day.isocalendar()
        return f"{year}-W{week:02d}"
    return f"{day:%Y-%m-%d}"


def bucket_size(first: date, last: date) -> str:
    """Days for up to two months, weeks for up to a year and a half, else months."""
    days = (last - first).days
    return "day" if days <= 62 else "week" if days <= 550 else "month"


def buckets_between(first: date, last: date, size: str) -> list[str]:
    """Every bucket label from ``first`` to ``last``, in order, none missing."""
    out: list[str] = []
    day = first
    while day <= last:
        label = bucket_of(day, size)
        if not out or out[-1] != label:
            out.append(label)
        day = date.fromordinal(day.toordinal() + 1)
    return out
