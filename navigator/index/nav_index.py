"""Reading an index: its chunks, vectors, BM25 token lists, manifest and freshness."""
from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chunkers.base import CodeChunk
from navigator.index import store
from navigator.core.config import Config
from navigator.core.errors import EmbedderMismatchError, IndexCorruptError, IndexMissingError, InputError, UsageError

# How the vector head searches a local index (NAV_VECTOR_SEARCH): `exact` scores the query against every chunk
# vector in nav.db (deterministic, exact); `ann` asks chroma's HNSW graph, which is approximate and, measured on
# chromadb 1.5.9, not even the same from one process to the next (the top 200 of a django bug report differed in
# 8 ids between two runs, and the file ranking with them: patches/0016). `auto` is exact up to EXACT_SEARCH_LIMIT
# chunks, ann above it or with a chroma server (NAV_CHROMA_URL). The limit was 60k while exact search read every
# vector out of nav.db; with the memory-mapped matrix (navigator.index.vector_matrix) exact measured faster than
# chroma at django's 79k chunks too (a cold search 1.4-2.2 s against 2.4-3.2 s, a no-op `nav index` 1.3 s against
# 3.4 s, the same load: chroma's import and collection sync dominate), so 250k (~380 MB mapped, one matmul).
VECTOR_SEARCH_ENV = "NAV_VECTOR_SEARCH"
VECTOR_SEARCH_MODES = ("auto", "exact", "ann")
EXACT_SEARCH_LIMIT = 250_000


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController
    return ThreadpoolController()    # finds the loaded BLAS libraries once (~1 ms); limit() is then cheap


def _one_blas_thread():
    """The exact search's product in one BLAS thread. With two, OpenBLAS's idle worker spins after every call:
    measured on a django release (bench: rag-eval/django_latency.py, 16 reports x 2), CPU time per bug-report
    query 104-111 ms with two threads, 54-56 ms with one, at the same wall time (p50 52-55 ms both)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def resolve_repo(path: str | Path | None) -> Path:
    root = Path(path or ".").expanduser()
    if not root.exists():
        raise InputError(f"path does not exist: {root}", hint="give the directory of the repository to index")
    if not root.is_dir():
        raise InputError(f"not a directory: {root}", hint="nav indexes a whole directory tree; give its folder")
    return root.resolve()


@dataclass
class Freshness:
    state: str                 # fresh | stale | empty | missing
    files_changed_since: int   # added + modified + deleted since the build
    changed_examples: list[str]
    outdated: list[str] = field(default_factory=list)   # what an older nav built (versions.outdated_by)

    def to_json(self) -> dict:
        return {"state": self.state, "files_changed_since": self.files_changed_since,
                "changed_examples": self.changed_examples, "outdated": self.outdated}


class NavIndex:
    """A built index, opened read-only. Cheap to open: chunks and vectors load on first use."""

    def __init__(self, root: Path, index_dir: Path, config: Config):
        self.root = root
        self.index_dir = index_dir
        self.config = config
        try:
            self.conn = store.connect(index_dir, create=False)
        except IndexMissingError:
            _raise_if_building(root, index_dir)
            raise
        self.manifest: dict = store.get_meta(self.conn, "manifest") or {}
        if not self.manifest:
            _raise_if_building(root, index_dir)
            raise IndexMissingError(f"the index at {index_dir} was never completed",
                                    hint=f"run `nav index {root}`")
        self._chunks: list[CodeChunk] | None = None
        self._by_id: dict[str, CodeChunk] = {}      # every chunk loaded so far, by id
        self._paths: dict[str, str] | None = None   # chunk id -> path, every chunk (chunk_paths)
        self._matrix = None
        self._collection = None
        self._query_encoder = None
        self._encoder_loading = None   # (thread, outcome) while preload_query_encoder builds it
        # Set by a long-lived process whose watcher saw no change since it last found the index matching the
        # tree: freshness() then answers without walking the tree (navigator.index.refresh.TreeWatcher).
        self.known_fresh = False
        self._outdated: list[str] | None = None
        from navigator.index.repair import writable
        # A .nav this process cannot write (read-only file system, another user's): chromadb cannot even
        # open its store there, so vector searches rank nav.db's own vectors exactly (see _exact_search).
        self.read_only = not writable(index_dir)

    @classmethod
    def open(cls, repo: str | Path | None, config: Config | None = None, *, check_embedder: bool = True) -> "NavIndex":
        config = config or Config.from_env()
        root = resolve_repo(repo)
        index = cls(root, config.index_dir_for(root), config)
        if check_embedder:
            from navigator.index.embedder import Embedder
            configured = Embedder(config.embed_model).identity     # a shipped model's name carries its hash
            if index.manifest.get("embedder") != configured:
                raise EmbedderMismatchError(
                    f"the index was built with embedder {index.manifest.get('embedder')!r}, but {configured!r} is configured",
                    hint="set NAV_EMBEDDER / NAV_EMBED_MODEL back, or run `nav index PATH` with it: the chunks are "
                         "embedded by the new model, and both models' vectors stay cached, so switching back is free")
        return index

    # ---- chunks
    def chunks(self) -> list[CodeChunk]:
        """Every chunk, in corpus order (path, then position in the file). A query needs only a few:
        chunks_by_ids / chunk_by_id load just those."""
        if self._chunks is None:
            rows = self.conn.execute(f"SELECT {store.CHUNK_COLUMNS} FROM chunks ORDER BY path, seq").fetchall()
            self._chunks = [store.chunk_from_row(r) for r in rows]
            self._by_id = {c.id: c for c in self._chunks}
        return self._chunks

    def chunks_by_ids(self, chunk_ids: Sequence[str]) -> dict[str, CodeChunk]:
        """id -> chunk for the ids the index holds (others are left out), read with one query per
        store.SQLITE_MAX_PARAMS ids and kept for the next call."""
        wanted = [cid for cid in dict.fromkeys(chunk_ids) if cid not in self._by_id]
        rows = store.select_where_in(self.conn, f"SELECT {store.CHUNK_COLUMNS} FROM chunks", "id", wanted)
        self._by_id.update((r[0], store.chunk_from_row(r)) for r in rows)
        return {cid: self._by_id[cid] for cid in chunk_ids if cid in self._by_id}

    def chunk_paths(self) -> dict[str, str]:
        """chunk id -> the path of its file, for every chunk, read once: a ranking can ask where its candidates
        live before it loads any of them (~10 ms for 15k chunks)."""
        if self._paths is None:
            self._paths = dict(self.conn.execute("SELECT id, path FROM chunks").fetchall())
        return self._paths

    def chunk_by_id(self, chunk_id: str) -> CodeChunk:
        """The chunk with this id; KeyError when the index holds none."""
        if chunk_id not in self._by_id:
            self.chunks_by_ids([chunk_id])
        return self._by_id[chunk_id]

    @property
    def chunk_count(self) -> int:
        return int(self.manifest.get("chunk_count", 0))

    @property
    def generation(self) -> int:
        return int(self.manifest.get("generation", 0))

    @property
    def tokenizer_version(self) -> str | None:
        return self.manifest.get("tokenizer_version")

    def bm25_tokens(self) -> dict[str, list[str]] | None:
        """Token lists persisted at index time, or None when they are missing or from another tokenizer."""
        import json
        try:
            from navigator.index.tokenize import TOKENIZER_VERSION
        except ImportError:
            return None
        if self.tokenizer_version != TOKENIZER_VERSION:
            return None
        rows = self.conn.execute("SELECT id, bm25_tokens FROM chunks").fetchall()
        if any(r[1] is None for r in rows):
            return None
        return {r[0]: json.loads(r[1]) for r in rows}

    def bm25_postings(self):
        """(BM25Postings of the current generation, None), memory-mapped from <index_dir>/bm25/<generation>/,
        or (None, why they cannot be used): none written for this generation (a run was killed before
        writing them), another tokenizer, a damaged directory."""
        from navigator.index.lexical import BM25Postings, BM25StateError
        from navigator.index.tokenize import tokenizer_version
        directory = store.bm25_state_dir(self.index_dir, self.generation)
        try:
            postings, params = BM25Postings.load(directory)
        except BM25StateError as exc:
            return None, f"the BM25 state of index generation {self.generation} cannot be used ({exc})"
        if params.get("generation") != self.generation:
            return None, (f"the stored BM25 state is of index generation {params.get('generation')}, "
                          f"the index is at {self.generation}")
        current = tokenizer_version()
        if params.get("tokenizer_version") != current:
            return None, (f"the stored BM25 state was built with tokenizer {params.get('tokenizer_version')}, "
                          f"current is {current}")
        if postings.n_docs != self.chunk_count:
            return None, f"the stored BM25 state holds {postings.n_docs} chunks, the index {self.chunk_count}"
        return postings, None

    def file_texts(self) -> dict[str, str]:
        """The indexed corpus as files (path -> text), rebuilt from the chunks' spans. The chunker covers
        every non-blank line, so a line no chunk holds was blank."""
        by_path: dict[str, dict[int, str]] = {}
        for c in self.chunks():
            lines = by_path.setdefault(c.path, {})
            for offset, line in enumerate(c.text.split("\n")):
                lines.setdefault(c.start_line + offset, line)
        return {p: "\n".join(lines.get(i, "") for i in range(1, max(lines) + 1)) for p, lines in by_path.items()}

    @property
    def embedder_identity(self) -> str:
        """The model whose vectors this index searches (its manifest's; the configured one for an index built
        before the manifest recorded it)."""
        return self.manifest.get("embedder", self.config.embed_model)

    def embedder(self):
        from navigator.index.embedder import Embedder
        return Embedder(self.embedder_identity, self.config.embed_dtype)

    def cached_embeddings(self, texts: list[str]):
        """Embeddings for arbitrary texts through the index's content-hash cache (used by baselines)."""
        import numpy as np
        from chunkers.base import content_hash
        hashes = [content_hash(t) for t in texts]
        # The model test rides in front of the IN list select_where_in appends.
        found: dict[str, bytes] = dict(store.select_where_in(
            self.conn, "SELECT content_hash, vector FROM embeddings", "model = ? AND content_hash", hashes,
            (self.embedder_identity,)))
        todo = sorted({h: t for h, t in zip(hashes, texts) if h not in found}.items())
        if todo:
            embedder = self.embedder()
            vectors = embedder.encode_documents([t for _, t in todo])
            with self.conn:
                self.conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)",
                                      [(h, embedder.identity, v.astype(np.float32).tobytes()) for (h, _), v in zip(todo, vectors)])
            found.update({h: v.astype(np.float32).tobytes() for (h, _), v in zip(todo, vectors)})
        return np.stack([np.frombuffer(found[h], dtype=np.float32) for h in hashes]) if hashes else np.zeros((0, 0), np.float32)

    # ---- vectors
    def adopt_query_encoder(self, previous: "NavIndex") -> None:
        """Keep the query encoder a previous generation of this index loaded (the same embedder): a long-lived
        process that reopens the index after a refresh does not pay for loading it again."""
        same = previous.manifest.get("embedder") == self.manifest.get("embedder")
        if same and previous._query_encoder is not None and self._query_encoder is None:
            self._query_encoder = previous._query_encoder

    def preload_query_encoder(self) -> None:
        """Start building the ONNX query encoder on a worker thread (its session is ~0.15 s of native code
        that mostly releases the GIL), so that a cold search checks freshness and runs its lexical head
        meanwhile; the first embed_query joins it. Nothing happens without an export or any vectors."""
        if self._query_encoder is not None or self._encoder_loading is not None or self.vector_count == 0:
            return
        from navigator.index.onnx_query import OnnxQueryEncoder, import_onnx_runtime, is_exported, onnx_dir_for
        onnx_dir = onnx_dir_for(self.index_dir, self.embedder_identity)
        if not is_exported(onnx_dir):
            return
        import threading
        import_onnx_runtime()    # here, not on the worker: two threads importing at once can deadlock
        outcome: dict = {}

        def build() -> None:
            try:
                outcome["encoder"] = OnnxQueryEncoder(onnx_dir)
            except Exception as exc:   # ModelError and onnxruntime's own: _load_query_encoder decides
                outcome["error"] = exc

        worker = threading.Thread(target=build, name="nav-query-encoder", daemon=True)
        worker.start()
        self._encoder_loading = (worker, outcome)

    def _load_query_encoder(self):
        """The ONNX export beside the index when there is one (no torch import, ~0.3 s cold), else
        sentence-transformers."""
        from navigator.index.embedder import Embedder
        if self._query_encoder is None and self._encoder_loading is not None:
            worker, outcome = self._encoder_loading
            worker.join()
            self._encoder_loading = None
            self._query_encoder = outcome.get("encoder")   # None after an error: loaded below, or torch's
        if self._query_encoder is None:
            from navigator.index.onnx_query import OnnxQueryEncoder, is_exported, onnx_dir_for
            identity = self.embedder_identity
            onnx_dir = onnx_dir_for(self.index_dir, identity)
            encoder = None
            if is_exported(onnx_dir):   # verified against the checksum recorded at export
                from navigator.core.errors import ModelError
                try:
                    encoder = OnnxQueryEncoder(onnx_dir)
                except ModelError:
                    encoder = None     # unloadable after all: the torch path gives the same vectors
            self._query_encoder = encoder or Embedder(identity)
        return self._query_encoder

    def embed_query(self, text: str):
        """The query vector (see _load_query_encoder for which encoder)."""
        from navigator.index.embedder import QUERY_CHAR_LIMIT, Embedder
        encoder = self._load_query_encoder()
        if isinstance(encoder, Embedder):
            return encoder.encode_query(text)
        return encoder.encode(text[:QUERY_CHAR_LIMIT])

    def vector_search(self, query: str, k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first, exactly over nav.db's vectors or through the chroma
        collection (see VECTOR_SEARCH_ENV); over the chunks embedded so far while the vector head is partial
        (none: no model is loaded)."""
        if self.vector_count == 0 or k <= 0:
            return []
        if self._collection is None and self._query_encoder is None and not self._searches_exactly:
            vec = self._embed_query_while_opening_chroma(query)
        else:
            vec = self.embed_query(query)
        return self.vector_search_by_vector(vec, k)

    def _embed_query_while_opening_chroma(self, query: str):
        """The first query of a process: onnxruntime builds its session and embeds the query (native code,
        mostly without the GIL) on a worker thread while this thread imports chromadb (pure Python) and
        opens the collection. Measured cold: 0.61 s for both instead of 0.75 s one after the other."""
        from navigator.index.onnx_query import import_onnx_runtime, is_exported, onnx_dir_for, run_beside
        identity = self.embedder_identity
        if not is_exported(onnx_dir_for(self.index_dir, identity)):
            return self.embed_query(query)
        import_onnx_runtime()
        return run_beside(lambda: self.embed_query(query), self._chroma)

    @property
    def _exact_only(self) -> bool:
        return self.read_only and not self.config.chroma_url

    @functools.cached_property
    def _searches_exactly(self) -> bool:
        return self._exact_only or searches_exactly(self.config, self.chunk_count)

    def _exact_search(self, vec, k: int) -> list[tuple[str, float]]:
        """Cosine over the chunk vectors the vector head holds (this embedder's, of the chunks the embed rule
        embeds), exact and the same in every process. Loaded on first use and again when a build in progress
        has embedded more since: memory-mapped from the generation's matrix file when the head is complete
        (navigator.index.vector_matrix), else read from nav.db's cache."""
        import numpy as np
        embedded = self.vector_count
        if self._matrix is None or self._matrix[0] != embedded:
            from navigator.index.embed_rule import embed_all, embed_excluded
            from navigator.index.vector_matrix import VectorRows, load_matrix
            identity = self.embedder_identity
            mapped = None if self.vectors_partial else \
                load_matrix(self.index_dir, self.generation, identity, embed_all(self.config))
            if mapped is None:
                rows = self.conn.execute("SELECT c.id, c.path, e.vector FROM chunks c JOIN embeddings e "
                                         "ON e.content_hash = c.content_hash WHERE e.model = ? ORDER BY c.id",
                                         (identity,)).fetchall()
                if not embed_all(self.config):
                    rows = [r for r in rows if not embed_excluded(r[1])]
                matrix = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]) if rows \
                    else np.zeros((0, 1), np.float32)
                mapped = VectorRows([r[0] for r in rows],
                                    matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12))
            self._matrix = (embedded, mapped)
        query = np.asarray(vec, dtype=np.float32)
        with _one_blas_thread():
            return self._matrix[1].top(query / max(float(np.linalg.norm(query)), 1e-12), k)

    def vector_search_by_vector(self, vec, k: int) -> list[tuple[str, float]]:
        from navigator.index.vector_store import server_errors
        if self._searches_exactly:
            return self._exact_search(vec, min(k, self.chunk_count))
        collection = self._chroma()
        k = min(k, self.vector_count)
        if k <= 0:
            return []
        with server_errors(self.chroma_server if self.config.chroma_url else None, "searching"):
            res = collection.query(query_embeddings=[vec.tolist()], n_results=k, include=["distances"])
        hits = [(cid, 1.0 - float(d)) for cid, d in zip(res["ids"][0], res["distances"][0])]
        if self.vectors_partial:
            # While a build runs, chroma may still hold a removed chunk's vector for a moment: keep the
            # ids nav.db (the source of truth) holds.
            known = self.chunks_by_ids([cid for cid, _ in hits])
            hits = [(cid, s) for cid, s in hits if cid in known]
        return hits

    # ---- vector coverage (navigator.index.coverage)
    @property
    def vector_record(self) -> dict | None:
        from navigator.index import coverage
        return coverage.read(self.conn)

    @property
    def vector_count(self) -> int:
        """Chunks with a vector in the store (all of them, unless the vector head is partial)."""
        record = self.vector_record
        if record is None or record.get("generation") != self.generation:
            return self.chunk_count
        return min(self.chunk_count, record["embedded"])

    @property
    def vectors_partial(self) -> bool:
        from navigator.index import coverage
        return not coverage.is_complete(self.vector_record)

    def vector_state(self) -> dict:
        """How far along the vector head is, with the sentence shown when it is partial."""
        from navigator.index import coverage
        from navigator.index.lock import building_pid
        record = self.vector_record
        return coverage.summary(record, building_pid(self.index_dir) if not coverage.is_complete(record) else None)

    @functools.cached_property
    def chroma_server(self):
        """The chroma server holding this index's vectors (NAV_CHROMA_URL), or None for the embedded store."""
        from navigator.index.vector_store import chroma_server
        identity = self.embedder_identity
        return chroma_server(self.config.chroma_url, self.root, identity, self.config.chroma_collection)

    def _chroma(self):
        if self._collection is None and self.config.chroma_url:
            self._collection = self._server_collection()
        if self._collection is None:
            self._repair_chroma_if_behind()
            try:
                from navigator.index.vector_store import open_collection
                _, self._collection = open_collection(self.index_dir)
                count = self._collection.count()
            except Exception as exc:  # chromadb raises assorted internal errors on a damaged directory
                raise IndexCorruptError(f"the vector store under {self.index_dir / store.CHROMA_DIR} cannot be opened ({exc})",
                                        hint="run `nav index PATH`: it rebuilds the vector store from the index database") from exc
            from navigator.index.lock import building_pid
            if count != self.vector_count and building_pid(self.index_dir) is None:
                # Vectors lost (or left over) behind nav's back: compare every id with nav.db's chunks.
                self._collection = None
                self._repair_chroma()
                from navigator.index.vector_store import open_collection
                _, self._collection = open_collection(self.index_dir)
        return self._collection

    def _repair_chroma(self) -> None:
        from navigator.index.repair import is_read_only_error, read_only_error
        from navigator.index.vector_store import sync_chroma
        import sqlite3
        try:
            sync_chroma(self.index_dir, self.conn, self.embedder_identity)
        except sqlite3.DatabaseError as exc:   # nav.db itself, the source of the repair
            from navigator.index.repair import database_error
            raise database_error(exc, self.index_dir / store.DB_NAME) from exc
        except Exception as exc:
            if is_read_only_error(exc) or getattr(self, "read_only", False):
                raise read_only_error(self.index_dir, exc) from exc
            raise IndexCorruptError(f"the vector store under {self.index_dir / store.CHROMA_DIR} cannot be repaired ({exc})",
                                    hint="run `nav index PATH`: it rebuilds the vector store from the index database") from exc

    def _repair_chroma_if_behind(self) -> None:
        """A run was killed between committing and syncing chroma (or while adding vectors to it): repair
        it from nav.db now, unless a build is running (it is the one writer, and brings chroma in step)."""
        from navigator.index import coverage
        from navigator.index.lock import building_pid
        from navigator.index.repair import chroma_missing
        # Also when the directory was deleted behind nav's back (no model needed to repair it).
        behind = (store.get_meta(self.conn, "chroma_generation") != store.get_meta(self.conn, "generation")
                  or bool(self.chunk_count and chroma_missing(self.index_dir / store.CHROMA_DIR)))
        record = coverage.read(self.conn)
        unsynced = record is not None and not record.get("synced", True)
        if not (behind or unsynced) or building_pid(self.index_dir) is not None:
            return
        self._repair_chroma()
        self._record_synced(record)

    def _server_collection(self):
        """The shared collection on the chroma server, synced first when it does not hold this index's
        chunks: a run that lost the server mid-sync, or another machine that synced another tree (unless a
        build is running: it is the one writer)."""
        from navigator.index import coverage
        from navigator.index.lock import building_pid
        from navigator.index.vector_store import open_collection, server_in_step, sync_chroma
        server = self.chroma_server
        _, collection = open_collection(self.index_dir, server)
        synced = store.get_meta(self.conn, "chroma_generation") == store.get_meta(self.conn, "generation")
        record = coverage.read(self.conn)
        unsynced = record is not None and not record.get("synced", True)
        if not (synced and not unsynced and server_in_step(self.conn, collection)) \
                and building_pid(self.index_dir) is None:
            sync_chroma(self.index_dir, self.conn, self.embedder_identity, server=server)
            self._record_synced(record)
        return collection

    def _record_synced(self, record: dict | None) -> None:
        from navigator.index import coverage
        from navigator.index.embed_rule import embed_all
        if record is not None:
            coverage.write(self.conn, coverage.measure(self.conn, self.generation, self.embedder_identity,
                                                       synced=True, embed_all=embed_all(self.config)))

    # ---- freshness
    def outdated(self) -> list[str]:
        """What in this index an older nav built (chunks, symbol graph, secret rule): empty when none. Read
        once, like the manifest it comes from (a rebuild is opened as a new NavIndex)."""
        if self._outdated is None:
            from navigator.index.graph import GRAPH_META_KEY
            from navigator.index.versions import outdated_by
            self._outdated = outdated_by(self.manifest, store.get_meta(self.conn, GRAPH_META_KEY), self.config)
        return list(self._outdated)

    def freshness(self) -> Freshness:
        from navigator.index.walk import diff_tree
        if self.chunk_count == 0:
            return Freshness("empty", 0, [])
        outdated = self.outdated()
        # A long-lived process's watcher saw nothing change (navigator.index.refresh): no walk.
        changed = [] if self.known_fresh else diff_tree(self.root, self.conn, self.manifest.get("skip") or [],
                                                        self.config)
        return Freshness("stale" if changed or outdated else "fresh", len(changed), changed[:5], outdated)

    def state(self) -> dict:
        """The index facts every envelope and status report carries."""
        fresh = self.freshness()
        built = self.manifest.get("built_at")
        return {
            "state": fresh.state, "built_at": built,
            "age_seconds": round(time.time() - self.manifest["built_at_epoch"], 1) if built else None,
            "git_head": self.manifest.get("git_head"), "files_changed_since": fresh.files_changed_since,
            "changed_examples": fresh.changed_examples, "outdated": fresh.outdated,
            "chunk_count": self.chunk_count, "files_indexed": self.manifest.get("files_indexed", 0),
            "files_skipped": sum((self.manifest.get("skipped") or {}).values()),
            "index_dir": str(self.index_dir),
            **self.vector_state(),
        }

    def vector_store_state(self) -> dict:
        """Where the vectors live; on a server, its URL and collection (nothing is fetched from it)."""
        server = self.chroma_server if self.config.chroma_url else None
        if server is None:
            return {"vector_store": "embedded"}
        return {"vector_store": "server", "chroma_url": server.url, "chroma_collection": server.collection}


def searches_exactly(config: Config, chunk_count: int) -> bool:
    """Whether vector searches rank nav.db's own vectors exactly (NAV_VECTOR_SEARCH: exact, or auto up to
    EXACT_SEARCH_LIMIT chunks on the embedded store) rather than through chroma's collection. Where they do,
    `nav index` leaves the collection unsynced (no chromadb import) and a reader that needs it syncs it first."""
    mode = config.extra.get(VECTOR_SEARCH_ENV, "").strip().lower() or "auto"
    if mode not in VECTOR_SEARCH_MODES:
        raise UsageError(f"{VECTOR_SEARCH_ENV} must be one of {', '.join(VECTOR_SEARCH_MODES)}, got {mode!r}",
                         hint="unset it for auto: exact up to "
                              f"{EXACT_SEARCH_LIMIT:,} chunks, chroma's approximate search above")
    if mode == "exact":
        return True
    return mode == "auto" and not config.chroma_url and chunk_count <= EXACT_SEARCH_LIMIT


def _raise_if_building(root: Path, index_dir: Path) -> None:
    """A search during the very first build, before its lexical commit: say so, not 'never completed'."""
    from navigator.index.lock import building_pid
    pid = building_pid(index_dir)
    if pid is not None:
        raise IndexMissingError(f"the index at {index_dir} is being built (nav index, pid {pid})",
                                hint="the lexical index is committed first: searches work in a few seconds")


def missing_index_state(root: Path, index_dir: Path) -> dict:
    from navigator.index.lock import building_pid
    return {"state": "missing", "building_pid": building_pid(index_dir), "built_at": None, "age_seconds": None, "git_head": None,
            "files_changed_since": None, "changed_examples": [], "chunk_count": 0, "files_indexed": 0,
            "files_skipped": 0, "index_dir": str(index_dir)}
