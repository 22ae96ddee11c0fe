"""The times a memory states, read once when it is written and kept with it.

Recall's time prior asks what times each of its best candidates states
(``temporal.find_times`` over the content, resolved against when it was
written). Reading a long text takes a fifth of a millisecond, and a timed
question looks at seventy of them, so the write reads it once and the
memory keeps the result (``Memory.stated_times``, one column), in a short
form this module writes and reads back:

    ``<version>:<json list of [start, end, from, to, relative, label]>``

``start``/``end`` are the expression's place in the content (its text is
the content between them), ``from``/``to`` the ends of the time it names
in seconds since the epoch (null: open), ``relative`` 1 when it needed the
reference, ``label`` the time in words. What it keeps is derived from the
content and goes with it: a memory erased takes it along.

``VERSION`` names the reader that wrote it. A kept form of another version
(the reader has changed since the write) is ignored and the text is read
again at recall, as it is for a memory written before times were kept;
``keep_all`` (``Palace.reindex``) keeps them all in this reader's form.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone

from mindpalace.retrieval.time.intervals import Interval, TimeMention
from mindpalace.retrieval.time.temporal import find_times
from mindpalace.store.roles_palace import Upkeep

__all__ = ["VERSION", "decode", "encode", "keep_all", "reference", "stated", "written"]

#: Bump whenever ``find_times`` finds or resolves anything differently
#: (tests/retrieval/test_stored_times.py holds a digest of what it finds).
VERSION = "1"
_PREFIX = VERSION + ":"


def reference(created_at: datetime) -> datetime:
    """The time a stored memory's expressions resolve against: its
    creation time as the store gives it back (UTC; a naive time is UTC)."""
    if created_at.tzinfo is None:
        return created_at.replace(tzinfo=timezone.utc)
    return created_at.astimezone(timezone.utc)


def _epoch(moment: datetime | None) -> float | int | None:
    if moment is None:
        return None
    seconds = moment.timestamp()
    return int(seconds) if seconds.is_integer() else seconds


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc)


def encode(mentions: Sequence[TimeMention]) -> str:
    """The kept form of ``mentions`` (those found in one content)."""
    rows = [
        [
            m.start,
            m.end,
            _epoch(m.interval.start),
            _epoch(m.interval.end),
            int(m.relative),
            m.label,
        ]
        for m in mentions
    ]
    return _PREFIX + (json.dumps(rows, ensure_ascii=False, separators=(",", ":")) if rows else "")


def decode(kept: str | None, content: str) -> list[TimeMention] | None:
    """The mentions ``kept`` holds for ``content``; None when there is
    nothing kept of this version (read the text instead)."""
    if kept is None or not kept.startswith(_PREFIX):
        return None
    body = kept[len(_PREFIX) :]
    if not body:
        return []
    try:
        rows = json.loads(body)
        return [
            TimeMention(
                text=content[start:end],
                start=start,
                end=end,
                interval=Interval(_moment(first), _moment(last)),
                label=label,
                relative=bool(relative),
            )
            for start, end, first, last, relative, label in rows
        ]
    except (ValueError, TypeError, OverflowError, OSError):  # not a form this reader wrote
        return None


def written(content: str, created_at: datetime) -> str:
    """The kept form for a memory of ``content`` written at ``created_at``."""
    return encode(find_times(content, reference(created_at)))


def stated(content: str, created_at: datetime, kept: str | None) -> list[TimeMention]:
    """The times ``content`` states: from ``kept`` when it holds them,
    else read from the text as the write reads it (``written``)."""
    found = decode(kept, content)
    return found if found is not None else find_times(content, reference(created_at))


def keep_all(store: Upkeep, *, batch: int = 2000) -> int:
    """Read and keep the stated times of every memory whose kept form is
    not this reader's (written before times were kept, or read by another
    version), ``batch`` memories a transaction; how many."""
    after, done = 0, 0
    while rows := store.times_to_keep(_PREFIX, after_seq=after, limit=batch):
        store.keep_times([(row, written(row.content, row.created_at)) for row in rows])
        done += len(rows)
        after = rows[-1].seq
    return done
