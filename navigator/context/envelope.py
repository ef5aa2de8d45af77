"""The envelope of `nav context`: the selected pieces plus everything a reader needs to judge them.

An envelope always says that it is a selection under a budget, what it cost and by which estimator, what
was left out and why, how old the index is, which retriever ranked the candidates, and a sufficiency
signal with one sentence telling an agent what to do next.

Sufficiency signals:
  ok                the pieces cleared the bar and cover the question's terms
  weak_evidence     something was found but is weak (low best score, few question terms covered, or
                    nothing that cleared the bar fit the budget)
  nothing_matched   the index was searched and no candidate cleared the relevance bar
  nothing_searched  there was nothing to search: no index, an empty index, or every file skipped

JSON form (`to_json()`), stable keys:
  schema            "nav.context/1"
  statement         one sentence: a selection of N pieces under a budget of B tokens
  question          the question as asked
  sufficiency       {signal, explanation}
  tokens            {allowed, spent, reserve, estimator, charged}; spent = sum of pieces[].tokens
                    = sum of estimate_tokens(pieces[].text) <= allowed; `charged` says what is counted
  retriever         {name, candidates, above_bar, best_score, relevance_bar}
  index             {state, built_at, age_seconds, git_head, files_changed_since, changed_examples,
                     outdated, chunk_count, files_indexed, files_skipped, index_dir}; a key the index state
                     did not provide is null; outdated lists what an older nav built (stale with no
                     file changed)
  query             {terms, covered}: the question's content words, and those the pieces contain
  weak_reasons      [str]: why the evidence is weak (empty unless signal is weak_evidence)
  pieces            [{path, start_line, end_line, symbol, kind, rank, score, heads: {name: {rank, score}},
                      tokens, trimmed, lines_kept, lines_total, reserve, text}] in rank order
  left_out          {cleared_bar, by_reason: {budget, duplicate, below_bar, no_new_information},
                     items: [{path, start_line, end_line, symbol, rank, score, reason, tokens, detail}]}
                    cleared_bar counts the items that cleared the relevance bar but were not returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from chunkers.base import TOKEN_ESTIMATOR, estimate_tokens
from navigator.core.config import INDEX_DIR_NAME
from navigator.context.selection import (
    LEFT_OUT_REASONS, REASON_BELOW_BAR, LeftOut, SelectedPiece, Selection,
)

SCHEMA = "nav.context/1"
OK = "ok"
WEAK_EVIDENCE = "weak_evidence"
NOTHING_MATCHED = "nothing_matched"
NOTHING_SEARCHED = "nothing_searched"
SUFFICIENCY_SIGNALS = (OK, WEAK_EVIDENCE, NOTHING_MATCHED, NOTHING_SEARCHED)

CHARGED = "piece text only (the header and separators of this envelope are not charged)"
INDEX_KEYS = ("state", "built_at", "age_seconds", "git_head", "files_changed_since", "changed_examples",
              "outdated", "chunk_count", "files_indexed", "files_skipped", "index_dir")
# The text render lists every cleared-bar omission, but only the first few below-bar ones.
BELOW_BAR_SHOWN = 5
GIT_HEAD_SHOWN = 12
SCORE_DIGITS = 6


@dataclass
class ContextEnvelope:
    question: str
    budget: int
    spent: int
    retriever: str
    index: dict
    sufficiency: str
    explanation: str
    pieces: list[SelectedPiece] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    candidates: int = 0
    above_bar: int = 0
    best_score: float | None = None
    relevance_bar: float | None = None
    reserve_tokens: int = 0
    query_terms: list[str] = field(default_factory=list)
    covered_query_terms: list[str] = field(default_factory=list)
    weak_reasons: list[str] = field(default_factory=list)
    token_estimator: str = TOKEN_ESTIMATOR

    @property
    def statement(self) -> str:
        n = len(self.pieces)
        return (f"A selection of {n} piece{'' if n == 1 else 's'} chosen under a budget of {self.budget} tokens, "
                "not everything that may be relevant.")

    @property
    def cleared_bar_left_out(self) -> list[LeftOut]:
        return [item for item in self.left_out if item.reason != REASON_BELOW_BAR]

    def left_out_by_reason(self) -> dict[str, int]:
        counts = dict.fromkeys(LEFT_OUT_REASONS, 0)
        for item in self.left_out:
            counts[item.reason] += 1
        return counts

    # ------------------------------------------------------------ JSON

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "statement": self.statement,
            "question": self.question,
            "sufficiency": {"signal": self.sufficiency, "explanation": self.explanation},
            "tokens": {"allowed": self.budget, "spent": self.spent, "reserve": self.reserve_tokens,
                       "estimator": self.token_estimator, "charged": CHARGED},
            "retriever": {"name": self.retriever, "candidates": self.candidates, "above_bar": self.above_bar,
                          "best_score": _round(self.best_score), "relevance_bar": _round(self.relevance_bar)},
            "index": {key: self.index.get(key) for key in INDEX_KEYS},
            "query": {"terms": list(self.query_terms), "covered": list(self.covered_query_terms)},
            "weak_reasons": list(self.weak_reasons),
            "pieces": [_piece_json(p) for p in self.pieces],
            "left_out": {"cleared_bar": len(self.cleared_bar_left_out), "by_reason": self.left_out_by_reason(),
                         "items": [_left_out_json(item) for item in self.left_out]},
        }

    # ------------------------------------------------------------ text

    def render_text(self) -> str:
        lines = [
            f"nav context: {self.statement}",
            f"sufficiency: {self.sufficiency} - {self.explanation}",
            f"tokens: {self.spent} spent of {self.budget} allowed; counted: {CHARGED}; "
            f"estimator: {self.token_estimator}",
            f"index: {_index_line(self.index)}",
            f"retriever: {self.retriever}; {self.candidates} candidates, {self.above_bar} cleared the relevance bar"
            + (f" (best score {self.best_score:.4g}, bar {self.relevance_bar:.4g})"
               if self.best_score is not None and self.relevance_bar is not None else ""),
        ]
        if self.query_terms:
            missing = [t for t in self.query_terms if t not in self.covered_query_terms]
            lines.append(f"question terms covered: {len(self.covered_query_terms)} of {len(self.query_terms)}"
                         + (f" (missing: {', '.join(missing)})" if missing else ""))
        if self.weak_reasons:
            lines.append("weak evidence: " + "; ".join(self.weak_reasons))
        lines.extend(self._left_out_lines())
        for piece in self.pieces:
            lines.append("")
            lines.append(_piece_header(piece))
            lines.append(piece.text)
        return "\n".join(lines)

    def _left_out_lines(self) -> list[str]:
        cleared = self.cleared_bar_left_out
        below = [item for item in self.left_out if item.reason == REASON_BELOW_BAR]
        if not self.left_out:
            return ["left out: nothing"]
        counts = self.left_out_by_reason()
        by_reason = ", ".join(f"{r} {counts[r]}" for r in LEFT_OUT_REASONS if r != REASON_BELOW_BAR and counts[r])
        lines = [f"left out: {len(cleared)} cleared the bar but were not returned"
                 + (f" ({by_reason})" if by_reason else "") + f"; {len(below)} below the bar"]
        for item in cleared:
            symbol = f" {item.symbol}" if item.symbol else ""
            lines.append(f"  - {item.path}:{item.start_line}-{item.end_line}{symbol} (rank {item.rank}, "
                         f"{item.tokens} tokens): {item.reason}" + (f" - {item.detail}" if item.detail else ""))
        if below:
            shown = ", ".join(f"{i.path}:{i.start_line}-{i.end_line}" for i in below[:BELOW_BAR_SHOWN])
            more = f" (+{len(below) - BELOW_BAR_SHOWN} more)" if len(below) > BELOW_BAR_SHOWN else ""
            lines.append(f"  - below bar: {shown}{more}")
        return lines


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, SCORE_DIGITS)


def _piece_json(p: SelectedPiece) -> dict:
    c = p.chunk
    return {
        "path": c.path, "start_line": c.start_line, "end_line": c.end_line, "symbol": c.symbol, "kind": c.kind,
        "rank": p.rank, "score": _round(p.score),
        "heads": {name: {"rank": hit.rank, "score": _round(hit.score)} for name, hit in p.heads.items()},
        "tokens": p.tokens, "trimmed": p.trimmed, "lines_kept": p.lines_kept, "lines_total": p.lines_total,
        "reserve": p.reserve, "text": p.text,
    }


def _left_out_json(item: LeftOut) -> dict:
    return {"path": item.path, "start_line": item.start_line, "end_line": item.end_line, "symbol": item.symbol,
            "rank": item.rank, "score": _round(item.score), "reason": item.reason, "tokens": item.tokens,
            "detail": item.detail}


def _piece_header(p: SelectedPiece) -> str:
    heads = " ".join(f"{name}#{hit.rank}" for name, hit in p.heads.items()) or "-"
    noun = "line" if p.lines_total == 1 else "lines"
    shape = f"trimmed {p.lines_kept}/{p.lines_total} {noun}" if p.trimmed else f"whole {p.lines_total} {noun}"
    parts = [f"=== {p.chunk.location}" + (f" {p.chunk.symbol}" if p.chunk.symbol else ""),
             f"rank {p.rank}", f"score {p.score:.4g}", f"heads {heads}", f"{p.tokens} tokens", shape]
    if p.reserve:
        parts.append("reserve slot")
    return " | ".join(parts)


def format_age(seconds: float | None) -> str:
    if seconds is None:
        return "unknown age"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit} old"
    return f"{seconds:.0f}s old"


def _index_line(index: dict) -> str:
    state = index.get("state") or "missing"
    if state == "missing":
        return f"missing (looked in {index.get('index_dir')})"
    head = (index.get("git_head") or "n/a")[:GIT_HEAD_SHOWN]
    changed = index.get("files_changed_since")
    changed_text = "unknown number of files" if changed is None else f"{changed} file{'' if changed == 1 else 's'}"
    if index.get("changed_examples"):
        changed_text += f" (e.g. {', '.join(index['changed_examples'])})"
    if index.get("outdated"):
        changed_text += f"; built by an older nav: {'; '.join(index['outdated'])}"
    return (f"{state}; built {index.get('built_at') or '?'} ({format_age(index.get('age_seconds'))}) "
            f"at HEAD {head}; {changed_text} changed since; {index.get('chunk_count', 0)} chunks from "
            f"{index.get('files_indexed', 0)} files ({index.get('files_skipped', 0)} skipped); {index.get('index_dir')}")


def _repo_hint(index: dict, repo_root: str | None) -> str:
    """The PATH to suggest for `nav index PATH`: the repository if known, else the parent of `.nav`."""
    if repo_root:
        return repo_root
    index_dir = index.get("index_dir")
    if index_dir and PurePath(index_dir).name == INDEX_DIR_NAME:
        return str(PurePath(index_dir).parent)
    return "PATH"


def _sufficiency(selection: Selection | None, index: dict, repo: str) -> tuple[str, str]:
    state = index.get("state") or "missing"
    if state == "missing":
        return NOTHING_SEARCHED, f"no index at {index.get('index_dir')}: run `nav index {repo}`, then ask again."
    if state == "empty" or not index.get("chunk_count"):
        skipped = index.get("files_skipped") or 0
        if skipped and not index.get("files_indexed"):
            return NOTHING_SEARCHED, (f"the index is empty because all {skipped} files were skipped (ignored, binary "
                                      f"or too large): check the ignore rules and NAV_MAX_FILE_BYTES, then run "
                                      f"`nav index {repo}`.")
        return NOTHING_SEARCHED, (f"the index holds no chunks: point `nav index` at the repository's source "
                                  f"(`nav index {repo}`) and ask again.")
    if selection is None:
        return NOTHING_SEARCHED, f"no search was run against the index: run `nav context` again, or rebuild with `nav index {repo}`."
    if selection.nothing_matched:
        return NOTHING_MATCHED, (f"the index ({index.get('chunk_count')} chunks) was searched but no candidate cleared "
                                 "the relevance bar: rephrase with names used in the code (functions, classes, files) "
                                 "or try another --retriever.")
    if selection.weak_evidence:
        if not selection.pieces and selection.suggested_budget:
            return WEAK_EVIDENCE, (f"{selection.weak_reasons[0]}: rerun with --budget {selection.suggested_budget} "
                                   "or more.")
        return WEAK_EVIDENCE, (f"{'; '.join(selection.weak_reasons)}: treat the pieces as leads and confirm them by "
                               "opening the files before relying on them.")
    return OK, "the pieces cleared the relevance bar and cover the question's terms: answer from them, and open path:start-end for surrounding code."


def _with_staleness(explanation: str, index: dict, repo: str) -> str:
    if index.get("state") != "stale":
        return explanation
    changed = index.get("files_changed_since")
    if index.get("outdated") and not changed:
        return (explanation.rstrip(".") + f"; the index was built by an older nav ({'; '.join(index['outdated'])}), "
                f"so the ranking may miss what this nav would find: rebuild with `nav index {repo}`.")
    how_many = "files" if changed is None else f"{changed} file{'' if changed == 1 else 's'}"
    return (explanation.rstrip(".") + f"; the index is stale ({how_many} changed since it was built), so lines may "
            f"have moved: refresh with `nav index {repo}`.")


def build_envelope(question: str, selection: Selection | None, budget: int, retriever: str, index_state: dict,
                   *, repo_root: str | None = None) -> ContextEnvelope:
    """Wrap a selection (None when no search ran) with the facts that let a reader judge it."""
    index = dict(index_state)
    repo = _repo_hint(index, repo_root)
    signal, explanation = _sufficiency(selection, index, repo)
    explanation = _with_staleness(explanation, index, repo)
    if selection is None:
        return ContextEnvelope(question, budget, 0, retriever, index, signal, explanation)
    # Spent is recounted from the returned texts, so the figure is true by construction.
    spent = sum(estimate_tokens(p.text) for p in selection.pieces)
    return ContextEnvelope(
        question, budget, spent, retriever, index, signal, explanation,
        pieces=list(selection.pieces), left_out=list(selection.left_out), candidates=selection.candidates,
        above_bar=selection.above_bar, best_score=selection.best_score, relevance_bar=selection.relevance_bar,
        reserve_tokens=selection.reserve_tokens, query_terms=list(selection.query_terms),
        covered_query_terms=list(selection.covered_query_terms),
        weak_reasons=list(selection.weak_reasons) if signal == WEAK_EVIDENCE else [],
    )
