"""Whose eyes a palace looks through: building its ``Scope`` and checking
where its writes may go and which memories it may change.

The policy, in one place:

* An ordinary palace acts as one agent (with its groups) and, optionally,
  through one channel: it sees its own memories, shared ones and its groups'
  ones, unchannelled or of its channel.
* A **peer-facing** palace (``peer=True`` or ``MINDPALACE_PEER=on``) acts for
  one peer, e.g. one client chat of a coaching agent. It must name its
  channel: without one it fails closed with a ``ValidationError`` instead of
  falling back to a wider view ("peer-first fallback"). It sees that
  channel's memories plus unchannelled memories explicitly shared (visibility
  shared, or a group of its groups); it writes only into its own channel.
* The **management** view (``management=True``) is the one deliberately
  unscoped read; it must be asked for, and a peer-facing palace cannot have it.

Who may change a memory it sees (``check_change``, the one rule every
surface reaches through the facade's writes):

* the management view: any memory, by any action;
* ``feedback`` judges a memory without changing it (a signal of the judge's
  own): any view, on any memory it sees;
* every other action (forget, update, restore, complete, erase): an agent
  changes only its own memories; a peer-facing view only those of its own
  channel, never the agent's unchannelled (shared or group) ones, which
  every peer of the agent reads.

Who may set or remove a retention rule (``check_rule``): the management
view, any rule; an agent's own view (not peer-facing: a rule reaches every
channel), a rule of its own agent's memories only. Applying rules erases
through ``check_change`` like any erasure.
"""

from __future__ import annotations

from collections.abc import Iterable

from mindpalace.errors import PermissionDenied, ValidationError
from mindpalace.models import Erasable, Memory, Scope
from mindpalace.validation import check_agent_id, check_identifier

__all__ = [
    "ACTIONS",
    "build_scope",
    "check_change",
    "check_import",
    "check_rule",
    "write_channel",
    "write_owner",
]

# What ``check_change`` decides: the ways a caller may change a memory it sees.
ACTIONS = ("forget", "update", "restore", "complete", "feedback", "erase")
# Actions that leave the memory as it is (they record something of the caller's).
_JUDGING = frozenset({"feedback"})


def build_scope(
    agent_id: str,
    *,
    groups: Iterable[str] = (),
    channel: str | None = None,
    management: bool = False,
    peer: bool = False,
) -> Scope:
    """The validated scope of a palace.

    Raises:
        ValidationError: a bad name; a peer-facing palace without a channel,
            or with management access.
    """
    agent = check_agent_id(agent_id)
    if isinstance(groups, str):  # "a,b", as tags
        groups = groups.split(",")
    elif not isinstance(groups, Iterable):  # None, or a caller's mistake
        if groups is not None:
            raise ValidationError("groups", groups, reason="groups must be a list of names")
        groups = ()
    names = tuple(g for g in (check_identifier(x, "groups", optional=True) for x in groups) if g)
    where = check_identifier(channel, "channel", optional=True)
    if peer and management:
        raise ValidationError(
            "management",
            management,
            reason="a peer-facing palace cannot have management access; open a separate"
            " palace with management=True (--all-agents) for a deliberately unscoped read",
        )
    if management:
        return Scope(agent_id=agent, unscoped=True)
    if peer and where is None:
        raise ValidationError(
            "channel",
            channel,
            reason="a peer-facing palace needs the peer's channel (e.g. 'peer-coach:511');"
            " it never widens to every channel. Use management=True (--all-agents) for a"
            " deliberately unscoped read",
        )
    return Scope(agent_id=agent, groups=names, channel=where, peer=peer)


def write_channel(scope: Scope, requested: object) -> str | None:
    """The channel a new memory goes into: the requested one, else the scope's.

    Raises:
        ValidationError: a peer-facing scope asked to write into another
            channel (one peer must not plant memories in another's channel).
    """
    channel = check_identifier(requested, "channel", optional=True)
    if channel is None:
        return scope.channel
    if scope.peer and channel != scope.channel:
        raise ValidationError(
            "channel",
            channel,
            valid=[scope.channel or ""],
            reason="a peer-facing palace writes only into its own channel",
        )
    return channel


def check_change(scope: Scope, memory: Memory | Erasable, action: str) -> None:
    """Refuse ``action`` on the visible ``memory`` unless ``scope`` may do it
    (the rule is in the module's docstring). A memory ``scope`` cannot see
    is the caller's ``NotFoundError`` before this is asked.

    Raises:
        ValidationError: ``action`` is not one of ``ACTIONS``.
        PermissionDenied: naming the action, the memory and why not.
    """
    if action not in ACTIONS:
        raise ValidationError("action", action, valid=ACTIONS)
    if scope.unscoped or action in _JUDGING:
        return
    if memory.agent_id != scope.agent_id:
        raise PermissionDenied(
            memory.id,
            memory.agent_id,
            action=action,
            reason=f"it belongs to agent {memory.agent_id!r}, not to {scope.agent_id!r};"
            " another agent's memory is read only",
        )
    if scope.peer and memory.channel != scope.channel:
        where = "unchannelled" if memory.channel is None else f"in channel {memory.channel!r}"
        raise PermissionDenied(
            memory.id,
            memory.agent_id,
            action=action,
            reason=f"it is {where}, and a peer-facing view (channel {scope.channel!r}) changes"
            f" only memories of its own channel; agent {memory.agent_id!r} may change it"
            " through a view that is not peer-facing",
        )


def write_owner(scope: Scope) -> str | None:
    """The agent whose memories the store's guarded changes (archive,
    delete, revise, restore) are limited to: the scope's, or None (any
    agent's) for the management view. ``check_change`` decides first; this
    only keeps a change from landing elsewhere in between."""
    return None if scope.unscoped else scope.agent_id


def check_import(scope: Scope, memories: Iterable[Memory]) -> None:
    """Imported memories must be the scope's own: its agent's, in a channel
    it writes to (its own; or none, unless it is peer-facing). Management
    imports anything.

    Raises:
        PermissionDenied: naming the first memory that is not.
    """
    if scope.unscoped:
        return
    channels = {scope.channel} if scope.peer else {None, scope.channel}
    for memory in memories:
        if memory.agent_id != scope.agent_id:
            raise PermissionDenied(
                memory.id,
                memory.agent_id,
                action="import",
                reason=f"it belongs to agent {memory.agent_id!r}, not to {scope.agent_id!r}",
            )
        if memory.channel not in channels:
            where = "unchannelled" if memory.channel is None else f"in channel {memory.channel!r}"
            if scope.peer:
                into = f"a peer-facing palace imports only into its channel {scope.channel!r}"
            elif scope.channel:
                into = f"this palace imports only unchannelled or channel {scope.channel!r} ones"
            else:
                into = "this palace imports only unchannelled ones"
            raise PermissionDenied(
                memory.id, memory.agent_id, action="import", reason=f"it is {where}; {into}"
            )


def check_rule(scope: Scope, rule: str, agent_id: str | None, action: str) -> None:
    """Refuse setting or removing (``action``) the retention rule ``rule`` (its
    id or, for a new one, what it says) of ``agent_id``'s memories (None:
    every agent's) unless ``scope`` may.

    Raises:
        PermissionDenied: naming the rule and why not.
    """
    if scope.unscoped:
        return
    if agent_id is None or agent_id != scope.agent_id:
        whose = "every agent's memories" if agent_id is None else f"agent {agent_id!r}'s memories"
        raise PermissionDenied(
            rule,
            agent_id or "*",
            action=action,
            thing="retention rule",
            reason=f"it reaches {whose}; agent {scope.agent_id!r} sets rules of its own"
            " memories only (the management view, --all-agents, sets any)",
        )
    if scope.peer:
        raise PermissionDenied(
            rule,
            agent_id,
            action=action,
            thing="retention rule",
            reason=f"a rule reaches every channel of agent {agent_id!r}, and a peer-facing view"
            f" (channel {scope.channel!r}) changes only its own channel",
        )
