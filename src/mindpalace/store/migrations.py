"""Versioned, forward-only schema migrations.

Each migration is a function of the dialect returning SQL statements; what
the dialects agree on is written once, what differs comes from the dialect
(key types, the full-text index). Applied migrations are recorded in
``schema_migrations``; a database newer than this code is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mindpalace.store.dialect import Dialect

__all__ = ["MIGRATIONS", "TURN_CONTEXT_CHARS", "Migration", "latest_version"]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: ``version`` is its order, ``statements`` its SQL."""

    version: int
    name: str
    statements: Callable[[Dialect], list[str]]


def _v1_memories(d: Dialect) -> list[str]:
    return [
        f"""
        CREATE TABLE memories (
            seq {d.serial_pk},
            id TEXT NOT NULL UNIQUE,
            agent_id TEXT NOT NULL,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            title TEXT,
            context TEXT,
            session_id TEXT,
            embed_hash TEXT,
            type TEXT NOT NULL,
            store TEXT NOT NULL,
            category TEXT NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            source TEXT NOT NULL,
            visibility TEXT NOT NULL,
            group_name TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            created_at {d.float_type} NOT NULL,
            updated_at {d.float_type} NOT NULL,
            last_accessed_at {d.float_type},
            valid_from {d.float_type},
            valid_to {d.float_type},
            superseded_by TEXT,
            strength {d.float_type} NOT NULL,
            confidence {d.float_type} NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0,
            archived INTEGER NOT NULL DEFAULT 0,
            is_constraint INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{{}}'
        )
        """,
        # Exact de-duplication: one row per normalised text per scope.
        """
        CREATE UNIQUE INDEX memories_dedup
            ON memories (agent_id, visibility, group_name, channel, content_hash)
        """,
        "CREATE INDEX memories_agent_created ON memories (agent_id, created_at)",
        "CREATE INDEX memories_visibility ON memories (visibility, group_name)",
        "CREATE INDEX memories_session ON memories (session_id, created_at)",
        f"""
        CREATE TABLE memory_tags (
            memory_seq {d.ref_type} NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY (tag, memory_seq)
        )
        """,
        "CREATE INDEX memory_tags_memory ON memory_tags (memory_seq)",
        # Vectors keyed by the hash of the text embedded, so unchanged text is
        # never embedded twice, whatever memory it belongs to.
        f"""
        CREATE TABLE embeddings (
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vector {d.blob_type} NOT NULL,
            PRIMARY KEY (model, text_hash)
        )
        """,
        """
        CREATE TABLE embedding_config (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            dimensions INTEGER NOT NULL
        )
        """,
        # Bumped by every write, so in-process caches know when to reload.
        "CREATE TABLE palace_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
        "INSERT INTO palace_meta (key, value) VALUES ('generation', 0)",
        # Bumped by writes that change existing rows (not by appends), so a
        # warm index can tell "append the new rows" from "reload".
        "INSERT INTO palace_meta (key, value) VALUES ('epoch', 0)",
        *d.text_index_schema(),
    ]


def _v2_graph(d: Dialect) -> list[str]:
    scope = """
            agent_id TEXT NOT NULL,
            visibility TEXT NOT NULL,
            group_name TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',"""
    return [
        # Entities live in the scope of the memories that mention them (one
        # row per scope and normalised name), so traversal never crosses a
        # scope the caller cannot see.
        f"""
        CREATE TABLE entities (
            seq {d.serial_pk},
            id TEXT NOT NULL UNIQUE,{scope}
            name TEXT NOT NULL,
            norm TEXT NOT NULL,
            type TEXT NOT NULL,
            kind TEXT NOT NULL,
            mentions INTEGER NOT NULL DEFAULT 0,
            created_at {d.float_type} NOT NULL,
            updated_at {d.float_type} NOT NULL
        )
        """,
        """
        CREATE UNIQUE INDEX entities_key
            ON entities (agent_id, visibility, group_name, channel, norm)
        """,
        "CREATE INDEX entities_norm ON entities (norm)",
        # Other normalised names an entity answers to ("alice" for "alice chen").
        f"""
        CREATE TABLE entity_aliases (
            entity_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            alias TEXT NOT NULL,
            PRIMARY KEY (alias, entity_seq)
        )
        """,
        "CREATE INDEX entity_aliases_entity ON entity_aliases (entity_seq)",
        f"""
        CREATE TABLE mentions (
            memory_seq {d.ref_type} NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            entity_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            surface TEXT NOT NULL,
            count INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (memory_seq, entity_seq)
        )
        """,
        "CREATE INDEX mentions_entity ON mentions (entity_seq)",
        # Co-occurrence between two entities of one scope, stored once with
        # src_seq < dst_seq; ``weight`` is what consolidation strengthens
        # and decays.
        f"""
        CREATE TABLE entity_edges (
            src_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            dst_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            count INTEGER NOT NULL DEFAULT 1,
            weight {d.float_type} NOT NULL,
            updated_at {d.float_type} NOT NULL,
            PRIMARY KEY (src_seq, dst_seq)
        )
        """,
        "CREATE INDEX entity_edges_dst ON entity_edges (dst_seq)",
        # Directed links between memories: ``supersedes`` (src replaced dst),
        # ``merged`` (dst was merged into src), ``correlates`` (skills).
        f"""
        CREATE TABLE memory_links (
            src_seq {d.ref_type} NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            dst_seq {d.ref_type} NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            weight {d.float_type} NOT NULL DEFAULT 1.0,
            created_at {d.float_type} NOT NULL,
            updated_at {d.float_type} NOT NULL,
            PRIMARY KEY (src_seq, dst_seq, kind)
        )
        """,
        "CREATE INDEX memory_links_dst ON memory_links (dst_seq, kind)",
        # What happened, kept apart from the memories so recall stays
        # read-only: write sources, recall outcomes, feedback, skill usage.
        f"""
        CREATE TABLE signals (
            seq {d.serial_pk},
            at {d.float_type} NOT NULL,
            kind TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            channel TEXT NOT NULL DEFAULT '',
            memory_id TEXT,
            query TEXT,
            data TEXT NOT NULL DEFAULT '{{}}'
        )
        """,
        "CREATE INDEX signals_kind_at ON signals (kind, at)",
        "CREATE INDEX signals_memory ON signals (memory_id)",
    ]


def _v3_skills(d: Dialect) -> list[str]:
    return [
        # A skill is a memory (type skill, store procedural) plus this row:
        # its name, unique within the owner's scope so ``get`` finds it, and
        # the digest of its parsed definition, so a re-import can tell
        # "unchanged" without comparing every field.
        f"""
        CREATE TABLE skills (
            memory_seq {d.ref_type} PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE,
            agent_id TEXT NOT NULL,
            visibility TEXT NOT NULL,
            group_name TEXT NOT NULL DEFAULT '',
            channel TEXT NOT NULL DEFAULT '',
            name TEXT NOT NULL,
            digest TEXT NOT NULL,
            origin TEXT
        )
        """,
        """
        CREATE UNIQUE INDEX skills_name
            ON skills (agent_id, visibility, group_name, channel, name)
        """,
        "CREATE INDEX skills_by_name ON skills (name)",
    ]


def _v4_relations(d: Dialect) -> list[str]:
    return [
        # Typed relations between two entities of one scope (owns,
        # maintains, leads, manages, depends_on), each tied to the memory
        # that states it: reads go through that memory's scope and liveness,
        # and a hard delete of the memory takes its relations with it.
        f"""
        CREATE TABLE entity_relations (
            memory_seq {d.ref_type} NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
            src_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            dst_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            sentence TEXT NOT NULL,
            PRIMARY KEY (memory_seq, src_seq, dst_seq, kind)
        )
        """,
        "CREATE INDEX entity_relations_src ON entity_relations (src_seq, kind)",
        "CREATE INDEX entity_relations_dst ON entity_relations (dst_seq, kind)",
    ]


def _v5_kinds(d: Dialect) -> list[str]:
    # ``kind`` is stored, not derived: it is what the writer said the memory
    # is (a journal entry, an issue...), independent of category and store,
    # and every search filters on it inside the store, so it needs a column
    # and an index. Conversation turns written before this step are the
    # ``message`` kind (category conversation is what marked them).
    return [
        "ALTER TABLE memories ADD COLUMN kind TEXT NOT NULL DEFAULT 'memory'",
        "ALTER TABLE memories ADD COLUMN project TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE memories ADD COLUMN completed INTEGER",
        "UPDATE memories SET kind = 'message' WHERE category = 'conversation'",
        "CREATE INDEX memories_kind ON memories (kind, project, created_at)",
    ]


def _v6_scorer(d: Dialect) -> list[str]:
    return [
        # The learned scorer's weights, one row per agent and channel (the
        # scope its training pairs came from); written by an explicit
        # training step, only read by recall.
        f"""
        CREATE TABLE scorer_weights (
            agent_id TEXT NOT NULL,
            channel TEXT NOT NULL DEFAULT '',
            trained_at {d.float_type} NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (agent_id, channel)
        )
        """,
    ]


def _v7_constraint_index(d: Dialect) -> list[str]:
    del d  # the same statement on every backend
    return [
        # Recall looks up the constraints a query's entities touch on every
        # call; constraints are few, and without this index the planner
        # walked every visible memory's mentions (145 ms at 100k memories).
        "CREATE INDEX memories_constraints ON memories (seq) WHERE is_constraint = 1",
    ]


def _v8_vector_index(d: Dialect) -> list[str]:
    # Where the backend can search vectors itself (PostgreSQL with
    # pgvector), a copy of each vector in its own type, kept filled on every
    # write and backfilled here, and an HNSW index over it; nothing elsewhere.
    return d.vector_index_schema()


def _v9_scoped_text(d: Dialect) -> list[str]:
    # Where the backend keeps a scope-first text index, it is created and
    # filled here, so a keyword search reads only the caller's partitions.
    return d.scoped_text_schema()


def _v10_created_index(d: Dialect) -> list[str]:
    del d  # the same statement on every backend
    return [
        # A listing runs newest first over everything a scope sees; without
        # this index the planner gathered every visible row and sorted it
        # (125 ms at 100k memories, the inspector's first page), with it it
        # walks back from the newest and stops at the page's end.
        "CREATE INDEX memories_created ON memories (created_at, id)",
    ]


#: How much of the previous turn a conversation turn keeps as keyword
#: context from migration 11 on (``transcripts.CONTEXT_CHARS`` at the time;
#: a test holds the two together). A migration's meaning never changes, so
#: the number is written here, not imported.
TURN_CONTEXT_CHARS = 400
# Trimmed from the end of the cut, as the ingest does: ASCII white space,
# written into the SQL literal as the characters themselves.
_SPACES = " \t\n\r\x0b\x0c"


def _v11_turn_context(d: Dialect) -> list[str]:
    del d  # the same statement on every backend
    # A conversation turn was indexed with the whole turn before it in its
    # session as keyword context (``previous + "\n" + dates``); it keeps
    # the first characters of it now, as new turns do. Only contexts that
    # begin with the previous turn's content are cut (a context given by
    # hand is left alone); the rest (the dates line) stays. The text
    # indexes follow through their update triggers.
    n = TURN_CONTEXT_CHARS
    return [
        f"""
        WITH turns AS (
            SELECT seq, LAG(content) OVER (
                PARTITION BY agent_id, channel, session_id ORDER BY seq
            ) AS before
            FROM memories WHERE kind = 'message' AND session_id IS NOT NULL
        )
        UPDATE memories
        SET context = rtrim(substr(context, 1, {n}), '{_SPACES}')
            || substr(context, length(turns.before) + 1)
        FROM turns
        WHERE turns.seq = memories.seq
            AND turns.before IS NOT NULL
            AND length(turns.before) > {n}
            AND substr(memories.context, 1, length(turns.before)) = turns.before
        """,
    ]


def _v12_scope_keys(d: Dialect) -> list[str]:
    # The same for a backend whose text index is one GIN index (PostgreSQL):
    # each row's words keyed by its scope partition, and per-partition row
    # counts kept on write, so keyword search reads only the caller's
    # partitions; and its stored vectors kept in their rows, where recall
    # in the database reads them. (Version 11 is the keyword indexing of
    # conversation turns.)
    return [*d.scope_key_schema(), *d.vector_storage_schema()]


def _v13_part_vectors(d: Dialect) -> list[str]:
    # The vectors of a long text's parts (retrieval/parts.py), all of one
    # text in one row: the re-ranker reads the few of its window by key.
    # Kept out of ``embeddings``, whose rows are what dense search ranks.
    return [
        f"""
        CREATE TABLE part_vectors (
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vectors {d.blob_type} NOT NULL,
            PRIMARY KEY (model, text_hash)
        )
        """
    ]


def _v14_erasures(d: Dialect) -> list[str]:
    return [
        # The erasure log: one receipt per erasure (receipts.py), never the
        # erased text. ``agent_id`` and ``channel`` are the eraser's scope;
        # ``selection`` and ``counts`` are JSON objects.
        f"""
        CREATE TABLE erasures (
            seq {d.serial_pk},
            id TEXT NOT NULL UNIQUE,
            at {d.float_type} NOT NULL,
            agent_id TEXT NOT NULL,
            channel TEXT NOT NULL DEFAULT '',
            selection TEXT NOT NULL,
            counts TEXT NOT NULL,
            digest TEXT NOT NULL
        )
        """,
        "CREATE INDEX erasures_agent ON erasures (agent_id, at)",
    ]


def _v15_retention(d: Dialect) -> list[str]:
    return [
        # Retention rules (retention_rules.py): how many days memories of an
        # agent ('' = every agent), store, category and type ('' = any) are
        # kept; one rule per combination.
        f"""
        CREATE TABLE retention_rules (
            id TEXT PRIMARY KEY,
            days INTEGER NOT NULL,
            agent_id TEXT NOT NULL DEFAULT '',
            store TEXT NOT NULL DEFAULT '',
            category TEXT NOT NULL DEFAULT '',
            type TEXT NOT NULL DEFAULT '',
            set_by TEXT NOT NULL,
            set_at {d.float_type} NOT NULL,
            UNIQUE (agent_id, store, category, type)
        )
        """,
    ]


def _v16_mention_order(d: Dialect) -> list[str]:
    del d  # the same statement on every backend
    return [
        # A write looks for the facts it replaces among each name's newest
        # mentions (candidates_sql._fact_candidates): read in order from here,
        # not sorted out of every mention of the name.
        "CREATE INDEX mentions_entity_memory ON mentions (entity_seq, memory_seq)",
        # It serves every look-up by entity the old index served.
        "DROP INDEX mentions_entity",
    ]


def _v17_same_as(d: Dialect) -> list[str]:
    return [
        # A one-word name may be the same entity as a longer one of its
        # scope ("maria" as "maria lopez"): the short entity points at the
        # full one (``link`` says why: first_name, joined) and readers
        # follow it; nothing else moves, so separating them is one update.
        # Deferred: a copy of the palace (transfer.py) writes entities in
        # key order, and a short name written first points at a later key.
        f"ALTER TABLE entities ADD COLUMN same_as {d.ref_type}"
        " REFERENCES entities (seq) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED",
        "ALTER TABLE entities ADD COLUMN link TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX entities_same_as ON entities (same_as)",
        # Pairs a person separated: the first-name rule never links them again.
        f"""
        CREATE TABLE entity_apart (
            entity_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            other_seq {d.ref_type} NOT NULL REFERENCES entities (seq) ON DELETE CASCADE,
            PRIMARY KEY (entity_seq, other_seq)
        )
        """,
        "CREATE INDEX entity_apart_other ON entity_apart (other_seq)",
    ]


def _v18_erase_lookups(d: Dialect) -> list[str]:
    # An erasure finds the older versions of what it erases (the rows
    # superseded by one, erase_sql.versions) and whether a remaining memory
    # still uses an erased text's vectors (by embed_hash): by index, not a
    # scan of every memory per chunk of ids (a 1M-memory palace).
    statements = [
        "CREATE INDEX memories_superseded_by ON memories (superseded_by)"
        " WHERE superseded_by IS NOT NULL"
    ]
    if d.name == "sqlite":  # PostgreSQL has one since its vectors (pg_vectors.py)
        statements.append("CREATE INDEX memories_by_embed_hash ON memories (embed_hash)")
    return statements


def _v19_name_prefix(d: Dialect) -> list[str]:
    # The first-name rule reads a part's person entities by first word
    # (same_as_sql._fulls): SQLite by a range of entities_key; PostgreSQL's
    # LIKE 'maria %' needs pattern order to use an index (its collation's
    # order is not bytewise).
    if d.name == "sqlite":
        return []
    return [
        "CREATE INDEX entities_name_prefix ON entities"
        " (agent_id, visibility, group_name, channel, norm text_pattern_ops)"
    ]


def _v20_scope_tokens(d: Dialect) -> list[str]:
    # BM25's mean length over the rows the caller sees, as its idf: each
    # scope partition's total length kept with its row count (PostgreSQL;
    # SQLite's partitioned index has nothing to add).
    return d.scope_tokens_schema()


def _v21_flag_changes(d: Dialect) -> list[str]:
    # Archiving, restoring and supersession change two flags of existing
    # rows: each such row is stamped with the palace's ``flags`` counter, so
    # a warm index reads just those rows' flags instead of reloading every
    # row (a reload of a large palace takes seconds; its warm files stay
    # valid, as they hold no flags).
    return [
        "ALTER TABLE memories ADD COLUMN flagged BIGINT NOT NULL DEFAULT 0",
        "CREATE INDEX memories_flagged ON memories (flagged) WHERE flagged > 0",
        "INSERT INTO palace_meta (key, value) VALUES ('flags', 0)",
    ]


def _v22_fact_mentions(d: Dialect) -> list[str]:
    # A write looks for the facts it may replace among each name's newest
    # mentions by memories of the categories that can be replaced
    # (store/supersede.py FACT_CATEGORIES, as of this version): marked, and
    # listed by a partial index, so a palace of chat turns that name the
    # same people does not make every fact's write read thousands of turns.
    return [
        "ALTER TABLE mentions ADD COLUMN fact SMALLINT NOT NULL DEFAULT 0",
        "UPDATE mentions SET fact = 1 WHERE memory_seq IN (SELECT seq FROM memories"
        " WHERE category IN ('fact', 'decision', 'person', 'goal', 'rule'))",
        "CREATE INDEX mentions_fact ON mentions (entity_seq, memory_seq) WHERE fact = 1",
    ]


def _v23_partition_counts(d: Dialect) -> list[str]:
    # BM25's figures over the rows the caller sees, summed over its
    # partitions: each SQLite text partition's rows and tokens kept by the
    # triggers (counting them scanned every row the caller sees, two
    # seconds at a million, at each process's first search and after every
    # write). PostgreSQL keeps its own (v20).
    return d.partition_counts_schema()


def _v24_text_postings(d: Dialect) -> list[str]:
    # PostgreSQL's keyword search scored every visible row holding a query
    # word from the row itself (seconds at a million): each row's words
    # also kept as postings with their counts, in one index by key, so a
    # search sums BM25 over postings without reading a row
    # (store/pg_postings.py).
    return d.text_postings_schema()


def _v25_set_deletes(d: Dialect) -> list[str]:
    # An erasure of many memories on PostgreSQL updated the one row of
    # text_stats once per memory in one transaction, each update walking
    # the versions the earlier ones left: minutes for an agent of a
    # million. Its keyword records are now kept by set (store/pg_erase.py).
    return d.set_delete_schema()


def _v26_key_counts(d: Dialect) -> list[str]:
    # PostgreSQL's keyword search counted each query word's postings on
    # the index for its idf (15-35 ms a recall at a million memories, 76 ms
    # a write's look for what it restates): each key's count now kept as
    # its postings are written (store/pg_postings.py).
    return d.key_counts_schema()


def _v27_stated_times(d: Dialect) -> list[str]:
    # The times a memory's content states, read once by the write instead
    # of at every recall that looks at it (retrieval/time/stored.py): the
    # time stage's p95 at 100k facts, 20 ms reading them, is 2.6 ms. Rows
    # written before stay NULL and are read at recall as before.
    return ["ALTER TABLE memories ADD COLUMN stated_times TEXT"]


def _v28_half_vectors(d: Dialect) -> list[str]:
    # Vectors written in half precision (store/vector_bytes.py): half the
    # bytes of the largest table. Rows written before stay float32 and are
    # read as before; a mindpalace older than this schema must not read the
    # new ones, which this version number keeps it from opening.
    return d.half_vector_schema()


def _v29_keyed_tables(d: Dialect) -> list[str]:
    # Mentions and co-occurrence edges kept in their keys' order: on SQLite
    # a rowid table and its key index held each row's key twice (about 260
    # of a memory's 4,200 bytes at 100,000). PostgreSQL has no row id.
    return d.keyed_tables_schema()


#: hex digits of a SHA-256 a palace keys texts by from schema 30 on (128
#: bits: a collision among a billion texts has odds of about 10^-21), and
#: before it (``SqlCore.hash_chars``)
HASH_CHARS = 32
FULL_HASH_CHARS = 64


def _v30_short_keys(d: Dialect) -> list[str]:
    # A memory's content hash and a vector's key were 64 hex digits, kept
    # in the rows and in four indexes (about 190 of a memory's 3,290 bytes
    # at 100,000); 32 are as good as unique. The first 32 of the 64 are the
    # 32 a new write computes, so rows are cut in place where the backend
    # rewrites them cheaply; where it does not (PostgreSQL re-inserts a
    # rewritten vector row into its HNSW index), a palace that holds rows
    # keeps 64, recorded, and writes computed at that length.
    return d.short_keys_schema(HASH_CHARS, FULL_HASH_CHARS)


#: ``palace_meta``: a model's code in the vector tables is the value of
#: ``VECTOR_CODE`` + its name; ``VECTOR_CODES`` holds the last code given,
#: and a palace without it keys vectors by model name (``SqlCore._vector_key``)
VECTOR_CODE = "vector_code:"
VECTOR_CODES = "vector_codes"


def _v31_vector_codes(d: Dialect) -> list[str]:
    # Each vector row named its model ("local/all-minilm-l6-v2-int8/384",
    # 31 bytes, and again in the key index): a 384-d row of about 840 bytes
    # fit four to a 4 KB page, where five fit with a code of a digit or
    # two. As with the keys' length (schema 30), where rewriting the rows
    # is dear (PostgreSQL re-inserts each into its HNSW index) a palace
    # that holds vectors keeps the names.
    return d.vector_codes_schema(VECTOR_CODE, VECTOR_CODES)


def _v32_one_text_index(d: Dialect) -> list[str]:
    # SQLite kept every text twice in its keyword indexes: the whole-palace
    # FTS5 index served the searches of a caller seeing every partition,
    # the partitioned one the others. The partitioned index now ranks every
    # search exactly (store/sqlite_rank.py), so the other goes: about 180
    # bytes a memory of short texts, 700 of a long chat turn.
    return d.one_text_index_schema()


def _v33_set_links_indexed(d: Dialect) -> list[str]:
    # Nearly every entity links to none (``same_as`` NULL), and every read
    # of the index asks for a given key (equal to, or in a list of, a
    # full name's): only the set links need an entry. About 15 bytes a
    # memory.
    return [
        "DROP INDEX entities_same_as",
        "CREATE INDEX entities_same_as ON entities (same_as) WHERE same_as IS NOT NULL",
    ]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "memories, tags, embeddings, full-text index", _v1_memories),
    Migration(2, "entities, mentions, edges, memory links, signals", _v2_graph),
    Migration(3, "skills: names and definition digests", _v3_skills),
    Migration(4, "typed relations between entities", _v4_relations),
    Migration(5, "personal-data kinds: kind, project, completed", _v5_kinds),
    Migration(6, "scorer weights per agent and channel", _v6_scorer),
    Migration(7, "partial index of constraint memories", _v7_constraint_index),
    Migration(8, "a backend's own nearest-neighbour index of vectors", _v8_vector_index),
    Migration(9, "a text index partitioned by scope", _v9_scoped_text),
    Migration(10, "memories by creation time, for listings", _v10_created_index),
    Migration(11, "conversation turns keep the start of the previous turn", _v11_turn_context),
    Migration(12, "text keys and row counts by scope partition; vectors inline", _v12_scope_keys),
    Migration(13, "vectors of the parts of long texts", _v13_part_vectors),
    Migration(14, "the erasure log: receipts without content", _v14_erasures),
    Migration(15, "retention rules: how long memories are kept", _v15_retention),
    Migration(16, "mentions by name, newest first", _v16_mention_order),
    Migration(17, "a short name the same entity as a full one", _v17_same_as),
    Migration(18, "erasure look-ups by index: older versions, shared vectors", _v18_erase_lookups),
    Migration(19, "person entities by first word (PostgreSQL)", _v19_name_prefix),
    Migration(20, "text lengths by scope partition (PostgreSQL)", _v20_scope_tokens),
    Migration(21, "archive and supersession flags read without a reload", _v21_flag_changes),
    Migration(22, "mentions by facts that may be replaced, by name", _v22_fact_mentions),
    Migration(23, "rows and tokens by text partition (SQLite)", _v23_partition_counts),
    Migration(24, "keyword postings by scope partition's word (PostgreSQL)", _v24_text_postings),
    Migration(25, "an erasure's keyword records kept by set (PostgreSQL)", _v25_set_deletes),
    Migration(26, "postings counted by key as they are written (PostgreSQL)", _v26_key_counts),
    Migration(27, "the times a memory states, read when it is written", _v27_stated_times),
    Migration(28, "vectors kept in half precision", _v28_half_vectors),
    Migration(29, "mentions and edges stored by their keys (SQLite)", _v29_keyed_tables),
    Migration(30, "texts keyed by 32 hex digits of their hash", _v30_short_keys),
    Migration(31, "vectors keyed by a code of their model", _v31_vector_codes),
    Migration(32, "one keyword index, partitioned by scope (SQLite)", _v32_one_text_index),
    Migration(33, "only set same-entity links indexed", _v33_set_links_indexed),
)


def latest_version() -> int:
    """The version this code migrates a database to."""
    return MIGRATIONS[-1].version
