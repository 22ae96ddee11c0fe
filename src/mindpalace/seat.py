"""``Seat``: one scope at one engine, the value every operation runs in.

An engine (store, settings, model, warm indexes) serves many agents; a seat
pairs it with the scope of one caller. Making one costs nothing, so a front
end serving many agents makes one per call. The write operations
(``writing.remember``, ``writing.change``, ...) are module functions over a
seat and a value built at the edge; ``Palace`` delegates to them with its
own seat (``palace.seat``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from mindpalace.engine import Engine
from mindpalace.models import Scope

__all__ = ["Seat"]


@dataclass(frozen=True, slots=True)
class Seat:
    """An engine as one scope sees it.

    Attributes:
        engine: the shared engine: store, settings, semantic index, extractor.
        scope: whose eyes the operations look through (and whose memories
            they may change).
    """

    engine: Engine
    scope: Scope

    def now(self) -> datetime:
        """The engine's clock."""
        return self.engine.now()
