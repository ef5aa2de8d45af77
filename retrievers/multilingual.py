"""The multilingual head: cosine between multilingual embeddings (navigator.index.multilingual) of the question and of every chunk.

The document vectors are built by `nav index` (navigator.index.multilingual). On its own the head is a weak code
retriever (English questions do better with the vector head), but it is the one head that reads a Chinese
question: hybrid fuses it in only when the question holds CJK text (retrievers.crosslingual.has_cjk).
Registered as the retriever `multilingual` too, so `nav eval --retriever multilingual` measures it alone.
"""
from __future__ import annotations

from navigator.core.errors import IndexMissingError
from navigator.index import multilingual
from retrievers.base import HeadHit, RetrievedChunk, Retriever

HEAD = "multilingual"
MISSING_HINT = (f"run `nav index PATH` with the same {multilingual.MULTILINGUAL_ENV} to add the multilingual "
                "vectors")


class MultilingualRetriever(Retriever):
    name = HEAD

    def __init__(self, index, config):
        super().__init__(index, config)
        self.notes: list[str] = []
        self._ids: list[str] | None = None
        self._matrix = None
        choice = multilingual.choice(config.extra)
        # Asked for by name (`--retriever multilingual`) with the setting off: USE, the first model measured.
        self._embedder = multilingual.MultilingualEmbedder(
            multilingual.MODEL_USE if choice == multilingual.OFF else choice)

    def available(self) -> bool:
        """Whether the index holds vectors of the configured multilingual embedder."""
        return multilingual.stored_model(self.index.conn) == self._embedder.identity

    def ranked_ids(self, query: str, depth: int) -> list[tuple[str, float]]:
        """The `depth` best (chunk id, cosine) for `query`, best first."""
        import numpy as np
        if self._ids is None:
            if not self.available():
                raise IndexMissingError(f"the index at {self.index.index_dir} holds no vectors from "
                                        f"{self._embedder.identity}", hint=MISSING_HINT)
            self._ids, self._matrix = multilingual.chunk_vectors(self.index.conn, self._embedder.identity)
        if not self._ids or depth <= 0:
            return []
        scores = self._matrix @ self._embedder.encode_query(query)
        depth = min(depth, len(scores))
        top = np.argpartition(-scores, depth - 1)[:depth]
        # Ties broken by chunk order so the ranking is deterministic.
        top = sorted(top, key=lambda i: (-scores[i], i))
        return [(self._ids[i], float(scores[i])) for i in top]

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        self.notes = []
        if not query.strip():
            self.notes.append("empty query: nothing to search for")
            return []
        hits = self.ranked_ids(query, k)
        chunks = self.index.chunks_by_ids([cid for cid, _ in hits])
        return [RetrievedChunk(chunk=chunks[cid], score=score, rank=i, heads={HEAD: HeadHit(i, score)})
                for i, (cid, score) in enumerate(hits, start=1)]
