"""The inspector's erasure: choose a selection, see what it would remove (a
dry run), then confirm; and the erasure log.

Three steps, as ``Palace.erase`` has them: ``GET /erase`` is the form and
the log; ``POST /erase/preview`` runs the dry run and shows its counts with
a form that repeats the selection and confirms it; ``POST /erase`` erases
and shows the receipt. Both writes carry the session's CSRF token and come
from this site (``app``); the palace is the caller's view, so the one rule
(``scoping.check_change``) decides as on every other surface. Nothing
shown holds erased text: the counts, the digest, the selection (a person's
name as its SHA-256 once in the log).
"""

from __future__ import annotations

from mindpalace.errors import ValidationError
from mindpalace.models import Category, MemoryType, StoreKind
from mindpalace.receipts import Receipt
from mindpalace.selection import SELECTION_KINDS, Selection, parse_selection
from mindpalace.ui.components import Column, fields, table
from mindpalace.ui.html import Markup, h, join
from mindpalace.ui.layout import Ctx, Page, csrf_form, enum_values, options, when

__all__ = ["confirm_erase", "erase_page", "preview_erase"]

# The form's fields, in the order the selection takes them.
_FIELDS = ("kind", "value", "type", "category", "store", "before")
_LOG = 50


def _selection(ctx: Ctx) -> Selection:
    """The selection the form names (one type, category or store each)."""
    return parse_selection(
        ctx.field("kind"),
        ctx.field("value").strip() or None,
        types=ctx.field("type") or None,
        categories=ctx.field("category") or None,
        stores=ctx.field("store") or None,
        created_before=ctx.field("before").strip() or None,
    )


def _form(ctx: Ctx) -> Markup:
    def chosen(name: str) -> str:
        return ctx.field(name) or ctx.arg(name)

    return csrf_form(
        ctx,
        "/erase/preview",
        h(
            "div",
            {"class": "row"},
            h(
                "label",
                None,
                "what",
                h(
                    "select",
                    {"name": "kind", "id": "kind"},
                    options(SELECTION_KINDS, chosen("kind"), blank=None),
                ),
            ),
            h(
                "label",
                None,
                "memory id, channel, session or name",
                h(
                    "input",
                    {"type": "text", "name": "value", "id": "value", "value": chosen("value")},
                ),
            ),
        ),
        h(
            "div",
            {"class": "row"},
            h("span", {"class": "muted small"}, "with what: filter"),
            *(
                h(
                    "label",
                    None,
                    name,
                    h(
                        "select",
                        {"name": name},
                        options(enum_values(cls), chosen(name), blank="any"),
                    ),
                )
                for name, cls in (
                    ("type", MemoryType),
                    ("category", Category),
                    ("store", StoreKind),
                )
            ),
            h(
                "label",
                None,
                "created before",
                h("input", {"type": "date", "name": "before", "value": chosen("before")}),
            ),
        ),
        h(
            "div",
            {"class": "actions"},
            h("button", {"type": "submit", "id": "preview"}, "Show what would be erased"),
        ),
    )


def _counts(receipt: Receipt) -> Markup:
    pairs = [(kind.replace("_", " "), str(n)) for kind, n in receipt.counts.to_dict().items()]
    return fields(pairs, attrs={"id": "counts"}, value_class="num")


def _shown(selection: object) -> str:
    if not isinstance(selection, dict):
        return str(selection)
    return " · ".join(
        f"{k} {v if isinstance(v, str) else ', '.join(map(str, v))}" for k, v in selection.items()
    )


def _log(ctx: Ctx) -> Markup:
    receipts = ctx.palace.erasures(limit=_LOG)
    columns = [
        Column("when", "nowrap"),
        Column("by", "t"),
        Column("selection", "t"),
        Column("memories", "num"),
        Column("receipt", "mono small"),
    ]
    rows = [
        (when(r.at), r.agent_id, _shown(dict(r.selection)), str(r.counts.memories), r.id or "")
        for r in receipts
    ]
    return table(columns, rows, attrs={"id": "erasures"}, empty="No erasure yet.")


def erase_page(ctx: Ctx) -> Page:
    """``/erase``: the selection form and the erasure log."""
    scope = "any agent's memories (management view)" if ctx.caller.admin else "your own memories"
    body = join(
        h("h1", None, "Erase"),
        h(
            "p",
            None,
            f"Removes for good {scope}, every older version of each and every record derived"
            " from them. You see what would go before anything is erased.",
        ),
        _form(ctx),
        h("h2", None, "Erasure log"),
        _log(ctx),
    )
    return Page("Erase", body, "erase")


def preview_erase(ctx: Ctx) -> Page:
    """``POST /erase/preview``: the dry run's counts, and the confirm form."""
    selection = _selection(ctx)
    receipt = ctx.palace.erase(selection, confirm=False)
    n = receipt.counts.memories
    confirm = (
        csrf_form(
            ctx,
            "/erase",
            *(h("input", {"type": "hidden", "name": f, "value": ctx.field(f)}) for f in _FIELDS),
            h("input", {"type": "hidden", "name": "digest", "value": receipt.digest}),
            h(
                "button",
                {"type": "submit", "class": "danger", "id": "confirm"},
                f"Erase these {n} memories for good",
            ),
        )
        if n
        else h(
            "p",
            {"class": "muted"},
            "Nothing to erase: the selection reaches no memory you may change.",
        )
    )
    body = join(
        h("h1", None, "Erase: what would go"),
        h(
            "p",
            {"class": "notice", "id": "summary"},
            f"Would erase {n} memories ({_shown(selection.to_dict())}). Nothing is erased yet.",
        ),
        _counts(receipt),
        h("div", {"class": "actions"}, confirm, h("a", {"href": "/erase"}, "Cancel")),
    )
    return Page("Erase", body, "erase")


def confirm_erase(ctx: Ctx) -> Page:
    """``POST /erase``: erase what the preview showed, and show the receipt.

    The preview's digest of the memories' ids comes back with the form: if
    the selection now reaches other memories (written or erased in between),
    nothing is erased and the new preview is shown instead.
    """
    selection = _selection(ctx)
    if not ctx.field("digest"):
        raise ValidationError("digest", "", reason="confirm an erasure from its preview")
    if ctx.palace.erase(selection, confirm=False).digest != ctx.field("digest"):
        page = preview_erase(ctx)
        warning = h(
            "p",
            {"class": "error", "id": "changed"},
            "The selection changed since the preview: check it again.",
        )
        return Page(page.title, join(warning, page.body), page.section, status=409)
    receipt = ctx.palace.erase(selection, confirm=True)
    body = join(
        h("h1", None, "Erased"),
        h(
            "p",
            {"class": "notice", "id": "summary"},
            f"Erased {receipt.counts.memories} memories. Receipt {receipt.id},"
            f" digest {receipt.digest}.",
        ),
        _counts(receipt),
        h("p", None, h("a", {"href": "/erase"}, "Back to erasure")),
    )
    return Page("Erased", body, "erase")
