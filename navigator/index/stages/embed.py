"""Stage 5, embed: the chunk texts without a cached vector go through the embedder, in length-sorted groups
committed to nav.db's embedding cache one at a time (a kill loses at most one group; the next run goes on
from there). Nothing loads a model when nothing needs embedding."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable

from navigator.core.errors import ModelError
from navigator.index import store
from navigator.index.embedder import limit_kernel_cache, release_freed_memory
from navigator.index.onnx_query import (ONNX_SMALL_BATCH, embed_with_onnx_while_importing_chromadb,
                                        ensure_onnx_export, onnx_enabled)
from navigator.index.stages.run import IndexRun, crash_point

# Embeddings are committed to the cache every this many chunks, bounding the work a kill -9 can waste.
EMBED_COMMIT_EVERY = 256


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


_UNEMBEDDED = ("SELECT c.id, c.path, c.content_hash FROM chunks c LEFT JOIN embeddings e "
               "ON e.content_hash = c.content_hash AND e.model = ? WHERE e.content_hash IS NULL")


def unembedded_texts(run: IndexRun, changed_paths: list[str] | None = None) -> list[tuple[str, str]]:
    """(content hash, text) of each distinct text of nav.db's chunks with no cached vector from this run's
    embedder, the embed rule's exclusions left out (after a model switch: every text the new model lacks).
    Read from nav.db, not from this run's changes: a run killed while embedding left committed chunks without
    vectors, and the next run (with nothing new to chunk) embeds them. `changed_paths`: the files this run's
    lexical commit wrote, whose coverage record is exact; when the chunks it says lack a vector are all
    theirs, only they are read (0.17 s of scanning django's 79k chunks saved)."""
    from navigator.index import coverage
    from navigator.index.embed_rule import embed_all, embed_excluded
    keep_all = embed_all(run.config)
    model = run.embedder.identity
    rows = None
    record = coverage.read(run.conn) if changed_paths is not None else None
    if record is not None:
        missing = record["chunks"] - record["embedded"] - record["excluded"]
        rows = [] if missing <= 0 else [
            row for path in changed_paths if keep_all or not embed_excluded(path)
            for row in run.conn.execute(f"{_UNEMBEDDED} AND c.path = ?", (model, path))]
        if len(rows) != missing:
            rows = None          # some are elsewhere (the record is off): read them all
    if rows is None:
        rows = [row for row in run.conn.execute(_UNEMBEDDED, (model,)) if keep_all or not embed_excluded(row[1])]
    # Ids first, texts after: django holds 15k excluded chunks without a vector, whose texts are not wanted.
    first_chunk: dict[str, str] = {}
    for cid, _, content_hash in rows:
        first_chunk.setdefault(content_hash, cid)
    texts = {row[0]: store.chunk_from_row(row).embed_text for row in store.select_where_in(
        run.conn, f"SELECT {store.CHUNK_COLUMNS} FROM chunks c", "c.id", list(first_chunk.values()))}
    return [(content_hash, texts[cid]) for content_hash, cid in first_chunk.items()]


def embed(run: IndexRun, todo: list[tuple[str, str]], on_group: Callable | None = None, *,
          syncs_chroma: bool = True) -> int:
    """Embed (content hash, text) pairs into the cache; `on_group(hashes)` runs after each group's commit.
    Returns how many texts were embedded. `syncs_chroma`: the vector stage will write to chroma (a few new
    texts are then embedded while chromadb imports)."""
    if not todo:
        return 0
    small = None
    embed_fn = run.embed_fn
    use_onnx = embed_fn is None and onnx_enabled(run.config)
    if embed_fn is None:
        limit_kernel_cache()   # before torch's first kernel, the export's included
    if use_onnx and len(todo) > ONNX_SMALL_BATCH:
        # torch is loaded for this run anyway: export now, so the export's own copy of the model is
        # freed before the embedding loop instead of adding to its peak at the end of the run.
        run.summary.notes.extend(ensure_onnx_export(run.index_dir, run.config, run.embedder.identity))
        release_freed_memory()
        embed_fn = onnx_document_encoder(run)
    elif use_onnx:
        small = embed_with_onnx_while_importing_chromadb(run.index_dir, run.embedder.identity, [t for _, t in todo],
                                                         import_chromadb=syncs_chroma)
    if small is not None:
        embed_fn = lambda texts, on_batch=None: [small[t] for t in texts]  # noqa: E731
    else:
        run.summary.model_loaded = True
    _embed_into_cache(run, todo, embed_fn, on_group)
    release_freed_memory()
    return len(todo)


def onnx_document_encoder(run: IndexRun):
    """The ONNX export's batch encoder on every core, where the index runs in fp32; None where torch in bf16
    is the faster choice (native bf16) or there is no export. Measured side by side on click's chunk texts
    (bench/embed_backends.py, AVX2 EPYC, 2 threads): onnxruntime fp32 18.1 texts/s, torch fp32 14.7, at
    cosine 1.00000 to torch fp32; a re-index that finds the export on disk also skips importing torch."""
    import os

    from navigator.index.embedder import resolve_dtype
    from navigator.index.onnx_query import OnnxQueryEncoder, is_exported, onnx_dir_for
    if resolve_dtype(run.embedder.dtype) != "fp32":
        return None
    onnx_dir = onnx_dir_for(run.index_dir, run.embedder.identity)
    if not is_exported(onnx_dir):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        return OnnxQueryEncoder(onnx_dir, threads=cores).encode_documents
    except ModelError as exc:   # onnxruntime refused the export: torch embeds instead, only slower
        run.summary.notes.append(f"embedded with torch: {exc.message}")
        return None


def _embed_into_cache(run: IndexRun, todo: list[tuple[str, str]], embed_fn, on_group) -> None:
    import numpy as np
    conn, embedder = run.conn, run.embedder
    progress = Progress(len(todo), stream=run.progress_stream)
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
        crash_point("embedding-committed")
        if on_group is not None:
            on_group([h for h, _ in group])
    progress.close()


# Keep stale cached vectors until they outnumber live chunks by this factor (branch switches reuse them, and
# so does switching back to an embedder used before).
CACHE_SLACK = 3


def prune_cache(conn, chunk_count: int, model: str) -> None:
    """Drop cached vectors only when the cache has grown well past the index, so switching back and forth
    between branches (or embedders) stays free: first those no chunk uses any more, then, if still past the
    slack, those of models other than `model` (the one the index searches)."""
    # The chunk count stands for the distinct texts in use (COUNT(DISTINCT) costs 70 ms at 40k chunks).
    limit = CACHE_SLACK * max(chunk_count, 1000)
    if conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] <= limit:
        return
    conn.execute("DELETE FROM embeddings WHERE content_hash NOT IN (SELECT content_hash FROM chunks)")
    if conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] > limit:
        conn.execute("DELETE FROM embeddings WHERE model != ?", (model,))
