"""The lexical postings of the index: BM25 statistics' raw material, built at index time and persisted beside
the index, one directory per index generation (`BM25Postings`), so that a query process loads a few numpy
arrays with mmap instead of decoding every chunk's token list (~1 s at 40k chunks). Scoring them is the
bm25 retriever's job (retrievers/bm25.py); this module only builds, updates, saves and loads them.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from navigator.index import store

if TYPE_CHECKING:
    import numpy as np


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
# An update adding at most this many tokens inserts their postings into the kept ones (one binary search
# each, ~2 us) instead of merging by a sort of every posting (BM25Postings._spliced).
_FEW_ADDED_TOKENS = 50_000


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
        # New documents' postings, built as a corpus of their own, then placed at their positions.
        add_lengths = np.fromiter(map(len, added), dtype=np.int64, count=len(added))
        add_ids = np.concatenate(added).astype(np.int64) if added else np.zeros(0, np.int64)
        add_offsets, add_docs, add_tfs = postings_from_term_ids(add_ids, add_lengths, n_terms)
        add_terms = np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(add_offsets))
        add_docs = np.asarray(added_positions, dtype=np.int64)[add_docs]
        doc_ids = np.array(order, dtype=CHUNK_ID_DTYPE)
        if len(kept_old) and np.all(np.diff(kept_old) > 0) and len(add_ids) <= _FEW_ADDED_TOKENS:
            # The usual incremental run: the kept documents keep their relative order, a few are new.
            return self._spliced(remap, doc_ids, lengths, (add_terms, add_docs, add_tfs), encoder)
        post_terms = np.repeat(np.arange(len(self.terms), dtype=np.int64), np.diff(self.offsets))
        post_docs = remap[self.post_docs]
        keep = post_docs >= 0
        kept_terms, kept_docs, kept_tfs = post_terms[keep], post_docs[keep], np.asarray(self.post_tfs)[keep]

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
            doc_ids=doc_ids, doc_lengths=lengths,
            terms=self.terms.updated(encoder.new_terms, live),
            offsets=np.concatenate(([0], np.cumsum(doc_freq[live]))).astype(np.int64),
            post_docs=np.concatenate((kept_docs, add_docs))[by_term_then_doc].astype(np.int32),
            post_tfs=np.concatenate((kept_tfs, add_tfs)).astype(np.int32)[by_term_then_doc])

    def _spliced(self, remap, doc_ids, lengths, new_postings: tuple, encoder: TermEncoder):
        """updated() when `remap` keeps the order of the documents it keeps: each term's kept postings stay
        sorted, so the new documents' few postings (`new_postings`: term, new position and frequency of each,
        sorted by term then document) are inserted where they belong (a binary search in their term's run)
        instead of re-sorting every posting (0.7-1.0 s at 3M postings, mostly the page faults of the sort's
        temporaries, against a few copies here)."""
        import numpy as np
        n_terms = encoder.n_terms
        renumbered = remap.astype(np.int32)[self.post_docs]        # int32: half the fresh pages of int64
        keep = renumbered >= 0
        kept_counts = np.zeros(n_terms, dtype=np.int64)
        kept_counts[:len(self.terms)] = np.diff(self.offsets)
        gone = np.flatnonzero(~keep)
        if len(gone):
            kept_counts[:len(self.terms)] -= np.bincount(np.searchsorted(self.offsets, gone, side="right") - 1,
                                                         minlength=len(self.terms))
            kept_docs, kept_tfs = renumbered[keep], np.asarray(self.post_tfs)[keep]
        else:
            kept_docs, kept_tfs = renumbered, np.asarray(self.post_tfs)
        kept_offsets = np.concatenate(([0], np.cumsum(kept_counts))).tolist()
        add_terms, add_docs, add_tfs = new_postings
        where = [start + int(np.searchsorted(kept_docs[start:end], doc))
                 for start, end, doc in ((kept_offsets[t], kept_offsets[t + 1], d)
                                         for t, d in zip(add_terms.tolist(), add_docs.tolist()))]
        doc_freq = kept_counts + np.bincount(add_terms, minlength=n_terms)
        live = doc_freq > 0
        return BM25Postings(
            doc_ids=doc_ids, doc_lengths=lengths, terms=self.terms.updated(encoder.new_terms, live),
            offsets=np.concatenate(([0], np.cumsum(doc_freq[live]))).astype(np.int64),
            post_docs=np.insert(kept_docs, where, add_docs.astype(np.int32)),
            post_tfs=np.insert(kept_tfs, where, add_tfs).astype(np.int32, copy=False))

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


def write_bm25_state(index_dir: Path, conn: sqlite3.Connection, generation: int, tok_version: str, base,
                     new_terms: dict, encoder) -> list[str]:
    """Persist the BM25 postings of the committed chunks as <index_dir>/bm25/<generation>/ and remove older
    ones. Incremental: `base` (the newest earlier postings for this tokenizer, maybe empty) supplies every
    chunk it holds, `new_terms` (chunk id -> term ids from `encoder`, which extends base's terms) this run's
    chunks, and any other chunk (no earlier state: a first run, a run killed before writing it) is read
    from its stored token list. Returns notes for the summary."""
    bm25_root = index_dir / store.BM25_DIR
    bm25_root.mkdir(parents=True, exist_ok=True)
    order = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY path, seq")]
    held = base.holds()
    missing = [cid for cid in order if cid not in new_terms and cid.encode("ascii") not in held]
    notes = []
    if missing and base.n_docs:
        notes.append(f"bm25: {len(missing)} chunks were missing from the stored BM25 state; read from their token lists")
    for cid, tokens in store.select_where_in(conn, "SELECT id, bm25_tokens FROM chunks", "id", missing):
        new_terms[cid] = encoder.encode(json.loads(tokens) if tokens is not None else [])
    postings = base.updated(order, new_terms, encoder)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=bm25_root))
    try:
        os.chmod(staging, BM25_DIR_MODE)
        postings.save(staging, tokenizer_version=tok_version, generation=generation)
        target = store.bm25_state_dir(index_dir, generation)
        if target.exists():      # left by an earlier index in this directory (nav.db deleted by hand)
            shutil.rmtree(target)
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for entry in bm25_root.iterdir():
        if entry.name != str(generation):
            shutil.rmtree(entry, ignore_errors=True)
    return notes


# mkdtemp makes a directory only its owner can read; the index is as readable as nav.db.
BM25_DIR_MODE = 0o755


def term_encoder_over(base):
    if base is None:
        return None
    from navigator.index.lexical import TermEncoder
    return TermEncoder(base.terms)


def newest_bm25_state(bm25_root: Path, tok_version: str | None):
    """The most recent readable BM25 postings for `tok_version` under bm25_root, else empty postings."""
    from navigator.index.lexical import BM25Postings, BM25StateError
    generations = sorted((int(p.name) for p in bm25_root.iterdir() if p.name.isdigit()),
                         reverse=True) if bm25_root.is_dir() else []
    for generation in generations:
        try:
            postings, params = BM25Postings.load(bm25_root / str(generation))
        except BM25StateError:
            continue
        if params.get("tokenizer_version") == tok_version:
            return postings
    return BM25Postings.empty()
