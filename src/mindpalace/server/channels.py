"""The ``channel`` argument: a call made through one peer channel.

A tool with a ``channel`` argument runs on the caller's peer-facing palace
of that channel: the transports resolve it before the call
(``PalacePool.for_agent(agent, channel=...)`` over HTTP, ``through_channel``
over stdio), and the tool checks it got that palace (``on_channel``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from mindpalace.errors import ValidationError
from mindpalace.palace import Palace

__all__ = ["CHANNEL", "Channel", "on_channel", "through_channel"]

CHANNEL = "channel"
Channel = Annotated[
    str | None,
    Field(description="Act as this peer channel: its memories and shared ones."),
]


def through_channel(palace: Palace, channel: str | None) -> Palace:
    """The palace a call with ``channel`` acts through (stdio; over HTTP the
    pool keeps one per agent and channel): ``palace`` itself without a
    channel, else a peer-facing palace of the same agent, store and index.

    Raises:
        ValidationError: a peer-facing palace asked for another channel (a
            peer never widens), or an invalid channel name.
    """
    if channel is None or channel == palace.scope.channel:
        return palace
    if palace.scope.peer:
        raise ValidationError(
            "channel", channel, reason=f"this peer acts through {palace.scope.channel!r} only"
        )
    return palace.for_agent(
        palace.scope.agent_id, groups=palace.scope.groups, channel=channel, peer=True
    )


def on_channel(palace: Palace, channel: str | None) -> None:
    """A tool's ``channel`` selects its palace before the call (the
    transports resolve it); refuse a palace of another channel."""
    if channel is not None and palace.scope.channel != channel:
        raise ValidationError(
            "channel",
            channel,
            reason=f"the call was resolved to channel {palace.scope.channel!r}, not {channel!r}",
        )
