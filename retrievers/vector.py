"""The vector head: cosine similarity of sentence embeddings, through the index's chroma collection."""
from __future__ import annotations

from retrievers.base import HeadHit, RetrievedChunk, Retriever
from retrievers.crosslingual import expand_query
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.query_analysis import analyse_query, salient_windows


def embedding_query(query: str) -> tuple[str, str | None]:
    """The text the embedder reads for `query`: the query with the English words of its Chinese programming
    terms appended (retrievers.crosslingual; the embedder is English-only), and a note when that happened."""
    expanded = expand_query(query)
    if expanded == query:
        return query, None
    return expanded, f"query expanded for the embedder with glossary words: {expanded[len(query):].strip()}"


def vector_hits(index, text: str, k: int) -> tuple[list[tuple[str, float]], str | None]:
    """(chunk id, score) best first for `text`, and a note when the query was read in windows.

    The embedder reads at most 256 word pieces. A long query (a bug report, a pasted log) is embedded as its
    salient windows (retrievers.query_analysis.salient_windows: the opening, then the windows densest in code
    names and error lines), each searched, the rankings fused by reciprocal rank; the score is the fused one.
    """
    windows = salient_windows(analyse_query(text))
    if len(windows) == 1:
        return list(index.vector_search(windows[0], k)), None
    rankings = {f"w{i}": [cid for cid, _ in index.vector_search(w, k)] for i, w in enumerate(windows)}
    fused = reciprocal_rank_fusion(rankings)[:k]
    return fused, (f"query of {len(text)} characters embedded as {len(windows)} salient windows "
                   "(its opening and the passages densest in code names), rankings fused")


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
        hits, window_note = vector_hits(self.index, text, k)
        if window_note:
            self.notes.append(window_note)
        return [RetrievedChunk(chunk=self.index.chunk_by_id(cid), score=score, rank=i,
                               heads={"vector": HeadHit(i, score)})
                for i, (cid, score) in enumerate(hits, start=1)]
