"""The named baseline that stays in the harness: plain top-k vector search over a naive chunking
(split only at lines starting with `def ` or `class `). Built in memory from the indexed files; its
embeddings go through the index's content-hash cache, so only the first run pays for them."""
from __future__ import annotations

from retrievers.base import HeadHit, RetrievedChunk, Retriever


class NaiveVectorBaseline(Retriever):
    name = "baseline"

    def __init__(self, index, config):
        super().__init__(index, config)
        self.notes: list[str] = []
        self._chunks = None
        self._matrix = None

    def _load(self):
        if self._chunks is None:
            from chunkers.naive import naive_chunk_file
            chunks = []
            for path, text in sorted(self.index.file_texts().items()):
                chunks.extend(naive_chunk_file(path, text))
            self._chunks = chunks
            self._matrix = self.index.cached_embeddings([c.text for c in chunks])  # plain text: the baseline stays fixed
        return self._chunks, self._matrix

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        import numpy as np
        if not query.strip():
            return []
        chunks, matrix = self._load()
        if not chunks:
            return []
        scores = matrix @ self.index.embed_query(query)
        order = np.argsort(-scores, kind="stable")[:k]
        return [RetrievedChunk(chunk=chunks[i], score=float(scores[i]), rank=r, heads={"vector": HeadHit(r, float(scores[i]))})
                for r, i in enumerate(order, start=1)]
