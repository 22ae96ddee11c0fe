"""What linking a batch of memories to entities keeps in memory inside its
write transaction: the entities found so far (``EntityLookup``) and the rows
waiting to be written in one statement each (``LinkWrites``). Used by
``graph_sql.GraphSql`` and the batch writers of ``sql.py``."""

from __future__ import annotations

from collections import defaultdict

from mindpalace.models import Mention

__all__ = ["EntityLookup", "LinkWrites"]


class EntityLookup:
    """Entities by scope and normalised name (and by alias), kept current
    by the transaction that links a batch of memories."""

    def __init__(self) -> None:
        self._by_norm: dict[tuple[tuple[object, ...], str], int] = {}
        self._by_alias: dict[tuple[tuple[object, ...], str], set[int]] = defaultdict(set)
        self.types: dict[int, str] = {}
        self.norms: dict[int, str] = {}

    def add(self, part: tuple[object, ...], norm: str, seq: int, type_: str) -> None:
        self._by_norm[(part, norm)] = seq
        self.types[seq] = type_
        self.norms[seq] = norm

    def add_alias(
        self, part: tuple[object, ...], alias: str, seq: int, type_: str, norm: str
    ) -> None:
        self._by_alias[(part, alias)].add(seq)
        self.types.setdefault(seq, type_)
        self.norms.setdefault(seq, norm)

    def find(self, part: tuple[object, ...], norm: str) -> int | None:
        """The entity of scope ``part`` named ``norm``; else the one entity
        answering to it as an alias ("Alice" for the "Alice Chen" of this
        scope), when only one does."""
        seq = self._by_norm.get((part, norm))
        if seq is not None:
            return seq
        by_alias = self._by_alias.get((part, norm), set())
        return next(iter(by_alias)) if len(by_alias) == 1 else None

    def first_name_of(self, part: tuple[object, ...], mention: Mention) -> bool:
        """Whether ``mention`` names no entity of ``part`` itself and answers
        only as the first name of a fuller one ("maria" of "maria lopez"):
        it gets its own entity then, which the first-name rule links to
        the fuller one (``SameAsSql``), visibly and reversibly."""
        if mention.kind != "name" or (part, mention.norm) in self._by_norm:
            return False
        seq = self.find(part, mention.norm)
        return seq is not None and self.norms.get(seq, "").startswith(mention.norm + " ")


class LinkWrites:
    """The rows that linking a batch of memories writes besides new
    entities, collected so that each kind is one statement for the batch
    (``GraphSql._write_links``), not one per mention: mentions, mention
    counts (and settled types) of entities, co-occurrence edges in the
    order they were met, and stated relations. ``at`` is the batch's time.
    Rows name their memory by id: a memory's key (``seqs``) may be known
    only once its row is written, which the batch may do later too."""

    def __init__(self, at: float | None) -> None:
        self.at = at
        self.seqs: dict[str, int] = {}  # memory id -> seq, once written
        #: (memory id, entity seq, surface, whether the memory may be replaced)
        self.mentions: list[tuple[str, int, str, int]] = []
        self.counts: dict[int, int] = {}
        self.types: dict[int, str] = {}
        self.edges: list[tuple[int, int]] = []
        self.relations: list[tuple[str, int, int, str, str]] = []

    def counted(self, entity_seq: int, type_: str) -> None:
        """One more memory mentions ``entity_seq``, whose type is now ``type_``."""
        self.counts[entity_seq] = self.counts.get(entity_seq, 0) + 1
        self.types[entity_seq] = type_

    def clear(self) -> None:
        self.mentions.clear()
        self.counts.clear()
        self.types.clear()
        self.edges.clear()
        self.relations.clear()

    def __bool__(self) -> bool:
        return bool(self.mentions or self.counts or self.edges or self.relations)
