"""Building an index incrementally: walk, re-chunk only changed files, embed only unseen chunk texts,
commit atomically, then sync the vector store. See navigator.index.store for the on-disk layout and crash safety."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from navigator.index import store
from navigator.core.config import Config
from navigator.core.errors import EmbedderMismatchError, IndexLockedError
from navigator.index.embedder import limit_kernel_cache, release_freed_memory
from navigator.index.graph import update_graph
from navigator.index.lexical import newest_bm25_state, term_encoder_over, write_bm25_state
from navigator.index.onnx_query import (ONNX_SMALL_BATCH, embed_with_onnx_while_importing_chromadb,
                                        ensure_onnx_export, onnx_enabled)
from navigator.index.vector_store import chroma_server, delete_vector_store, sync_chroma
from navigator.index.walk import file_hash, read_source, walk_tree

# Embeddings are committed to the cache every this many chunks, bounding the work a kill -9 can waste.
EMBED_COMMIT_EVERY = 256


@dataclass
class IndexSummary:
    root: str
    index_dir: str
    files_indexed: int = 0
    files_changed: int = 0          # re-chunked this run (new or modified)
    files_deleted: int = 0
    chunks: int = 0
    chunks_reused: int = 0          # chunk texts whose embedding came from the cache
    chunks_embedded: int = 0        # chunk texts embedded this run
    skipped: dict[str, int] = field(default_factory=dict)
    parse_error_files: int = 0
    decode_error_files: int = 0
    seconds: float = 0.0
    model_loaded: bool = False
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(self.__dict__)

    def render(self) -> str:
        skipped = ", ".join(f"{n} {r}" for r, n in sorted(self.skipped.items())) or "none"
        lines = [
            f"Indexed {self.root}",
            f"  files    {self.files_indexed} indexed, {self.files_changed} new or changed, {self.files_deleted} deleted",
            f"  chunks   {self.chunks} total, {self.chunks_embedded} embedded, {self.chunks_reused} reused from cache",
            f"  skipped  {skipped}",
        ]
        if self.parse_error_files or self.decode_error_files:
            lines.append(f"  warnings {self.parse_error_files} files with syntax errors (chunked anyway), "
                         f"{self.decode_error_files} files with invalid UTF-8 (bad bytes replaced)")
        lines.append(f"  index    {self.index_dir}  ({self.seconds:.1f}s)")
        lines.extend(f"  note     {n}" for n in self.notes)
        return "\n".join(lines)


class IndexLock:
    """An exclusive flock on <index_dir>/lock. The kernel drops it when the holder dies, even by kill -9."""

    def __init__(self, index_dir: Path):
        self.path = index_dir / "lock"
        self.fd: int | None = None

    def __enter__(self):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            from navigator.index.repair import is_read_only_error, read_only_error
            if is_read_only_error(exc):
                raise read_only_error(self.path.parent, exc) from exc
            raise
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(self.fd)
            raise IndexLockedError(f"another `nav index` (pid {holder}) is writing {self.path.parent}",
                                   hint="wait for it to finish; searches keep working on the previous index meanwhile")
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode(), 0)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


class Progress:
    """Count, rate and ETA on stderr while embedding; silent when stderr is not a terminal."""

    def __init__(self, total: int, label: str = "embedding", stream=None):
        self.total, self.done, self.label = total, 0, label
        self.stream = stream or sys.stderr
        self.enabled = total > 0 and self.stream.isatty()
        self.start = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 30
        filled = int(width * self.done / self.total)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                          f"{rate:5.1f}/s ETA {eta:4.0f}s")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


def _tokenizer():
    """The BM25 document tokenizer, when the retrievers package provides one."""
    try:
        from navigator.index.tokenize import TOKENIZER_VERSION, document_tokens
    except ImportError:
        return None, None
    return TOKENIZER_VERSION, document_tokens


def build_index(repo_root: Path, config: Config, *, skip: list[str] | None = None, rebuild: bool = False,
                progress_stream=None, embed_fn: Callable | None = None) -> IndexSummary:
    """Bring the index of `repo_root` up to date. Only new or changed files are re-chunked and only chunk
    texts without a cached embedding are embedded; nothing loads the model when nothing needs embedding."""
    from chunkers import chunk_file
    from navigator.index.embedder import Embedder

    started = time.monotonic()
    index_dir = config.index_dir_for(repo_root)
    summary = IndexSummary(root=str(repo_root), index_dir=str(index_dir))
    with IndexLock(index_dir):
        if rebuild:
            _clear_index_dir(index_dir)
        conn = store.connect(index_dir, create=True)
        manifest = store.get_meta(conn, "manifest") or {}
        embedder = Embedder(config.embed_model, config.embed_dtype)
        # Parsed before any work: a malformed URL is a usage error, not a failure after embedding.
        server = chroma_server(config.chroma_url, repo_root, embedder.identity, config.chroma_collection)
        cached_model = store.get_meta(conn, "embedder")
        if cached_model is not None and cached_model != embedder.identity:
            raise EmbedderMismatchError(
                f"the index at {index_dir} holds embeddings from {cached_model!r}, but {embedder.identity!r} is configured",
                hint="re-embed everything with: nav index PATH --rebuild (or set NAV_EMBED_MODEL back)")
        skip_rules = list(skip) if skip is not None else list(manifest.get("skip") or [])
        walked = walk_tree(repo_root, skip=skip_rules, max_file_bytes=config.max_file_bytes, extra_skip_dirs=(index_dir,))
        skipped = Counter(walked.skipped)

        known = {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, sha256, size, mtime_ns FROM files")}
        tok_version, document_tokens = _tokenizer()
        from chunkers.base import CHUNKER_VERSION
        rechunk_all = manifest.get("chunker_version") != CHUNKER_VERSION
        # Chunks kept from earlier runs hold another tokenizer's lists (a first run has none to redo).
        retokenize = bool(known) and tok_version is not None and manifest.get("tokenizer_version") != tok_version

        new_files: dict[str, tuple] = {}      # path -> (sha, size, mtime, parse_errors, decode_errors)
        new_chunks: dict[str, list] = {}      # path -> [CodeChunk]
        # BM25 terms of each new chunk: the JSON list nav.db keeps, and term ids for the persisted postings.
        token_json: dict[str, str] = {}
        new_terms: dict[str, object] = {}     # chunk id -> int32 term ids under `encoder`
        # The newest BM25 postings on disk (for this tokenizer) number the terms; this run adds to them.
        bm25_base = newest_bm25_state(index_dir / store.BM25_DIR, tok_version) if document_tokens else None
        encoder = term_encoder_over(bm25_base)
        touched_mtime: list[tuple] = []       # unchanged content, new mtime
        present: set[str] = set()
        for f in walked.files:
            old = known.get(f.path)
            if old is not None and (old[1], old[2]) == (f.size, f.mtime_ns) and not rechunk_all:
                present.add(f.path)
                continue
            src = read_source(f.abs_path)
            if src.skip_reason is not None:
                skipped[src.skip_reason] += 1
                continue
            text, raw = src.text, src.raw
            if not text.strip():
                skipped["empty"] += 1
                continue
            present.add(f.path)
            sha = file_hash(raw)
            if old is not None and old[0] == sha and not rechunk_all:
                touched_mtime.append((f.size, f.mtime_ns, f.path))
                continue
            result = chunk_file(f.path, text)
            new_files[f.path] = (sha, f.size, f.mtime_ns, result.parse_errors, int(src.decode_error))
            new_chunks[f.path] = result.chunks
            if document_tokens:
                for c in result.chunks:
                    tokens = document_tokens(c.embed_text)
                    token_json[c.id] = json.dumps(tokens)
                    new_terms[c.id] = encoder.encode(tokens)
        deleted = [p for p in known if p not in present]

        # Embed each distinct chunk text that has no cached vector, committing as we go.
        needed: dict[str, str] = {}
        for chunks in new_chunks.values():
            for c in chunks:
                needed.setdefault(c.content_hash, c.embed_text)
        cached = _cached_hashes(conn, list(needed))
        todo = [(h, t) for h, t in needed.items() if h not in cached]
        summary.chunks_embedded = len(todo)
        if todo:
            small = None
            use_onnx = embed_fn is None and onnx_enabled(config)
            if embed_fn is None:
                limit_kernel_cache()   # before torch's first kernel, the export's included
            if use_onnx and len(todo) > ONNX_SMALL_BATCH:
                # torch is loaded for this run anyway: export now, so the export's own copy of the model is
                # freed before the embedding loop instead of adding to its peak at the end of the run.
                summary.notes.extend(ensure_onnx_export(index_dir, config, embedder.identity))
                release_freed_memory()
            elif use_onnx:
                small = embed_with_onnx_while_importing_chromadb(index_dir, embedder.identity, [t for _, t in todo])
            if small is not None:
                embed_fn = lambda texts, on_batch=None: [small[t] for t in texts]  # noqa: E731
            else:
                summary.model_loaded = True
            _embed_into_cache(conn, embedder, todo, progress_stream, embed_fn)
            release_freed_memory()
        store.set_meta(conn, "embedder", embedder.identity)

        # One transaction swaps in this run's files and chunks: a kill before COMMIT changes nothing.
        conn.execute("BEGIN IMMEDIATE")
        replaced_ids: set[str] = set()        # ids of the chunks this run removes (some come back unchanged)
        for path in deleted:
            replaced_ids.update(r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,)))
            conn.execute("DELETE FROM files WHERE path=?", (path,))
            conn.execute("DELETE FROM chunks WHERE path=?", (path,))
        for size, mtime, path in touched_mtime:
            conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime, path))
        for path, (sha, size, mtime, perr, derr) in new_files.items():
            replaced_ids.update(r[0] for r in conn.execute("SELECT id FROM chunks WHERE path=?", (path,)))
            conn.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)", (path, sha, size, mtime, perr, derr))
            conn.execute("DELETE FROM chunks WHERE path=?", (path,))
            conn.executemany(
                "INSERT OR REPLACE INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(c.id, c.path, seq, c.start_line, c.end_line, c.kind, c.symbol, c.parent, c.header, c.text,
                  c.content_hash, c.tokens, token_json.get(c.id))
                 for seq, c in enumerate(new_chunks[path])])
        token_json.clear()
        if retokenize and document_tokens:
            # Every stored token list is from another tokenizer: redo them all (this run's are current).
            from navigator.index.store import CHUNK_COLUMNS, chunk_from_row
            updates = []
            for row in conn.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks"):
                if row[0] not in new_terms:
                    tokens = document_tokens(chunk_from_row(row).embed_text)
                    updates.append((json.dumps(tokens), row[0]))
                    new_terms[row[0]] = encoder.encode(tokens)
            conn.executemany("UPDATE chunks SET bm25_tokens=? WHERE id=?", updates)
            del updates
        # The symbol graph of the changed files, in the same transaction as their chunks.
        update_graph(conn, new_chunks, deleted)
        generation = int(store.get_meta(conn, "generation", 0)) + 1
        counts = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        files_indexed = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        agg = conn.execute("SELECT SUM(parse_errors > 0), SUM(decode_errors > 0) FROM files").fetchone()
        now = time.time()
        from navigator.index.walk import git_head
        manifest = {
            "built_at": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
            "built_at_epoch": now, "git_head": git_head(repo_root), "root": str(repo_root),
            "files_indexed": files_indexed, "skipped": dict(skipped), "skip": skip_rules,
            "chunk_count": counts, "embedder": embedder.identity, "tokenizer_version": tok_version,
            "chunker_version": CHUNKER_VERSION,
            "parse_error_files": agg[0] or 0, "decode_error_files": agg[1] or 0, "generation": generation,
        }
        store.set_meta(conn, "manifest", manifest)
        store.set_meta(conn, "generation", generation)
        conn.execute("COMMIT")
        # Drop cached vectors no chunk uses any more only when the cache has grown well past the index,
        # so switching back and forth between branches stays free.
        _prune_cache(conn, counts)
        if bm25_base is not None:
            summary.notes.extend(write_bm25_state(index_dir, conn, generation, tok_version, bm25_base, new_terms, encoder))
        new_terms.clear()
        release_freed_memory()
        added_ids = {c.id for chunks in new_chunks.values() for c in chunks}
        # nav.db is committed: a server that fails here loses nothing (the next run syncs, see vector_store).
        sync_chroma(index_dir, conn, changes=(replaced_ids - added_ids, added_ids - replaced_ids), server=server)
        summary.notes.extend(_sync_multilingual(conn, config, progress_stream))
        conn.close()
        if counts and onnx_enabled(config):
            summary.notes.extend(ensure_onnx_export(index_dir, config, embedder.identity))

    summary.files_indexed = files_indexed
    summary.files_changed = len(new_files)
    summary.files_deleted = len(deleted)
    summary.chunks = counts
    summary.chunks_reused = sum(len(v) for v in new_chunks.values()) - summary.chunks_embedded
    summary.skipped = dict(skipped)
    summary.parse_error_files = manifest["parse_error_files"]
    summary.decode_error_files = manifest["decode_error_files"]
    summary.seconds = time.monotonic() - started
    return summary


def _sync_multilingual(conn: sqlite3.Connection, config: Config, progress_stream) -> list[str]:
    """Vectors of the multilingual head for chunk texts that have none (navigator.index.multilingual)."""
    from navigator.index import multilingual
    chosen = multilingual.choice(config.extra)
    if chosen == multilingual.OFF:
        return []
    embedder = multilingual.MultilingualEmbedder(chosen)
    progress: Progress | None = None

    def on_batch(done: int, total: int) -> None:
        nonlocal progress
        progress = progress or Progress(total, label="multilingual", stream=progress_stream)
        progress.advance(done)

    embedded = multilingual.sync_vectors(conn, embedder, on_batch)
    if progress is not None:
        progress.close()
    return [f"multilingual head: embedded {embedded} chunk texts with {embedder.identity}"] if embedded else []


def _clear_index_dir(index_dir: Path) -> None:
    shutil.rmtree(index_dir / "onnx", ignore_errors=True)
    for name in (store.DB_NAME, store.DB_NAME + "-wal", store.DB_NAME + "-shm"):
        (index_dir / name).unlink(missing_ok=True)
    delete_vector_store(index_dir)
    # Generations restart at 1 with a new nav.db: an old bm25/1 must not pass for the new one's.
    shutil.rmtree(index_dir / store.BM25_DIR, ignore_errors=True)


def _cached_hashes(conn: sqlite3.Connection, hashes: list[str]) -> set[str]:
    return {r[0] for r in store.select_where_in(conn, "SELECT content_hash FROM embeddings", "content_hash", hashes)}


def _embed_into_cache(conn, embedder, todo: list[tuple[str, str]], progress_stream, embed_fn) -> None:
    import numpy as np
    progress = Progress(len(todo), stream=progress_stream)
    encode = embed_fn or embedder.encode_documents

    def after_batch(n: int) -> None:
        progress.advance(n)
        release_freed_memory()

    # Length-sorted groups make padding cheap; each group is committed on its own.
    todo = sorted(todo, key=lambda ht: len(ht[1]))
    for start in range(0, len(todo), EMBED_COMMIT_EVERY):
        group = todo[start:start + EMBED_COMMIT_EVERY]
        vectors = encode([t for _, t in group], on_batch=after_batch)
        vectors = np.asarray(vectors, dtype=np.float32)
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)",
                         [(h, embedder.identity, v.tobytes()) for (h, _), v in zip(group, vectors)])
        conn.execute("COMMIT")
    progress.close()


# Keep stale cached vectors until they outnumber live chunks by this factor (branch switches reuse them).
CACHE_SLACK = 3


def _prune_cache(conn: sqlite3.Connection, chunk_count: int) -> None:
    # The chunk count stands for the distinct texts in use (COUNT(DISTINCT) costs 70 ms at 40k chunks).
    total = conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    if total > CACHE_SLACK * max(chunk_count, 1000):
        conn.execute("DELETE FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)")


