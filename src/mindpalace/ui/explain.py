"""How the inspector shows recall hits: each with why it was found.

A hit's explanation is what recall itself reports (``Hit.ranks``,
``Hit.stage_scores``, ``Hit.gates``, ``Hit.associative_context``): its
rank and score in each stage, the gates it passed, and the graph paths
that link it to other memories; a hit that propagation brought is shown
with the path from the hit that reached it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mindpalace.models import Hit, HitList
from mindpalace.ui.components import Column, table
from mindpalace.ui.html import Markup, h, join, url
from mindpalace.ui.layout import Ctx, memory_link, short, tags, when

__all__ = ["hit_list", "stage_table"]

# Stages in pipeline order; others (a scorer's, a mode's) follow by name.
_ORDER = (
    "bm25",
    "substring",
    "keyword",
    "dense",
    "fused",
    "graph",
    "session_support",
    "relevance",
    "prior",
    "pipeline",
    "scorer",
    "mode",
    "constraint",
    "final",
)


def _stages(hit: Hit) -> list[str]:
    names = set(hit.ranks) | set(hit.stage_scores)
    known = [n for n in _ORDER if n in names]
    return known + sorted(names - set(known))


def stage_table(hit: Hit) -> Markup:
    """Rank and score of a hit in each stage that saw it."""
    rows = [
        (
            name,
            hit.ranks.get(name, ""),
            f"{hit.stage_scores[name]:.4f}" if name in hit.stage_scores else "",
        )
        for name in _stages(hit)
    ]
    columns = [Column("stage", row_heading=True), Column("rank", "num"), Column("score", "num")]
    return table(columns, rows, attrs={"class": "stages"})


def _path(path: Sequence[str], ids: set[str]) -> Markup:
    """A graph path: memory ids as links, entity names as text."""
    parts: list[object] = []
    for i, step in enumerate(path):
        if i:
            parts.append(h("span", {"class": "arrow"}, " → "))
        if step in ids or step.startswith("mem_"):
            parts.append(h("a", {"href": url("/memories", step), "class": "mono"}, step))
        else:
            parts.append(h("span", {"class": "entity t"}, step))
    return join(parts)


def hit_list(ctx: Ctx, hits: HitList) -> Markup:
    """Hits, best first, each with its explanation."""
    ids = {hit.memory.id for hit in hits}
    reached_by: dict[str, list[tuple[str, Sequence[str], float]]] = {}
    for hit in hits:
        for assoc in hit.associative_context:
            if assoc.memory_id in ids:
                reached_by.setdefault(assoc.memory_id, []).append(
                    (hit.memory.id, assoc.path, assoc.weight)
                )
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in hits.timings.items())
    head = h(
        "p",
        {"class": "muted"},
        f"{len(hits)} hits · {hits.mode} search",
        f" · {timings}" if timings else "",
    )
    notice = h("p", {"class": "notice t"}, hits.notice) if hits.notice else None
    cards = []
    for rank, hit in enumerate(hits, start=1):
        m = hit.memory
        paths = [
            h("li", None, _path(a.path, ids), h("span", {"class": "muted"}, f" ({a.weight:.3f})"))
            for a in hit.associative_context
        ]
        brought = [
            h(
                "li",
                None,
                "reached from ",
                h("a", {"href": url("/memories", src), "class": "mono"}, src),
                ": ",
                _path(path, ids),
                h("span", {"class": "muted"}, f" ({weight:.3f})"),
            )
            for src, path, weight in reached_by.get(m.id, [])
        ]
        cards.append(
            h(
                "li",
                {"class": "hit"},
                h(
                    "div",
                    {"class": "hit-head"},
                    h("span", {"class": "rank"}, f"#{rank}"),
                    h("span", {"class": "score", "title": "relevance, 0-1"}, f"{hit.score:.3f}"),
                    memory_link(m),
                    h("span", {"class": "muted"}, f" {m.category.value} · {m.store.value} · "),
                    when(m.created_at),
                    h("span", {"class": "muted t"}, f" · {m.agent_id}")
                    if ctx.caller.admin or m.agent_id != ctx.caller.agent
                    else None,
                    h("span", {"class": "badge"}, "constraint") if m.constraint else None,
                    h("span", {"class": "badge"}, "archived") if m.archived else None,
                ),
                h("div", {"class": "t title"}, m.title) if m.title else None,
                h("div", {"class": "t content"}, short(m.content, 600)),
                tags(m.tags),
                h(
                    "details",
                    {"class": "why"},
                    h("summary", None, "why this hit"),
                    stage_table(hit),
                    h(
                        "p",
                        None,
                        "gates: ",
                        join(h("span", {"class": "t gate"}, g) for g in hit.gates) or "none",
                    ),
                    h("ul", {"class": "paths"}, brought) if brought else None,
                    h("p", None, "graph paths from this hit:") if paths else None,
                    h("ul", {"class": "paths"}, paths) if paths else None,
                    h("p", {"class": "muted"}, f"confidence {hit.confidence:.2f}"),
                ),
            )
        )
    return join(head, notice, h("ol", {"class": "hits"}, cards))
