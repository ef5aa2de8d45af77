"""The vector store: a chromadb collection of the current chunks' vectors, derived from nav.db (the source
of truth) and repaired from it. Telemetry is off and no embedding function is set: nav passes every vector
itself, so chromadb never downloads its default model.

Two places hold the collection:
- embedded (default): a chromadb PersistentClient under <index_dir>/chroma, collection "chunks";
- a chroma server (`NAV_CHROMA_URL=http://host:port`, a `chroma run`): chromadb's HttpClient. nav.db stays
  local and stays the source of truth for chunks, the embedding cache and state; the server holds only the
  vectors, so another machine with its own nav.db of the same tree attaches to the same vectors (its sync
  finds them all present and uploads nothing).

Collection naming on a server (so that many repositories and embedders share one server):
    nav-<repo name>-<repo key>-<embedder key>
  repo name   the repository directory's name, reduced to [a-zA-Z0-9_-] (at most 40 characters)
  repo key    8 hex of sha1 of the git remote "origin" URL, or of the directory name when there is no remote
              (two clones of one remote share a collection wherever they sit on disk)
  embedder key 8 hex of sha1 of the embedder identity (vectors of two models never mix)
  `NAV_CHROMA_COLLECTION` overrides the whole name (e.g. one collection per branch).
The collection's metadata carries a fingerprint of the chunk-id set last synced into it (nav_chunk_set).
A process that finds another fingerprint than its own last sync (another machine synced another tree into
the shared collection) re-syncs by comparing ids before querying: the last writer's tree wins, and nothing
is re-embedded (vectors come from the local cache).

A server that cannot be reached, or fails during a run, raises VectorStoreUnavailableError (exit 8). Nothing
is lost: nav.db was committed before the sync, the chroma generation is recorded only after a sync
completes, so the next run (or query) with the server back compares ids and uploads what is missing."""
from __future__ import annotations

import gc
import hashlib
import re
import shutil
import sqlite3
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from navigator.core.errors import UsageError, VectorStoreUnavailableError
from navigator.index import store

# Bounds every request to a chroma server (httpx's default in chromadb's client is no timeout at all).
SERVER_TIMEOUT_SECONDS = 60.0
HEARTBEAT_TIMEOUT_SECONDS = 5.0
FINGERPRINT_KEY = "nav_chunk_set"
SERVER_HINT = ("start it (`chroma run --path DIR --host 127.0.0.1 --port PORT`) or unset NAV_CHROMA_URL / drop --chroma-url; "
               "nav.db keeps every chunk and embedding, so the next run with the server back syncs the vectors "
               "without re-embedding")


@dataclass(frozen=True)
class ChromaServer:
    """Where the vectors live when they are not embedded: a chroma server and the collection on it."""
    url: str
    host: str
    port: int
    ssl: bool
    collection: str


def parse_chroma_url(url: str) -> tuple[str, int, bool]:
    """(host, port, ssl) of http://host:port or https://host:port; anything else is a UsageError."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.username:
        raise UsageError(f"NAV_CHROMA_URL / --chroma-url must look like http://host:port, got {url!r}")
    return parts.hostname, port or (443 if parts.scheme == "https" else 8000), parts.scheme == "https"


def _git_origin(root: Path) -> str | None:
    import subprocess
    try:
        out = subprocess.run(["git", "config", "--get", "remote.origin.url"], cwd=root, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def collection_name(root: Path, embedder_identity: str, override: str | None = None) -> str:
    """The collection of this repository and embedder on a shared server (rule in the module docstring)."""
    if override:
        return override
    name = re.sub(r"[^a-zA-Z0-9_-]+", "-", root.name).strip("-_")[:40] or "repo"
    repo_key = hashlib.sha1((_git_origin(root) or root.name).encode()).hexdigest()[:8]
    embedder_key = hashlib.sha1(embedder_identity.encode()).hexdigest()[:8]
    return f"nav-{name}-{repo_key}-{embedder_key}"


def chroma_server(url: str | None, root: Path, embedder_identity: str,
                  collection: str | None = None) -> ChromaServer | None:
    """The server target for this repository, or None for the embedded store (no URL given)."""
    if not url:
        return None
    host, port, ssl = parse_chroma_url(url)
    return ChromaServer(url=url.strip().rstrip("/"), host=host, port=port, ssl=ssl,
                        collection=collection_name(root, embedder_identity, collection))


@contextmanager
def server_errors(server: ChromaServer | None, doing: str):
    """Every failure talking to a chroma server becomes one typed error naming the server."""
    if server is None:
        yield
        return
    try:
        yield
    except VectorStoreUnavailableError:
        raise
    except Exception as exc:
        raise VectorStoreUnavailableError(
            f"the chroma server at {server.url} failed while {doing} ({type(exc).__name__}: {exc})",
            hint=SERVER_HINT) from exc
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


def open_collection(index_dir: Path, server: ChromaServer | None = None):
    """The chromadb collection, with telemetry off and no embedding function: nav passes every vector
    itself, so chromadb never downloads its default model. On a server (see the module docstring) when
    `server` is given, else embedded under index_dir."""
    if server is not None:
        return _open_server_collection(server)
    chromadb = import_chromadb()
    from chromadb.config import Settings
    if not (index_dir / store.CHROMA_DIR / "chroma.sqlite3").exists():
        _forget_chroma_system(index_dir)  # deleted behind this process's back: a cached system would be stale
    client = chromadb.PersistentClient(path=_chroma_path(index_dir),
                                       settings=Settings(anonymized_telemetry=False, allow_reset=True))
    return client, client.get_or_create_collection(store.COLLECTION, embedding_function=None,
                                                   metadata={"hnsw:space": "cosine"})


def _open_server_collection(server: ChromaServer):
    import httpx
    # A bounded heartbeat first: chromadb's client has no timeout, and its constructor already talks to the server.
    try:
        httpx.get(f"{'https' if server.ssl else 'http'}://{server.host}:{server.port}/api/v2/heartbeat",
                  timeout=HEARTBEAT_TIMEOUT_SECONDS).raise_for_status()
    except httpx.HTTPError as exc:
        raise VectorStoreUnavailableError(
            f"no chroma server answers at {server.url} ({type(exc).__name__}: {exc})",
            hint=SERVER_HINT) from exc
    chromadb = import_chromadb()
    from chromadb.config import Settings
    with server_errors(server, "opening the collection"):
        client = chromadb.HttpClient(host=server.host, port=server.port, ssl=server.ssl,
                                     settings=Settings(anonymized_telemetry=False))
        session = getattr(getattr(client, "_server", None), "_session", None)
        if isinstance(session, httpx.Client):
            session.timeout = httpx.Timeout(SERVER_TIMEOUT_SECONDS)
        collection = client.get_or_create_collection(server.collection, embedding_function=None,
                                                     metadata={"hnsw:space": "cosine"})
    return client, collection


def chunk_set_fingerprint(conn: sqlite3.Connection) -> str:
    """sha1 over the sorted ids of nav.db's current chunks: equal on two machines that indexed one tree."""
    digest = hashlib.sha1()
    for (cid,) in conn.execute("SELECT id FROM chunks ORDER BY id"):
        digest.update(cid.encode() + b"\n")
    return digest.hexdigest()


def server_in_step(conn: sqlite3.Connection, collection) -> bool:
    """True when the shared collection holds the chunk set this index last synced into it (no other
    machine synced another tree since)."""
    mine = store.get_meta(conn, "chroma_chunk_set")
    return mine is not None and (collection.metadata or {}).get(FINGERPRINT_KEY) == mine


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
        try:
            system.stop()
        except Exception:
            # A system whose start failed (a damaged chroma.sqlite3) is registered before it starts, and
            # its stop then fails on the parts it never made ('RustBindingsAPI' object has no attribute
            # 'bindings'): there is nothing left to stop.
            pass


def release_vector_store(index_dir: Path) -> None:
    """Forget this process's chromadb client for the index, so the next open_collection reads the store
    from disk again. A long-running process (the MCP server) calls it when the index changed under it:
    another process's writes are not seen through a client system opened before them."""
    _forget_chroma_system(index_dir)


def delete_vector_store(index_dir: Path) -> None:
    """Delete the chroma directory (derived data: nav rebuilds it from nav.db) and chromadb's memory of it."""
    _forget_chroma_system(index_dir)
    shutil.rmtree(index_dir / store.CHROMA_DIR, ignore_errors=True)


def sync_chroma(index_dir: Path, conn: sqlite3.Connection, model: str,
                changes: tuple[set[str], set[str]] | None = None, server: ChromaServer | None = None) -> None:
    """Make the chroma collection hold exactly the current chunks' vectors of `model` (the index's embedder;
    an embedded collection of another model's vectors is deleted first). Needs no model: vectors come
    from the cache. `changes` = (chunk ids removed, chunk ids added) by the commit just made: when chroma
    was in sync with the generation before it, only those are applied. Otherwise every id is compared,
    vectors are read in pages of CHROMA_BATCH, and an embedded collection that cannot be opened is deleted
    and rebuilt. On a server, any failure is a VectorStoreUnavailableError and the recorded chroma generation
    stays behind, so the next run compares ids again (a server is never deleted from)."""
    with server_errors(server, "syncing the vectors"):
        _sync(index_dir, conn, model, changes, server)


def _sync(index_dir: Path, conn: sqlite3.Connection, model: str, changes, server: ChromaServer | None) -> None:
    import numpy as np
    generation = store.get_meta(conn, "generation", 0)
    in_step = changes is not None and store.get_meta(conn, "chroma_generation") == generation - 1
    if server is not None:
        client, collection = open_collection(index_dir, server)
        in_step = in_step and server_in_step(conn, collection)
        have = None if in_step else _all_ids(collection)
    else:
        from navigator.index.repair import chroma_missing
        if store.get_meta(conn, "chroma_model", model) != model:
            # Another model's vectors (the index switched embedders): same ids, other numbers, maybe another
            # width. The collection is derived data; it is filled again from this model's cached vectors.
            delete_vector_store(index_dir)
            in_step = False
        # Deleted by hand: applying only this run's changes would leave every other vector missing.
        in_step = in_step and not chroma_missing(index_dir / store.CHROMA_DIR)
        try:
            client, collection = open_collection(index_dir)
            have = None if in_step else set(collection.get(include=[])["ids"])
        except Exception:  # a damaged chroma directory: it is derived data, rebuild it from nav.db
            client, collection = _reopen_empty(index_dir)
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

    if in_step:
        removed, added = changes
        stale = sorted(removed)
        upsert_in_pages(store.select_where_in(conn, store.CHUNK_VECTORS, "c.id", sorted(added), (model,)))
    else:
        want: set[str] = set()

        def not_in_chroma():
            for row in conn.execute(store.CHUNK_VECTORS, (model,)):
                want.add(row[0])
                if row[0] not in have:
                    yield row

        upsert_in_pages(not_in_chroma())
        stale = sorted(have - want)
    for i in range(0, len(stale), store.CHROMA_BATCH):
        collection.delete(ids=stale[i:i + store.CHROMA_BATCH])
    if in_step and server is None and collection.count() != conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]:
        # The changes applied, but the collection had lost (or gained) vectors before: compare every id.
        _sync(index_dir, conn, model, None, server)
        return
    if server is not None:
        fingerprint = chunk_set_fingerprint(conn)
        collection.modify(metadata={FINGERPRINT_KEY: fingerprint})
        store.set_meta(conn, "chroma_chunk_set", fingerprint)
    store.set_meta(conn, "chroma_generation", generation)
    store.set_meta(conn, "chroma_model", model)


def _reopen_empty(index_dir: Path):
    """Delete a chroma directory that cannot be opened or read and open a new, empty one. chromadb may leave
    a half-built client system in its per-process cache after such a failure: it is forgotten too."""
    delete_vector_store(index_dir)
    try:
        return open_collection(index_dir)
    except Exception:
        # A second try on a clean cache: the failed open can poison chromadb's shared state once more.
        delete_vector_store(index_dir)
        return open_collection(index_dir)


def _all_ids(collection) -> set[str]:
    """Every id in a collection, read in pages (a server caps the size of one response)."""
    ids: set[str] = set()
    offset = 0
    while True:
        page = collection.get(include=[], limit=store.CHROMA_BATCH, offset=offset)["ids"]
        ids.update(page)
        if len(page) < store.CHROMA_BATCH:
            return ids
        offset += len(page)
