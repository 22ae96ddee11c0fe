"""The memories pages: a filtered, paged list; search through recall; one
memory with its versions, entities and signals; and the writes (update,
forget, restore, feedback)."""

from __future__ import annotations

from typing import Any

from mindpalace import listing, reading, writing
from mindpalace.draft import UPDATE_FIELDS, Changes
from mindpalace.errors import PermissionDenied, ValidationError
from mindpalace.models import Category, Memory, MemoryType, StoreKind
from mindpalace.recall_request import RecallRequest
from mindpalace.scoping import check_change
from mindpalace.ui.components import Column, fields, table
from mindpalace.ui.explain import hit_list
from mindpalace.ui.html import Markup, h, join, url
from mindpalace.ui.layout import (
    Ctx,
    Page,
    Redirect,
    csrf_form,
    enum_values,
    memory_link,
    options,
    short,
    tags,
    when,
)

__all__ = [
    "feedback_memory",
    "forget_memory",
    "memories_page",
    "memory_page",
    "restore_memory",
    "update_memory",
]

PAGE = 50
_FILTERS = ("q", "type", "store", "category", "tags", "agent", "session", "after", "before")


def _filter_form(ctx: Ctx) -> Markup:
    def text_input(name: str, label: str, kind: str = "text", hint: str = "") -> Markup:
        return h(
            "label",
            None,
            label,
            h("input", {"type": kind, "name": name, "value": ctx.arg(name), "placeholder": hint}),
        )

    def select(name: str, label: str, values: list[str]) -> Markup:
        return h(
            "label",
            None,
            label,
            h("select", {"name": name}, options(values, ctx.arg(name), blank="any")),
        )

    def check(name: str, label: str) -> Markup:
        return h(
            "label",
            {"class": "check"},
            h(
                "input",
                {"type": "checkbox", "name": name, "value": "1", "checked": bool(ctx.arg(name))},
            ),
            label,
        )

    return h(
        "form",
        {"method": "get", "action": "/memories", "class": "filters"},
        h(
            "div",
            {"class": "search"},
            h(
                "input",
                {
                    "type": "search",
                    "name": "q",
                    "value": ctx.arg("q"),
                    "placeholder": "Search through recall (empty: list, newest first)",
                    "aria-label": "search",
                    "id": "q",
                },
            ),
            h("button", {"type": "submit"}, "Go"),
        ),
        h(
            "div",
            {"class": "row"},
            select("type", "type", enum_values(MemoryType)),
            select("store", "store", enum_values(StoreKind)),
            select("category", "category", enum_values(Category)),
            text_input("tags", "tags", hint="a, b"),
            text_input("agent", "agent", hint="owner"),
            text_input("session", "session"),
            text_input("after", "from", "date"),
            text_input("before", "before", "date"),
            check("archived", "archived too"),
            check("superseded", "old versions too"),
        ),
    )


def _filters(ctx: Ctx) -> dict[str, Any]:
    return {
        "types": ctx.arg("type") or None,
        "stores": ctx.arg("store") or None,
        "categories": ctx.arg("category") or None,
        "tags": ctx.arg("tags") or None,
        "agents": ctx.arg("agent") or None,
        "include_archived": bool(ctx.arg("archived")),
        "created_after": ctx.arg("after") or None,
        "created_before": ctx.arg("before") or None,
    }


_COLUMNS = [
    Column("created", "nowrap"),
    Column("id"),
    Column("kind", "muted"),
    Column("agent", "t"),
    Column("memory", "content"),
]


def _row(ctx: Ctx, m: Memory) -> tuple[object, ...]:
    flags = [
        h("span", {"class": "badge"}, name)
        for name, on in (
            ("archived", m.archived),
            ("old version", m.superseded_by is not None),
            ("constraint", m.constraint),
        )
        if on
    ]
    return (
        when(m.created_at),
        memory_link(m),
        f"{m.category.value} · {m.store.value} · {m.type.value}",
        m.agent_id,
        join(
            h("b", {"class": "t"}, m.title, ": ") if m.title else None,
            h("span", {"class": "t"}, short(m.content)),
            " ",
            tags(m.tags),
            flags,
        ),
    )


def memories_page(ctx: Ctx) -> Page:
    """``/memories``: the list (newest first, keyset paged) or, with ``q``,
    recall's hits with their explanation."""
    query = ctx.arg("q")
    filters = _filters(ctx)
    if query:
        notes = []
        if ctx.arg("session"):
            notes.append(
                h("p", {"class": "notice"}, "The session filter applies to the list only.")
            )
        hits = reading.recall(ctx.palace.seat, RecallRequest.of(query, limit=PAGE, **filters))
        body = join(_filter_form(ctx), notes, hit_list(ctx, hits))
        return Page(f"Search: {short(query, 60)}", body, "memories")
    session = ctx.arg("session")
    found = ctx.palace.memories(
        limit=PAGE + 1,
        cursor=ctx.arg("cursor") or None,
        sessions=[session] if session else None,
        include_superseded=bool(ctx.arg("superseded")),
        **filters,
    )
    page = found[:PAGE]
    more = None
    if len(found) > PAGE:
        params = {k: ctx.arg(k) for k in (*_FILTERS, "archived", "superseded")}
        params["cursor"] = listing.encode_cursor(page[-1])
        more = h(
            "a",
            {"href": url("/memories", **params), "class": "more", "rel": "next"},
            "Older memories →",
        )
    rows = [_row(ctx, m) for m in page]
    listed = table(_COLUMNS, rows, attrs={"class": "memories"}, empty="No memory matches.")
    return Page("Memories", join(_filter_form(ctx), listed, more), "memories")


def _refusal(ctx: Ctx, m: Memory, action: str) -> str | None:
    """Why the caller may not ``action`` ``m`` (``scoping.check_change``,
    as the write itself would answer), or None when it may: a page offers
    only the writes that would work."""
    try:
        check_change(ctx.palace.scope, m, action)
    except PermissionDenied as exc:
        return exc.reason
    return None


def _edit_form(ctx: Ctx, m: Memory) -> Markup:
    def select(name: str, values: list[str], chosen: str) -> Markup:
        return h(
            "label", None, name, h("select", {"name": name}, options(values, chosen, blank=None))
        )

    return csrf_form(
        ctx,
        url("/memories", m.id, "update"),
        h("h2", None, "Edit"),
        h(
            "p",
            {"class": "muted"},
            "Saving writes a new version with a new id; this one is kept in the history.",
        ),
        h(
            "label",
            {"class": "wide"},
            "content",
            h(
                "textarea",
                {"name": "content", "rows": "6"},
                # a parser drops one newline after <textarea>
                "\n" + m.content,
            ),
        ),
        h(
            "label",
            {"class": "wide"},
            "title",
            h("input", {"type": "text", "name": "title", "value": m.title or ""}),
        ),
        h(
            "label",
            {"class": "wide"},
            "tags",
            h("input", {"type": "text", "name": "tags", "value": ", ".join(m.tags)}),
        ),
        h(
            "div",
            {"class": "row"},
            select("category", enum_values(Category), m.category.value),
            select("type", enum_values(MemoryType), m.type.value),
            select("store", enum_values(StoreKind), m.store.value),
        ),
        h("button", {"type": "submit", "id": "save"}, "Save new version"),
    )


def _actions(ctx: Ctx, m: Memory) -> Markup:
    parts = []
    refused = _refusal(ctx, m, "restore" if m.archived else "forget")
    if refused is not None:
        parts.append(h("p", {"class": "muted"}, f"You may not change this memory: {refused}."))
    elif m.archived:
        parts.append(
            csrf_form(
                ctx,
                url("/memories", m.id, "restore"),
                h("button", {"type": "submit", "id": "restore"}, "Restore"),
            )
        )
    else:
        parts.append(
            csrf_form(
                ctx,
                url("/memories", m.id, "forget"),
                h("button", {"type": "submit", "id": "forget"}, "Forget (archive)"),
                confirm="Archive this memory? Recall will no longer find it; you can restore it.",
            )
        )
    if _refusal(ctx, m, "forget") is None:
        parts.append(
            csrf_form(
                ctx,
                url("/memories", m.id, "forget"),
                h("input", {"type": "hidden", "name": "hard", "value": "1"}),
                h("button", {"type": "submit", "class": "danger"}, "Delete permanently"),
                confirm="Delete this memory for good? This cannot be undone.",
            )
        )
    if _refusal(ctx, m, "feedback") is None:
        for useful, label in ((True, "Useful"), (False, "Not useful")):
            parts.append(
                csrf_form(
                    ctx,
                    url("/memories", m.id, "feedback"),
                    h(
                        "input",
                        {"type": "hidden", "name": "useful", "value": "1" if useful else "0"},
                    ),
                    h("button", {"type": "submit", "class": "quiet"}, f"Feedback: {label}"),
                )
            )
    return h("div", {"class": "actions"}, parts)


def _fields(m: Memory) -> Markup:
    rows: list[tuple[str, object]] = [
        ("id", h("span", {"class": "mono"}, m.id)),
        ("agent", h("span", {"class": "t"}, m.agent_id)),
        ("kind", f"{m.kind.value} · {m.category.value} · {m.store.value} · {m.type.value}"),
        ("visibility", f"{m.visibility.value}" + (f" (group {m.group})" if m.group else "")),
        ("channel", m.channel or "—"),
        (
            "session",
            h(
                "a",
                {"href": url("/conversations/turns", session=m.session), "class": "t"},
                m.session,
            )
            if m.session
            else "—",
        ),
        ("source", m.source.value),
        ("created", when(m.created_at)),
        ("updated", when(m.updated_at)),
        ("last accessed", when(m.last_accessed_at)),
        ("valid", join(when(m.valid_from), " → ", when(m.valid_to))),
        ("strength · confidence", f"{m.strength:.3f} · {m.confidence:.3f}"),
        ("accessed", f"{m.access_count} times"),
        ("project", m.project or "—"),
        ("tags", tags(m.tags) or "—"),
    ]
    if m.superseded_by:
        rows.append(
            (
                "replaced by",
                h(
                    "a",
                    {"href": url("/memories", m.superseded_by), "class": "mono"},
                    m.superseded_by,
                ),
            )
        )
    return fields(rows)


def memory_page(ctx: Ctx) -> Page:
    """``/memories/{memory_id}``: one memory, its versions, entities and signals."""
    palace = ctx.palace
    m = palace.get(ctx.path["memory_id"])
    history = palace.graph.history(m.id)
    entities = palace.graph.mentions(m.id)
    signals = palace.signals.about(m.id, limit=50)
    useful = sum(1 for s in signals if s.kind == "feedback" and s.data.get("useful") is True)
    useless = sum(1 for s in signals if s.kind == "feedback" and s.data.get("useful") is False)
    versions = [
        h(
            "li",
            {"class": "version current" if v.id == m.id else "version"},
            memory_link(v),
            " ",
            when(v.created_at),
            h("span", {"class": "muted"}, " updated "),
            when(v.updated_at),
            h("span", {"class": "badge"}, "this version") if v.id == m.id else None,
            h("span", {"class": "badge"}, "current") if v.superseded_by is None else None,
            h("div", {"class": "t content"}, short(v.content, 400)),
        )
        for v in history
    ]
    entity_items = [
        h(
            "li",
            None,
            h("a", {"href": url("/entities/graph", name=e.norm), "class": "t"}, e.name),
            h("span", {"class": "muted"}, f" {e.type.value} · {e.kind} · {e.mentions} mentions"),
        )
        for e in entities
    ]
    signal_rows = [
        (when(s.at), s.kind, s.agent_id, ", ".join(f"{k}={v}" for k, v in sorted(s.data.items())))
        for s in signals
    ]
    signal_columns = [
        Column("at", "nowrap"),
        Column("kind"),
        Column("agent", "t"),
        Column("data", "t mono small"),
    ]
    body = join(
        h("h1", {"class": "t"}, m.title or "Memory"),
        h("pre", {"class": "t memory-content", "id": "content"}, m.content),
        _fields(m),
        _actions(ctx, m),
        _edit_form(ctx, m)
        if _refusal(ctx, m, "update") is None and m.superseded_by is None
        else None,
        h("h2", None, f"Versions ({len(history)})"),
        h("ol", {"class": "versions", "id": "versions"}, versions),
        h("h2", None, f"Entities ({len(entities)})"),
        h("ul", {"class": "entities"}, entity_items)
        if entity_items
        else h("p", {"class": "muted"}, "None linked."),
        h("h2", None, "Signals"),
        h("p", None, f"feedback: {useful} useful, {useless} not useful"),
        table(signal_columns, signal_rows, attrs={"class": "signals"}, empty="No signal recorded."),
    )
    return Page(m.title or f"Memory {m.id}", body, "memories")


def update_memory(ctx: Ctx) -> Redirect:
    """``POST /memories/{memory_id}/update``: a new version from the edit form."""
    memory_id = ctx.path["memory_id"]
    if ctx.form is None or "content" not in ctx.form:
        raise ValidationError("content", None, reason="the form sends content")
    # The edit form's fields are named after the update's; one it leaves
    # out is kept, an emptied one cleared (the title, the tags).
    sent = {name: value for name, value in ctx.form.items() if name in UPDATE_FIELDS}
    sent["content"] = sent["content"].replace("\r\n", "\n")
    new = writing.change(ctx.palace.seat, memory_id, Changes.given(**sent))
    return Redirect(url("/memories", new.id))


def forget_memory(ctx: Ctx) -> Redirect:
    """``POST /memories/{memory_id}/forget``: archive (or, with ``hard``, delete)."""
    memory_id = ctx.path["memory_id"]
    hard = ctx.field("hard") == "1"
    ctx.palace.forget(memory_id, hard=hard)
    return Redirect("/memories" if hard else url("/memories", memory_id))


def restore_memory(ctx: Ctx) -> Redirect:
    """``POST /memories/{memory_id}/restore``: bring an archived memory back."""
    memory = ctx.palace.restore(ctx.path["memory_id"])
    return Redirect(url("/memories", memory.id))


def feedback_memory(ctx: Ctx) -> Redirect:
    """``POST /memories/{memory_id}/feedback``: useful (1) or not (0)."""
    value = ctx.field("useful")
    if value not in ("0", "1"):
        raise ValidationError("useful", value, valid=["1", "0"])
    ctx.palace.feedback(ctx.path["memory_id"], useful=value == "1")
    return Redirect(url("/memories", ctx.path["memory_id"]))
