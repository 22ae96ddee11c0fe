"""The inspector's other pages: the recall playground, entities and their
neighbourhood graph, skills, conversations, stats, and the login page."""

from __future__ import annotations

from collections import defaultdict

from mindpalace import reading
from mindpalace.errors import ValidationError
from mindpalace.listing import encode_cursor
from mindpalace.models import MemoryType
from mindpalace.recall_request import RecallRequest
from mindpalace.retrieval.modes import MODES
from mindpalace.ui.components import Column, table
from mindpalace.ui.explain import hit_list
from mindpalace.ui.html import Markup, h, join, url
from mindpalace.ui.layout import Ctx, Page, enum_values, memory_link, options, short, tags, when
from mindpalace.ui.svg import (
    bucket_of,
    bucket_size,
    buckets_between,
    neighbourhood_svg,
    sessions_svg,
    stacked_bars,
)
from mindpalace.validation import check_limit

__all__ = [
    "conversations_page",
    "entities_page",
    "graph_page",
    "login_page",
    "recall_page",
    "skill_page",
    "skills_page",
    "stats_page",
    "turns_page",
]


def _int(ctx: Ctx, name: str, default: int, low: int, high: int) -> int:
    raw = ctx.arg(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(
            name, raw, reason=f"{name} must be a whole number from {low} to {high}"
        ) from None
    return check_limit(value, low=low, high=high, field=name)


def login_page(message: str | None, *, form: bool) -> Page:
    """The way in: a bearer token exchanged for a session cookie."""
    if not form:
        body = join(
            h("h1", None, "Log in"),
            h("p", {"class": "t"}, message) if message else None,
            h(
                "p",
                None,
                "Open the link that ",
                h("code", None, "mindpalace ui"),
                " printed (it works once); run it again for a new one.",
            ),
        )
        return Page("Log in", body)
    body = join(
        h("h1", None, "Log in"),
        h("p", {"class": "error t"}, message) if message else None,
        h(
            "p",
            None,
            "Paste a bearer token of this server. Your browser gets a session cookie;"
            " the token is not kept in it.",
        ),
        h(
            "form",
            {"method": "post", "action": "/login", "class": "login"},
            h(
                "label",
                {"class": "wide"},
                "token",
                h(
                    "input",
                    {
                        "type": "password",
                        "name": "token",
                        "autocomplete": "off",
                        "required": True,
                        "id": "token",
                    },
                ),
            ),
            h(
                "label",
                {"class": "wide"},
                "agent (only for a shared token)",
                h("input", {"type": "text", "name": "agent", "id": "agent"}),
            ),
            h("button", {"type": "submit", "id": "login"}, "Log in"),
        ),
    )
    return Page("Log in", body)


# -- recall playground ------------------------------------------------------------------


def recall_page(ctx: Ctx) -> Page:
    """``/recall``: a query's hits with their explanation, and the context
    block the palace would inject for it, with its token count."""
    query = ctx.arg("q")
    max_tokens = _int(ctx, "max_tokens", 2048, 256, 8192)
    limit = _int(ctx, "limit", 10, 1, 100)
    mode = ctx.arg("mode") or None
    form = h(
        "form",
        {"method": "get", "action": "/recall", "class": "filters"},
        h(
            "div",
            {"class": "search"},
            h(
                "input",
                {
                    "type": "search",
                    "name": "q",
                    "value": query,
                    "id": "q",
                    "placeholder": "A task or a question",
                    "aria-label": "query",
                },
            ),
            h("button", {"type": "submit"}, "Recall"),
        ),
        h(
            "div",
            {"class": "row"},
            h(
                "label",
                None,
                "mode",
                h("select", {"name": "mode"}, options(MODES, ctx.arg("mode"), blank="general")),
            ),
            h(
                "label",
                None,
                "hits",
                h(
                    "input",
                    {
                        "type": "number",
                        "name": "limit",
                        "min": "1",
                        "max": "100",
                        "value": str(limit),
                    },
                ),
            ),
            h(
                "label",
                None,
                "token budget",
                h(
                    "input",
                    {
                        "type": "number",
                        "name": "max_tokens",
                        "min": "256",
                        "max": "8192",
                        "value": str(max_tokens),
                    },
                ),
            ),
        ),
    )
    if not query:
        return Page("Recall", join(h("h1", None, "Recall playground"), form), "recall")
    hits = reading.recall(ctx.palace.seat, RecallRequest.of(query, limit=limit, mode=mode))
    block = ctx.palace.context(query, max_tokens=max_tokens)
    sources = [
        h(
            "li",
            None,
            s.kind,
            " ",
            h("a", {"href": url("/skills", s.name), "class": "t"}, s.name)
            if s.kind == "skill" and s.name
            else h("a", {"href": url("/memories", s.id), "class": "mono"}, s.id),
            h(
                "span",
                {"class": "muted"},
                f" score {s.score:.3f}" + (" · cut to fit" if s.truncated else ""),
            ),
        )
        for s in block.sources
    ]
    body = join(
        h("h1", None, "Recall playground"),
        form,
        h(
            "div",
            {"class": "split"},
            h("section", None, h("h2", None, "Hits"), hit_list(ctx, hits)),
            h(
                "section",
                None,
                h("h2", None, "Context block"),
                h(
                    "p",
                    {"class": "muted", "id": "tokens"},
                    f"{block.tokens} of {block.max_tokens} tokens ({block.tokenizer})",
                ),
                h("pre", {"class": "t block", "id": "block"}, block.text),
                h("h3", None, "Sources"),
                h("ol", None, sources),
            ),
        ),
    )
    return Page(f"Recall: {short(query, 60)}", body, "recall")


# -- entities -----------------------------------------------------------------------------


def entities_page(ctx: Ctx) -> Page:
    """``/entities``: the most mentioned entities, filtered by name and type."""
    query = ctx.arg("q")
    found = ctx.palace.graph.entities(query or None, types=ctx.arg("type") or None, limit=200)
    form = h(
        "form",
        {"method": "get", "action": "/entities", "class": "filters"},
        h(
            "div",
            {"class": "search"},
            h(
                "input",
                {
                    "type": "search",
                    "name": "q",
                    "value": query,
                    "placeholder": "Name",
                    "aria-label": "name",
                },
            ),
            h(
                "label",
                None,
                "type",
                h(
                    "select",
                    {"name": "type"},
                    options(enum_values(MemoryType), ctx.arg("type"), blank="any"),
                ),
            ),
            h("button", {"type": "submit"}, "Filter"),
        ),
    )
    rows = [
        (
            join(
                h("a", {"href": url("/entities/graph", name=e.norm), "class": "t"}, e.name),
                *(
                    h(
                        "div",
                        {"class": "muted"},
                        f"{link.name}: same as {e.name} ("
                        + ("first name" if link.link == "first_name" else "joined by hand")
                        + ")",
                    )
                    for link in e.linked
                ),
            ),
            e.type.value,
            e.kind,
            e.mentions,
            e.agent_id,
            e.visibility.value,
        )
        for e in found
    ]
    columns: list[Column | str] = [
        "name",
        "type",
        "found as",
        Column("mentions", "num"),
        Column("agent", "t"),
        "visibility",
    ]
    listed = table(columns, rows, empty="No entity.")
    return Page("Entities", join(h("h1", None, "Entities"), form, listed), "entities")


def graph_page(ctx: Ctx) -> Page:
    """``/entities/graph?name=``: an entity's neighbourhood as a graph, and
    the memories behind each edge."""
    name = ctx.arg("name")
    hood = ctx.palace.graph.neighbourhood(name, limit=_int(ctx, "limit", 12, 1, 50), per_edge=5)
    title = hood.entities[0].name if hood.entities else hood.norm
    edges = [
        h(
            "li",
            {"id": f"edge-{i}", "class": "edge-item"},
            h(
                "h3",
                None,
                h("a", {"href": url("/entities/graph", name=e.norm), "class": "t"}, e.name),
                h("span", {"class": "muted"}, f" {e.type.value} · weight {e.weight:.3f}"),
            ),
            h(
                "ul",
                None,
                [
                    h(
                        "li",
                        None,
                        memory_link(m),
                        " ",
                        h("span", {"class": "t"}, short(m.content, 200)),
                    )
                    for m in e.memories
                ],
            )
            if e.memories
            else h("p", {"class": "muted"}, "No live memory behind this edge now."),
        )
        for i, e in enumerate(hood.edges)
    ]
    scopes = ", ".join(sorted({f"{e.agent_id}/{e.visibility.value}" for e in hood.entities}))
    body = join(
        h("h1", {"class": "t"}, title),
        h(
            "p",
            {"class": "muted"},
            f"{sum(e.mentions for e in hood.entities)} mentions · {hood.entities[0].type.value}"
            f" · in {scopes}"
            if hood.entities
            else "",
        ),
        h("p", None, h("a", {"href": url("/memories", q=title)}, "Search memories for it")),
        neighbourhood_svg(hood) if hood.edges else h("p", {"class": "muted"}, "No neighbour."),
        h("ol", {"class": "edges"}, edges),
    )
    return Page(f"Entity: {short(title, 40)}", body, "entities")


# -- skills ---------------------------------------------------------------------------------


def skills_page(ctx: Ctx) -> Page:
    """``/skills``: every skill visible, by name."""
    found = ctx.palace.memories(types="skill", limit=1000)
    found.sort(key=lambda m: (m.title or "", m.id))
    rows = [
        (
            h("a", {"href": url("/skills", m.title or m.id), "class": "t"}, m.title or m.id),
            short(m.content, 160),
            tags(m.tags),
            m.agent_id,
        )
        for m in found
    ]
    columns: list[Column | str] = [
        "skill",
        Column("what it does", "t"),
        "tags",
        Column("agent", "t"),
    ]
    listed = table(columns, rows, empty="No skill.")
    return Page("Skills", join(h("h1", None, "Skills"), listed), "skills")


def skill_page(ctx: Ctx) -> Page:
    """``/skills/{name}``: a skill's sections, tools and correlations (looking
    does not count as using it)."""
    skill = ctx.palace.skills.get(ctx.path["name"], record=False)
    sections = [
        h(
            "section",
            {"class": "skill-section"},
            h("h3", {"class": "t"}, s.title),
            h("pre", {"class": "t"}, s.content),
        )
        for s in skill.sections
    ]
    correlations = [
        (
            h("a", {"href": url("/skills", c.name), "class": "t"}, c.name),
            f"{c.weight:.3f}",
            f"{c.declared:.3f}",
            f"{c.learned:.3f}",
        )
        for c in skill.correlations
    ]
    weights = [Column(name, "num") for name in ("weight", "declared", "learned")]
    body = join(
        h("h1", {"class": "t"}, skill.name),
        h("p", {"class": "t"}, skill.description),
        h("p", None, tags(skill.tags), " ", memory_link_id(skill.memory_id)),
        h(
            "p",
            {"class": "muted"},
            f"activated {skill.activations} times · fetched {skill.gets} times · last used ",
            when(skill.last_used),
            " · updated ",
            when(skill.updated_at),
        ),
        h("h2", None, "Tools"),
        h("ul", None, [h("li", {"class": "t mono"}, t) for t in skill.tools])
        if skill.tools
        else h("p", {"class": "muted"}, "None."),
        h("h2", None, "Sections"),
        sections or h("p", {"class": "muted"}, "None."),
        h("h2", None, "Correlated skills"),
        table(["skill", *weights], correlations, empty="None."),
    )
    return Page(f"Skill: {skill.name}", body, "skills")


def memory_link_id(memory_id: str) -> Markup:
    """A link to a memory's page by id."""
    return h("a", {"href": url("/memories", memory_id), "class": "mono"}, memory_id)


# -- conversations ----------------------------------------------------------------------------


def conversations_page(ctx: Ctx) -> Page:
    """``/conversations``: sessions on a time line, latest first, paged."""
    timeline = ctx.palace.timeline
    page = timeline.sessions(limit=40, cursor=ctx.arg("cursor") or None)
    more = (
        h(
            "a",
            {
                "href": url("/conversations", cursor=timeline.next_cursor(page)),
                "rel": "next",
                "class": "more",
            },
            "Earlier sessions →",
        )
        if len(page) == 40
        else None
    )
    rows = [
        (
            h(
                "a",
                {"href": url("/conversations/turns", session=s.session), "class": "t"},
                s.session,
            ),
            s.turns,
            when(s.first_at),
            when(s.last_at),
        )
        for s in page
    ]
    body = join(
        h("h1", None, "Conversations"),
        sessions_svg(page),
        table(["session", Column("memories", "num"), "first", "last"], rows) if rows else None,
        more,
    )
    return Page("Conversations", body, "conversations")


def turns_page(ctx: Ctx) -> Page:
    """``/conversations/turns?session=``: a session's memories in order."""
    session = ctx.arg("session")
    page_size = 200
    found = ctx.palace.memories(
        sessions=[session], limit=page_size + 1, cursor=ctx.arg("cursor") or None
    )
    page = found[:page_size]
    earlier = None
    if len(found) > page_size:
        earlier = h(
            "a",
            {
                "href": url(
                    "/conversations/turns", session=session, cursor=encode_cursor(page[-1])
                ),
                "rel": "next",
                "class": "more",
            },
            "← Earlier turns",
        )
    turns = [
        h(
            "li",
            {"class": "turn"},
            h("div", {"class": "turn-head"}, when(m.created_at), " ", memory_link(m)),
            h("div", {"class": "t content"}, m.content),
        )
        for m in reversed(page)
    ]
    body = join(
        h("h1", {"class": "t"}, session),
        earlier,
        h("ol", {"class": "turns"}, turns) if turns else h("p", {"class": "muted"}, "No turn."),
    )
    return Page(f"Session {short(session, 40)}", body, "conversations")


# -- stats -------------------------------------------------------------------------------------


def _counts(title: str, counts: dict[str, int]) -> Markup:
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return table(
        [Column("name", "t"), Column("count", "num")],
        rows,
        attrs={"class": "counts"},
        caption=title,
        head=False,
    )


def stats_page(ctx: Ctx) -> Page:
    """``/stats``: counts by category, store, type and agent; live memories
    by category and by store over time."""
    stats = ctx.palace.timeline.stats()
    days = ctx.palace.timeline.by_day()
    charts: list[Markup] = []
    if days:
        size = bucket_size(days[0].day, days[-1].day)
        labels = buckets_between(days[0].day, days[-1].day, size)
        where = {label: i for i, label in enumerate(labels)}
        for attribute, title in (("category", "by category"), ("store", "by store")):
            series: dict[str, list[int]] = defaultdict(lambda: [0] * len(labels))
            for row in days:
                series[getattr(row, attribute)][where[bucket_of(row.day, size)]] += row.count
            ordered = dict(sorted(series.items(), key=lambda kv: -sum(kv[1])))
            charts.append(h("h2", None, f"New memories per {size}, {title}"))
            charts.append(stacked_bars(labels, ordered, label=f"memories per {size} {title}"))
    body = join(
        h("h1", None, "Stats"),
        h(
            "p",
            None,
            f"{stats.memories} memories · {stats.archived} archived · "
            f"{stats.superseded} old versions · schema {stats.schema_version}",
        ),
        charts or h("p", {"class": "muted"}, "No memory yet."),
        h(
            "div",
            {"class": "grid"},
            _counts("by category", dict(stats.by_category)),
            _counts("by store", dict(stats.by_store)),
            _counts("by type", dict(stats.by_type)),
            _counts("by agent", dict(stats.by_agent)),
        ),
    )
    return Page("Stats", body, "stats")
