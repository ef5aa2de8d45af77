"""Files as results: rank the indexed files for a query from four kinds of evidence, fused by reciprocal rank.

  chunks     the chunk ranking of a retriever (hybrid, bm25, vector), aggregated per file: each chunk at rank r
             is worth 1/(CHUNK_RRF_K + r); a file scores its best chunk plus SUM_DAMPING x the rest, so a file
             with many good chunks beats one lucky chunk, but twenty weak ones do not beat one strong one.
  file_bm25  BM25 with whole files as documents (term frequencies summed over the file's chunks, from the
             chunk postings the index already holds), over every term of the query, however long.
  defines    exact lookup of the query's code names (retrievers.query_analysis) in the chunk symbols: a file
             that defines a name the query says (ModelChoiceIteratorValue, QuerySet.union) ranks by how rare
             the name's definitions are (a name defined in one file is strong evidence, in forty it is weak).
  mentioned  exact lookup of the paths the query names and its traceback frames in the index's file list
             (a frame path /x/site-packages/django/db/models/query.py matches django/db/models/query.py).
  errors     exact lookup of the query's error messages (an exception line's message, a quoted sentence) in the
             indexed text: the code that raises a message usually holds it as a literal (its fixed part, before
             a placeholder or a quoted value, is what is searched).
  title      file BM25 of the query's first line alone, for a long query (a report's title says what is
             wrong in few words; in the whole report those words are outnumbered by code and logs).

Weights and constants were chosen on the django dev set's releases 3.0-3.2 (49 in_lite274 rows) and checked
on 4.0-5.0 (rag-eval/README.md, patches/0002): file BM25 is the strongest single source, definitions alone the
noisiest (a report names the classes it uses, not only the one to fix), so they weigh least.

A prior: files under tests/, docs/, examples/ (and test_*.py, conftest.py) have their fused score multiplied
by the factor of retrievers.source_prior (NAV_SOURCE_PRIOR, default 0.5) unless the query itself speaks of
tests, docs or examples; the chunk rankings use the same rule.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from retrievers.fusion import reciprocal_rank_fusion
from retrievers.query_analysis import QueryAnalysis, analyse_query
from retrievers.source_prior import SourcePrior, prior_setting

if TYPE_CHECKING:
    from chunkers.base import CodeChunk
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex

CHUNK_DEPTH = 200          # chunks read from the base retriever
CHUNK_RRF_K = 10.0         # a chunk's worth: 1/(CHUNK_RRF_K + rank)
SUM_DAMPING = 0.3          # weight of a file's chunks after its best one
FILE_RRF_K = 10.0          # fusion constant between the evidence rankings (files, not chunks: top ranks count)
# title 0.5 -> 1.0: a report's own summary weighs as much as its body of code and logs (patches/0012)
HEAD_WEIGHTS = {"chunks": 1.0, "file_bm25": 1.0, "defines": 0.2, "mentioned": 0.5, "title": 1.0, "errors": 0.5}
MIN_MESSAGE_CHARS = 12     # shorter fixed parts of a message match too much to be evidence
FILE_BM25_K1, FILE_BM25_B = 1.2, 0.75
FILE_RANK_MODES = ("evidence", "first")   # evidence: this module; first: a file at its first chunk's rank (SWE-bench)


@dataclass
class FileHit:
    path: str
    score: float
    rank: int
    best_chunk: "CodeChunk | None"           # the file's best-ranked chunk, else the chunk defining a named symbol
    heads: dict[str, int] = field(default_factory=dict)   # evidence name -> the rank it gave this file
    defines: list[str] = field(default_factory=list)       # query names this file defines
    prior: float = 1.0

    def to_json(self) -> dict:
        c = self.best_chunk
        return {"rank": self.rank, "score": round(self.score, 6), "path": self.path,
                "heads": {name: {"rank": r} for name, r in self.heads.items()},
                "defines": self.defines, "prior": self.prior,
                "best_chunk": None if c is None else {"id": c.id, "start_line": c.start_line, "end_line": c.end_line,
                                                      "kind": c.kind, "symbol": c.symbol, "tokens": c.tokens},
                # the chunk-like fields the eval harness reads (metrics.view_chunk)
                "text": "" if c is None else c.text, "tokens": 0 if c is None else c.tokens}


class FileCatalog:
    """What the file ranker needs from an index, loaded once: the files, the chunks per file, the symbol table
    (name -> files defining it, from the chunks' symbol and parent fields) and the chunk -> file map of the
    BM25 postings."""

    def __init__(self, index: "NavIndex", bm25):
        import numpy as np
        chunks = index.chunks()
        self.chunks_by_path: dict[str, list] = defaultdict(list)
        self.definitions: dict[str, set[str]] = defaultdict(set)
        for c in chunks:
            self.chunks_by_path[c.path].append(c)
            if c.symbol:
                for part in c.symbol.split("."):
                    self.definitions[part].add(c.path)
        self.paths = sorted(self.chunks_by_path)
        # Every chunk's text in one string, so a message is found by str.find at C speed; _text_starts[i] is where
        # chunk i begins, _text_paths[i] its file.
        import bisect
        self._bisect = bisect.bisect_right
        self._text_starts, self._text_paths, pieces, at = [], [], [], 0
        for c in chunks:
            self._text_starts.append(at)
            self._text_paths.append(c.path)
            pieces.append(c.text)
            at += len(c.text) + 1
        self._all_text = "\0".join(pieces)
        self._by_basename: dict[str, list[str]] = defaultdict(list)
        for p in self.paths:
            self._by_basename[p.rsplit("/", 1)[-1]].append(p)
        file_of = {p: i for i, p in enumerate(self.paths)}
        path_of_chunk = {c.id: c.path for c in chunks}
        self.scorer = bm25.scorer()
        by_id = getattr(self.scorer.vocab, "by_id", None)
        if by_id is not None:
            # A bug report looks up hundreds of terms, twice (chunk and file BM25): one dict (~30 ms once, at 80k
            # terms) beats a binary search in the memory-mapped table per term. Shared with the chunk scorer.
            self.scorer.vocab = dict(zip(by_id(), range(len(self.scorer.vocab))))
        n = self.scorer.n_docs
        self.doc_file = np.fromiter((file_of[path_of_chunk[bm25._chunk_id(i)]] for i in range(n)),
                                    dtype=np.int64, count=n)
        self.file_lengths = np.bincount(self.doc_file, weights=self.scorer.doc_lengths, minlength=len(self.paths))
        self.avg_file_length = float(self.file_lengths.mean()) if len(self.paths) else 0.0

    def resolve_path(self, mentioned: str) -> str | None:
        """The indexed file a mentioned path names: exact, else the longest indexed path it ends with."""
        mentioned = mentioned.lstrip("./")
        candidates = self._by_basename.get(mentioned.rsplit("/", 1)[-1], [])
        best = None
        for p in candidates:
            if mentioned == p or mentioned.endswith("/" + p) or (p.endswith("/" + mentioned) and "/" in mentioned):
                if best is None or len(p) > len(best):
                    best = p
        if best is None and len(candidates) == 1 and "/" not in mentioned:
            best = candidates[0]   # a bare file name that only one file has
        return best

    def files_containing(self, literal: str, limit: int = 20) -> list[str]:
        """Files whose text holds `literal` verbatim, in corpus order; [] when more than `limit` do (too common)."""
        found: dict[str, None] = {}
        start = self._all_text.find(literal)
        while start != -1:
            found.setdefault(self._text_paths[self._bisect(self._text_starts, start) - 1], None)
            if len(found) > limit:
                return []
            start = self._all_text.find(literal, start + 1)
        return list(found)

    def file_bm25(self, term_weights: Mapping[str, float], k: int) -> list[tuple[str, float]]:
        """BM25 (k1 1.2, b 0.75, idf log(1 + (N - n + 0.5)/(n + 0.5))) with files as documents."""
        import numpy as np
        s = self.scorer
        n_files = len(self.paths)
        scores = np.zeros(n_files)
        norm = FILE_BM25_K1 * (1 - FILE_BM25_B + FILE_BM25_B * self.file_lengths / max(self.avg_file_length, 1e-9))
        for term, weight in term_weights.items():
            t = s.vocab.get(term)
            if t is None:
                continue
            lo, hi = s.offsets[t], s.offsets[t + 1]
            tf = np.bincount(self.doc_file[s.post_docs[lo:hi]], weights=s.post_tfs[lo:hi], minlength=n_files)
            present = tf > 0
            df = int(present.sum())
            idf = math.log(1 + (n_files - df + 0.5) / (df + 0.5))
            scores[present] += weight * idf * tf[present] * (FILE_BM25_K1 + 1) / (tf[present] + norm[present])
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.paths[i], float(scores[i])) for i in order if scores[i] > 0]


class FileRanker:
    """Ranks files for a query over one index, with a chunk retriever as one source of evidence."""

    def __init__(self, index: "NavIndex", config: "Config", base: str = "hybrid"):
        from retrievers.bm25 import BM25Retriever
        from retrievers.registry import get_retriever
        self.index = index
        self.base_name = base
        self.prior = prior_setting(config.extra)
        self.extra = config.extra
        self.base = get_retriever(base, index, config)
        # The hybrid retriever holds a bm25 head already; reuse it so the postings load once.
        self.bm25 = getattr(self.base, "bm25", None) or (self.base if isinstance(self.base, BM25Retriever)
                                                         else BM25Retriever(index, config))
        self._catalog: FileCatalog | None = None
        self.notes: list[str] = []

    def catalog(self) -> FileCatalog:
        if self._catalog is None:
            self._catalog = FileCatalog(self.index, self.bm25)
        return self._catalog

    def rank(self, query: str, k: int, *, chunk_depth: int = CHUNK_DEPTH) -> list[FileHit]:
        from retrievers.bm25 import saturated_query_weights
        from retrievers.query_terms import query_tokens
        if k <= 0 or not query.strip() or self.index.chunk_count == 0:
            return []
        cat = self.catalog()
        analysis = analyse_query(query)
        chunks = self.base.retrieve(query, chunk_depth)
        self.notes = list(getattr(self.base, "notes", []))
        rankings: dict[str, list[str]] = {"chunks": _aggregate(chunks)}
        best_chunk: dict[str, object] = {}
        for r in chunks:
            best_chunk.setdefault(r.chunk.path, r.chunk)
        weights = saturated_query_weights(query_tokens(query))
        rankings["file_bm25"] = [p for p, _ in cat.file_bm25(weights, max(k, chunk_depth))]
        defines, named = _definitions(analysis, cat)
        rankings["defines"] = defines
        rankings["mentioned"] = _mentioned(analysis, cat)
        rankings["errors"] = _errors(analysis, cat)
        title = query.strip().split("\n", 1)[0]
        if analysis.is_long and title.strip():
            title_weights = saturated_query_weights(query_tokens(title))
            rankings["title"] = [p for p, _ in cat.file_bm25(title_weights, max(k, chunk_depth))]
        fused = reciprocal_rank_fusion(rankings, HEAD_WEIGHTS, FILE_RRF_K)
        rule = SourcePrior.for_query(self.prior, query)
        positions = {head: {p: i for i, p in enumerate(ids, start=1)} for head, ids in rankings.items()}
        hits = []
        for path, score in fused:
            prior = rule.factor(path)
            hits.append(FileHit(path=path, score=score * prior, rank=0, best_chunk=best_chunk.get(path),
                                defines=named.get(path, []), prior=prior))
        hits.sort(key=lambda h: -h.score)   # stable: the fusion's tie order stays
        hits = self._named_first(query, hits)
        for rank, hit in enumerate(hits[:k], start=1):
            hit.rank = rank
            hit.heads = {h: pos[hit.path] for h, pos in positions.items() if hit.path in pos}
            if hit.best_chunk is None:
                hit.best_chunk = _defining_chunk(cat, hit.path, hit.defines)
        return hits[:k]


    def _named_first(self, query: str, hits: list[FileHit]) -> list[FileHit]:
        """The files of the definitions a question names lead (retrievers.named), scored as the best file."""
        from navigator.index.graph import SymbolGraph
        from retrievers.named import lead_with, named_definitions
        graph = getattr(self.base, "graph", None)
        if not isinstance(graph, SymbolGraph):
            graph = SymbolGraph(self.index.conn)
        named = named_definitions(query, graph, self.extra)
        paths = named.paths
        if not paths:
            return hits
        by_path = {h.path: h for h in hits}
        head_chunk = {}
        for definition in named.definitions:
            head_chunk.setdefault(definition.path, definition.chunk_id)
        top = hits[0].score if hits else 0.0
        out = []
        for path in lead_with([h.path for h in hits], paths):
            hit = by_path.get(path)
            if hit is None:
                chunk_id = head_chunk.get(path)
                hit = FileHit(path=path, score=0.0, rank=0,
                              best_chunk=self.index.chunk_by_id(chunk_id) if chunk_id else None)
            if path in paths:
                hit.score = max(hit.score, top)
            out.append(hit)
        return out


def chunk_evidence(chunks: Sequence) -> dict[str, float]:
    """Each file's chunk evidence: its best chunk's 1/(K + rank) plus SUM_DAMPING x the others'."""
    best: dict[str, float] = {}
    rest: dict[str, float] = defaultdict(float)
    for rank, r in enumerate(chunks, start=1):
        worth = 1.0 / (CHUNK_RRF_K + rank)
        if r.chunk.path not in best:
            best[r.chunk.path] = worth
        else:
            rest[r.chunk.path] += worth
    return {p: best[p] + SUM_DAMPING * rest[p] for p in best}


def _aggregate(chunks: Sequence) -> list[str]:
    """Files ordered by their chunk evidence, best first."""
    score = chunk_evidence(chunks)
    return sorted(score, key=lambda p: (-score[p], p))


def _definitions(analysis: QueryAnalysis, cat: FileCatalog) -> tuple[list[str], dict[str, list[str]]]:
    """Files defining the query's code names, ranked by the summed rarity of the names they define."""
    score, named = definition_evidence(analysis, cat)
    # Ties go to the path: the names' file sets iterate in hash order, which changes from process to process.
    return sorted(score, key=lambda p: (-score[p], p)), named


def definition_evidence(analysis: QueryAnalysis, cat: FileCatalog) -> tuple[dict[str, float], dict[str, list[str]]]:
    """(file -> summed rarity 1/log2(1 + n) of the query's names it defines, file -> those names); a name defined
    in more than 50 files is no evidence."""
    score: dict[str, float] = defaultdict(float)
    named: dict[str, list[str]] = defaultdict(list)
    for name in analysis.symbol_names():
        files = cat.definitions.get(name)
        if not files or len(files) > 50:
            continue
        worth = 1.0 / math.log2(1 + len(files))
        for path in files:
            score[path] += worth
            named[path].append(name)
    return dict(score), dict(named)


def _mentioned(analysis: QueryAnalysis, cat: FileCatalog) -> list[str]:
    """Indexed files the query names: traceback frames innermost first (the failing code is nearest the
    error), then other paths in the order written."""
    out: dict[str, None] = {}
    for frame in reversed(analysis.frames):
        path = cat.resolve_path(frame.path)
        if path:
            out.setdefault(path, None)
    for mentioned in analysis.paths:
        path = cat.resolve_path(mentioned)
        if path:
            out.setdefault(path, None)
    return list(out)


def _message_parts(message: str) -> list[str]:
    """The fixed parts of an error message as code would hold them: without the exception name, cut at quoted
    values and format placeholders, each at least MIN_MESSAGE_CHARS long, longest first."""
    text = re.sub(r"^[A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)\s*:\s*", "", message.strip())
    parts = re.split(r"'[^']*'|\"[^\"]*\"|<[^>]*>|\{[^}]*\}|%[sdr]|\d+", text)
    return sorted({p.strip(" .,:;") for p in parts if len(p.strip(" .,:;")) >= MIN_MESSAGE_CHARS}, key=lambda p: (-len(p), p))


def _errors(analysis: QueryAnalysis, cat: FileCatalog) -> list[str]:
    """Files holding the fixed parts of the query's error messages, files matching more messages first."""
    score: dict[str, int] = defaultdict(int)
    for message in analysis.errors[:20]:
        for part in _message_parts(message)[:2]:
            files = cat.files_containing(part)
            for path in files:
                score[path] += 1
            if files:
                break
    return sorted(score, key=lambda p: (-score[p], p))


def _defining_chunk(cat: FileCatalog, path: str, names: list[str]):
    chunks = cat.chunks_by_path.get(path, [])
    for c in chunks:
        if c.symbol and any(n in c.symbol.split(".") for n in names):
            return c
    return chunks[0] if chunks else None


def file_ranking_records(hits: Sequence[FileHit]) -> list[dict]:
    """The file ranking as chunk-like records for the eval harness (one per file, best first), with each
    evidence ranking as a head, so `nav eval --level file --heads` shows each source's own file ranks."""
    return [{"path": h.path, "text": h.to_json()["text"], "tokens": h.to_json()["tokens"], "heads": dict(h.heads)}
            for h in hits]
