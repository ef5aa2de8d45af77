"""The vector store: a chromadb collection of the current chunks' vectors, derived from nav.db (the source
of truth) and repaired from it. Telemetry is off and no embedding function is set: nav passes every vector
itself, so chromadb never downloads its default model."""
from __future__ import annotations

import gc
import shutil
import sqlite3
import sys
from pathlib import Path

from navigator.index import store
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
    return str((index_dir / store.CHROMA_DIR).resolve())


def open_collection(index_dir: Path):
    """The chromadb collection, with telemetry off and no embedding function: nav passes every vector
    itself, so chromadb never downloads its default model."""
    chromadb = import_chromadb()
    from chromadb.config import Settings
    if not (index_dir / store.CHROMA_DIR / "chroma.sqlite3").exists():
        _forget_chroma_system(index_dir)  # deleted behind this process's back: a cached system would be stale
    client = chromadb.PersistentClient(path=_chroma_path(index_dir),
                                       settings=Settings(anonymized_telemetry=False, allow_reset=True))
    return client, client.get_or_create_collection(store.COLLECTION, embedding_function=None,
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


def release_vector_store(index_dir: Path) -> None:
    """Forget this process's chromadb client for the index, so the next open_collection reads the store
    from disk again. A long-running process (the MCP server) calls it when the index changed under it:
    another process's writes are not seen through a client system opened before them."""
    _forget_chroma_system(index_dir)


def delete_vector_store(index_dir: Path) -> None:
    """Delete the chroma directory (derived data: nav rebuilds it from nav.db) and chromadb's memory of it."""
    _forget_chroma_system(index_dir)
    shutil.rmtree(index_dir / store.CHROMA_DIR, ignore_errors=True)


def sync_chroma(index_dir: Path, conn: sqlite3.Connection,
                changes: tuple[set[str], set[str]] | None = None) -> None:
    """Make the chroma collection hold exactly the current chunks' vectors. Needs no model: vectors come
    from the cache. `changes` = (chunk ids removed, chunk ids added) by the commit just made: when chroma
    was in sync with the generation before it, only those are applied. Otherwise every id is compared,
    vectors are read in pages of CHROMA_BATCH, and a collection that cannot be opened is deleted and rebuilt."""
    import numpy as np
    generation = store.get_meta(conn, "generation", 0)
    in_step = changes is not None and store.get_meta(conn, "chroma_generation") == generation - 1
    try:
        client, collection = open_collection(index_dir)
        have = None if in_step else set(collection.get(include=[])["ids"])
    except Exception:  # a damaged chroma directory: it is derived data, rebuild it from nav.db
        delete_vector_store(index_dir)
        client, collection = open_collection(index_dir)
        have, in_step = set(), False

    def upsert(page: list) -> None:
        collection.upsert(ids=[r[0] for r in page],
                          embeddings=np.stack([np.frombuffer(r[1], dtype=np.float32) for r in page]))

    def upsert_in_pages(rows) -> None:
        page: list = []
        for row in rows:
            page.append(row)
            if len(page) == store.CHROMA_BATCH:
                upsert(page)
                page = []
        if page:
            upsert(page)

    vectors = "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash"
    if in_step:
        removed, added = changes
        stale = sorted(removed)
        upsert_in_pages(store.select_where_in(conn, vectors, "c.id", sorted(added)))
    else:
        want: set[str] = set()

        def not_in_chroma():
            for row in conn.execute(vectors):
                want.add(row[0])
                if row[0] not in have:
                    yield row

        upsert_in_pages(not_in_chroma())
        stale = sorted(have - want)
    for i in range(0, len(stale), store.CHROMA_BATCH):
        collection.delete(ids=stale[i:i + store.CHROMA_BATCH])
    store.set_meta(conn, "chroma_generation", generation)
