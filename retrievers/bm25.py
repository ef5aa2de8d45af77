"""The bm25 retriever: Okapi BM25 over code-aware tokens (navigator.index.tokenize), scored with numpy.

Scoring is BM25Okapi exactly as rank_bm25 defines it (same k1, b, epsilon, same idf floor for terms in more
than half the chunks; tests/test_bm25_hybrid.py checks the scores against rank_bm25 as an oracle). It is
computed here over an inverted index instead of calling rank_bm25, whose constructor counts terms in pure
Python and whose get_scores walks every document once per query term in Python: on 20k chunks that is
~20-50 ms for a short query and over half a second for a bug-report-sized one, against under 5 ms here.

Two deliberate departures on the query side, both no-ops for ordinary queries (every term once):
  - a term repeated in the query is weighted (K3+1)·qtf/(K3+qtf) instead of qtf (Robertson's query-term
    saturation), so a 20,000-character bug report that says "config" 40 times does not drown the rest;
  - at most MAX_QUERY_TERMS distinct terms are scored: those that occur in the index, ranked by weight·idf.
    The retriever says so in `notes` when it drops any.

The corpus side (the postings) is built at index time and persisted beside the index (`BM25Postings`,
written by navigator.index.indexer, one directory per index generation), so a query process loads a few numpy
arrays with mmap instead of decoding every chunk's token list and rebuilding the statistics (~1 s at 40k
chunks). When that state is missing or stale the retriever rebuilds it in memory and says so in `notes`.
"""
from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import chain, count
from typing import TYPE_CHECKING

from navigator.index.lexical import BM25Postings, postings_from_term_ids
from navigator.index.tokenize import document_tokens, tokenizer_version
from retrievers.base import HeadHit, RetrievedChunk, Retriever
from retrievers.query_terms import query_tokens

if TYPE_CHECKING:
    import numpy as np

    from chunkers.base import CodeChunk
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex

# rank_bm25.BM25Okapi's published defaults.
K1 = 1.5
B = 0.75
EPSILON = 0.25
# Query-term frequency saturation (Robertson's k3): a term said twice weighs 1.78, ten times 4.7, never 8.
K3 = 7.0
# Distinct query terms scored at most; a pasted bug report or traceback easily has a thousand.
MAX_QUERY_TERMS = 128

HEAD = "bm25"
NO_TERMS_NOTE = "query has no searchable terms"


class BM25Scorer:
    """BM25Okapi statistics of a fixed corpus of token lists, stored as an inverted index (postings sorted
    by term, then document) so that a query touches only the documents that contain its terms."""

    def __init__(self, token_lists: Sequence[Sequence[str]], k1: float = K1, b: float = B,
                 epsilon: float = EPSILON):
        import numpy as np

        # Term ids in first-seen order in one C-level pass: a missing key takes the next number from the
        # counter. Hashing the token strings is most of the build time; nothing here loops in Python.
        vocab: defaultdict[str, int] = defaultdict(count().__next__)
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        term_ids = np.fromiter(map(vocab.__getitem__, chain.from_iterable(token_lists)),
                               dtype=np.int64, count=int(lengths.sum()))
        offsets, post_docs, post_tfs = postings_from_term_ids(term_ids, lengths, len(vocab))
        self._set_statistics(dict(vocab), offsets, post_docs, post_tfs, lengths, k1, b, epsilon)

    @classmethod
    def from_postings(cls, postings: "BM25Postings", k1: float = K1, b: float = B,
                      epsilon: float = EPSILON) -> "BM25Scorer":
        """The scorer over persisted postings: the same statistics as BM25Scorer(token lists of the same
        documents in the same order), so the same scores, whatever order the terms are numbered in."""
        scorer = cls.__new__(cls)
        scorer._set_statistics(postings.terms, postings.offsets, postings.post_docs, postings.post_tfs,
                               postings.doc_lengths, k1, b, epsilon)
        return scorer

    def _set_statistics(self, vocab: Mapping[str, int], offsets, post_docs, post_tfs, lengths,
                        k1: float, b: float, epsilon: float) -> None:
        import numpy as np

        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.vocab = vocab
        self.n_docs = n_docs = len(lengths)
        self.offsets, self.post_docs, self.post_tfs = offsets, post_docs, post_tfs
        # Integer term frequencies: tf * (k1 + 1) and tf + norm promote to float64 exactly, so int32 (as
        # persisted) and float64 postings give bit-identical scores.
        self.idf = okapi_idf(np.diff(offsets), n_docs, epsilon)
        self.doc_lengths = lengths
        total = int(np.sum(lengths, dtype=np.int64))
        self.avgdl = total / n_docs if n_docs else 0.0
        # The length-normalised part of the tf denominator, per document.
        if self.avgdl > 0:
            self.doc_norm = k1 * (1 - b + b * np.asarray(lengths, dtype=np.float64) / self.avgdl)
        else:
            self.doc_norm = np.full(n_docs, k1 * (1 - b))

    def term_idf(self, term: str) -> float:
        t = self.vocab.get(term)
        return 0.0 if t is None else float(self.idf[t])

    def _accumulate(self, term_weights: Mapping[str, float]) -> tuple["np.ndarray", "np.ndarray"]:
        import numpy as np

        scores = np.zeros(self.n_docs)
        touched = np.zeros(self.n_docs, dtype=bool)
        for term, weight in term_weights.items():
            t = self.vocab.get(term)
            if t is None:
                continue
            lo, hi = self.offsets[t], self.offsets[t + 1]
            docs = self.post_docs[lo:hi]
            tf = self.post_tfs[lo:hi]
            # Each document appears once per term's postings, so fancy-index += is safe here.
            scores[docs] += weight * self.idf[t] * (tf * (self.k1 + 1) / (tf + self.doc_norm[docs]))
            touched[docs] = True
        return scores, touched

    def scores(self, term_weights: Mapping[str, float]) -> "np.ndarray":
        """The BM25 score of every document. With weights = query term counts this equals
        rank_bm25.BM25Okapi(token_lists).get_scores(query_tokens)."""
        return self._accumulate(term_weights)[0]

    def top(self, term_weights: Mapping[str, float], k: int) -> list[tuple[int, float]]:
        """(document position, score) of the best k documents containing at least one weighted term,
        best first; equal scores keep corpus order."""
        import numpy as np

        if k <= 0 or self.n_docs == 0:
            return []
        scores, touched = self._accumulate(term_weights)
        candidates = np.flatnonzero(touched)
        if len(candidates) > k:
            # Cut to the k-th best score (ties at the cut all stay) before the exact ordering sort.
            kth = np.partition(-scores[candidates], k - 1)[k - 1]
            candidates = candidates[-scores[candidates] <= kth]
        order = np.lexsort((candidates, -scores[candidates]))[:k]
        return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


def okapi_idf(doc_freq: "np.ndarray", n_docs: int, epsilon: float = EPSILON) -> "np.ndarray":
    """rank_bm25's BM25Okapi idf: log((N - n + 0.5) / (n + 0.5)); a negative idf (a term in more than half
    the documents) is floored to epsilon times the mean idf of the vocabulary. The mean is an exactly
    rounded sum (math.fsum), so it does not depend on the order the terms are numbered in: the persisted
    postings (terms numbered as the index grew) and an in-memory build score bit-identically."""
    import numpy as np

    idf = np.log(n_docs - doc_freq + 0.5) - np.log(doc_freq + 0.5)
    if len(idf):
        idf[idf < 0] = epsilon * (math.fsum(idf.tolist()) / len(idf))
    return idf


def saturated_query_weights(terms: Sequence[str], k3: float = K3) -> dict[str, float]:
    """term -> (k3+1)·qtf/(k3+qtf), in first-occurrence order; a term said once weighs exactly 1."""
    return {t: (k3 + 1) * c / (k3 + c) for t, c in Counter(terms).items()}


class BM25Retriever(Retriever):
    """BM25 over the chunks' embed_text. The statistics are loaded on the first query, once per instance:
    the postings the index persisted for its current generation (NavIndex.bm25_postings), else built in
    memory, with a note, from the token lists stored per chunk (recomputed, with a note, when there are
    none for the current tokenizer). An index object without persisted postings (a test double, a plugin's
    index) gets the in-memory build silently."""

    name = HEAD
    embeds_queries = False

    def __init__(self, index: "NavIndex", config: "Config"):
        super().__init__(index, config)
        self._scorer: BM25Scorer | None = None
        self._doc_ids: Sequence[str] | None = None    # chunk id of each document position (in-memory build)
        self._postings: BM25Postings | None = None    # the persisted postings, when they were loaded
        self._build_notes: list[str] = []
        self._query_notes: list[str] = []
        self.build_seconds: float | None = None   # time to load or build the scorer
        self.state_source: str | None = None      # "persisted" | "memory", once the scorer exists

    @property
    def notes(self) -> list[str]:
        """What the user should know about the last retrieve: state rebuilt in memory, query trimmed, ..."""
        return self._build_notes + self._query_notes

    def scorer(self) -> BM25Scorer:
        if self._scorer is None:
            started = time.perf_counter()
            load = getattr(self.index, "bm25_postings", None)
            postings, why_not = load() if load is not None else (None, None)
            if postings is not None:
                self._postings = postings
                self._scorer = BM25Scorer.from_postings(postings)
                self.state_source = "persisted"
            else:
                chunks = list(self.index.chunks())
                if why_not:
                    self._build_notes.append(f"bm25: {why_not}; statistics rebuilt in memory for {len(chunks)} "
                                             "chunks (run `nav index PATH` to store them)")
                token_lists = self._token_lists(chunks)
                self._doc_ids = [c.id for c in chunks]
                self._scorer = BM25Scorer(token_lists)
                self.state_source = "memory"
            self.build_seconds = time.perf_counter() - started
        return self._scorer

    def _chunk_id(self, position: int) -> str:
        return self._postings.chunk_id(position) if self._postings is not None else self._doc_ids[position]

    def _token_lists(self, chunks: list[CodeChunk]) -> list[list[str]]:
        stored = self.index.bm25_tokens()
        if stored is None:
            built_with = self.index.tokenizer_version
            why = (f"the index was built with tokenizer {built_with}" if built_with
                   else "the index has no BM25 token lists")
            self._build_notes.append(
                f"bm25: token lists recomputed in memory for {len(chunks)} chunks ({why}; current is "
                f"{tokenizer_version()}); run `nav index PATH` to store them")
            return [document_tokens(c.embed_text) for c in chunks]
        missing = [c for c in chunks if c.id not in stored]
        if missing:
            self._build_notes.append(
                f"bm25: {len(missing)} chunks had no stored token lists and were tokenized in memory; "
                "run `nav index PATH` to store them")
        return [stored[c.id] if c.id in stored else document_tokens(c.embed_text) for c in chunks]

    def query_weights(self, query: str) -> dict[str, float]:
        """The weighted terms this retriever scores for `query` (empty: nothing to search; see notes)."""
        self._query_notes = []
        terms = query_tokens(query)
        if not terms:
            self._query_notes.append(NO_TERMS_NOTE)
            return {}
        scorer = self.scorer()
        weights = saturated_query_weights(terms)
        known = {t: w for t, w in weights.items() if t in scorer.vocab}
        if not known:
            self._query_notes.append("bm25: none of the query terms occur in the indexed chunks")
            return {}
        if len(known) > MAX_QUERY_TERMS:
            # Keep the most informative terms; sorted() is stable, so ties keep query order.
            ranked = sorted(known, key=lambda t: -known[t] * scorer.term_idf(t))
            kept = set(ranked[:MAX_QUERY_TERMS])
            self._query_notes.append(
                f"bm25: the query has {len(weights)} distinct terms ({len(known)} occur in the index); "
                f"scored the {MAX_QUERY_TERMS} with the highest tf*idf")
            known = {t: w for t, w in known.items() if t in kept}
        return known

    def ranked_ids(self, query: str, k: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) of the best k chunks, best first, without loading the chunks."""
        weights = self.query_weights(query)
        if not weights or k <= 0:
            return []
        return [(self._chunk_id(doc), score) for doc, score in self.scorer().top(weights, k)]

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        return [RetrievedChunk(chunk=self.index.chunk_by_id(cid), score=score, rank=rank,
                               heads={HEAD: HeadHit(rank=rank, score=score)})
                for rank, (cid, score) in enumerate(self.ranked_ids(query, k), start=1)]
