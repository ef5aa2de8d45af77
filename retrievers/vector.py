"""The vector head: cosine similarity of sentence embeddings, through the index's chroma collection."""
from __future__ import annotations

from navigator.embedder import QUERY_CHAR_LIMIT
from retrievers.base import HeadHit, RetrievedChunk, Retriever


class VectorRetriever(Retriever):
    name = "vector"

    def __init__(self, index, config):
        super().__init__(index, config)
        self.notes: list[str] = []

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        self.notes = []  # notes describe the latest query only
        if not query.strip():
            self.notes.append("empty query: nothing to search for")
            return []
        if len(query) > QUERY_CHAR_LIMIT:
            self.notes.append(f"query of {len(query)} characters cut to its first {QUERY_CHAR_LIMIT} for the embedder")
        hits = self.index.vector_search(query, k)
        return [RetrievedChunk(chunk=self.index.chunk_by_id(cid), score=score, rank=i,
                               heads={"vector": HeadHit(i, score)})
                for i, (cid, score) in enumerate(hits, start=1)]
