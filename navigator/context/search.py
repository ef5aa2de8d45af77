"""`nav search`: open the index, run the selected retriever, and describe the result and the index state."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from navigator.core.config import Config
from navigator.core.errors import InputError, UsageError

PREVIEW_LINES = 12
DELETED_MARK = "deleted since index"
LEVELS = ("chunk", "file")


def read_query(value: str | None, query_file: str | None = None, *, stdin=None) -> str:
    """The query text: the argument itself, or `-` for standard input, or --query-file FILE. A pasted bug
    report or log can exceed the 128 KiB a single shell argument may hold; stdin and files have no such limit."""
    import sys
    if value is not None and query_file is not None:
        raise UsageError("give the query as an argument or with --query-file, not both")
    if query_file is not None:
        try:
            text = Path(query_file).expanduser().read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read the query file {query_file}: {exc.strerror or exc}",
                             hint="give a readable text file, or the query itself, or - to read standard input") from None
    elif value == "-":
        text = (stdin or sys.stdin).read()
    elif value is None:
        raise UsageError("no query given", hint="give it as an argument, as - (read standard input) or with --query-file FILE")
    else:
        text = value
    if not text.strip():
        raise UsageError("the query is empty", hint="a query needs at least one word")
    return text


@dataclass
class SearchResponse:
    query: str
    retriever: str
    results: list            # list[RetrievedChunk]
    index_state: dict
    notes: list[str] = field(default_factory=list)

    level: str = "chunk"
    deleted: set[str] = field(default_factory=set)   # result paths deleted from disk since the index was built
    fusion: dict | None = None   # hybrid's head weights, prose rule and source prior for this query, if it fused

    def to_json(self) -> dict:
        out = {"query": self.query, "retriever": self.retriever, "level": self.level, "index": self.index_state,
               "notes": self.notes, "results": [self._result_json(r) for r in self.results]}
        if self.fusion is not None:
            out["fusion"] = self.fusion
        return out

    def _fusion_line(self) -> str:
        f = self.fusion
        weights = ", ".join(f"{head} x{w:g}" for head, w in sorted(f["weights"].items()))
        why = " (a prose question that names no code: NAV_PROSE_BM25)" if f["prose_rule"] else ""
        prior = f["non_source_factor"]
        asked = f.get("non_source_counted_in_full") or []
        full = f", counted in full as asked: {', '.join(asked)}" if asked else ""
        tests = (f"; tests, docs, examples, tooling and vendored code x{prior:g} (NAV_SOURCE_PRIOR){full}" if prior < 1
                 else "; tests, docs, examples, tooling and vendored code x1 (asked for, or NAV_SOURCE_PRIOR=1)")
        return f"fusion: {weights}{why}{tests}"

    def _result_json(self, r) -> dict:
        out = r.to_json()
        out["deleted_since_index"] = _result_path(r) in self.deleted
        return out

    def render(self, *, explain: bool = False, full: bool = False) -> str:
        out: list[str] = []
        st = self.index_state
        if st["state"] == "stale" and st["files_changed_since"]:
            out.append(f"warning: the index is stale: {st['files_changed_since']} files changed since it was built "
                       f"({', '.join(st['changed_examples'][:3])}...); run `nav index` to refresh")
        if st["state"] == "stale" and st.get("outdated"):
            out.append(f"warning: the index was built by an older nav ({'; '.join(st['outdated'])}); run `nav index` "
                       "to rebuild it")
        if st["state"] == "empty":
            out.append("the index is empty (no files were indexed): nothing was searched")
        if st.get("vector_note"):
            out.append(f"note: {st['vector_note']}")
        for note in self.notes:
            out.append(f"note: {note}")
        if not self.results and st["state"] != "empty":
            out.append(f"no results for {self.query!r} (retriever {self.retriever})")
        if explain and self.fusion is not None:
            out.append(self._fusion_line())
        if self.level == "file":
            out.extend(self._render_files(explain))
            return "\n".join(out)
        for r in self.results:
            c = r.chunk
            symbol = f" {c.symbol}" if c.symbol else ""
            gone = f"  [{DELETED_MARK}]" if c.path in self.deleted else ""
            out.append(f"{r.rank:>2}. {c.location}  [{c.kind}{symbol}]  score {r.score:.4f}{gone}")
            if explain:
                heads = ", ".join(f"{name} #{h.rank} ({h.score:.4f})" for name, h in sorted(r.heads.items()))
                out.append(f"      found by: {heads or 'n/a'}; final score {r.score:.6f}")
            lines = c.text.split("\n")
            shown = lines if full else lines[:PREVIEW_LINES]
            out.extend("      " + line for line in shown)
            if len(shown) < len(lines):
                out.append(f"      ... ({len(lines) - len(shown)} more lines)")
        return "\n".join(out)


    def _render_files(self, explain: bool) -> list[str]:
        out = []
        for hit in self.results:
            c = hit.best_chunk
            where = f"  best: {c.location} [{c.kind}{' ' + c.symbol if c.symbol else ''}]" if c is not None else ""
            gone = f"  [{DELETED_MARK}]" if hit.path in self.deleted else ""
            out.append(f"{hit.rank:>2}. {hit.path}  score {hit.score:.4f}{where}{gone}")
            if explain:
                heads = ", ".join(f"{name} #{r}" for name, r in sorted(hit.heads.items()))
                extra = f"; defines {', '.join(hit.defines[:5])}" if hit.defines else ""
                extra += f"; prior x{hit.prior:g} (tests/docs/examples)" if hit.prior != 1.0 else ""
                out.append(f"      evidence: {heads or 'n/a'}{extra}")
        return out


@dataclass
class FileHit:
    """One file of a ranking grouped by path: its rank is that of its best chunk; spans in rank order."""
    rank: int
    path: str
    score: float
    spans: list[dict]          # {rank, start_line, end_line, kind, symbol, score}

    def to_json(self) -> dict:
        return {"rank": self.rank, "path": self.path, "score": self.score, "spans": self.spans}


def files_in_rank_order(results: list, max_files: int) -> list[FileHit]:
    """Group ranked chunks by file, files ordered by their first (best) chunk, at most max_files."""
    files: dict[str, FileHit] = {}
    for r in results:
        c = r.chunk
        hit = files.get(c.path)
        if hit is None:
            if len(files) == max_files:
                continue
            hit = files[c.path] = FileHit(len(files) + 1, c.path, r.score, [])
        hit.spans.append({"rank": r.rank, "start_line": c.start_line, "end_line": c.end_line, "kind": c.kind,
                          "symbol": c.symbol, "score": r.score})
    return list(files.values())


def _result_path(result) -> str:
    return result.chunk.path if hasattr(result, "chunk") else result.path


def deleted_result_paths(index, state: dict, results: list) -> set[str]:
    """Paths of results whose file is gone from disk since the build (only a stale index can have any)."""
    if state.get("state") != "stale":
        return set()
    paths = {_result_path(r) for r in results}
    return {p for p in paths if not (index.root / p).exists()}


def search_open_index(index, retriever, retriever_name: str, query: str, k: int) -> SearchResponse:
    """Run an already built retriever over an open index (a long-running front end keeps both)."""
    if k <= 0:
        raise UsageError(f"-k must be a positive number, got {k}")
    state = index.state()
    results = [] if index.chunk_count == 0 else retriever.retrieve(query, k)
    return SearchResponse(query, retriever_name, results, state, list(getattr(retriever, "notes", [])),
                          deleted=deleted_result_paths(index, state, results),
                          fusion=getattr(retriever, "last_fusion", None) if results else None)


def search(repo: str | Path | None, query: str, k: int, retriever_name: str | None, config: Config | None = None,
           *, level: str = "chunk") -> SearchResponse:
    from navigator.index.nav_index import NavIndex
    from retrievers.registry import get_retriever, retriever_class, selected_name
    if k <= 0:
        raise UsageError(f"-k must be a positive number, got {k}")
    config = config or Config.from_env()
    name = selected_name(retriever_name, config)
    index = NavIndex.open(repo, config)
    if getattr(retriever_class(name), "embeds_queries", True):
        index.preload_query_encoder()
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}", hint=f"use one of: {', '.join(LEVELS)}")
    if level == "file":
        from retrievers.file_rank import FileRanker
        ranker = FileRanker(index, config, base=name)
        results = [] if index.chunk_count == 0 else ranker.rank(query, k)
        state = index.state()
        return SearchResponse(query, name, results, state, list(ranker.notes), level="file",
                              deleted=deleted_result_paths(index, state, results))
    return search_open_index(index, get_retriever(name, index, config), name, query, k)
