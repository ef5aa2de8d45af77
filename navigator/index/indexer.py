"""`nav index`: bring a repository's index up to date, as its stages in order (one module each under
navigator/index/stages/): walk -> chunk -> store -> postings (and graph) -> embed -> vector sync.
See navigator.index.store for the on-disk layout, navigator.index.stages for crash safety."""
from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from navigator.index import coverage, store
from navigator.core.config import Config
from navigator.index.embedder import release_freed_memory
from navigator.index.embed_rule import embed_all, embed_excluded
from navigator.index.repair import record_verified
from navigator.index.lock import IndexLock  # noqa: F401  (re-exported: tests and callers import it here)
from navigator.index.onnx_query import ensure_onnx_export, onnx_enabled
from navigator.index.secrets import ALLOWED_WARNING
from navigator.index.nav_index import searches_exactly
from navigator.index.status import render_languages
from navigator.index.stages.chunk import chunk
from navigator.index.stages.embed import EMBED_COMMIT_EVERY, Progress, embed, prune_cache, unembedded_texts  # noqa: F401
from navigator.index.stages.postings import write_postings
from navigator.index.stages.run import IndexRun
from navigator.index.stages.store import commit_lexical, index_is_current, touch_manifest
from navigator.index.stages.vectors import VectorSync, sync_multilingual
from navigator.index.stages.walk import walk
from navigator.index.vector_matrix import delete_matrices, has_matrix, write_matrix
from navigator.index.vector_store import chroma_server, delete_vector_store


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
    chunks_not_embedded: int = 0    # chunks the embed rule leaves to the lexical heads (navigator.index.embed_rule)
    skipped: dict[str, int] = field(default_factory=dict)
    parse_error_files: int = 0
    decode_error_files: int = 0
    languages: dict[str, int] = field(default_factory=dict)     # files per syntax read ("python", "go", ...)
    fallback: dict[str, dict] = field(default_factory=dict)     # language -> {"files", "reason"}: read as windows
    redacted: dict[str, int] = field(default_factory=dict)      # {"values", "files"}: secret values replaced
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
        if self.languages:
            lines.insert(3, f"  languages {render_languages(self.languages)}")
        if self.redacted.get("values"):
            lines.append(f"  secrets  {self.redacted['values']} values redacted in {self.redacted['files']} files "
                         "(navigator/index/secrets.py; --allow-secrets turns redaction off)")
        for language, facts in sorted(self.fallback.items()):
            lines.append(f"  warning  {facts['files']} {language} files read as plain text: its grammar did not load "
                         f"({facts['reason']})")
        if self.parse_error_files or self.decode_error_files:
            lines.append(f"  warnings {self.parse_error_files} files with syntax errors (chunked anyway), "
                         f"{self.decode_error_files} files with invalid UTF-8 (bad bytes replaced)")
        lines.append(f"  index    {self.index_dir}  ({self.seconds:.1f}s)")
        if self.chunks_not_embedded:
            lines.append(f"  note     {self.chunks_not_embedded} chunks not embedded: data/notebook/generated/vendored "
                         "files (searchable lexically; NAV_EMBED_ALL=1 to embed them)")
        lines.extend(f"  note     {n}" for n in self.notes)
        return "\n".join(lines)


def build_index(repo_root: Path, config: Config, *, skip: list[str] | None = None, rebuild: bool = False,
                progress_stream=None, embed_fn: Callable | None = None, embed_vectors: bool = True) -> IndexSummary:
    """Bring the index of `repo_root` up to date. Only new or changed files are re-chunked and only chunk
    texts without a cached embedding are embedded; nothing loads the model when nothing needs embedding.
    With embed_vectors=False the run stops after the lexical commit (files, chunks, graph, BM25): searches
    see the new text at once, the vector head says it is partial until a later run embeds the rest
    (navigator.index.refresh)."""
    started = time.monotonic()
    index_dir = config.index_dir_for(repo_root)
    summary = IndexSummary(root=str(repo_root), index_dir=str(index_dir))
    with IndexLock(index_dir):
        if rebuild:
            _clear_index_dir(index_dir)
        run = _open_run(repo_root, index_dir, config, summary, progress_stream, embed_fn)
        previous_vectors = coverage.read(run.conn)
        walked = walk(run, skip)
        changes = chunk(run, walked)
        current = index_is_current(run, changes)
        if current:
            # Nothing changed: the same generation, no postings, no vector store, no model (issue 25, part 4).
            committed = touch_manifest(run, changes)
        else:
            # Lexical first: files, chunks, graph and manifest are committed before the model is even loaded.
            committed = commit_lexical(run, changes)
            prune_cache(run.conn, committed.chunk_count, run.embedder.identity)
            summary.notes.extend(write_postings(run, changes, committed))
        if embed_vectors and current and vectors_current(run) and \
                run.server is None and searches_exactly(config, committed.chunk_count):
            record = coverage.read(run.conn) or {"excluded": 0}
            summary.notes.extend(sync_multilingual(run))
        elif embed_vectors:
            release_freed_memory()
            vectors = VectorSync(run, committed, measured=not current)
            vectors.start(previous_vectors)
            todo = unembedded_texts(run, None if current else list(changes.new_files))
            summary.chunks_embedded = embed(run, todo, on_group=vectors.add,
                                            syncs_chroma=not vectors.defer_chroma)
            record = vectors.finish()
            summary.notes.extend(sync_multilingual(run))
        else:
            record = coverage.read(run.conn) or {"excluded": 0}
            if not current:
                summary.notes.append("embedding deferred: the changed chunks are searchable lexically now; "
                                     "a later nav index embeds them")
        if embed_vectors and committed.chunk_count and vectors_current(run) and run.server is None and \
                searches_exactly(config, committed.chunk_count) and not has_matrix(index_dir, committed.generation):
            # The matrix a cold search maps instead of reading every vector from nav.db (vector_matrix).
            write_matrix(index_dir, run.conn, committed.generation, run.embedder.identity, embed_all(config),
                         None if current else (committed.removed_ids, committed.added_ids))
        run.conn.close()
        record_verified(index_dir)
        if embed_vectors and committed.chunk_count and onnx_enabled(config):
            summary.notes.extend(ensure_onnx_export(index_dir, config, run.embedder.identity))
        summary.chunks_not_embedded = record["excluded"]

    summary.files_indexed = committed.files_indexed
    summary.files_changed = len(changes.new_files)
    summary.files_deleted = len(changes.deleted)
    summary.chunks = committed.chunk_count
    embeddable = sum(len(v) for p, v in changes.new_chunks.items() if embed_all(config) or not embed_excluded(p))
    summary.chunks_reused = max(0, embeddable - summary.chunks_embedded) if embed_vectors else 0
    summary.skipped = dict(run.skipped)
    summary.parse_error_files = committed.manifest["parse_error_files"]
    summary.decode_error_files = committed.manifest["decode_error_files"]
    summary.languages = committed.manifest.get("languages", {})
    summary.fallback = committed.manifest.get("fallback", {})
    summary.redacted = committed.manifest.get("redacted", {})
    if committed.manifest.get("redaction") == "allowed":
        summary.notes.insert(0, f"WARNING {ALLOWED_WARNING}")
    summary.seconds = time.monotonic() - started
    return summary


def vectors_current(run: IndexRun) -> bool:
    """The vector head complete under this run's embed rule (NAV_EMBED_ALL may have changed since)."""
    record = coverage.read(run.conn)
    return coverage.is_complete(record) and bool(record) and \
        bool(record.get("embed_all", False)) == embed_all(run.config)


def _open_run(repo_root: Path, index_dir: Path, config: Config, summary, progress_stream, embed_fn) -> IndexRun:
    """The run's connection and embedder; a damaged nav.db is refused before any work."""
    from navigator.index.embedder import Embedder
    from navigator.index.repair import corrupt_database, forget_verified, quick_check, unchanged_since_verified
    existed = (index_dir / store.DB_NAME).exists()
    if not existed:
        delete_matrices(index_dir)
    # Decided before connecting: opening the database creates its WAL file.
    verified = existed and unchanged_since_verified(index_dir)
    forget_verified(index_dir)       # this run will write: only its own clean end records the stamp again
    conn = store.connect(index_dir, create=True)
    # A damaged nav.db is refused before this run writes a generation into it, so the failed run leaves the
    # index as it found it. Every page is read: 0.22 s for django's 70 MB nav.db from the page cache, 4 s cold
    # on a busy disk; the pages are then warm for the run itself. Skipped when nav.db is exactly as the last
    # run left it (navigator.index.repair.VERIFIED_STAMP).
    damage = quick_check(conn) if existed and not verified else None
    if damage is not None:
        conn.close()
        raise corrupt_database(index_dir / store.DB_NAME, damage)
    embedder = Embedder(config.embed_model, config.embed_dtype)
    # Parsed before any work: a malformed URL is a usage error, not a failure after embedding.
    server = chroma_server(config.chroma_url, repo_root, embedder.identity, config.chroma_collection)
    searched_model = store.get_meta(conn, "embedder")
    if searched_model is not None and searched_model != embedder.identity:
        # A switch, not a refusal: the cache is keyed by (content hash, model), so this run embeds only the
        # texts the configured model has no vector for, and the old model's vectors stay for a switch back.
        summary.notes.append(f"embedder switched from {searched_model} to {embedder.identity}: chunks without a "
                             f"vector from it are embedded now; {searched_model}'s vectors stay cached")
    return IndexRun(repo_root=repo_root, index_dir=index_dir, config=config, conn=conn, embedder=embedder,
                    server=server, summary=summary, manifest=store.get_meta(conn, "manifest") or {},
                    progress_stream=progress_stream, embed_fn=embed_fn)


def _clear_index_dir(index_dir: Path) -> None:
    shutil.rmtree(index_dir / "onnx", ignore_errors=True)
    for name in (store.DB_NAME, store.DB_NAME + "-wal", store.DB_NAME + "-shm"):
        (index_dir / name).unlink(missing_ok=True)
    delete_vector_store(index_dir)
    delete_matrices(index_dir)
    # Generations restart at 1 with a new nav.db: an old bm25/1 must not pass for the new one's.
    shutil.rmtree(index_dir / store.BM25_DIR, ignore_errors=True)
