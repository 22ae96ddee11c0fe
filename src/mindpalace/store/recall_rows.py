"""The values recall's merged reads hand back (``Store.query_facts``,
``seed_graph``, ``hydrate``) and the keyword match they carry: value types
only, so the ``Store`` protocol and the SQL that fills them both import them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mindpalace.models import Entity, Memory

__all__ = ["Hydration", "QueryFacts", "QueryReads", "SeedGraph", "TextMatch"]


@dataclass(frozen=True, slots=True)
class TextMatch:
    """A memory matched by full-text search, with its raw BM25 score (higher is better)."""

    memory: Memory
    bm25: float


@dataclass(frozen=True, slots=True)
class QueryReads:
    """What a recall reads before ranking: everything its query alone
    decides, asked of the store at once (``Store.query_facts``).

    Attributes:
        salient: words the query names; which of them some visible memory
            contains is read first (``terms_present``).
        min_salient: the other reads happen only when at least this many of
            ``salient`` occur (else recall answers "nothing relevant").
        keyword / keyword_limit: BM25 keyword candidates under the recall's
            filters (``search_text``); none when ``keyword`` is empty.
        substring / substring_limit: memories containing any of
            ``substring`` as a substring (``search_substring``).
        events / event_limit: per event the query dates things by, its
            words: the best keyword matches under the default filters.
        allowed: list the ids matching the filters (``ids_matching``), for
            filters a warm index cannot apply itself.
        names: names the query uses; constraint memories that mention an
            entity they name are read, ``constraint_limit`` mentions at most.
    """

    salient: tuple[str, ...] = ()
    min_salient: int = 0
    keyword: tuple[str, ...] = ()
    keyword_limit: int = 0
    substring: tuple[str, ...] = ()
    substring_limit: int = 0
    events: tuple[tuple[str, ...], ...] = ()
    event_limit: int = 0
    allowed: bool = False
    names: tuple[str, ...] = ()
    constraint_limit: int = 20


@dataclass(frozen=True, slots=True)
class QueryFacts:
    """What ``Store.query_facts`` read, all under the caller's scope.

    Attributes:
        present: the salient words some visible memory contains.
        complete: False when too few were present and nothing else was read.
        keyword / substring: the matches asked for, best (newest) first.
        events: per event asked about, its best matches.
        allowed: the ids matching the filters, when asked for.
        constraints: (constraint memory, the entity key tying it to the
            query), newest first, each memory once.
    """

    present: frozenset[str] = frozenset()
    complete: bool = True
    keyword: tuple[TextMatch, ...] = ()
    substring: tuple[Memory, ...] = ()
    events: tuple[tuple[TextMatch, ...], ...] = ()
    allowed: frozenset[str] | None = None
    constraints: tuple[tuple[Memory, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SeedGraph:
    """The entity graph around a recall's seeds (``Store.seed_graph``).

    Attributes:
        entities: seed memory id -> the entities it mentions.
        co: entity key (of those entities) -> its strongest co-occurring
            entity keys and edge weights (empty when not read).
        members: when asked for, entity key (of those entities and their
            co-occurring ones) -> ``entity_members``'s (degree, ids).
    """

    entities: Mapping[str, list[Entity]]
    co: Mapping[str, list[tuple[str, float]]]
    members: Mapping[str, tuple[int, list[str]]] | None = None


@dataclass(frozen=True, slots=True)
class Hydration:
    """Memories read in full (``Store.hydrate``), and the caller's own
    (useful, not useful) feedback counts on those asked about."""

    memories: Mapping[str, Memory]
    feedback: Mapping[str, tuple[int, int]] = field(default_factory=dict)
