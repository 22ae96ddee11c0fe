"""Export and import of a palace as JSON lines (``Palace.export_jsonl`` and
``Palace.import_jsonl`` delegate here)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING

from mindpalace.graph.relations import extract_graph
from mindpalace.retrieval.indexing import embed_text, text_hash
from mindpalace.scoping import check_import
from mindpalace.store import ImportReport
from mindpalace.validation import EXPORT_FORMAT, EXPORT_VERSION, parse_export

if TYPE_CHECKING:
    from mindpalace.view import View

__all__ = ["export_jsonl", "import_jsonl"]


def export_jsonl(palace: View, out: IO[str]) -> int:
    """Write a header line, then every memory ``palace`` sees, one JSON object
    a line; returns how many memories were written."""
    header = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "schema_version": palace.engine.store.schema_version(),
        "exported_at": palace.now().isoformat(),
    }
    out.write(json.dumps(header) + "\n")
    count = 0
    for memory in palace.engine.store.iter_memories(palace.scope):
        record = memory.to_dict()  # its "kind" is the memory's kind
        out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        count += 1
    return count


def import_jsonl(palace: View, lines: Iterable[str]) -> ImportReport:
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
    """
    memories = list(parse_export(lines, max_chars=palace.engine.settings.max_content_chars))
    check_import(palace.scope, memories)
    texts = {m.id: embed_text(m.title, m.content) for m in memories}
    vectors = palace.engine.semantic.vectors_for(list(texts.values())) if memories else None
    hashes = (
        {memory_id: text_hash(text) for memory_id, text in texts.items()}
        if vectors is not None
        else {}
    )
    graphs = {m.id: extract_graph([m.title, m.content], palace.engine.extractor) for m in memories}
    now = palace.now()
    return palace.engine.store.import_memories(
        memories,
        scope=palace.scope,
        new_id=lambda: palace.engine.ids.next(now),
        embed_hashes=hashes,
        vectors=vectors,
        mentions={key: found[0] for key, found in graphs.items()},
        relations={key: found[1] for key, found in graphs.items()},
        now=now,
    )
