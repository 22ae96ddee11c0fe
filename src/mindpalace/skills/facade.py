"""``palace.skills``: import, activate, get and find skills; build context blocks.

Skills live in the palace as memories (type ``skill``, store
``procedural``, category ``workflow``, source ``skill``), so ``recall`` with
``types="skill"`` finds them like any memory; a ``skills`` row names each
one, and correlation links join them (store/skills_sql.py).

Usage is recorded as signals, never on the memory rows: each activated
skill leaves a ``skill_activated`` signal (with the activation it belonged
to and its rank) and each ``get`` a ``skill_get`` signal. ``consolidate``
turns co-activations into learned correlation weights.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mindpalace.embed.texts import Progress, embed_text, text_hash
from mindpalace.errors import EmbeddingError, UnknownSkill, ValidationError
from mindpalace.ids import IdGenerator
from mindpalace.models import (
    Category,
    MemoryType,
    NewMemory,
    RecallFilters,
    Source,
    StoreKind,
    Visibility,
    parse_enum,
)
from mindpalace.retrieval.sparse import query_terms
from mindpalace.skills import context as assembly
from mindpalace.skills.activate import ActivateOptions, fuse, gate, propagate
from mindpalace.skills.graph import (
    coactivation_counts,
    combine,
    declared_correlations,
    edge_weights,
)
from mindpalace.skills.model import (
    ContextBlock,
    Correlation,
    ImportResult,
    SkillDefinition,
    SkillDetail,
    SkillHit,
    TagMatch,
)
from mindpalace.skills.parse import iter_skill_files, parse_skill_file
from mindpalace.skills.tokens import TokenCounter, default_counter
from mindpalace.store.base import Signal
from mindpalace.store.skill_rows import SkillOwner, SkillRow, SkillWrite
from mindpalace.store.skills_sql import CORRELATES
from mindpalace.store.vector_rows import Counters
from mindpalace.validation import (
    check_identifier,
    check_limit,
    check_query,
    check_tags,
    content_hash,
)

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["ACTIVATED", "FETCHED", "Skills"]

ACTIVATED = "skill_activated"
FETCHED = "skill_get"
MAX_ACTIVATE = 50
CONTEXT_SKILLS = 5
CONTEXT_MEMORIES = 8
#: a recalled memory under this relevance stays out of the context block:
#: measured on the three benchmarks (BENCHMARKS.md), 0.2 keeps 99.6% of the
#: everyday palaces' evidence and all of LoCoMo's and LongMemEval's among the
#: first ten hits, and hands over 15% fewer tokens for answerable questions,
#: 40% fewer for questions about things never stored
CONTEXT_FLOOR = 0.2
_WATERMARK = "skills_consolidated_seq"


class Skills:
    """The skills of one palace, seen through its scope.

    Built by ``Palace``; use it as ``palace.skills``.

    Args:
        palace: the palace (its store, scope and embedder are used).
        options: activation constants.
        counter: the tokenizer of context budgets (``cl100k_base`` by default).
    """

    def __init__(
        self,
        palace: View,
        *,
        options: ActivateOptions | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self._palace = palace
        self._activations = IdGenerator(prefix="act_")
        self.options = options or ActivateOptions()
        self._counter = counter
        self._cache: tuple[Counters, dict[str, SkillRow]] | None = None

    @property
    def counter(self) -> TokenCounter:
        """The token counter of context blocks."""
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    # -- import ---------------------------------------------------------------------

    def import_path(
        self,
        path: str | Path,
        *,
        visibility: str | Visibility = Visibility.ISOLATED,
        group: str | None = None,
        progress: Progress | None = None,
    ) -> ImportResult:
        """Import a folder of skill files (every ``SKILL.md`` and ``*.json``
        node beneath it) or one file.

        Idempotent: an unchanged skill is not written, and importing the same
        files twice writes nothing at all. A changed skill is updated in
        place (same memory id), and one archived with ``forget`` is brought
        back. Skills absent from the folder are left alone.
        Declared correlations (explicit links, shared tags and tools) among
        the scope's skills are recomputed; learned ones are kept. Every file
        is validated before anything is written, and the write is one
        transaction.

        Args:
            path: a folder or a ``.md`` / ``.json`` file.
            visibility: isolated (default), shared or group, as for ``remember``.
            group: the group, with visibility ``group``.
            progress: told ``(done, total)`` as the skills written are embedded.

        Raises:
            ValidationError: naming the file and field of the first invalid
                skill, or two files defining one name.
            EmbeddingMismatch: the palace's vectors come from another model.
        """
        root = Path(path).expanduser()
        definitions: dict[str, SkillDefinition] = {}
        for file, origin in iter_skill_files(root):
            skill = parse_skill_file(file, origin=origin)
            if skill.name in definitions:
                raise ValidationError(
                    "name",
                    skill.name,
                    reason=f"{origin}: skill {skill.name!r} is also defined in"
                    f" {definitions[skill.name].origin}",
                )
            definitions[skill.name] = skill
        if not definitions:
            raise ValidationError(
                "path", str(path), reason=f"no SKILL.md or .json skill files under {root}"
            )
        owner = self._owner(visibility, group)
        palace = self._palace
        existing = {
            row.name: row
            for row in palace.engine.store.skills(palace.scope, owner=owner, include_archived=True)
        }
        added, updated, unchanged, writes = [], [], [], []
        for name, skill in sorted(definitions.items()):
            row = existing.get(name)
            if row is None:
                added.append(name)
            elif row.digest != skill.digest() or row.memory.archived:
                updated.append(name)
            else:
                unchanged.append(name)
                continue
            writes.append(skill)
        library = {
            row.name: SkillDefinition.from_metadata(row.memory.metadata["skill"], origin=row.origin)
            for row in existing.values()
            if not row.memory.archived and "skill" in row.memory.metadata
        }
        library.update(definitions)
        wanted = declared_correlations(list(library.values()))
        current = {
            (link.src_name, link.dst_name): link.weight
            for link in palace.engine.store.skill_links(palace.scope, owner=owner)
            if link.kind == CORRELATES
        }
        result = ImportResult(
            added=tuple(added),
            updated=tuple(updated),
            unchanged=tuple(unchanged),
            correlations=len(wanted),
            changed_correlations=current != wanted,
        )
        if not writes and current == wanted:
            return result  # nothing to write: a re-import leaves the palace as it was
        now = self._palace.now()
        news = [self._new_memory(skill, owner) for skill in writes]
        vectors = palace.engine.semantic.vectors_in_batches(
            [embed_text(n.title, n.content) for n in news], progress=progress
        )
        items = [
            SkillWrite(
                name=skill.name,
                digest=skill.digest(),
                origin=skill.origin,
                # Not embedded now (no model): ``reindex`` embeds it later.
                memory=new if vectors is not None else replace(new, embed_hash=None),
                memory_id=self._palace.engine.ids.next(now),
            )
            for skill, new in zip(writes, news, strict=True)
        ]
        palace.engine.store.write_skills(
            owner, items, correlations=wanted, now=now, vectors=vectors
        )
        palace.engine.semantic.written(vectors)
        return result

    def _owner(self, visibility: str | Visibility, group: str | None) -> SkillOwner:
        vis = parse_enum(Visibility, visibility, "visibility")
        group_name = check_identifier(group, "group", optional=True)
        if (vis is Visibility.GROUP) != (group_name is not None):
            raise ValidationError(
                "group", group, reason="a group is given exactly with visibility 'group'"
            )
        scope = self._palace.scope
        return SkillOwner(scope.agent_id, vis, group_name, scope.channel)

    def _new_memory(self, skill: SkillDefinition, owner: SkillOwner) -> NewMemory:
        content = skill.text()
        title = skill.name
        chars = self._palace.engine.store.hash_chars()
        return NewMemory(
            content=content,
            # The name is part of the identity: two skills with the same text
            # are still two skills.
            content_hash=content_hash(f"skill:{skill.name}\x1f{content}", chars),
            agent_id=owner.agent_id,
            title=title,
            context=f"tools: {', '.join(skill.tools)}" if skill.tools else None,
            embed_hash=text_hash(embed_text(title, content), chars),
            type=MemoryType.SKILL,
            store=StoreKind.PROCEDURAL,
            category=Category.WORKFLOW,
            tags=skill.tags,
            source=Source.SKILL,
            visibility=owner.visibility,
            group=owner.group,
            channel=owner.channel,
            metadata={"skill": skill.to_metadata()},
        )

    # -- reading --------------------------------------------------------------------

    def _catalogue(self) -> dict[str, SkillRow]:
        """Every live skill this palace sees, by memory id; reloaded when the
        palace changes."""
        store = self._palace.engine.store
        counters = store.change_counters()
        if self._cache is None or self._cache[0] != counters:
            rows = store.skills(self._palace.scope)
            own = self._palace.scope.agent_id
            by_name: dict[str, SkillRow] = {}
            for row in rows:  # one name seen twice (own and shared): the own one
                if row.name not in by_name or row.memory.agent_id == own:
                    by_name[row.name] = row
            self._cache = (counters, {row.memory.id: row for row in by_name.values()})
        return self._cache[1]

    def names(self) -> list[str]:
        """The names of every skill this palace sees, sorted."""
        return sorted(row.name for row in self._catalogue().values())

    def activate(
        self, query: str, *, limit: int = 5, options: ActivateOptions | None = None
    ) -> list[SkillHit]:
        """The skills most relevant to a task, best first.

        Keyword (BM25) and embedding rankings of the skills are fused (RRF),
        the top ones spread activation along correlation edges, and gates
        drop what carries too little evidence (an empty list is a valid
        answer). Each returned skill is recorded as used (a signal; no
        memory is modified).

        Args:
            query: the task, in free text.
            limit: how many skills at most, 1-50.
            options: activation constants (the palace's by default).

        Raises:
            ValidationError: ``query`` is not text of at most 10,000 characters, or
                ``limit`` is out of range.
        """
        check_query(query)
        check_limit(limit, low=1, high=MAX_ACTIVATE)
        opts = options or self.options
        catalogue = self._catalogue()
        if not query.strip() or not catalogue:
            return []
        palace = self._palace
        filters = RecallFilters(types=(MemoryType.SKILL,))
        pool = max(opts.candidates, limit)
        sparse = [
            m.memory.id
            for m in palace.engine.store.search_text(
                query_terms(query), palace.scope, filters, limit=pool
            )
            if m.memory.id in catalogue
        ]
        dense: list[tuple[str, float]] = []
        semantic = palace.engine.semantic
        usable = semantic.usable()  # the palace's recorded model, read once
        vector = None if usable is None else semantic.embed_query(usable, query)
        in_store = None
        index = None
        if usable is not None and vector is not None:
            in_store = semantic.database_key(usable)
            index = None if in_store is not None else semantic.dense_index(usable)
        found = (
            palace.engine.store.dense_rows(in_store, vector, palace.scope, filters, nearest=pool)
            if vector is not None and in_store is not None
            else None
        )
        if found is not None:  # database mode: the store's nearest skills
            for row in np.argsort(-found.sims, kind="stable")[:pool]:
                key = str(found.table.ids[row])
                if found.table.embedded[row] and key in catalogue:
                    dense.append((key, float(found.sims[row])))
        elif vector is not None and index is not None and len(index):
            visible = index.mask(palace.scope, filters) & index.embedded
            sims = np.where(visible, index.scores(vector), -np.inf)
            for row in np.argsort(-sims, kind="stable")[:pool]:
                key = str(index.table.ids[row])
                if np.isfinite(sims[row]) and key in catalogue:
                    dense.append((key, float(sims[row])))
        evidence = fuse(sparse, dense, options=opts)
        seeds = [e.key for e in evidence[: opts.seeds]]
        links = (
            palace.engine.store.skill_links(palace.scope, sources=seeds) if opts.spread > 0 else []
        )
        weights = edge_weights((li.src_id, li.dst_id, li.kind, li.weight) for li in links)
        edges = {
            src: {dst: combine(*w) for dst, w in dsts.items() if dst in catalogue}
            for src, dsts in weights.items()
        }
        chosen = gate(propagate(evidence, edges, options=opts), options=opts)[:limit]
        hits = []
        for activation in chosen:
            row = catalogue[activation.key]
            stages: dict[str, float] = {
                "fused": activation.evidence.fused,
                "propagated": activation.propagated,
            }
            if activation.evidence.sparse_rank is not None:
                stages["bm25_rank"] = activation.evidence.sparse_rank
            if activation.evidence.dense_rank is not None:
                stages["dense_rank"] = activation.evidence.dense_rank
                stages["cosine"] = activation.evidence.cosine or 0.0
            hits.append(
                SkillHit(
                    name=row.name,
                    score=activation.score,
                    tags=row.memory.tags,
                    associative_context=tuple(
                        Correlation(catalogue[key].name, weight)
                        for key, weight in activation.links[:5]
                        if key in catalogue
                    ),
                    memory_id=row.memory.id,
                    stages=stages,
                )
            )
        self._record_activation(query, hits)
        return hits

    def _record_activation(self, query: str, hits: list[SkillHit]) -> None:
        if not hits or not self._palace.engine.settings.signals:  # MINDPALACE_SIGNALS=off
            return
        now = self._palace.now()
        activation = self._activations.next(now)
        scope = self._palace.scope
        self._palace.engine.store.record_signals(
            [
                Signal(
                    kind=ACTIVATED,
                    agent_id=scope.agent_id,
                    channel=scope.channel,
                    at=now,
                    memory_id=hit.memory_id,
                    query=query,
                    data={"activation": activation, "rank": rank, "score": round(hit.score, 6)},
                )
                for rank, hit in enumerate(hits, start=1)
            ]
        )

    def get(self, name: str, *, record: bool = True) -> SkillDetail:
        """A whole skill: description, sections, tools, tags, correlations
        (declared and learned weights), usage. Recorded as used unless
        ``record`` is False (an inspector looking at it is no use of it).

        Raises:
            UnknownSkill: no skill of that name is visible; lists the closest names.
        """
        if not isinstance(name, str) or not name.strip():
            raise ValidationError("name", name, reason="a skill name is required")
        catalogue = self._catalogue()
        row = next((r for r in catalogue.values() if r.name == name.strip()), None)
        if row is None:
            raise UnknownSkill(name, _closest(name, [r.name for r in catalogue.values()]))
        palace = self._palace
        scope = palace.scope
        memory = row.memory
        if record and palace.engine.settings.signals:
            palace.engine.store.record_signals(
                [
                    Signal(
                        kind=FETCHED,
                        agent_id=scope.agent_id,
                        channel=scope.channel,
                        at=self._palace.now(),
                        memory_id=memory.id,
                    )
                ]
            )
        weights = edge_weights(
            (li.src_id, li.dst_id, li.kind, li.weight)
            for li in palace.engine.store.skill_links(scope, sources=[memory.id])
        ).get(memory.id, {})
        correlations = sorted(
            (
                Correlation(catalogue[dst].name, combine(*w), declared=w[0], learned=w[1])
                for dst, w in weights.items()
                if dst in catalogue
            ),
            key=lambda c: (-c.weight, c.name),
        )
        usage = palace.engine.store.skill_usage([memory.id]).get(memory.id)
        definition = SkillDefinition.from_metadata(memory.metadata["skill"], origin=row.origin)
        return SkillDetail(
            name=row.name,
            description=definition.description,
            sections=definition.sections,
            tools=definition.tools,
            tags=memory.tags,
            correlations=tuple(correlations),
            memory_id=memory.id,
            origin=row.origin,
            updated_at=memory.updated_at,
            activations=usage.activations if usage else 0,
            gets=usage.gets if usage else 0,
            last_used=usage.last_used if usage else None,
        )

    def find(self, tags: Iterable[str] | str, *, limit: int = 20) -> list[TagMatch]:
        """Skills having any of ``tags``, ranked by tag overlap: the share of
        the asked tags a skill has (ties: the share of its own tags that
        matched, then name).

        Raises:
            ValidationError: no tags given, or ``limit`` outside 1-1000.
        """
        wanted = check_tags(tags)
        if not wanted:
            raise ValidationError(
                "tags", tags, reason="give at least one tag, e.g. 'media,watermark'"
            )
        check_limit(limit, low=1, high=1000)
        matches = []
        for row in self._catalogue().values():
            own = row.memory.tags
            matched = tuple(t for t in wanted if t in own)
            if matched:
                share = len(matched) / len(wanted)
                matches.append((share, len(matched) / len(own), row, matched))
        matches.sort(key=lambda m: (-m[0], -m[1], m[2].name))
        return [
            TagMatch(name=row.name, score=share, tags=row.memory.tags, matched=matched)
            for share, _, row, matched in matches[:limit]
        ]

    # -- consolidation ----------------------------------------------------------------

    def consolidate(self, *, rate: float = 0.1, top: int = 3) -> dict[str, int]:
        """Strengthen learned correlations from co-activation since the last run.

        Each activation whose ``top`` skills include a pair moves that
        pair's learned weight ``rate`` of the way to 1. Signals are read
        once: a second run without new activations changes nothing.

        Returns:
            ``{"activations": activations read, "strengthened": links changed}``.
        """
        if not 0 < rate <= 1:
            raise ValidationError("rate", rate, reason="rate must be in (0, 1]")
        check_limit(top, low=2, high=MAX_ACTIVATE, field="top")
        palace = self._palace
        agent = None if palace.scope.unscoped else palace.scope.agent_id
        key = f"{_WATERMARK}:{agent or '*'}"
        start = mark = palace.engine.store.meta(key) or 0
        groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
        while True:
            batch = palace.engine.store.usage_signals(ACTIVATED, after_seq=mark, agent_id=agent)
            if not batch:
                break
            for signal in batch:
                if signal.memory_id is not None:
                    activation = str(signal.data.get("activation", signal.seq))
                    groups[activation].append((int(signal.data.get("rank", 0)), signal.memory_id))
            mark = batch[-1].seq
        if mark == start:
            return {"activations": 0, "strengthened": 0}
        counts = coactivation_counts(
            ([memory_id for _, memory_id in sorted(group)] for group in groups.values()), top=top
        )
        changed = palace.engine.store.strengthen_links(
            counts, rate=rate, watermark_key=key, watermark=mark, now=self._palace.now()
        )
        return {"activations": len(groups), "strengthened": changed}

    # -- context ----------------------------------------------------------------------

    def context(self, query: str, *, max_tokens: int = 2048) -> ContextBlock:
        """A prompt-ready block of the skills and memories relevant to
        ``query``, within ``max_tokens`` (see ``Palace.context``)."""
        check_limit(
            max_tokens, low=assembly.MIN_TOKENS, high=assembly.MAX_TOKENS, field="max_tokens"
        )
        check_query(query)
        palace = self._palace
        hits = self.activate(query, limit=CONTEXT_SKILLS) if query.strip() else []
        catalogue = self._catalogue()
        pieces = []
        for hit in hits:
            row = catalogue[hit.memory_id]
            definition = SkillDefinition.from_metadata(row.memory.metadata["skill"])
            relevance = self._relevance(
                query, [f"{s.title}\n{s.content}" for s in definition.sections]
            )
            pieces.append(
                assembly.SkillPiece(
                    name=hit.name,
                    memory_id=hit.memory_id,
                    score=hit.score,
                    description=definition.description,
                    sections=tuple(zip(definition.sections, relevance, strict=True)),
                    updated_at=row.memory.updated_at,
                    origin=row.origin,
                )
            )
        others = [t for t in MemoryType if t is not MemoryType.SKILL]
        recalled = (
            palace.recall(query, limit=CONTEXT_MEMORIES, types=others) if query.strip() else []
        )
        memories = [
            assembly.MemoryPiece(
                memory_id=h.memory.id,
                score=h.score,
                content=h.memory.content,
                created_at=h.memory.created_at,
                category=h.memory.category.value,
                agent_id=h.memory.agent_id,
                title=h.memory.title,
                confidence=h.memory.confidence,
            )
            for h in recalled
            if h.score >= CONTEXT_FLOOR
        ]
        return assembly.assemble(
            query, pieces, memories, max_tokens=max_tokens, counter=self.counter
        )

    def _relevance(self, query: str, texts: list[str]) -> list[float]:
        """Each text's relevance to ``query`` in 0-1: embedding cosine when
        the palace's model is available, else the share of query words present."""
        if not texts:
            return []
        semantic = self._palace.engine.semantic
        vector = semantic.query_vector(query)
        if vector is not None and semantic.embedder is not None:
            try:
                matrix = semantic.embedder.embed(texts)
                return [max(0.0, float(x)) for x in matrix @ vector]
            except EmbeddingError:
                pass
        terms = set(query_terms(query))
        out = []
        for text in texts:
            words = set(query_terms(text))
            out.append(len(terms & words) / len(terms) if terms else 0.0)
        return out


def _closest(name: str, names: list[str], *, count: int = 5) -> list[str]:
    """Names nearest to ``name``: close spellings first, then names sharing a word."""
    folded = name.strip().lower()
    close = difflib.get_close_matches(folded, names, n=count, cutoff=0.5)
    words = set(folded.replace("_", "-").split("-"))
    sharing = sorted(
        (n for n in names if n not in close and words & set(n.split("-"))),
        key=lambda n: -difflib.SequenceMatcher(None, folded, n).ratio(),
    )
    found = (close + sharing)[:count]
    if not found:
        found = difflib.get_close_matches(folded, names, n=count, cutoff=0.0)
    return found
