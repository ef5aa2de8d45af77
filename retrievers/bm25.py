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

The corpus side (the postings) is built at index time and persisted beside the index (`BM25Postings`,
written by navigator.indexer, one directory per index generation), so a query process loads a few numpy
arrays with mmap instead of decoding every chunk's token list and rebuilding the statistics (~1 s at 40k
chunks). When that state is missing or stale the retriever rebuilds it in memory and says so in `notes`.
"""
from __future__ import annotations

import json
import math
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, count
from pathlib import Path
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
        vocab = dict(zip(postings.terms, range(len(postings.terms))))
        scorer._set_statistics(vocab, postings.offsets, postings.post_docs, postings.post_tfs,
                               postings.doc_lengths, k1, b, epsilon)
        return scorer

    def _set_statistics(self, vocab: dict[str, int], offsets, post_docs, post_tfs, lengths,
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


def postings_from_term_ids(term_ids: "np.ndarray", lengths: "np.ndarray", n_terms: int):
    """(offsets, post_docs, post_tfs) of documents given as one concatenated term-id sequence and their
    lengths: postings sorted by term, then document; offsets[t]:offsets[t+1] are term t's postings."""
    import numpy as np

    n_docs, total = len(lengths), len(term_ids)
    # One sort of (term, doc) keys gives the postings order; equal neighbours are one pair's term frequency.
    stride = max(n_docs, 1)
    keys = np.asarray(term_ids, dtype=np.int64) * stride + np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    keys.sort()
    first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if total else np.zeros(0, np.int64)
    post_tfs = np.diff(np.append(first, total)).astype(np.int32)
    pairs = keys[first]
    post_terms = pairs // stride
    post_docs = (pairs % stride).astype(np.int32)
    offsets = np.concatenate(([0], np.cumsum(np.bincount(post_terms, minlength=n_terms)))).astype(np.int64)
    return offsets, post_docs, post_tfs


# ---------------------------------------------------------------------------------- the persisted state

# Bump when the files below change meaning: older states are then ignored (rebuilt in memory, then rewritten).
STATE_FORMAT = 1
PARAMS_FILE = "params.json"
TERMS_FILE = "terms.json"
_ARRAYS = ("doc_ids", "doc_lengths", "offsets", "post_docs", "post_tfs")
CHUNK_ID_DTYPE = "S20"      # chunk ids are 20 hex characters (chunkers.base.make_chunk_id)


class BM25StateError(Exception):
    """A persisted BM25 state that cannot be used (missing, damaged, another format or tokenizer)."""


class TermEncoder:
    """Token lists -> int32 term-id arrays over one growing vocabulary: the index run holds each new chunk's
    terms as 4 bytes a token instead of a list of strings."""

    def __init__(self) -> None:
        # A missing term takes the next number (first-seen order); dicts keep insertion order, so the
        # keys listed are the terms by id.
        self._ids: defaultdict[str, int] = defaultdict(count().__next__)

    def encode(self, tokens: Sequence[str]) -> "np.ndarray":
        import numpy as np
        return np.fromiter(map(self._ids.__getitem__, tokens), dtype=np.int32, count=len(tokens))

    def ids_of(self, terms: Sequence[str]) -> "np.ndarray":
        import numpy as np
        return np.fromiter(map(self._ids.__getitem__, terms), dtype=np.int64, count=len(terms))

    def terms(self) -> list[str]:
        """Term id -> term, for every term encoded so far."""
        return list(self._ids)


@dataclass
class BM25Postings:
    """The corpus side of BM25 for one chunk order: what an index persists and a query loads.

    doc_ids       chunk id of each document position (numpy bytes, CHUNK_ID_DTYPE), in NavIndex.chunks() order
    doc_lengths   tokens per document (int32)
    terms         term id -> term
    offsets       term t's postings are [offsets[t], offsets[t+1]) (int64, len(terms) + 1)
    post_docs     document position of each posting (int32), ascending within a term
    post_tfs      term frequency of each posting (int32)
    """
    doc_ids: "np.ndarray"
    doc_lengths: "np.ndarray"
    terms: list[str]
    offsets: "np.ndarray"
    post_docs: "np.ndarray"
    post_tfs: "np.ndarray"

    @classmethod
    def empty(cls) -> "BM25Postings":
        import numpy as np
        return cls(np.zeros(0, CHUNK_ID_DTYPE), np.zeros(0, np.int32), [], np.zeros(1, np.int64),
                   np.zeros(0, np.int32), np.zeros(0, np.int32))

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    def chunk_id(self, position: int) -> str:
        return self.doc_ids[position].decode("ascii")

    def updated(self, order: Sequence[str], new_docs: Mapping[str, "np.ndarray"],
                encoder: TermEncoder) -> "BM25Postings":
        """The postings of the documents `order` (chunk ids, in corpus order). A document in `new_docs`
        (its term ids under `encoder`) is taken from there; any other must be in these postings, whose
        entry is reused: a chunk id fixes the chunk's text, so its terms cannot have changed. Terms no
        document holds any more are dropped, so the vocabulary is exactly the corpus's, as rank_bm25's is.
        Raises KeyError for a document found in neither."""
        import numpy as np

        old_position = {cid: i for i, cid in enumerate(self.doc_ids.tolist())}
        kept_old: list[int] = []          # old position of each reused document ...
        kept_new: list[int] = []          # ... and its new position
        added_positions: list[int] = []
        added: list[np.ndarray] = []
        for position, cid in enumerate(order):
            terms = new_docs.get(cid)
            if terms is not None:
                added_positions.append(position)
                added.append(terms)
            else:
                kept_old.append(old_position[cid.encode("ascii")])
                kept_new.append(position)
        lengths = np.zeros(len(order), dtype=np.int32)
        lengths[kept_new] = self.doc_lengths[kept_old]
        lengths[added_positions] = [len(t) for t in added]

        # Reused postings: renumber documents (-1: gone) and terms (into the encoder's numbering).
        remap = np.full(self.n_docs, -1, dtype=np.int64)
        remap[kept_old] = kept_new
        own_to_encoder = encoder.ids_of(self.terms)
        post_terms = np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.offsets))
        post_docs = remap[self.post_docs]
        keep = post_docs >= 0
        kept_terms, kept_docs, kept_tfs = own_to_encoder[post_terms[keep]], post_docs[keep], self.post_tfs[keep]

        # New documents' postings, built as a corpus of their own, then placed at their positions.
        terms = encoder.terms()
        add_lengths = np.fromiter(map(len, added), dtype=np.int64, count=len(added))
        add_ids = np.concatenate(added).astype(np.int64) if added else np.zeros(0, np.int64)
        add_offsets, add_docs, add_tfs = postings_from_term_ids(add_ids, add_lengths, len(terms))
        add_terms = np.repeat(np.arange(len(terms), dtype=np.int64), np.diff(add_offsets))
        add_docs = np.asarray(added_positions, dtype=np.int64)[add_docs]

        all_terms = np.concatenate((kept_terms, add_terms))
        all_docs = np.concatenate((kept_docs, add_docs))
        by_term_then_doc = np.lexsort((all_docs, all_terms))
        doc_freq = np.bincount(all_terms, minlength=len(terms))
        live = doc_freq > 0
        # Dropping the terms with no postings renumbers the rest in the same order: the postings, sorted by
        # term, stay sorted; only the offsets and the term list change.
        return BM25Postings(
            doc_ids=np.array(order, dtype=CHUNK_ID_DTYPE), doc_lengths=lengths,
            terms=[t for t, alive in zip(terms, live.tolist()) if alive],
            offsets=np.concatenate(([0], np.cumsum(doc_freq[live]))).astype(np.int64),
            post_docs=all_docs[by_term_then_doc].astype(np.int32),
            post_tfs=np.concatenate((kept_tfs, add_tfs)).astype(np.int32)[by_term_then_doc])

    # ---- files
    def save(self, directory: Path, *, tokenizer_version: str, generation: int) -> None:
        """Write into `directory` (which must exist and be private to the caller: publishing it atomically
        is the caller's business). params.json is written last."""
        import numpy as np
        directory = Path(directory)
        for name in _ARRAYS:
            np.save(directory / f"{name}.npy", getattr(self, name), allow_pickle=False)
        (directory / TERMS_FILE).write_text(json.dumps(self.terms, ensure_ascii=False), encoding="utf-8")
        params = {"format": STATE_FORMAT, "tokenizer_version": tokenizer_version, "generation": generation,
                  "documents": self.n_docs, "terms": len(self.terms), "postings": int(len(self.post_docs))}
        (directory / PARAMS_FILE).write_text(json.dumps(params, indent=1) + "\n")

    @classmethod
    def load(cls, directory: Path) -> tuple["BM25Postings", dict]:
        """(postings, params) from `directory`, arrays memory-mapped. Raises BM25StateError."""
        import numpy as np
        directory = Path(directory)
        try:
            params = json.loads((directory / PARAMS_FILE).read_text())
        except FileNotFoundError:
            raise BM25StateError(f"no BM25 state in {directory}") from None
        except (OSError, ValueError) as exc:
            raise BM25StateError(f"unreadable BM25 state parameters {directory / PARAMS_FILE} ({exc})") from exc
        if params.get("format") != STATE_FORMAT:
            raise BM25StateError(f"BM25 state format {params.get('format')} (this nav reads {STATE_FORMAT})")
        try:
            arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
            terms = json.loads((directory / TERMS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BM25StateError(f"damaged BM25 state in {directory} ({exc})") from exc
        postings = cls(terms=terms, **arrays)
        if (len(postings.doc_ids) != params.get("documents") or len(terms) != params.get("terms")
                or len(postings.offsets) != len(terms) + 1 or len(postings.post_docs) != params.get("postings")
                or len(postings.post_tfs) != len(postings.post_docs) or len(postings.doc_lengths) != len(postings.doc_ids)):
            raise BM25StateError(f"damaged BM25 state in {directory} (array sizes disagree with {PARAMS_FILE})")
        return postings, params


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
