"""The index on disk: one SQLite database (the source of truth) plus a chromadb collection derived from it.

    <index_dir>/nav.db     files (the language each was read as, its redactions), chunks, the embedding cache (keyed by
                           chunk content hash and model: a model switch re-embeds only what that model
                           lacks, switching back costs nothing), meta/manifest, the symbol graph of the source files
                           (graph_defs, graph_refs: navigator.index.graph)
    <index_dir>/chroma/    chromadb persistent collection of the current chunks' vectors (cosine)
    <index_dir>/bm25/<generation>/   the BM25 postings of that generation's chunks (navigator.index.lexical.BM25Postings:
                           numpy arrays, the term list, params.json with the generation and tokenizer version)
    <index_dir>/lock       held (flock) by the one `nav index` run allowed at a time

Crash safety, in the order of a run (navigator/index/stages/): the files, chunks, graph and manifest of a
run replace the old ones in one transaction (the lexical commit), before anything is embedded; a run killed
before it leaves the previous index intact. Embeddings are then committed to the cache every 256 chunks
and handed to chroma as they commit; navigator.index.coverage records how much of the vector head exists,
so a run killed while embedding leaves a searchable index whose searches say the vector head is partial,
and the next run embeds only what is missing. The chroma collection carries the generation it was synced
to; a mismatch (a run killed mid-sync, a deleted or damaged chroma directory) is repaired from nav.db
without re-embedding. The BM25 postings are written after the lexical commit, into a temporary directory renamed to the new
generation's name, so a directory under bm25/ is always complete; a query that finds none for the current
generation (a run killed before writing it) rebuilds the statistics in memory and says so, and the next
run writes it again.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from chunkers.base import CodeChunk
from navigator.core.errors import IndexCorruptError, IndexMissingError

SCHEMA_VERSION = 3
# Versions this nav upgrades in place: the schema script creates what a newer version added (v2: the
# graph tables, filled by the next `nav index` run, see navigator.index.graph.update_graph), and
# _key_embeddings_by_model rebuilds the embedding cache under its v3 key (content hash, model).
MIGRATABLE_VERSIONS = frozenset({1, 2})
DB_NAME = "nav.db"
CHROMA_DIR = "chroma"
COLLECTION = "chunks"
CHROMA_BATCH = 4000  # below chromadb's max batch size (5461 on this build)
BM25_DIR = "bm25"
# Below SQLite's limit on bound parameters in one statement (999 before 3.32): ids are looked up in parts.
SQLITE_MAX_PARAMS = 900

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    parse_errors INTEGER NOT NULL DEFAULT 0, decode_errors INTEGER NOT NULL DEFAULT 0);
-- What the chunk stage learnt of each file: the syntax it was read as (chunkers.dispatch: "python", "go", ...;
-- NULL for prose and data), why a file of a language was cut into line windows instead (its grammar did not
-- load), and how many secret values were redacted from it (navigator.index.secrets).
CREATE TABLE IF NOT EXISTS file_facts (
    path TEXT PRIMARY KEY, language TEXT, fallback TEXT, redactions INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, seq INTEGER NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, kind TEXT NOT NULL, symbol TEXT, parent TEXT, header TEXT NOT NULL,
    text TEXT NOT NULL, content_hash TEXT NOT NULL, tokens INTEGER NOT NULL, bm25_tokens TEXT);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
-- Corpus order with the ids, for NavIndex.chunks() and the BM25 postings: a covering scan instead of a sort.
CREATE INDEX IF NOT EXISTS chunks_order ON chunks(path, seq, id);
-- The chunks of a content hash, for the vector stage's groups: without it SQLite scanned every chunk once per
-- hash of a small group (0.27 s for a one-file change's five hashes at django's 79k chunks).
CREATE INDEX IF NOT EXISTS chunks_content ON chunks(content_hash);
CREATE TABLE IF NOT EXISTS embeddings (
    content_hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (content_hash, model));
-- The symbol graph (navigator.index.graph): definitions and references of the source files.
CREATE TABLE IF NOT EXISTS graph_defs (
    path TEXT NOT NULL, qualname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, parent TEXT,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, chunk_id TEXT);
CREATE INDEX IF NOT EXISTS graph_defs_name ON graph_defs(name);
CREATE INDEX IF NOT EXISTS graph_defs_path ON graph_defs(path, parent);
CREATE INDEX IF NOT EXISTS graph_defs_chunk ON graph_defs(chunk_id);
CREATE TABLE IF NOT EXISTS graph_refs (
    path TEXT NOT NULL, scope TEXT NOT NULL, chunk_id TEXT, kind TEXT NOT NULL, name TEXT NOT NULL,
    qualifier TEXT NOT NULL DEFAULT '', alias TEXT, line INTEGER NOT NULL, target_path TEXT);
CREATE INDEX IF NOT EXISTS graph_refs_name ON graph_refs(name, kind);
CREATE INDEX IF NOT EXISTS graph_refs_chunk ON graph_refs(chunk_id);
CREATE INDEX IF NOT EXISTS graph_refs_path ON graph_refs(path, kind);
"""


def connect(index_dir: Path, *, create: bool) -> sqlite3.Connection:
    db_path = index_dir / DB_NAME
    if not db_path.exists() and not create:
        raise IndexMissingError(f"no index at {index_dir}", hint="run `nav index PATH` first")
    index_dir.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) in MIGRATABLE_VERSIONS:
            conn.execute("BEGIN IMMEDIATE")
            _key_embeddings_by_model(conn)
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            conn.execute("COMMIT")
        elif int(row[0]) != SCHEMA_VERSION:
            raise IndexCorruptError(
                f"the index at {index_dir} has schema version {row[0]}, this nav reads {SCHEMA_VERSION}",
                hint="rebuild it: nav index PATH --rebuild")
    except sqlite3.DatabaseError as exc:
        import os
        if not create and not os.access(index_dir, os.W_OK):
            return _connect_read_only(db_path, exc)
        raise IndexCorruptError(f"the index database {db_path} is unreadable ({exc})",
                                hint="rebuild it: nav index PATH --rebuild (the index is derived data; nothing of yours is lost)") from exc
    return conn


def _key_embeddings_by_model(conn: sqlite3.Connection) -> None:
    """A v1/v2 cache keyed by content hash alone, rebuilt under (content hash, model), rows kept. Once per
    index: ~2 s for django's 64k vectors. A reader that cannot write reads the old table as it is (every
    query names the model, and the old table has the column)."""
    key = [r[1] for r in sorted((r for r in conn.execute("PRAGMA table_info(embeddings)") if r[5]), key=lambda r: r[5])]
    if key == ["content_hash", "model"]:
        return
    conn.execute("ALTER TABLE embeddings RENAME TO embeddings_v2")
    conn.execute("CREATE TABLE embeddings (content_hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL, "
                 "PRIMARY KEY (content_hash, model))")
    conn.execute("INSERT INTO embeddings SELECT content_hash, model, vector FROM embeddings_v2")
    conn.execute("DROP TABLE embeddings_v2")


def _connect_read_only(db_path: Path, first_error: sqlite3.DatabaseError) -> sqlite3.Connection:
    """nav.db in a folder this process cannot write (read-only file system): opened read-only, without the
    WAL files SQLite would otherwise create beside it. A database that fails even so is damaged."""
    from navigator.index.repair import corrupt_database
    try:
        conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, isolation_level=None)
        conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise corrupt_database(db_path, exc) from first_error
    return conn


def select_where_in(conn: sqlite3.Connection, select: str, column: str, values, params: tuple = ()):
    """The rows of `select WHERE column IN (values)`, asked in parts of SQLITE_MAX_PARAMS values; `params`
    fill the placeholders `select` itself holds."""
    values = list(values)
    for i in range(0, len(values), SQLITE_MAX_PARAMS):
        part = values[i:i + SQLITE_MAX_PARAMS]
        yield from conn.execute(f"{select} WHERE {column} IN ({','.join('?' * len(part))})", (*params, *part))


# Each chunk's id and vector from one model (its placeholder): the rows every vector reader starts from.
CHUNK_VECTORS = "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash AND e.model = ?"


def cached_vectors_by_model(conn: sqlite3.Connection) -> dict[str, int]:
    """How many of the index's distinct chunk texts each model has a cached vector for: what switching to that
    model would not have to embed again."""
    return dict(conn.execute("SELECT model, COUNT(*) FROM embeddings WHERE content_hash IN "
                             "(SELECT content_hash FROM chunks) GROUP BY model"))


def get_meta(conn: sqlite3.Connection, key: str, default=None):
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return json.loads(row[0]) if row else default


def set_meta(conn: sqlite3.Connection, key: str, value) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))


def bm25_state_dir(index_dir: Path, generation: int) -> Path:
    """Where the BM25 postings of index generation `generation` live."""
    return index_dir / BM25_DIR / str(int(generation))


# The chunk columns a CodeChunk is made of, in chunk_from_row's order.
CHUNK_COLUMNS = "id, path, start_line, end_line, kind, symbol, parent, header, text, tokens"


def chunk_from_row(row) -> CodeChunk:
    """A CodeChunk from a row of SELECT {CHUNK_COLUMNS} FROM chunks."""
    return CodeChunk(id=row[0], path=row[1], start_line=row[2], end_line=row[3], kind=row[4], symbol=row[5],
                     parent=row[6], header=row[7], text=row[8], tokens=row[9])

