"""The index on disk: one SQLite database (the source of truth) plus a chromadb collection derived from it.

    <index_dir>/nav.db     files, chunks, the embedding cache (keyed by chunk content hash), meta/manifest
    <index_dir>/chroma/    chromadb persistent collection of the current chunks' vectors (cosine)
    <index_dir>/bm25/<generation>/   the BM25 postings of that generation's chunks (retrievers.bm25.BM25Postings:
                           numpy arrays, the term list, params.json with the generation and tokenizer version)
    <index_dir>/lock       held (flock) by the one `nav index` run allowed at a time

Crash safety: embeddings are committed batch by batch into the cache as they are computed, but the files
and chunks of a run replace the old ones in a single transaction at the end. A run killed at any moment
therefore leaves the previous index intact, and the next run re-embeds nothing that was already computed.
The chroma collection is synced from nav.db after that commit and carries the generation it was synced to;
a mismatch (a run killed mid-sync, a damaged chroma directory) is repaired from nav.db without re-embedding.
The BM25 postings are written after that commit too, into a temporary directory renamed to the new
generation's name, so a directory under bm25/ is always complete; a query that finds none for the current
generation (a run killed before writing it) rebuilds the statistics in memory and says so, and the next
run writes it again.
"""
from __future__ import annotations

import gc
import json
import shutil
import sqlite3
import sys
from pathlib import Path

from navigator.errors import IndexCorruptError, IndexMissingError

SCHEMA_VERSION = 1
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
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, seq INTEGER NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, kind TEXT NOT NULL, symbol TEXT, parent TEXT, header TEXT NOT NULL,
    text TEXT NOT NULL, content_hash TEXT NOT NULL, tokens INTEGER NOT NULL, bm25_tokens TEXT);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
-- Corpus order with the ids, for NavIndex.chunks() and the BM25 postings: a covering scan instead of a sort.
CREATE INDEX IF NOT EXISTS chunks_order ON chunks(path, seq, id);
CREATE TABLE IF NOT EXISTS embeddings (content_hash TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL);
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
        elif int(row[0]) != SCHEMA_VERSION:
            raise IndexCorruptError(
                f"the index at {index_dir} has schema version {row[0]}, this nav reads {SCHEMA_VERSION}",
                hint="rebuild it: nav index PATH --rebuild")
    except sqlite3.DatabaseError as exc:
        raise IndexCorruptError(f"the index database {db_path} is unreadable ({exc})",
                                hint="rebuild it: nav index PATH --rebuild (the index is derived data; nothing of yours is lost)") from exc
    return conn


def select_where_in(conn: sqlite3.Connection, select: str, column: str, values):
    """The rows of `select WHERE column IN (values)`, asked in parts of SQLITE_MAX_PARAMS values."""
    values = list(values)
    for i in range(0, len(values), SQLITE_MAX_PARAMS):
        part = values[i:i + SQLITE_MAX_PARAMS]
        yield from conn.execute(f"{select} WHERE {column} IN ({','.join('?' * len(part))})", part)


def get_meta(conn: sqlite3.Connection, key: str, default=None):
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return json.loads(row[0]) if row else default


def set_meta(conn: sqlite3.Connection, key: str, value) -> None:
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))


def import_chromadb():
    """Import chromadb with the cyclic garbage collector paused, then move what the import created to the
    collector's permanent generation (gc.freeze). The import creates several hundred thousand objects:
    the collector otherwise runs dozens of times during it and walks them all again at interpreter exit.
    Measured, `python -c "import chromadb"`: 0.63 s -> 0.50 s. Frozen objects are never freed by the
    collector, which costs nothing here: modules live as long as the process."""
    if "chromadb" in sys.modules:
        return sys.modules["chromadb"]
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        import chromadb
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    return chromadb


def _chroma_path(index_dir: Path) -> str:
    # chromadb keys its per-process cache by this string: always the same spelling for one directory.
    return str((index_dir / CHROMA_DIR).resolve())


def open_collection(index_dir: Path):
    """The chromadb collection, with telemetry off and no embedding function: nav passes every vector
    itself, so chromadb never downloads its default model."""
    chromadb = import_chromadb()
    from chromadb.config import Settings
    if not (index_dir / CHROMA_DIR / "chroma.sqlite3").exists():
        _forget_chroma_system(index_dir)  # deleted behind this process's back: a cached system would be stale
    client = chromadb.PersistentClient(path=_chroma_path(index_dir),
                                       settings=Settings(anonymized_telemetry=False, allow_reset=True))
    return client, client.get_or_create_collection(COLLECTION, embedding_function=None,
                                                   metadata={"hnsw:space": "cosine"})


def _forget_chroma_system(index_dir: Path) -> None:
    """Drop chromadb's cached client system for this index's directory.

    chromadb keeps one System per persist directory for the life of the process (SharedSystemClient,
    keyed by path) and hands it to every later client of that path. A System whose directory was deleted
    still holds the old SQLite handles, so the next client in the same process fails with "attempt to write
    a readonly database" or "unable to open database file". A long-lived process (MCP server, notebook,
    `nav ask`) that rebuilds or repairs the index would meet that; so did the test suite."""
    if "chromadb" not in sys.modules:
        return
    from chromadb.api.shared_system_client import SharedSystemClient
    key = _chroma_path(index_dir)
    system = SharedSystemClient._identifier_to_system.pop(key, None)
    SharedSystemClient._identifier_to_refcount.pop(key, None)
    if system is not None:
        system.stop()


def delete_vector_store(index_dir: Path) -> None:
    """Delete the chroma directory (derived data: nav rebuilds it from nav.db) and chromadb's memory of it."""
    _forget_chroma_system(index_dir)
    shutil.rmtree(index_dir / CHROMA_DIR, ignore_errors=True)


def bm25_state_dir(index_dir: Path, generation: int) -> Path:
    """Where the BM25 postings of index generation `generation` live."""
    return index_dir / BM25_DIR / str(int(generation))
