"""The bm25 retriever: Okapi BM25 over code-aware tokens (retrievers.tokenize), scored with numpy.

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
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import chain, count
from typing import TYPE_CHECKING

from retrievers.base import HeadHit, RetrievedChunk, Retriever
from retrievers.tokenize import document_tokens, query_tokens, tokenizer_version

if TYPE_CHECKING:
    import numpy as np

    from chunkers.base import CodeChunk
    from navigator.config import Config
    from navigator.index import NavIndex

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

        self.k1, self.b, self.epsilon = k1, b, epsilon
        n_docs = len(token_lists)
        self.n_docs = n_docs
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=n_docs)
        total = int(lengths.sum())
        # Term ids in first-seen order in one C-level pass: a missing key takes the next number from the
        # counter. Hashing the token strings is most of the build time; nothing here loops in Python.
        vocab: defaultdict[str, int] = defaultdict(count().__next__)
        term_ids = np.fromiter(map(vocab.__getitem__, chain.from_iterable(token_lists)),
                               dtype=np.int64, count=total)
        self.vocab: dict[str, int] = dict(vocab)
        n_terms = len(self.vocab)
        # One sort of (term, doc) keys gives the postings order; equal neighbours are one pair's term frequency.
        stride = max(n_docs, 1)
        keys = term_ids * stride + np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        keys.sort()
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if total else np.zeros(0, np.int64)
        self.post_tfs = np.diff(np.append(first, total)).astype(np.float64)
        pairs = keys[first]
        post_terms = pairs // stride
        self.post_docs = pairs % stride
        doc_freq = np.bincount(post_terms, minlength=n_terms)
        self.offsets = np.concatenate(([0], np.cumsum(doc_freq)))
        self.idf = okapi_idf(doc_freq, n_docs, epsilon)
        self.doc_lengths = lengths
        self.avgdl = total / n_docs if n_docs else 0.0
        # The length-normalised part of the tf denominator, per document.
        if self.avgdl > 0:
            self.doc_norm = k1 * (1 - b + b * lengths / self.avgdl)
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
    the documents) is floored to epsilon times the mean idf of the vocabulary."""
    import numpy as np

    idf = np.log(n_docs - doc_freq + 0.5) - np.log(doc_freq + 0.5)
    if len(idf):
        idf[idf < 0] = epsilon * float(idf.mean())
    return idf


def saturated_query_weights(terms: Sequence[str], k3: float = K3) -> dict[str, float]:
    """term -> (k3+1)·qtf/(k3+qtf), in first-occurrence order; a term said once weighs exactly 1."""
    return {t: (k3 + 1) * c / (k3 + c) for t, c in Counter(terms).items()}


class BM25Retriever(Retriever):
    """BM25 over the chunks' embed_text. The statistics are built on the first query, once per instance,
    from the token lists persisted at index time (recomputed in memory, with a note, when there are none
    for the current tokenizer)."""

    name = HEAD

    def __init__(self, index: "NavIndex", config: "Config"):
        super().__init__(index, config)
        self._scorer: BM25Scorer | None = None
        self._chunks: list[CodeChunk] = []
        self._build_notes: list[str] = []
        self._query_notes: list[str] = []
        self.build_seconds: float | None = None   # time to build the scorer from token lists

    @property
    def notes(self) -> list[str]:
        """What the user should know about the last retrieve: state rebuilt in memory, query trimmed, ..."""
        return self._build_notes + self._query_notes

    def scorer(self) -> BM25Scorer:
        if self._scorer is None:
            self._chunks = list(self.index.chunks())
            token_lists = self._token_lists(self._chunks)
            started = time.perf_counter()
            self._scorer = BM25Scorer(token_lists)
            self.build_seconds = time.perf_counter() - started
        return self._scorer

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

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        weights = self.query_weights(query)
        if not weights or k <= 0:
            return []
        hits = self.scorer().top(weights, k)
        return [RetrievedChunk(chunk=self._chunks[doc], score=score, rank=rank,
                               heads={HEAD: HeadHit(rank=rank, score=score)})
                for rank, (doc, score) in enumerate(hits, start=1)]
