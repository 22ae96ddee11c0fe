"""``--plain``: what a command prints for a person instead of JSON.

Each command's JSON value is drawn for reading: memories as a heading line
and their text indented under it, lists as numbered entries or bullets,
listings and counts as tables, recall hits with their relevance and
confidence labelled apart (a hit the entity graph brought in or lifted with
the names that link it to another memory and that memory's first words;
with ``--explain``, how the relevance shown was reached, in the same
numbers), recall-family answers by group, message
matches with the turns around them.

Stored text is hostile: every string from the palace goes through
``safety.printable`` (no control character or escape sequence reaches the
terminal) and every line of it is indented under its heading, so no memory
can print a line that passes for one of the renderer's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mindpalace.models import HIGH_CONFIDENCE
from mindpalace.safety import printable

__all__ = ["render"]

INDENT = "    "
NOTHING = "(nothing)"
LEGEND = "relevance: how well it answers the query; confidence: trust in the memory itself (0-1)"

Renderer = Callable[[Any], str]


def _one(value: object) -> str:
    """A value from the palace on one line (``-`` for none, yes or no for a flag)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return " ".join(printable(str(value)).split()) or "-"


def _block(text: object, indent: str = INDENT) -> list[str]:
    """Stored text, every line of it indented."""
    return [indent + line if line else indent.rstrip() for line in printable(str(text)).split("\n")]


def _date(value: object) -> str:
    return str(value)[:10] if value else "-"


def _tags(memory: Mapping[str, Any]) -> str:
    tags = memory.get("tags") or []
    return "  " + " ".join(f"#{_one(t)}" for t in tags) if tags else ""


def _heading(memory: Mapping[str, Any]) -> str:
    """``mem_…  2026-01-05  decision/unknown  #tags`` (plus kind, state)."""
    head = f"{_one(memory['id'])}  {_date(memory.get('created_at'))}"
    head += f"  {memory['category']}/{memory['type']}"
    kind = memory.get("kind", "memory")
    if kind != "memory":
        about = [_one(memory["project"])] if memory.get("project") else []
        if memory.get("completed") is not None:
            about.append("completed" if memory["completed"] else "open")
        head += f"  {kind}" + (f" ({', '.join(about)})" if about else "")
    if memory.get("archived"):
        head += "  [archived]"
    if memory.get("superseded_by"):
        head += f"  [superseded by {_one(memory['superseded_by'])}]"
    return head + _tags(memory)


def _text(memory: Mapping[str, Any], indent: str = INDENT) -> list[str]:
    title = f"{memory['title']}: " if memory.get("title") else ""
    return _block(title + str(memory["content"]), indent)


def _labels(hit: Mapping[str, Any]) -> str:
    """Relevance and confidence, named, so neither is read as the other."""
    confidence = float(hit["confidence"])
    mark = " (high)" if confidence >= HIGH_CONFIDENCE else ""
    return f"relevance {hit['score']:.2f} · confidence {confidence:.2f}{mark}"


def _numbers(values: Mapping[str, Any], digits: int = 2) -> str:
    return " · ".join(
        f"{name} {value:.{digits}f}" if isinstance(value, float) else f"{name} {value}"
        for name, value in values.items()
    )


def _explain(hit: Mapping[str, Any], indent: str) -> list[str]:
    """How the relevance shown was reached, in the numbers ``--explain`` gives."""
    explain = hit.get("explain")
    if not explain:
        return []
    scores: Mapping[str, float] = explain.get("scores", {})
    derivation = f"relevance {hit['score']:.2f}"
    if "final" in scores:
        final = float(scores["final"])
        ceiling = float(scores.get("ceiling", 1.0))
        derivation += f" = final {final:.2f}"
        if ceiling != 1.0:
            derivation += f" / ceiling {ceiling:.2f}"
        if final > ceiling:
            derivation += ", capped at 1"
        if "mode" in scores:
            derivation += f", x mode {float(scores['mode']):.2f}"
    lines = [f"{indent}explain: {derivation}"]
    if explain.get("ranks"):
        lines.append(f"{indent}  ranks:  {_numbers(explain['ranks'])}")
    if scores:
        lines.append(f"{indent}  scores: {_numbers(scores)}")
    lines += [f"{indent}  gate:   {_one(gate)}" for gate in explain.get("gates", [])]
    return lines


def _linked(link: Mapping[str, Any]) -> str:
    """Why the graph brought a hit: ``linked through Bob to "…"`` (names and
    the linked memory's words; its id is in the JSON)."""
    names = ", ".join(_one(name) for name in link.get("entities", []))
    snippet = link.get("snippet")
    to = f' to "{_one(snippet)}"' if snippet else ""
    return f"{INDENT} linked through {names}{to}"


def _hit(number: int, hit: Mapping[str, Any], extra: str = "") -> list[str]:
    lines = [f"{number}. {_labels(hit)}{extra}  {_heading(hit)}"]
    lines += _text(hit, INDENT + " ")
    lines += [_linked(link) for link in hit.get("reached_via", [])]
    lines += _explain(hit, INDENT + " ")
    return lines


def _hits(hits: Sequence[Mapping[str, Any]]) -> str:
    if not hits:
        return NOTHING
    lines = [LEGEND]
    for number, hit in enumerate(hits, start=1):
        lines += _hit(number, hit)
    return "\n".join(lines)


def _memory(memory: Mapping[str, Any]) -> str:
    """One memory in full: its heading, text, and the fields worth reading."""
    lines = [_heading(memory), *_text(memory)]
    fields = {
        "agent": memory.get("agent_id"),
        "visibility": memory["visibility"]
        + (f" ({_one(memory['group'])})" if memory.get("group") else ""),
        "store": memory.get("store"),
        "source": memory.get("source"),
        "confidence": f"{memory['confidence']:.2f}",
        "strength": f"{memory['strength']:.2f}",
        "session": memory.get("session"),
        "channel": memory.get("channel"),
        "valid": _validity(memory),
    }
    lines += [f"{INDENT}{name}: {_one(value)}" for name, value in fields.items() if value]
    entities = memory.get("entities") or []
    if entities:
        names = ", ".join(f"{_one(e['name'])} ({e['type']})" for e in entities)
        lines.append(f"{INDENT}mentions: {names}")
    return "\n".join(lines)


def _validity(memory: Mapping[str, Any]) -> str | None:
    start, end = memory.get("valid_from"), memory.get("valid_to")
    if not start and not end:
        return None
    return f"{_date(start) if start else '…'} to {_date(end) if end else 'now'}"


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    if not rows:
        return NOTHING
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    out = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        out.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(out)


def _clip(text: object, width: int = 60) -> str:
    line = _one(text)
    return line if len(line) <= width else line[: width - 1] + "…"


def _listing(memories: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [
            _one(m["id"]),
            _date(m.get("created_at")),
            f"{m['category']}/{m['type']}",
            " ".join(f"#{_one(t)}" for t in m.get("tags") or []),
            _clip((f"{m['title']}: " if m.get("title") else "") + str(m["content"])),
        ]
        for m in memories
    ]
    return _table(rows, ["id", "created", "category/type", "tags", "content"])


def _history(memories: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for number, memory in enumerate(memories, start=1):
        state = "current" if not memory.get("superseded_by") else "replaced"
        lines += [f"{number}. [{state}] {_heading(memory)}", *_text(memory, INDENT + " ")]
    return "\n".join(lines) or NOTHING


def _stats(stats: Mapping[str, Any]) -> str:
    lines = [
        f"memories: {stats['memories']}",
        f"archived: {stats['archived']}",
        f"superseded: {stats['superseded']}",
    ]
    for key in ("by_type", "by_store", "by_category", "by_agent"):
        counts = stats.get(key) or {}
        if counts:
            lines.append(f"{key.replace('_', ' ')}:")
            rows = [[_one(name), str(count)] for name, count in counts.items()]
            lines += [INDENT + line for line in _table(rows, ["name", "count"]).split("\n")]
    lines += [f"{k}: {_one(v)}" for k, v in stats.items() if k in {"schema_version", "path"}]
    if "retention" in stats:
        lines.append("retention:")
        lines += [INDENT + line for line in _rules(stats["retention"]).split("\n")]
    return "\n".join(lines)


def _reaches(rule: Mapping[str, Any]) -> str:
    """What a retention rule reaches, in words."""
    what = " ".join(_one(rule[k]) for k in ("store", "category", "type") if rule.get(k))
    whose = "every agent" if rule.get("agent_id") is None else f"agent {_one(rule['agent_id'])}"
    return f"{what + ' ' if what else ''}memories of {whose}"


def _rule(rule: Mapping[str, Any]) -> str:
    return f"Rule {_one(rule['id'])}: {_reaches(rule)} are kept {rule['days']} days."


def _rules(rules: Sequence[Mapping[str, Any]]) -> str:
    rows = [[_one(r["id"]), str(r["days"]), _reaches(r), _date(r["set_at"])] for r in rules]
    return _table(rows, ["rule", "days", "reaches", "set"])


def _answer(answer: Mapping[str, Any]) -> str:
    """A recall-family answer: each group, then its memories with their relation."""
    lines = [_one(answer["notice"])] if answer.get("notice") else []
    groups = [g for g in answer.get("groups", []) if g.get("memories")]
    if not groups:
        return "\n".join([*lines, f"{NOTHING} {_one(answer.get('hint') or '')}".rstrip()])
    lines.append(LEGEND)
    for group in groups:
        lines.append(f"{_one(group['name'])}:")
        for number, item in enumerate(group["memories"], start=1):
            relation = f"  [{_one(item['relation'])}]" if item.get("relation") else ""
            if item.get("via"):
                relation += f" via {_one(item['via'])}"
            lines += [INDENT + line for line in _hit(number, item, relation)]
    return "\n".join(lines)


def _personal(results: Mapping[str, Any]) -> str:
    lines = [_one(results["notice"])] if results.get("notice") else []
    if results.get("narrowed_by"):
        scope = list(results.get("kinds") or [])
        scope += [f"project {_one(results['project'])}"] if results.get("project") else []
        if results.get("completed") is not None:
            scope.append("completed" if results["completed"] else "open")
        lines.append(f"Searched only: {', '.join(scope)} (from the query).")
    found = results.get("results") or []
    for result in found:
        # The attribution is ours and starts the line; the stored text
        # after it is on that one line.
        lines.append(_one(result["line"]))
        lines.append(f"{INDENT}{_labels(result)} · {_one(result['id'])}")
    if not found:
        lines.append(_one(results.get("hint") or NOTHING))
        suggestions = results.get("suggestions") or []
        lines += [f"  - try: {_one(s)}" for s in suggestions]
    return "\n".join(lines)


def _turn(memory: Mapping[str, Any], mark: str) -> list[str]:
    session = f"  [{_one(memory['session'])}]" if memory.get("session") else ""
    head = f"{mark}{_date(memory.get('created_at'))}  {_one(memory['id'])}{session}"
    return [head, *_block(memory["content"], " " * len(mark) + INDENT)]


def _turns(memories: Sequence[Mapping[str, Any]]) -> str:
    lines: list[str] = []
    for memory in memories:
        lines += _turn(memory, "")
    return "\n".join(lines) or NOTHING


def _matches(matches: Sequence[Mapping[str, Any]]) -> str:
    """Each match marked ``>``, the turns around it in their order."""
    out = []
    for number, match in enumerate(matches, start=1):
        lines = [f"match {number}:"]
        for turn in match.get("before", []):
            lines += _turn(turn, "    ")
        lines += _turn(match, "  > ")
        for turn in match.get("after", []):
            lines += _turn(turn, "    ")
        out.append("\n".join(lines))
    return "\n\n".join(out) or NOTHING


def _entities(entities: Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> str:
    if isinstance(entities, Mapping):  # entities join / separate
        done = "joined" if "joined" in entities else "separated"
        verb = "is now the same as" if done == "joined" else "is no longer the same as"
        lines = [
            f"{_one(link['name'])} {verb} {_one(link['same_as_name'])}"
            f" ({link['agent_id']}/{link['visibility']})"
            for link in entities[done]
        ]
        return "\n".join(lines) or NOTHING
    rows = [
        [
            _one(e["name"]),
            str(e["type"]),
            str(e["mentions"]),
            ", ".join(
                [
                    _one(a)
                    for a in e.get("aliases", [])
                    if a not in {link["norm"] for link in e.get("linked", [])}
                ]
                + [
                    f"{_one(link['name'])} = same as {_one(e['name'])} ({_link_words(link)})"
                    for link in e.get("linked", [])
                ]
            ),
        ]
        for e in entities
    ]
    return _table(rows, ["name", "type", "mentions", "aliases"])


def _link_words(link: Mapping[str, Any]) -> str:
    return "first name" if link["link"] == "first_name" else "joined by hand"


def _context(block: Mapping[str, Any]) -> str:
    # The block is built for prompts and already neutralised line by line.
    footer = f"({block['tokens']} of {block['max_tokens']} tokens, {block['tokenizer']})"
    return f"{printable(str(block['context']))}\n{footer}"


def _activated(skills: Sequence[Mapping[str, Any]]) -> str:
    if not skills:
        return NOTHING
    lines = []
    for number, skill in enumerate(skills, start=1):
        tags = " ".join(f"#{_one(t)}" for t in skill.get("tags", []))
        lines.append(f"{number}. relevance {skill['score']:.2f}  {_one(skill['name'])}  {tags}")
        related = ", ".join(
            f"{_one(c['name'])} ({c['weight']:.2f})" for c in skill.get("associative_context", [])
        )
        if related:
            lines.append(f"{INDENT} related: {related}")
    return "\n".join(lines)


def _skill(skill: Mapping[str, Any]) -> str:
    lines = [_one(skill["name"]), *_block(skill["description"])]
    for key in ("tags", "tools"):
        if skill.get(key):
            lines.append(f"{INDENT}{key}: {', '.join(_one(v) for v in skill[key])}")
    for section in skill.get("sections", []):
        lines += ["", f"## {_one(section['title'])}", *_block(section["content"])]
    correlations = skill.get("correlations") or []
    if correlations:
        lines += ["", "correlated skills:"]
        lines += [f"  - {_one(c['name'])} ({c['weight']:.2f})" for c in correlations]
    return "\n".join(lines)


def _found_skills(matches: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        [_one(m["name"]), f"{m['score']:.2f}", ", ".join(_one(t) for t in m.get("matched", []))]
        for m in matches
    ]
    return _table(rows, ["name", "share", "matched tags"])


def _demo(demo: Mapping[str, Any]) -> str:
    lines = [f"palace: {_one(demo['palace'])}", f"remembered: {demo['remembered']}"]
    for recall in demo["recalls"]:
        lines += ["", f"recall {_one(recall['query'])!r}:", _hits(recall["hits"])]
    return "\n".join(lines)


def _fields(value: Any, indent: str = "") -> list[str]:
    """Anything else: ``key: value`` lines, nested objects indented, lists as bullets."""
    if isinstance(value, Mapping):
        lines: list[str] = []
        for key, inner in value.items():
            if (isinstance(inner, Mapping) and inner) or (
                isinstance(inner, list) and inner and not _scalars(inner)
            ):
                lines += [f"{indent}{key}:", *_fields(inner, indent + "  ")]
            elif isinstance(inner, list):
                lines.append(f"{indent}{key}: {', '.join(_one(v) for v in inner) or '-'}")
            else:
                lines.append(f"{indent}{key}: {_one(inner)}")
        return lines
    if isinstance(value, list):
        lines = []
        for item in value:
            inner = _fields(item, indent + "  ")
            first = inner[0].strip() if inner else "-"
            lines += [f"{indent}- {first}", *inner[1:]]
        return lines or [indent + NOTHING]
    return [indent + _one(value)]


def _scalars(values: Iterable[Any]) -> bool:
    return all(not isinstance(v, Mapping | list) for v in values)


def _doctor(report: Mapping[str, Any]) -> str:
    """``ok  name  detail`` per check, a problem's fix indented under it."""
    lines = [f"palace: {_one(report['palace'])}"]
    width = max((len(c["name"]) for c in report["checks"]), default=0)
    for check in report["checks"]:
        mark = "ok  " if check["ok"] else "FAIL"
        lines.append(f"{mark}  {check['name']:<{width}}  {_one(check['detail'])}")
        if check["fix"] and not check["ok"]:
            lines.append(f"{INDENT}fix: {_one(check['fix'])}")
    count = report["problems"]
    lines.append(f"{count} problem{'s' if count != 1 else ''} found." if count else "No problems.")
    return "\n".join(lines)


def _forgotten(result: Mapping[str, Any]) -> str:
    verb = "Deleted" if result["hard"] else "Archived (kept, hidden from recall)"
    return f"{verb}: {_one(result['forgotten'])}"


def _counts(counts: Mapping[str, Any]) -> str:
    shown = [f"{kind} {n}" for kind, n in counts.items() if n and kind != "memories"]
    return ", ".join(shown) or "nothing else"


def _selection(selection: Mapping[str, Any]) -> str:
    if selection.get("kind") == "retention":
        rules = selection.get("rules") or []
        return "retention " + "; ".join(
            f"{_one(r.get('id'))} {_reaches(r)}, {r.get('days')} days: {r.get('memories')}"
            for r in rules
        )
    return " ".join(f"{k}={_one(v)}" for k, v in selection.items())


def _receipt(receipt: Mapping[str, Any]) -> str:
    counts = receipt["counts"]
    head = (
        f"Erased {counts['memories']} memories (receipt {_one(receipt['id'])})."
        if receipt["erased"]
        else f"Would erase {counts['memories']} memories (dry run: add --yes to erase)."
    )
    return "\n".join(
        [
            head,
            f"{INDENT}with: {_counts(counts)}",
            f"{INDENT}selection: {_selection(receipt['selection'])}",
            f"{INDENT}at: {_one(receipt['at'])}",
            f"{INDENT}digest of the ids: {_one(receipt['digest'])}",
            *(
                [f"{INDENT}disk cleanup: {_one(receipt['cleanup'])}"]
                if receipt.get("cleanup")
                else []
            ),
        ]
    )


def _receipts(receipts: Sequence[Mapping[str, Any]]) -> str:
    if not receipts:
        return NOTHING
    rows = [
        [
            _one(r["id"]),
            _date(r["at"]),
            _clip(_selection(r["selection"]), 60),
            str(r["counts"]["memories"]),
            _one(r.get("cleanup") or ""),
        ]
        for r in receipts
    ]
    return _table(rows, ["receipt", "at", "selection", "memories", "cleanup"])


def _updated(memory: Mapping[str, Any]) -> str:
    if not memory.get("updated"):
        return "No change.\n" + _memory(memory)
    head = f"Updated: new version {_one(memory['id'])} replaces {_one(memory['previous_id'])}."
    return head + "\n" + _memory(memory)


_BY_COMMAND: dict[str, Renderer] = {
    "remember": _memory,
    "get": _memory,
    "complete": _memory,
    "update": _updated,
    "recall": _hits,
    "personal-search": _personal,
    "what-do-i-know": _answer,
    "why-did-we": _answer,
    "who-owns": _answer,
    "depends-on": _answer,
    "preflight": _answer,
    "list": _listing,
    "history": _history,
    "entities": _entities,
    "stats": _stats,
    "recent": _turns,
    "search-messages": _matches,
    "context": _context,
    "forget": _forgotten,
    "erase": _receipt,
    "erasures": _receipts,
    "retention set": _rule,
    "retention remove": lambda rule: "Removed. " + _rule(rule),
    "retention list": _rules,
    "retention apply": _receipt,
    "demo": _demo,
    "doctor": _doctor,
    "skills activate": _activated,
    "skills get": _skill,
    "skills find": _found_skills,
}


def render(command: str, value: Any) -> str:
    """What ``command`` (``"skills get"`` for a skills command) prints with
    ``--plain`` for the JSON ``value`` it would print without."""
    renderer = _BY_COMMAND.get(command)
    if renderer is not None:
        return renderer(value)
    return "\n".join(_fields(value)) or NOTHING
