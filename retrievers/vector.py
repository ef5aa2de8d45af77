"""The vector head: cosine similarity of sentence embeddings, through the index's chroma collection."""
from __future__ import annotations

from navigator.index.embedder import QUERY_CHAR_LIMIT
from retrievers.base import HeadHit, RetrievedChunk, Retriever
from retrievers.crosslingual import expand_query


def embedding_query(query: str) -> tuple[str, str | None]:
    """The text the embedder reads for `query`: the query with the English words of its Chinese programming
    terms appended (retrievers.crosslingual; the embedder is English-only), and a note when that happened."""
    expanded = expand_query(query)
    if expanded == query:
        return query, None
    return expanded, f"query expanded for the embedder with glossary words: {expanded[len(query):].strip()}"


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
        text, expansion_note = embedding_query(query)
        if expansion_note:
            self.notes.append(expansion_note)
        if len(text) > QUERY_CHAR_LIMIT:
            self.notes.append(f"query of {len(text)} characters cut to its first {QUERY_CHAR_LIMIT} for the embedder")
        hits = self.index.vector_search(text, k)
        return [RetrievedChunk(chunk=self.index.chunk_by_id(cid), score=score, rank=i,
                               heads={"vector": HeadHit(i, score)})
                for i, (cid, score) in enumerate(hits, start=1)]
