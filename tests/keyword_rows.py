"""What SQLite's keyword index holds, read from the file itself."""

from __future__ import annotations

from mindpalace.store.sqlite_text import partition_key

# Rows of the keyword index holding one index word (stemmed), whatever
# their partition: each term is the partition's key before the word.
KEYWORD_ROWS = (
    "SELECT COUNT(DISTINCT doc) FROM memories_fts_positions"
    f" WHERE substr(term, {len(partition_key('', '', '', '')) + 1}) = ?"
)
