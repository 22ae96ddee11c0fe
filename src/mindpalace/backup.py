"""Export and import of a palace as JSON lines (``Palace.export_jsonl`` and
``Palace.import_jsonl`` delegate here).

A header line, then one line per memory, then the palace's other records
(``{"record": ...}``: store/exchange_rows.py): skill rows, links between
memories (supersession, merges, skill correlations), the entity graph as
stored, signals, scorer weights, the erasure log (receipts, no content),
the embedding configuration. Exporting an
import of an export gives the same lines (the header's time aside). The
entity graph is carried, not re-derived: consolidation changes edge weights
and an extractor may have added names, so re-deriving would not give the
same graph; exports older than version 3 carry none, and their memories are
linked again on import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import astuple, replace
from typing import IO, TYPE_CHECKING, Any

from mindpalace.embed.texts import Progress, embed_text, text_hash
from mindpalace.errors import PermissionDenied
from mindpalace.graph.relations import extract_graph
from mindpalace.models import Scope
from mindpalace.retrieval.time import stored as stored_times
from mindpalace.scoping import check_import
from mindpalace.store import ImportReport
from mindpalace.store.exchange_rows import PalaceRecords, parse_records
from mindpalace.validation import EXPORT_FORMAT, EXPORT_VERSION, parse_export

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["export_jsonl", "import_jsonl"]

_EVERY = 500  # memories written between two progress reports


def export_jsonl(palace: View, out: IO[str], *, progress: Progress | None = None) -> int:
    """Write a header line, then every memory ``palace`` sees, then every
    other record about them, one JSON object a line; returns how many
    memories were written. ``progress(done, total)`` is told every
    ``_EVERY`` memories and at the end."""
    header = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "schema_version": palace.engine.store.schema_version(),
        "exported_at": palace.now().isoformat(),
    }
    out.write(json.dumps(header) + "\n")
    ids: list[str] = []
    store = palace.engine.store
    total = store.stats(palace.scope).memories if progress is not None else 0
    for memory in store.iter_memories(palace.scope):
        record = memory.to_dict()  # its "kind" is the memory's kind
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        ids.append(memory.id)
        if progress is not None and len(ids) % _EVERY == 0:
            progress(len(ids), max(total, len(ids)))
    for line in store.export_records(palace.scope, ids).lines():
        out.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
    if progress is not None:
        progress(len(ids), len(ids))
    return len(ids)


def import_jsonl(
    palace: View, lines: Iterable[str], *, progress: Progress | None = None
) -> ImportReport:
    """Validate every line, then embed, link and insert in one transaction.

    Every record must be the palace's own (``scoping.check_import``). A
    record is skipped when its id is one of the palace's own memories that
    it sees (importing an export again changes nothing), when an earlier
    record of the same import has its id, or when the palace already holds
    its text in the same scope. An id that is stored but outside this view
    (another agent's memory, or one of another channel) is answered as an
    unknown id is: the record is inserted, under a new id, and counted as
    inserted. So nothing is lost and the report cannot tell whether an
    invisible id exists; the other memory is never changed nor shown.

    The other records are written for the memories inserted (records about
    a skipped memory are already there); signals and scorer weights must be
    the palace's own agent's, as memories must. ``progress(done, total)``
    is told as the memories are embedded, a batch at a time.
    """
    lines = list(lines)
    found: list[tuple[int, dict[str, Any]]] = []
    memories = list(
        parse_export(lines, max_chars=palace.engine.settings.max_content_chars, records=found)
    )
    records = parse_records(found)
    check_import(palace.scope, memories)
    # The times each states, read once here as a write reads them; the
    # content hash at this palace's key length (the first digits of the
    # same digest: an export of a palace with longer keys is cut, one with
    # shorter keys is kept, and matches itself on a second import).
    chars = palace.engine.store.hash_chars()
    memories = [
        replace(
            m,
            stated_times=stored_times.written(m.content, m.created_at),
            content_hash=m.content_hash[:chars],
        )
        for m in memories
    ]
    _check_records(palace.scope, records)
    embedder = palace.engine.semantic.embedder
    if embedder is None or any(
        (e.provider, e.model, e.dimensions) != astuple(embedder.config) for e in records.embedding
    ):
        # Vectors are made here, by this palace's model: a palace without a
        # recorded model adopts the export's only when it is that model.
        records = replace(records, embedding=())
    texts = {m.id: embed_text(m.title, m.content) for m in memories}
    vectors = palace.engine.semantic.vectors_in_batches(list(texts.values()), progress=progress)
    hashes = (
        {memory_id: text_hash(text, chars) for memory_id, text in texts.items()}
        if vectors is not None
        else {}
    )
    carried = _version(lines) >= 3  # the export holds the graph as stored
    graphs = {
        m.id: extract_graph([m.title, m.content], palace.engine.extractor)
        for m in memories
        if not carried
    }
    now = palace.now()
    result = palace.engine.store.import_memories(
        memories,
        scope=palace.scope,
        new_id=lambda: palace.engine.ids.next(now),
        embed_hashes=hashes,
        vectors=vectors,
        mentions={key: found[0] for key, found in graphs.items()},
        relations={key: found[1] for key, found in graphs.items()},
        records=records,
        now=now,
    )
    palace.engine.semantic.written(vectors)
    return result


def _version(lines: list[str]) -> int:
    """The export version the header names (1 without one)."""
    for line in lines:
        if line.strip():
            try:
                header = json.loads(line)
            except json.JSONDecodeError:
                return 1
            if isinstance(header, dict) and "format" in header:
                version = header.get("version", 1)
                return version if isinstance(version, int) else 1
            return 1
    return 1


def _check_records(scope: Scope, records: PalaceRecords) -> None:
    """Signals, scorer weights, entities and erasure receipts must be the
    scope's agent's.

    Raises:
        PermissionDenied: naming the first that is not.
    """
    if scope.unscoped:
        return
    owners = [
        *((s.memory_id or f"signal {s.kind}", s.agent_id) for s in records.signals),
        *((f"scorer {s.channel}", s.agent_id) for s in records.scorers),
        *((e.id, e.agent_id) for e in records.entities),
        *((f"erasure {r.id}", r.agent_id) for r in records.erasures),
    ]
    for what, agent in owners:
        if agent != scope.agent_id:
            raise PermissionDenied(
                what,
                agent,
                action="import",
                reason=f"it belongs to agent {agent!r}, not to {scope.agent_id!r}",
            )
