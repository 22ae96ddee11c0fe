"""Retention: rules that erase memories once they are old enough
(``Palace.retention``; the rules themselves are in ``retention_rules``).

``set``, ``list`` and ``remove`` keep the rules in the palace;
``apply`` erases what the rules reach (a dry run unless ``confirm``) as
one erasure with one receipt in the erasure log, whose selection is
``{"kind": "retention", "rules": [...]}``: each rule, its cutoff and how many
memories it reached. Through an agent's view a run reaches that agent's
memories only (``scoping.check_change``, as every erasure); through the
management view, every rule's memories.

Long-running processes (``serve``, ``mcp``, the daemon) run ``apply``
through the management view every ``Settings.retention_every`` seconds
(``background``), as agent ``retention``: processes sharing a palace take
turns (``Store.claim_retention_run``), and a run that erases nothing leaves
no receipt (one by hand always does).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from mindpalace.erasure import erase_memories
from mindpalace.errors import MindPalaceError, NotFoundError, ValidationError
from mindpalace.models import Erasable
from mindpalace.receipts import Receipt
from mindpalace.retention_rules import RetentionRule, parse_days, rule_key
from mindpalace.scoping import check_rule
from mindpalace.view import View

__all__ = ["JOB_AGENT", "Retention", "apply_rules", "background", "run_due"]

JOB_AGENT = "retention"
_log = logging.getLogger(__name__)


class Retention:
    """The retention rules of a palace, as one view may see and change them."""

    def __init__(self, view: View) -> None:
        self._view = view

    def set(
        self,
        days: int,
        *,
        store: str | None = None,
        category: str | None = None,
        type: str | None = None,
        agent_id: str | None = None,
        every_agent: bool = False,
    ) -> RetentionRule:
        """Keep memories that match for ``days`` days, then erase them.

        A rule names at most one store, category and type, and whose
        memories it reaches: the view's agent's (default), another agent's
        (``agent_id``) or every agent's (``every_agent``); the last two need
        the management view. Setting the same combination again changes
        its days.

        Args:
            days: from 1 to 36,500.
            store: only memories of this store.
            category: only memories of this category.
            type: only memories of this type.
            agent_id: the agent whose memories it reaches.
            every_agent: reach every agent's memories.

        Returns:
            The stored rule (an existing one keeps its id).

        Raises:
            ValidationError: bad days, store, category, type or agent id
                (naming the valid ones); ``agent_id`` with ``every_agent``;
                ``every_agent`` with no store, category or type.
            PermissionDenied: a rule beyond the view's own agent, or set
                through a peer-facing view.
        """
        if every_agent and agent_id is not None:
            raise ValidationError(
                "agent_id", agent_id, reason="a rule reaches one agent or every agent, not both"
            )
        if every_agent and store is None and category is None and type is None:
            raise ValidationError(
                "every_agent",
                every_agent,
                reason="a rule for every agent names at least one of store, category, type"
                " (one reaching every memory of the palace is refused)",
            )
        scope = self._view.scope
        whose = None if every_agent else (agent_id or scope.agent_id)
        agent, kind_store, kind_category, kind_type = rule_key(
            agent_id=whose, store=store, category=category, type=type
        )
        now = self._view.now()
        rule = RetentionRule(
            # An id of the engine's, as receipts have: unique and ordered as its others.
            id="ret_" + self._view.engine.ids.next(now).partition("_")[2],
            days=parse_days(days),
            agent_id=agent,
            store=kind_store,
            category=kind_category,
            type=kind_type,
            set_by=scope.agent_id,
            set_at=now,
        )
        check_rule(scope, rule.describe(), rule.agent_id, "set")
        return self._view.engine.store.set_retention_rule(rule)

    def list(self) -> list[RetentionRule]:
        """The rules that reach this view's memories (its agent's and every
        agent's; all of them through the management view), oldest first."""
        scope = self._view.scope
        return self._view.engine.store.retention_rules(None if scope.unscoped else scope.agent_id)

    def remove(self, rule_id: str) -> RetentionRule:
        """Remove a rule; what it would have erased stays.

        Raises:
            NotFoundError: no rule of that id among ``list()``.
            PermissionDenied: a rule this view may not set.
        """
        rule = next((r for r in self.list() if r.id == rule_id), None)
        if rule is None:
            raise NotFoundError(str(rule_id))
        check_rule(self._view.scope, rule.id, rule.agent_id, "remove")
        self._view.engine.store.remove_retention_rule(rule.id)
        return rule

    def apply(self, *, confirm: bool = False) -> Receipt:
        """Erase what the rules reach now: every memory this view may change
        that a rule matches and that is older than the rule's days, with
        its older versions, as one erasure.

        Args:
            confirm: erase (default: a dry run, which writes nothing).

        Returns:
            The receipt (``id`` None for a dry run); its selection lists
            each rule with its cutoff and the memories it reached.
        """
        if not isinstance(confirm, bool):
            raise ValidationError("confirm", confirm, valid=["true", "false"])
        return apply_rules(self._view, self.list(), confirm=confirm)


def apply_rules(view: View, rules: list[RetentionRule], *, confirm: bool) -> Receipt:
    """Erase (or, without ``confirm``, count) what ``rules`` reach through ``view``."""
    now = view.now()
    chosen: dict[str, Erasable] = {}
    reached: list[dict[str, Any]] = []
    for rule in rules:
        found = view.engine.store.erasable(view.scope, rule.filters(now))
        new = [m for m in found if m.id not in chosen]
        chosen.update((m.id, m) for m in new)
        reached.append(
            {
                **{k: v for k, v in rule.to_dict().items() if v is not None},
                "cutoff": rule.cutoff(now).isoformat(),
                "memories": len(new),
            }
        )
    selection = {"kind": "retention", "rules": reached}
    return erase_memories(view.seat, list(chosen.values()), selection, confirm=confirm)


def run_due(view: View, *, every: int, now: datetime | None = None) -> Receipt | None:
    """One background run through ``view`` (the management view) if none
    ran in the last ``every`` seconds and a rule exists; the receipt of
    what it erased, or None (not due, no rule, or nothing to erase)."""
    store = view.engine.store
    rules = store.retention_rules(None)
    if not rules:
        return None
    if not store.claim_retention_run(int((now or view.now()).timestamp()), every):
        return None
    if not apply_rules(view, rules, confirm=False).counts.memories:
        return None
    return apply_rules(view, rules, confirm=True)


@contextlib.contextmanager
def background(view: View, *, every: int | None = None) -> Iterator[threading.Event]:
    """Run ``run_due`` through ``view`` (the management view) every
    ``every`` seconds (``Settings.retention_every``; 0: never) in a thread,
    for as long as the block runs; the thread stops at its end. Yields an
    event set after each run (for tests and status)."""
    period = view.engine.settings.retention_every if every is None else every
    stop, ran = threading.Event(), threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                run_due(view, every=period)
            except MindPalaceError as exc:  # a busy store, a closed one: next time
                _log.warning("retention run failed: %s", exc)
            ran.set()
            stop.wait(min(period, 60))

    thread = None
    if period > 0:
        thread = threading.Thread(target=loop, name="mindpalace-retention", daemon=True)
        thread.start()
    try:
        yield ran
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=30)
