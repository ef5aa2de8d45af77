"""Stage 6, vector sync: the chroma collection made to hold exactly the vectors of nav.db's current chunks
(nav.db is the source of truth; see navigator.index.vector_store), then the optional multilingual head."""
from __future__ import annotations

from navigator.index.stages.embed import Progress
from navigator.index.stages.run import IndexRun
from navigator.index.stages.store import Committed
from navigator.index.vector_store import sync_chroma


def sync_vectors(run: IndexRun, committed: Committed | None) -> list[str]:
    changes = None if committed is None else (committed.removed_ids, committed.added_ids)
    # nav.db is committed: a server that fails here loses nothing (the next run syncs, see vector_store).
    sync_chroma(run.index_dir, run.conn, changes=changes, server=run.server)
    return sync_multilingual(run)


def sync_multilingual(run: IndexRun) -> list[str]:
    """Vectors of the multilingual head for chunk texts that have none (navigator.index.multilingual)."""
    from navigator.index import multilingual
    chosen = multilingual.choice(run.config.extra)
    if chosen == multilingual.OFF:
        return []
    embedder = multilingual.MultilingualEmbedder(chosen)
    progress: Progress | None = None

    def on_batch(done: int, total: int) -> None:
        nonlocal progress
        progress = progress or Progress(total, label="multilingual", stream=run.progress_stream)
        progress.advance(done)

    embedded = multilingual.sync_vectors(run.conn, embedder, on_batch)
    if progress is not None:
        progress.close()
    return [f"multilingual head: embedded {embedded} chunk texts with {embedder.identity}"] if embedded else []
