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
TERMS_BLOB = "terms.utf8"
_ARRAYS = ("doc_ids", "doc_lengths", "offsets", "post_docs", "post_tfs")
_TERM_ARRAYS = ("term_offsets", "term_ids")
CHUNK_ID_DTYPE = "S20"      # chunk ids are 20 hex characters (chunkers.base.make_chunk_id)
# After this many binary-search lookups a TermTable builds a dict instead (~50 ms at 80k terms): a
# query looks up a handful of terms, an index run that re-reads many chunks hundreds of thousands.
_LOOKUPS_BEFORE_DICT = 4096


class BM25StateError(Exception):
    """A persisted BM25 state that cannot be used (missing, damaged, another format or tokenizer)."""


def _utf8(term: str) -> bytes:
    return term.encode("utf-8", "surrogatepass")


class TermTable(Mapping[str, int]):
    """term -> term id, and back (by_id). Kept as the terms in sorted order: one UTF-8 blob, the byte offset
    of each term in it, and each term's id. A query process looks its few terms up by binary search in the
    memory-mapped files instead of parsing and hashing the whole vocabulary (~30 ms at 80k terms), and an
    index run updates the table by splicing in new terms and cutting out dead ones, without re-sorting."""

    def __init__(self, blob: bytes, offsets: "np.ndarray", ids: "np.ndarray"):
        self._blob, self._offsets, self._ids = blob, offsets, ids
        self._size = len(ids)
        self._list: list[str] | None = None
        self._dict: dict[str, int] | None = None
        self._lookups = 0

    @classmethod
    def from_terms(cls, terms: Sequence[str]) -> "TermTable":
        """The table of `terms`, term i having id i."""
        import numpy as np
        encoded = [_utf8(t) for t in terms]
        # Bytewise order, which is the order the lookup compares in (and code-point order: UTF-8 keeps it).
        ids = sorted(range(len(encoded)), key=encoded.__getitem__)
        table = cls(b"".join(encoded[i] for i in ids), _offsets_of(len(encoded[i]) for i in ids),
                    np.asarray(ids, dtype=np.int32))
        table._list = list(terms)
        return table

    def __len__(self) -> int:
        return self._size

    def _term_at(self, position: int) -> bytes:
        return self._blob[self._offsets[position]:self._offsets[position + 1]]

    def _position(self, key: bytes) -> int:
        """Where `key` is or would be inserted in the sorted order."""
        lo, hi = 0, self._size
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term_at(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def get(self, term: str, default=None):
        if self._dict is None:
            self._lookups += 1
            if self._lookups > _LOOKUPS_BEFORE_DICT:
                self._dict = dict(zip(self.by_id(), range(self._size)))
        if self._dict is not None:
            return self._dict.get(term, default)
        key = _utf8(term)
        position = self._position(key)
        if position < self._size and self._term_at(position) == key:
            return int(self._ids[position])
        return default

    def __getitem__(self, term: str) -> int:
        found = self.get(term)
        if found is None:
            raise KeyError(term)
        return found

    def __contains__(self, term) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def __iter__(self):
        return iter(self.by_id())

    def by_id(self) -> list[str]:
        """Every term, in term-id order."""
        if self._list is None:
            terms: list[str] = [""] * self._size
            blob, offsets = self._blob, self._offsets.tolist()
            for position, term_id in enumerate(self._ids.tolist()):
                terms[term_id] = blob[offsets[position]:offsets[position + 1]].decode("utf-8", "surrogatepass")
            self._list = terms
        return self._list

    def updated(self, new_terms: Sequence[str], live: "np.ndarray") -> "TermTable":
        """This table plus `new_terms` (ids len(self), len(self)+1, ...; none already in the table), minus
        the terms whose `live` flag is False; the ids left are renumbered in order (id -> count of live ids
        below it), as the postings' offsets are."""
        import numpy as np
        lengths = np.diff(self._offsets)
        ids = np.asarray(self._ids, dtype=np.int64)
        blob = self._blob
        if new_terms:
            encoded = sorted((_utf8(t), self._size + i) for i, t in enumerate(new_terms))
            cut_at = [self._position(key) for key, _ in encoded]
            lengths = np.insert(lengths, cut_at, [len(key) for key, _ in encoded])
            ids = np.insert(ids, cut_at, [i for _, i in encoded])
            # The old blob cut where the new terms go in, pieces and new terms interleaved.
            pieces, start = [], 0
            for cut, (key, _) in zip(self._offsets[cut_at].tolist(), encoded):
                pieces += [blob[start:cut], key]
                start = cut
            pieces.append(blob[start:])
            blob = b"".join(pieces)
        dead = ~live[ids]
        if dead.any():
            starts = np.concatenate(([0], np.cumsum(lengths))).tolist()
            blob = b"".join(blob[starts[a]:starts[b]] for a, b in _runs(~dead))
            lengths, ids = lengths[~dead], ids[~dead]
        renumber = np.cumsum(live) - 1
        return TermTable(blob, _offsets_of(lengths), renumber[ids].astype(np.int32))

    def save(self, directory: Path) -> None:
        import numpy as np
        (directory / TERMS_BLOB).write_bytes(self._blob)
        np.save(directory / "term_offsets.npy", np.asarray(self._offsets, dtype=np.int64), allow_pickle=False)
        np.save(directory / "term_ids.npy", np.asarray(self._ids, dtype=np.int32), allow_pickle=False)

    @classmethod
    def load(cls, directory: Path) -> "TermTable":
        import numpy as np
        arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _TERM_ARRAYS}
        blob = (directory / TERMS_BLOB).read_bytes()
        if len(arrays["term_offsets"]) != len(arrays["term_ids"]) + 1 or int(arrays["term_offsets"][-1]) != len(blob):
            raise BM25StateError(f"damaged BM25 term table in {directory}")
        return cls(blob, arrays["term_offsets"], arrays["term_ids"])


def _offsets_of(lengths) -> "np.ndarray":
    import numpy as np
    lengths = np.fromiter(lengths, dtype=np.int64) if not isinstance(lengths, np.ndarray) else lengths
    return np.concatenate(([0], np.cumsum(lengths, dtype=np.int64))).astype(np.int64)


def _runs(mask: "np.ndarray") -> list[tuple[int, int]]:
    """[start, end) of each run of True in `mask`."""
    import numpy as np
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


class _TermIds(dict):
    """term -> id memo of a TermEncoder; a term seen for the first time is looked up in the base table
    (binary search) or numbered next."""

    def __init__(self, encoder: "TermEncoder"):
        super().__init__()
        self.encoder = encoder

    def __missing__(self, term: str) -> int:
        encoder = self.encoder
        found = encoder.base.get(term)
        if found is None:
            found = len(encoder.base) + len(encoder.new_terms)
            encoder.new_terms.append(term)
        self[term] = found
        return found


class TermEncoder:
    """Token lists -> int32 term ids under a base TermTable (the index's previous postings): a known term
    keeps its id, a new one takes the next id after the table's. An index run holds each new chunk's terms
    this way, 4 bytes a token instead of a list of strings."""

    def __init__(self, base: TermTable | None = None):
        self.base = base if base is not None else TermTable.from_terms([])
        self.new_terms: list[str] = []
        self._ids = _TermIds(self)

    @property
    def n_terms(self) -> int:
        return len(self.base) + len(self.new_terms)

    def encode(self, tokens: Sequence[str]) -> "np.ndarray":
        import numpy as np
        return np.fromiter(map(self._ids.__getitem__, tokens), dtype=np.int32, count=len(tokens))


class BM25Postings:
    """The corpus side of BM25 for one chunk order: what an index persists and a query loads.

    doc_ids       chunk id of each document position (numpy bytes, CHUNK_ID_DTYPE), in NavIndex.chunks() order
    doc_lengths   tokens per document (int32)
    terms         term <-> term id (TermTable)
    offsets       term t's postings are [offsets[t], offsets[t+1]) (int64, len(terms) + 1)
    post_docs     document position of each posting (int32), ascending within a term
    post_tfs      term frequency of each posting (int32)
    """

    def __init__(self, doc_ids, doc_lengths, terms: TermTable, offsets, post_docs, post_tfs):
        self.doc_ids, self.doc_lengths, self.terms = doc_ids, doc_lengths, terms
        self.offsets, self.post_docs, self.post_tfs = offsets, post_docs, post_tfs

    @classmethod
    def empty(cls) -> "BM25Postings":
        import numpy as np
        return cls(np.zeros(0, CHUNK_ID_DTYPE), np.zeros(0, np.int32), TermTable.from_terms([]),
                   np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))

    @classmethod
    def from_token_lists(cls, chunk_ids: Sequence[str], token_lists: Sequence[Sequence[str]]) -> "BM25Postings":
        empty = cls.empty()
        encoder = TermEncoder(empty.terms)
        return empty.updated(chunk_ids, {cid: encoder.encode(t) for cid, t in zip(chunk_ids, token_lists)}, encoder)

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    def chunk_id(self, position: int) -> str:
        return self.doc_ids[position].decode("ascii")

    def holds(self) -> set[bytes]:
        """The chunk ids held, as CHUNK_ID_DTYPE bytes."""
        return set(self.doc_ids.tolist())

    def updated(self, order: Sequence[str], new_docs: Mapping[str, "np.ndarray"],
                encoder: TermEncoder) -> "BM25Postings":
        """The postings of the documents `order` (chunk ids, in corpus order). A document in `new_docs`
        (its term ids from `encoder`, whose base must be these postings' terms) is taken from there; any
        other must be held here, and its postings are reused: a chunk id fixes the chunk's text, so its
        terms cannot have changed. Terms no document holds any more are dropped, so the vocabulary is
        exactly the corpus's, as rank_bm25's is. Raises KeyError for a document found in neither."""
        import numpy as np

        if encoder.base is not self.terms:
            raise ValueError("the encoder must extend these postings' term table")
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
        n_docs, n_terms = len(order), encoder.n_terms
        lengths = np.zeros(n_docs, dtype=np.int32)
        lengths[kept_new] = np.asarray(self.doc_lengths)[kept_old]
        lengths[added_positions] = [len(t) for t in added]

        # Reused postings, documents renumbered (-1: gone); term ids are the encoder's already.
        remap = np.full(self.n_docs, -1, dtype=np.int64)
        remap[kept_old] = kept_new
        post_terms = np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.offsets))
        post_docs = remap[self.post_docs]
        keep = post_docs >= 0
        kept_terms, kept_docs, kept_tfs = post_terms[keep], post_docs[keep], np.asarray(self.post_tfs)[keep]

        # New documents' postings, built as a corpus of their own, then placed at their positions.
        add_lengths = np.fromiter(map(len, added), dtype=np.int64, count=len(added))
        add_ids = np.concatenate(added).astype(np.int64) if added else np.zeros(0, np.int64)
        add_offsets, add_docs, add_tfs = postings_from_term_ids(add_ids, add_lengths, n_terms)
        add_terms = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(add_offsets))
        add_docs = np.asarray(added_positions, dtype=np.int64)[add_docs]

        # Merge by (term, document). Both parts are sorted already, so the stable sort is a merge (4 ms
        # at 1.3M postings, where np.lexsort takes 110 ms).
        keys = np.concatenate((kept_terms, add_terms)) * max(n_docs, 1) + np.concatenate((kept_docs, add_docs))
        by_term_then_doc = np.argsort(keys, kind="stable")
        all_terms = np.concatenate((kept_terms, add_terms))[by_term_then_doc]
        doc_freq = np.bincount(all_terms, minlength=n_terms)
        live = doc_freq > 0
        # Dropping the terms with no postings renumbers the rest in the same order: the postings, sorted by
        # term, stay sorted; only the offsets and the term table change.
        return BM25Postings(
            doc_ids=np.array(order, dtype=CHUNK_ID_DTYPE), doc_lengths=lengths,
            terms=self.terms.updated(encoder.new_terms, live),
            offsets=np.concatenate(([0], np.cumsum(doc_freq[live]))).astype(np.int64),
            post_docs=np.concatenate((kept_docs, add_docs))[by_term_then_doc].astype(np.int32),
            post_tfs=np.concatenate((kept_tfs, add_tfs)).astype(np.int32)[by_term_then_doc])

    # ---- files
    def save(self, directory: Path, *, tokenizer_version: str, generation: int) -> None:
        """Write into `directory` (which must exist and be private to the caller: publishing it atomically
        is the caller's business). params.json is written last."""
        import numpy as np
        directory = Path(directory)
        for name in _ARRAYS:
            np.save(directory / f"{name}.npy", np.asarray(getattr(self, name)), allow_pickle=False)
        self.terms.save(directory)
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
            raise BM25StateError(f"none was written to {directory}") from None
        except (OSError, ValueError) as exc:
            raise BM25StateError(f"unreadable BM25 state parameters {directory / PARAMS_FILE} ({exc})") from exc
        if params.get("format") != STATE_FORMAT:
            raise BM25StateError(f"BM25 state format {params.get('format')} (this nav reads {STATE_FORMAT})")
        try:
            arrays = {name: np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
            terms = TermTable.load(directory)
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
