"""Whose eyes a palace looks through: building its ``Scope`` and checking
where its writes may go.

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
"""

from __future__ import annotations

from collections.abc import Iterable

from mindpalace.errors import PermissionDenied, ValidationError
from mindpalace.models import Memory, Scope
from mindpalace.validation import check_agent_id, check_identifier

__all__ = ["build_scope", "check_import", "write_channel"]


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
        if memory.agent_id != scope.agent_id or memory.channel not in channels:
            raise PermissionDenied(memory.id, memory.agent_id)
