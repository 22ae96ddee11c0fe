"""The inspector's page frame and the pieces pages share.

A page function takes a ``Ctx`` (the caller's palace, the request's query,
path and form) and returns a ``Page`` (title and body) or a ``Redirect``;
``render`` wraps a page in the common frame. Nothing here reads the
palace: pages do, through its public API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from starlette.datastructures import QueryParams

from mindpalace.conversations import clock_time
from mindpalace.models import Memory
from mindpalace.palace import Palace
from mindpalace.ui.html import Markup, h, join, url
from mindpalace.web.identity import Caller

__all__ = [
    "NAV",
    "Ctx",
    "Page",
    "Redirect",
    "csrf_form",
    "enum_values",
    "error_page",
    "memory_link",
    "options",
    "render",
    "short",
    "tags",
    "when",
]

NAV = (
    ("memories", "/memories", "Memories"),
    ("recall", "/recall", "Recall"),
    ("entities", "/entities", "Entities"),
    ("skills", "/skills", "Skills"),
    ("conversations", "/conversations", "Conversations"),
    ("stats", "/stats", "Stats"),
    ("erase", "/erase", "Erase"),
)


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a page function gets.

    Attributes:
        palace: the caller's view of the palace.
        caller: who the browser acts as.
        csrf: the session's form token (written into every form that writes).
        query: the query string.
        path: the path's parameters.
        form: a write's form fields (None for a read).
    """

    palace: Palace
    caller: Caller
    csrf: str
    query: QueryParams
    path: Mapping[str, str]
    form: Mapping[str, str] | None = None

    def arg(self, name: str, default: str = "") -> str:
        """A query-string value, stripped ("" when absent)."""
        return (self.query.get(name) or default).strip()

    def field(self, name: str) -> str:
        """A form field ("" when absent)."""
        return (self.form or {}).get(name, "")


@dataclass(frozen=True, slots=True)
class Page:
    """A page to render: its title, the nav section it belongs to, its body."""

    title: str
    body: Markup
    section: str = ""
    status: int = 200


@dataclass(frozen=True, slots=True)
class Redirect:
    """Go to another page of this site (after a write)."""

    to: str


def error_page(status: int, message: str) -> Page:
    """A page that says what went wrong."""
    titles = {
        400: "Invalid input",
        401: "Log in",
        403: "Not allowed",
        404: "Not found",
        429: "Slow down",
    }
    title = titles.get(status, "Error")
    body = h(
        "section",
        {"class": "error"},
        h("h1", None, title),
        h("p", {"class": "t"}, message),
        h("p", None, h("a", {"href": "/memories"}, "Back to the memories")),
    )
    return Page(title, body, status=status)


def render(page: Page, ctx: Ctx | None) -> str:
    """The whole document of ``page``; ``ctx`` None for pages outside a
    session (login, errors before one)."""
    nav = []
    who = None
    if ctx is not None:
        nav = [
            h("a", {"href": link, "class": "on" if key == page.section else None}, label)
            for key, link, label in NAV
        ]
        view = "every agent (management view)" if ctx.caller.admin else "own view"
        who = h(
            "div",
            {"class": "who"},
            h("span", None, "agent ", h("b", {"class": "t"}, ctx.caller.agent), f" · {view}"),
            csrf_form(ctx, "/logout", h("button", {"type": "submit"}, "Log out")),
        )
    return "<!doctype html>\n" + h(
        "html",
        {"lang": "en"},
        h(
            "head",
            None,
            h("meta", {"charset": "utf-8"}),
            h("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
            h("title", None, f"{page.title} · mindpalace"),
            h("link", {"rel": "stylesheet", "href": "/static/app.css"}),
            h("link", {"rel": "icon", "href": "/static/favicon.svg", "type": "image/svg+xml"}),
            h("script", {"src": "/static/app.js", "defer": True}),
        ),
        h(
            "body",
            None,
            h(
                "header",
                None,
                h("a", {"href": "/memories", "class": "brand"}, "mindpalace"),
                h("nav", None, nav),
                who,
            ),
            h("main", None, page.body),
        ),
    )


def csrf_form(ctx: Ctx, action: str, *children: object, confirm: str | None = None) -> Markup:
    """A POST form to ``action`` carrying the session's CSRF token."""
    return h(
        "form",
        {"method": "post", "action": action, "class": "inline", "data-confirm": confirm},
        h("input", {"type": "hidden", "name": "csrf", "value": ctx.csrf}),
        *children,
    )


def options(values: Iterable[str], chosen: str | Sequence[str], *, blank: str | None) -> Markup:
    """``<option>`` elements, ``chosen`` selected; a first empty one labelled
    ``blank`` unless None."""
    picked = {chosen} if isinstance(chosen, str) else set(chosen)
    out = [h("option", {"value": ""}, blank)] if blank is not None else []
    out += [h("option", {"value": v, "selected": v in picked}, v) for v in values]
    return join(out)


def enum_values(cls: type[Enum]) -> list[str]:
    """The values of an enum, in declaration order."""
    return [str(m.value) for m in cls]


def when(moment: datetime | None) -> Markup:
    """A time, as a ``<time>`` element with the full ISO value as its title."""
    if moment is None:
        return h("span", {"class": "muted"}, "—")
    return h(
        "time",
        {"datetime": moment.isoformat(), "title": moment.isoformat()},
        clock_time(moment),
    )


def short(content: str, limit: int = 240) -> str:
    """The start of a text, for lists."""
    flat = " ".join(content.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def tags(values: Iterable[str]) -> Markup:
    """Tags as links to the memories having them."""
    return join(
        h("a", {"class": "tag t", "href": url("/memories", tags=tag)}, tag) for tag in values
    )


def memory_link(memory: Memory, label: str | None = None) -> Markup:
    """A link to a memory's page."""
    return h("a", {"href": url("/memories", memory.id), "class": "mono"}, label or memory.id)
