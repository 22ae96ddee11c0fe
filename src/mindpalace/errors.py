"""Errors raised by mindpalace.

Every error the library raises on purpose is a ``MindPalaceError``::

    MindPalaceError
    ├── ValidationError      bad input; names the field and the valid options
    │   └── UnknownSkill     no skill of that name; lists the closest names
    ├── NotFoundError        no memory with that id in the caller's scope
    ├── PermissionDenied     visible, but the caller may not change it (another
    │                        agent's; outside a peer-facing view's channel)
    ├── ConfigError          settings that cannot work (bad path, bad env value)
    ├── EmbeddingError       the embedding model or service failed
    │   └── EmbeddingMismatch  the palace's vectors come from another model
    └── StorageError         the database refused (corrupt file, newer schema)
        └── BusyError        the database stayed locked past the retry budget

Front ends map this tree to their own conventions in one place each: the CLI
exits 2 on ``ValidationError`` and 1 on the rest; HTTP answers 400 / 404 / 500.
"""

from __future__ import annotations

import difflib
import re
import reprlib
from collections.abc import Iterable, Mapping

__all__ = [
    "BusyError",
    "ConfigError",
    "EmbeddingError",
    "EmbeddingMismatch",
    "MindPalaceError",
    "NotFoundError",
    "PermissionDenied",
    "StorageError",
    "UnknownSkill",
    "ValidationError",
    "shown",
]


class _Short(reprlib.Repr):
    """``repr`` cut to a line: a caller's value may be a megabyte of text,
    nested past the recursion limit, or an integer too long to print."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 80
        self.maxlong = 40
        self.maxother = 80

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 4000:  # more digits than str() may write
            return f"<integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_SHORT = _Short()


def shown(value: object) -> str:
    """``value``'s repr for an error message, at most about a line long."""
    return _SHORT.repr(value)


class MindPalaceError(Exception):
    """Base class of every error raised on purpose by mindpalace."""


class ValidationError(MindPalaceError, ValueError):
    """An argument is invalid. Nothing was written.

    Attributes:
        field: the name of the offending argument.
        value: what was given.
        valid: the accepted values, when the set is finite (empty otherwise).
    """

    def __init__(
        self,
        field: str,
        value: object,
        *,
        valid: Iterable[str] = (),
        reason: str | None = None,
    ) -> None:
        self.field = field
        self.value = value
        self.valid = tuple(valid)
        if reason is None:
            reason = f"invalid {field} {shown(value)}"
        message = reason
        if self.valid:
            message += f"; valid options: {', '.join(self.valid)}"
            if isinstance(value, str):
                close = difflib.get_close_matches(value.lower(), self.valid, n=1, cutoff=0.6)
                if close:
                    message += f" (did you mean {close[0]!r}?)"
        super().__init__(message)

    def renamed(self, name: str, others: Mapping[str, str] | None = None) -> ValidationError:
        """The same error, naming the argument as a surface spells it
        (``--after`` on the command line for the library's
        ``created_after``): the field and its first mention in the message
        (or, when the message does not mention it, a ``name:`` before it);
        ``others`` respells every mention of other arguments the message
        names ("valid_to is before valid_from")."""
        others = {k: v for k, v in (others or {}).items() if k not in (v, self.field)}
        if name == self.field and not others:
            return self
        message = str(self)
        mention = re.compile(rf"(?<![\w-]){re.escape(self.field)}(?![\w-])")
        if name == self.field:
            reason = message
        elif mention.search(message):
            reason = mention.sub(lambda _: name, message, count=1)
        else:
            reason = f"{name}: {message}"
        for word, spelled in others.items():
            reason = re.sub(rf"(?<![\w-]){re.escape(word)}(?![\w-])", spelled, reason)
        out = ValidationError(name, self.value, reason=reason)
        out.valid = self.valid  # (already listed in the message)
        return out


class UnknownSkill(ValidationError):
    """No skill of that name is visible in the caller's scope.

    Attributes:
        closest: the visible skill names nearest to the one asked for.
    """

    def __init__(self, name: object, closest: Iterable[str]) -> None:
        self.closest = tuple(closest)
        reason = f"no skill named {shown(name)}"
        reason += (
            f"; closest names: {', '.join(self.closest)}"
            if self.closest
            else "; no skills are visible (import some with `mindpalace skills import PATH`)"
        )
        super().__init__("name", name, reason=reason)


class NotFoundError(MindPalaceError, KeyError):
    """No memory with that id is visible in the caller's scope."""

    def __init__(self, memory_id: str) -> None:
        self.memory_id = memory_id
        super().__init__(memory_id)

    def __str__(self) -> str:
        return f"no memory with id {shown(self.memory_id)} in this scope"


class PermissionDenied(MindPalaceError):
    """The memory is visible to the caller, who may not change it this way:
    another agent's memory, or (for a peer-facing view) one outside the
    view's channel. ``scoping.check_change`` decides.

    Attributes:
        memory_id: the memory (or record: ``thing`` says which) refused.
        owner: the agent that owns it.
        action: what was refused (forget, update, restore, ..., import).
        reason: why, in words.
    """

    def __init__(
        self,
        memory_id: str,
        owner: str,
        *,
        action: str = "change",
        reason: str | None = None,
        thing: str = "memory",
    ) -> None:
        self.memory_id = memory_id
        self.owner = owner
        self.action = action
        self.reason = reason or f"it belongs to agent {owner!r}"
        super().__init__(f"may not {action} {thing} {memory_id!r}: {self.reason}")


class ConfigError(MindPalaceError):
    """A setting (an environment variable, an option, a URL, a file) cannot
    work as given. Every configuration problem raises this one type.

    Attributes:
        setting: the setting at fault, when one is (e.g. ``MINDPALACE_SCORER``).
        valid: its accepted values, when the set is finite (empty otherwise).
    """

    def __init__(
        self, message: str, *, setting: str | None = None, valid: Iterable[str] = ()
    ) -> None:
        self.setting = setting
        self.valid = tuple(valid)
        if self.valid:
            message += f"; valid options: {', '.join(self.valid)}"
        super().__init__(message)


class EmbeddingError(MindPalaceError):
    """The embedding model or service failed; recall falls back to text search."""


class EmbeddingMismatch(EmbeddingError):
    """The palace's vectors were made by another model; run ``mindpalace reindex``."""


class StorageError(MindPalaceError):
    """The storage backend failed or refused the operation."""


class BusyError(StorageError):
    """The database stayed locked by other writers past the retry budget."""
