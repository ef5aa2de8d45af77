"""Stage 6, vector sync: the chroma collection made to hold exactly the vectors of nav.db's current chunks
(nav.db is the source of truth; see navigator.index.vector_store), kept in step while the embed stage runs,
then the optional multilingual head.

Order within a run: the lexical commit first (searches work from then on), then `VectorSync.start` brings
chroma in line with the vectors already cached (drops removed chunks, adds reused ones), then every group
the embed stage commits is added to chroma at once (`add`), and `finish` records the coverage as synced.
Chroma never holds a vector of a chunk that is not in nav.db: ids are only added after their chunks are
committed, and removed ids are deleted in `start`, before any embedding."""
from __future__ import annotations

from navigator.index import coverage, store
from navigator.index.embed_rule import embed_all
from navigator.index.stages.embed import Progress
from navigator.index.stages.run import IndexRun, crash_point
from navigator.index.stages.store import Committed
from navigator.core.errors import VectorStoreUnavailableError
from navigator.index.vector_store import open_collection, server_errors, sync_chroma


class VectorSync:
    def __init__(self, run: IndexRun, committed: Committed, *, measured: bool = False):
        """`measured`: the coverage record was measured by this run's lexical commit, so counting each group's
        chunks keeps it exact and `finish` need not measure again (0.17 s at 79k chunks). A record read from
        an earlier run may be off by a group that run embedded and was killed before counting."""
        from navigator.index.nav_index import searches_exactly
        self.run, self.committed = run, committed
        self.record = coverage.read(run.conn)
        self.measured = measured and self.record is not None and self.record.get("generation") == committed.generation
        self.collection = None
        # Searched exactly over nav.db's vectors (the embedded store up to 250k chunks): the collection is left
        # behind and synced by the first reader that needs it (NavIndex._repair_chroma_if_behind), so an index
        # run imports no chromadb (~0.5-1.7 s). A server is always kept in step: others read it.
        self.defer_chroma = run.server is None and searches_exactly(run.config, committed.chunk_count)
        # A chroma server that fails is remembered, not raised at once: the embed stage still fills nav.db's
        # cache (nothing to redo once the server is back), and finish() raises it with the record unsynced.
        self.failure: Exception | None = None

    def start(self, previous: dict | None) -> None:
        """Chroma in line with the cached vectors. When the previous run did not finish its vector stage
        (its record is not synced), chroma may lack vectors of its last group: compare every id."""
        c, run = self.committed, self.run
        if self.defer_chroma:
            return
        changes = None if previous is not None and not previous.get("synced", True) else (c.removed_ids, c.added_ids)
        # nav.db is committed: a server that fails here loses nothing (the next run syncs, see vector_store).
        try:
            sync_chroma(run.index_dir, run.conn, run.embedder.identity, changes=changes, server=run.server)
        except VectorStoreUnavailableError as exc:
            self.failure = exc

    def add(self, hashes: list[str]) -> None:
        """Upsert the vectors of the chunks with these content hashes (just committed to the cache)."""
        run = self.run
        if self.failure is not None:
            return
        rows = list(store.select_where_in(run.conn, store.CHUNK_VECTORS, "c.content_hash", hashes,
                                          (run.embedder.identity,)))
        if rows and not self.defer_chroma:
            try:
                self._upsert(rows)
            except VectorStoreUnavailableError as exc:
                self.failure = exc
                return
        # These chunks had no vector before this group (their hash had none). None of them is excluded: the
        # hashed text starts with the chunk's path, and the embed stage never embeds an excluded path's text.
        self.record["embedded"] += len(rows)
        coverage.write(run.conn, self.record)
        crash_point("embedded-group")

    def _upsert(self, rows) -> None:
        import numpy as np
        run = self.run
        with server_errors(run.server, "adding vectors"):
            if self.collection is None:
                _, self.collection = open_collection(run.index_dir, run.server)
            for i in range(0, len(rows), store.CHROMA_BATCH):
                page = rows[i:i + store.CHROMA_BATCH]
                self.collection.upsert(ids=[r[0] for r in page],
                                       embeddings=np.stack([np.frombuffer(r[1], dtype=np.float32) for r in page]))

    def finish(self) -> dict:
        if self.failure is not None:
            raise self.failure
        if self.measured:
            self.record = {**self.record, "synced": True}
        else:
            self.record = coverage.measure(self.run.conn, self.committed.generation, self.run.embedder.identity,
                                           synced=True, embed_all=embed_all(self.run.config))
        coverage.write(self.run.conn, self.record)
        return self.record


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
