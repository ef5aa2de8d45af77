"""The hybrid retriever: the vector and bm25 heads, fused by reciprocal rank (retrievers.fusion).

Settings (environment, read through config.extra):
  NAV_RRF_K            the RRF constant (default 60)
  NAV_HYBRID_WEIGHTS   per-head weights, e.g. "vector=1,bm25=0.5" (default 1 each; 0 turns a head off)
  NAV_HYBRID_DEPTH     candidates taken from each head (default: default_candidate_depth(number of chunks))
  NAV_PROSE_BM25       the factor on bm25's weight for an English question that names no code (default 0.25;
                       1 turns it off). See patches/0010-prose-query-fusion/.
  NAV_SOURCE_PRIOR     what the fused score of a test, doc or example chunk counts for unless the question asks
                       for one (default 0.5; 1 turns it off; retrievers.source_prior, patches/0015).

A third head, `multilingual` (retrievers.multilingual), joins the fusion only for questions holding CJK text,
when the index has multilingual vectors (NAV_MULTILINGUAL, navigator.index.multilingual); English questions are
ranked by the vector and bm25 heads alone, exactly as without it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from navigator.core.errors import IndexCorruptError, UsageError
from navigator.index import multilingual
from retrievers.base import HeadHit, RetrievedChunk, Retriever, number_setting
from retrievers.bm25 import HEAD as BM25_HEAD
from retrievers.bm25 import NO_TERMS_NOTE, BM25Retriever
from retrievers.crosslingual import has_cjk
from retrievers.fusion import DEFAULT_HEAD_WEIGHT, DEFAULT_RRF_K, default_candidate_depth, reciprocal_rank_fusion
from retrievers.multilingual import HEAD as MULTILINGUAL_HEAD
from retrievers.multilingual import MISSING_HINT, MultilingualRetriever
from retrievers.query_analysis import names_code
from retrievers.source_prior import SourcePrior, prior_setting
from retrievers.vector import embedding_query, vector_hits

if TYPE_CHECKING:
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex

VECTOR_HEAD = "vector"
HEADS = (VECTOR_HEAD, BM25_HEAD, MULTILINGUAL_HEAD)
RRF_K_ENV = "NAV_RRF_K"
WEIGHTS_ENV = "NAV_HYBRID_WEIGHTS"
DEPTH_ENV = "NAV_HYBRID_DEPTH"
PROSE_ENV = "NAV_PROSE_BM25"
# A question in English prose shares few words with the code that answers it: BM25 misses or buries the
# answer, and equal-weight RRF then pushes a chunk only the vector head found far below where that head
# put it (value lookups on click: vector rank 3 -> fused 32, 7 -> 28). Chosen on click EN from 0.5 / 0.25 /
# 0.1; checked on werkzeug EN and ZH (patches/0010-prose-query-fusion/). CJK questions keep equal weights:
# their vector head reads a glossary-expanded question with an English-only model.
DEFAULT_PROSE_BM25 = 0.25


def parse_head_weights(text: str) -> dict[str, float]:
    """"vector=1,bm25=0.5" -> {"vector": 1.0, "bm25": 0.5}; heads not named keep weight 1."""
    weights = {head: DEFAULT_HEAD_WEIGHT for head in HEADS}
    hint = f'write {WEIGHTS_ENV} as comma-separated head=weight pairs, e.g. "vector=1,bm25=1"'
    for item in text.split(","):
        if not item.strip():
            continue
        head, sep, value = item.partition("=")
        head = head.strip()
        if not sep:
            raise UsageError(f"{WEIGHTS_ENV}: {item.strip()!r} is not head=weight", hint=hint)
        if head not in HEADS:
            raise UsageError(f"{WEIGHTS_ENV}: unknown head {head!r}; the hybrid heads are {', '.join(HEADS)}",
                             hint=hint)
        try:
            weight = float(value)
        except ValueError:
            raise UsageError(f"{WEIGHTS_ENV}: the weight of {head} is not a number: {value.strip()!r}",
                             hint=hint) from None
        if not weight >= 0:   # also rejects nan
            raise UsageError(f"{WEIGHTS_ENV}: the weight of {head} must be >= 0, got {value.strip()}", hint=hint)
        weights[head] = weight
    if not any(weights.values()):
        raise UsageError(f"{WEIGHTS_ENV}: every head has weight 0, so nothing would be searched",
                         hint="give at least one head a positive weight")
    return weights


@dataclass(frozen=True)
class HybridSettings:
    rrf_k: float = DEFAULT_RRF_K
    weights: dict[str, float] = field(default_factory=lambda: {head: DEFAULT_HEAD_WEIGHT for head in HEADS})
    depth: int | None = None           # None: default_candidate_depth(number of chunks)
    prose_bm25: float = DEFAULT_PROSE_BM25   # bm25's weight factor for English questions that name no code

    @classmethod
    def from_extra(cls, extra: Mapping[str, str]) -> "HybridSettings":
        rrf_k = number_setting(extra, RRF_K_ENV, DEFAULT_RRF_K, valid=lambda v: v >= 0, wanted="a number >= 0",
                               hint=f"unset it for the default ({DEFAULT_RRF_K:g})")
        depth = None
        if extra.get(DEPTH_ENV, "").strip():
            value = extra[DEPTH_ENV].strip()
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"{DEPTH_ENV} must be a positive whole number, got {value!r}",
                                 hint="unset it to scale the depth with the number of chunks")
            depth = int(value)
        weights = parse_head_weights(extra.get(WEIGHTS_ENV, ""))
        prose = number_setting(extra, PROSE_ENV, DEFAULT_PROSE_BM25, valid=lambda v: 0 <= v <= 1,
                               wanted="a number from 0 to 1", hint="1 keeps bm25's weight for prose questions; "
                               f"unset it for the default ({DEFAULT_PROSE_BM25:g})")
        return cls(rrf_k=rrf_k, weights=weights, depth=depth, prose_bm25=prose)

    def weights_for(self, query: str) -> dict[str, float]:
        """The head weights for this question: bm25's scaled down for English prose that names no code."""
        if self.prose_bm25 == 1 or has_cjk(query) or names_code(query):
            return self.weights
        return {**self.weights, BM25_HEAD: self.weights[BM25_HEAD] * self.prose_bm25}

    def depth_for(self, n_chunks: int, k: int) -> int:
        """Candidates per head: the configured or size-scaled depth, and never fewer than k."""
        return max(k, self.depth if self.depth is not None else default_candidate_depth(n_chunks))


NOTE_WINDOW = 10
SOURCE_PRIOR_NOTE = ("source prior: {n} of the {window} best candidates are tests, docs, examples, tooling or "
                     "vendored code, counted x{factor:g}; name them in the question to rank them as code")


class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(self, index: "NavIndex", config: "Config"):
        super().__init__(index, config)
        self.settings = HybridSettings.from_extra(config.extra)
        self.prior = prior_setting(config.extra)
        self.bm25 = BM25Retriever(index, config)
        self.multilingual = MultilingualRetriever(index, config) if multilingual.enabled(config.extra) else None
        self._query_notes: list[str] = []
        self.last_depth: int | None = None    # candidates per head of the last retrieve
        self.last_fusion: dict | None = None  # head weights, prose rule and source prior of the last retrieve

    @property
    def notes(self) -> list[str]:
        return list(self._query_notes)

    def _with_source_prior(self, rule: SourcePrior, fused: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """The fused ranking with test, doc, example, tooling and vendored chunks discounted as `rule` says
        (retrievers.source_prior)."""
        if not rule.active:
            return fused
        paths = self.index.chunk_paths()
        factors = {cid: rule.factor(paths.get(cid, "")) for cid, _ in fused}
        # Say so when it changed what comes first: an agent cannot see that tests were pushed down.
        among_first = sum(1 for cid, _ in fused[:NOTE_WINDOW] if factors[cid] < 1.0)
        if among_first:
            self._query_notes.append(SOURCE_PRIOR_NOTE.format(n=among_first, window=min(NOTE_WINDOW, len(fused)),
                                                              factor=rule.strength))
        scored = [(cid, score * factors[cid]) for cid, score in fused]
        return sorted(scored, key=lambda item: -item[1])      # stable: the fusion's tie order stays

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        self._query_notes = []
        self.last_fusion = None
        if not query.strip():
            self._query_notes.append(NO_TERMS_NOTE)
            return []
        if k <= 0:
            return []
        # The manifest's count: loading every chunk to count them costs ~0.25 s at 40k chunks.
        depth = self.settings.depth_for(int(self.index.manifest.get("chunk_count", 0)), k)
        self.last_depth = depth
        weights = self.settings.weights_for(query)
        head_results: dict[str, list[tuple[str, float]]] = {}
        # bm25 first: a cold process builds its query encoder on a worker thread meanwhile
        # (NavIndex.preload_query_encoder). The heads keep their order in head_results and in the notes.
        bm25_hits, bm25_notes = None, []
        if weights[BM25_HEAD] > 0:
            # Ids only: of the depth candidates, only the fused top k are loaded from the index.
            bm25_hits = self.bm25.ranked_ids(query, depth)
            for note in self.bm25.notes:
                if note == NO_TERMS_NOTE and weights[VECTOR_HEAD] > 0:
                    note = f"bm25: {NO_TERMS_NOTE}; ranked by the vector head alone"
                bm25_notes.append(note)
        if weights[VECTOR_HEAD] > 0:
            # The raw query goes to each head and each expands it once (bm25 through query_tokens).
            text, expansion_note = embedding_query(query)
            if expansion_note:
                self._query_notes.append(f"vector: {expansion_note}")
            head_results[VECTOR_HEAD], window_note = vector_hits(self.index, text, depth)
            if window_note:
                self._query_notes.append(f"vector: {window_note}")
        if bm25_hits is not None:
            head_results[BM25_HEAD] = bm25_hits
            self._query_notes.extend(bm25_notes)
        if weights[MULTILINGUAL_HEAD] > 0 and self.multilingual is not None and has_cjk(query):
            if self.multilingual.available():
                # The raw question: this head reads Chinese itself and needs no glossary words.
                head_results[MULTILINGUAL_HEAD] = self.multilingual.ranked_ids(query, depth)
            else:
                self._query_notes.append(f"multilingual: the index holds no multilingual vectors, so this "
                                         f"non-English question was ranked without them; {MISSING_HINT}")
        hits: dict[str, dict[str, HeadHit]] = {}
        for head, results in head_results.items():
            for rank, (chunk_id, score) in enumerate(results, start=1):
                hits.setdefault(chunk_id, {}).setdefault(head, HeadHit(rank=rank, score=score))
        # What decided the fusion of this query, for `nav search --explain` and the JSON result.
        rule = SourcePrior.for_query(self.prior, query)
        self.last_fusion = {"weights": {h: weights[h] for h in head_results},
                            "prose_rule": weights[BM25_HEAD] != self.settings.weights[BM25_HEAD],
                            "non_source_factor": rule.strength if rule.active else 1.0,
                            "non_source_counted_in_full": sorted(rule.asked)}
        fused = reciprocal_rank_fusion({h: [cid for cid, _ in r] for h, r in head_results.items()},
                                       weights, self.settings.rrf_k)
        fused = self._with_source_prior(rule, fused)[:k]
        out = []
        for rank, (chunk_id, score) in enumerate(fused, start=1):
            try:
                chunk = self.index.chunk_by_id(chunk_id)
            except KeyError:
                raise IndexCorruptError(f"the vector store returned chunk {chunk_id}, which the index does not hold",
                                        hint="run `nav index PATH` to resynchronise the index") from None
            out.append(RetrievedChunk(chunk=chunk, score=score, rank=rank, heads=hits[chunk_id]))
        return out
