"""The graph retriever: hybrid, then the strongest hits pass part of their score along the symbol graph.

A class hit lifts its constructor, its constants and (less) its other methods; any hit lifts the constants it
reads, what it calls and its base classes, and the callers of what it defines, across files (edges and
weights in NEIGHBOUR_WEIGHTS; the record is patches/0004-graph-expansion). An index without a graph (built
before it, not re-indexed since) is ranked by hybrid alone, with a note.

Settings (environment, read through config.extra):
  NAV_GRAPH_POOL      hybrid candidates re-scored (default 50; at least k): a neighbour inside the pool keeps
                      its own score under the lift, one outside starts from 0 (patches/0014)
  NAV_GRAPH_SOURCES   top hits whose neighbours are lifted (default 3)
  NAV_GRAPH_WEIGHT    share of a source's score passed along an edge of weight 1 (default 1: a constructor
                      reached from the top hit lands beside it)
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from navigator.index.graph import Definition, SymbolGraph
from retrievers.base import HeadHit, RetrievedChunk, Retriever, number_setting
from retrievers.hybrid import HybridRetriever
from retrievers.named import HEAD as NAMED_HEAD
from retrievers.named import lead_with, named_definitions
from retrievers.source_prior import SourcePrior

if TYPE_CHECKING:
    from chunkers.base import CodeChunk
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex

HEAD = "graph"
POOL_ENV = "NAV_GRAPH_POOL"
SOURCES_ENV = "NAV_GRAPH_SOURCES"
WEIGHT_ENV = "NAV_GRAPH_WEIGHT"
NO_GRAPH_NOTE = "graph: the index has no symbol graph yet (run `nav index`); ranked by hybrid alone"

CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__"})
NEIGHBOUR_WEIGHTS = {
    "head": 1.0,             # a piece of a long definition -> the piece with its signature (defaults live there)
    "constructor": 1.0,      # class -> its constructor (defaults live in its signature)
    "class_constant": 0.6,   # class -> its class-level constants
    "member": 0.3,           # class -> its other methods
    "reads": 0.8,            # code -> a constant it reads
    "calls": 0.6,            # code -> a function or class it calls
    "base": 0.4,             # class -> its base classes
    "caller": 0.4,           # definition -> the code that calls it
}
CEILING_MARGIN = 1e-3       # how far below its source a lifted neighbour stays
MAX_NEIGHBOURS = 8           # per source
MAX_CALLERS = 5              # per definition
MAX_NAME_REFERENCES = 40     # a name used more often than this is too generic to follow to its callers


@dataclass(frozen=True)
class GraphSettings:
    pool: int = 50
    sources: int = 3
    weight: float = 1.0

    @classmethod
    def from_extra(cls, extra: Mapping[str, str]) -> "GraphSettings":
        def positive(env: str, default, cast):
            return number_setting(extra, env, default, valid=lambda v: v > 0, wanted="a positive number",
                                  hint="unset it for the default", cast=cast)
        return cls(pool=positive(POOL_ENV, cls.pool, int), sources=positive(SOURCES_ENV, cls.sources, int),
                   weight=positive(WEIGHT_ENV, cls.weight, float))


class GraphRetriever(Retriever):
    name = "graph"

    def __init__(self, index: "NavIndex", config: "Config"):
        super().__init__(index, config)
        self.settings = GraphSettings.from_extra(config.extra)
        self.hybrid = HybridRetriever(index, config)
        self._graph: SymbolGraph | None = None
        self._notes: list[str] = []

    @property
    def notes(self) -> list[str]:
        return [*self.hybrid.notes, *self._notes]

    @property
    def last_depth(self) -> int | None:
        return self.hybrid.last_depth

    @property
    def bm25(self):
        """Hybrid's bm25 head, so a file ranking over this retriever loads the postings once."""
        return self.hybrid.bm25

    @property
    def graph(self) -> SymbolGraph:
        if self._graph is None:
            self._graph = SymbolGraph(self.index.conn)
        return self._graph

    @property
    def last_fusion(self) -> dict | None:
        return self.hybrid.last_fusion

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        self._notes = []
        if k <= 0:
            return []
        # No deeper than hybrid's own candidate depth for k, so the pool's order is exactly hybrid's ranking.
        depth = self.hybrid.settings.depth_for(self.index.chunk_count, k)
        pool = self.hybrid.retrieve(query, max(k, min(self.settings.pool, depth)))
        if not pool:
            return []
        if not self.graph.available:
            self._notes.append(NO_GRAPH_NOTE)
            return pool[:k]
        own = {hit.chunk.id: hit for hit in pool}
        final = {cid: hit.score for cid, hit in own.items()}
        bonus: dict[str, float] = defaultdict(float)
        # The share passed to a test, doc or example neighbour counts as its own evidence does (source_prior).
        rule = SourcePrior.for_query(self.hybrid.prior, query)
        paths = self.index.chunk_paths() if rule.active else {}
        for source in pool[:self.settings.sources]:
            # A neighbour rises by its share of the source's score, but never past the source: the hit that
            # earned the evidence keeps its place, its neighbours line up behind it.
            for chunk_id, edge_weight in self.neighbours(source.chunk):
                ceiling = source.score * (1.0 - CEILING_MARGIN * (2.0 - edge_weight))   # stronger edges sit closer
                mine = own[chunk_id].score if chunk_id in own else 0.0
                share = self.settings.weight * edge_weight * source.score
                if paths:
                    share *= rule.factor(paths.get(chunk_id, ""))
                lifted = min(mine + share, max(ceiling, mine))
                if lifted > final.get(chunk_id, 0.0):
                    bonus[chunk_id] = lifted - mine
                    final[chunk_id] = lifted
        ranked = sorted(final.items(), key=lambda item: (-item[1], item[0]))[:k]
        chunks = self.index.chunks_by_ids([cid for cid, _ in ranked if cid not in own])
        bonus_rank = {cid: rank for rank, (cid, _) in
                      enumerate(sorted(bonus.items(), key=lambda item: (-item[1], item[0])), start=1)}
        named = named_definitions(query, self.graph, self.config.extra).chunk_ids
        order = lead_with([cid for cid, _ in ranked], named)[:k]
        scores = dict(ranked)
        top = ranked[0][1] if ranked else 0.0
        missing = [cid for cid in order if cid not in own and cid not in chunks]
        if missing:
            chunks.update(self.index.chunks_by_ids(missing))
        out = []
        for cid in order:
            hit = own.get(cid)
            chunk = hit.chunk if hit is not None else chunks.get(cid)
            if chunk is None:
                continue        # the graph names a chunk the index no longer holds (should not happen)
            heads = dict(hit.heads) if hit is not None else {}
            if cid in bonus:
                heads[HEAD] = HeadHit(rank=bonus_rank[cid], score=bonus[cid])
            score = scores.get(cid, 0.0)
            if cid in named:
                # A named definition leads, scored as the best hit so a score-ordered reader keeps it first.
                heads[NAMED_HEAD] = HeadHit(rank=named.index(cid) + 1, score=1.0)
                score = max(score, top)
            out.append(RetrievedChunk(chunk=chunk, score=score, rank=len(out) + 1, heads=heads))
        return out

    # ---- edges
    def neighbours(self, chunk: "CodeChunk") -> list[tuple[str, float]]:
        """(chunk id, edge weight) of the chunks `chunk` lends evidence to, strongest first, at most
        MAX_NEIGHBOURS, itself excluded."""
        graph = self.graph
        weights: dict[str, float] = {}

        def add(target: Definition | None, edge: str) -> None:
            if target is None or not target.chunk_id or target.chunk_id == chunk.id:
                return
            weights[target.chunk_id] = max(weights.get(target.chunk_id, 0.0), NEIGHBOUR_WEIGHTS[edge])

        if chunk.symbol and chunk.kind in ("function", "method", "class"):
            for whole in graph.definitions_at(chunk.path, chunk.symbol):
                add(whole, "head")
        defined = graph.defined_in_chunk(chunk.id)
        for definition in defined:
            if definition.kind == "class":
                for member in graph.members(definition):
                    if member.name in CONSTRUCTORS:
                        add(member, "constructor")
                    elif member.kind == "constant":
                        add(member, "class_constant")
                    else:
                        add(member, "member")
            if definition.kind in ("function", "method", "class") and \
                    graph.reference_count(definition.name) <= MAX_NAME_REFERENCES:
                for caller in graph.callers(definition, limit=MAX_CALLERS):
                    add(caller, "caller")
        for ref, target in graph.uses_in_chunk(chunk.id):
            if ref.kind == "base":
                add(target, "base")
            elif target.kind == "constant":
                add(target, "reads")
            elif ref.kind == "call":
                add(target, "calls")
        return sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:MAX_NEIGHBOURS]
