"""Candidates retrieved once per query and frozen: the sandbox's read-only view of the index.

Every trial selects from the same candidates, so two policies are compared on what they choose, never on
a ranking that moved; and a policy in the sandbox sees chunk texts, never the index files themselves.
"""
from __future__ import annotations

from dataclasses import dataclass

from chunkers.base import CodeChunk
from retrievers.base import HeadHit, RetrievedChunk


@dataclass
class FrozenQuery:
    query: object                      # navigator.evaluation.queryset.EvalQuery (the answer key stays here)
    candidates: list[RetrievedChunk]

    @property
    def id(self) -> str:
        return self.query.id

    def payload(self) -> dict:
        """What the sandbox receives for this query: the question and the candidates, no answer key."""
        return {"id": self.query.id, "question": self.query.query,
                "candidates": [chunk_to_json(c) for c in self.candidates]}


def chunk_to_json(cand: RetrievedChunk) -> dict:
    out = cand.to_json()
    out["header"] = cand.chunk.header
    return out


def chunk_from_json(record: dict) -> RetrievedChunk:
    chunk = CodeChunk(path=record["path"], start_line=record["start_line"], end_line=record["end_line"],
                      kind=record["kind"], text=record["text"], symbol=record.get("symbol"),
                      parent=record.get("parent"), header=record.get("header", ""), id=record["id"],
                      tokens=record.get("tokens") or 0)
    heads = {name: HeadHit(h["rank"], h["score"]) for name, h in (record.get("heads") or {}).items()}
    return RetrievedChunk(chunk, record["score"], record["rank"], heads)


def freeze(queries, retriever, depth: int) -> list[FrozenQuery]:
    """Retrieve `depth` candidates for every query with `retriever`, once."""
    return [FrozenQuery(q, retriever.retrieve(q.query, depth)) for q in queries]
