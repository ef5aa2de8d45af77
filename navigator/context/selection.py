"""The selection stage of `nav context`: a ranking in, a budgeted set of whole units out.

This is a selection, not a slice of the ranking. The ranking is walked best first and each candidate
meets five checks in order; the first it fails becomes its recorded reason for being left out:

  below_bar           its score is under the relevance bar (relative to the best score, or an absolute
                      floor), and heads do not agree on it either
  duplicate           it repeats a piece already admitted: overlapping lines of the same file, identical
                      text, or a near-copy (token-set Jaccard)
  no_new_information  what it would return adds (almost) nothing the admitted set does not already cover:
                      no new query term, and too few new content words / facets (file, symbol)
  budget              it does not fit the tokens left, or its value does not repay its share of the budget
                      (so a larger --budget would admit it); a unit is never cut in half to fit

Before a candidate is weighed it is trimmed by rank tier: the top ranks pass whole; lower ranks keep only
the lines that share enough distinct query content words (more the lower the rank), always keeping the
definition line(s), decorators, headings and the enclosing lines of what is kept; dropped runs become one
marker line "<indent>... (N lines)". Its charged cost is estimate_tokens of the text actually returned.

About `reserve_fraction` of the budget is held back from the greedy pass for at most one large but
necessary unit (top-ranked, or a symbol the question names) that a value-per-token pass would starve:
such a unit claims the slot when the walk reaches it, skipping the value-per-token test, and may use
the reserve plus whatever the main share still has. If no unit claims it, the reserve is released to
a fill pass over what lost only to the budget.

All thresholds are named fields of SelectionParams, to be chosen by measurement.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from chunkers.base import CodeChunk, estimate_tokens
from navigator.core.errors import UsageError
from retrievers.base import HeadHit, RetrievedChunk

REASON_BUDGET = "budget"
REASON_DUPLICATE = "duplicate"
REASON_BELOW_BAR = "below_bar"
REASON_NO_NEW_INFORMATION = "no_new_information"
LEFT_OUT_REASONS = (REASON_BUDGET, REASON_DUPLICATE, REASON_BELOW_BAR, REASON_NO_NEW_INFORMATION)

ELISION_MARKER = "... ({count} lines)"
# Lines that give a fragment its shape: definitions, decorators (code); headings (prose).
_CODE_STRUCTURE = re.compile(r"^\s*(?:async\s+def|def|class)\b|^\s*@\w")
_PROSE_STRUCTURE = re.compile(r"^\s{0,3}#{1,6}\s")
_PROSE_KINDS = ("section", "text", "module_doc")
_DEF_LINE = re.compile(r"^\s*(?:async\s+def|def|class)\b")
# A facet is a unit of coverage that is not a word: which file, which symbol.
_FACET_FILE = "file:"
_FACET_SYMBOL = "symbol:"


@dataclass(frozen=True)
class SelectionParams:
    """Every knob of the selection. Defaults are provisional, to be set by measurement (`nav eval`)."""

    # Share of the budget held back for one large necessary unit.
    reserve_fraction: float = 0.20
    # A reserve unit must be ranked at least this high, or define a symbol the question names.
    reserve_max_rank: int = 3
    # ... and may take at most this share of the budget, so the selection keeps room for other evidence.
    reserve_max_share: float = 0.6

    # Relevance bar. Relative: score >= best - (1 - relative_bar) * |best|  (= relative_bar * best for
    # positive scores); works for cosines, BM25, RRF and logits alike.
    relative_bar: float = 0.5
    # Absolute floor in the retriever's own units (e.g. 0.0 for BM25: no term matched). None: no floor.
    min_score: float | None = None
    # Head agreement rescues a candidate under the relative bar: at least this many heads rank it
    # within head_agreement_rank.
    head_agreement_min: int = 2
    head_agreement_rank: int = 10

    # Weak evidence: the best final score under weak_score_bar (retriever units; None: not checked),
    # or the best score of a head under its bar (e.g. a cosine), or the pieces covering too few of the
    # question's content words (the first query_term_cap of them).
    weak_score_bar: float | None = None
    weak_head_score_bars: Mapping[str, float] = field(default_factory=lambda: {"vector": 0.20})
    min_query_coverage: float = 0.25
    query_term_cap: int = 8

    # Duplicates: same file and this share of the smaller span's lines overlapping; or token-set
    # Jaccard at least duplicate_jaccard (only between sets of at least duplicate_min_terms words).
    duplicate_line_overlap: float = 0.5
    duplicate_jaccard: float = 0.8
    duplicate_min_terms: int = 5

    # New information: admitted when it brings a new query term, or when at least min_novelty of its
    # words and facets are new to the set.
    min_novelty: float = 0.15
    # Value = relative relevance * (novelty + query_term_weight * share of query terms newly covered).
    query_term_weight: float = 1.0
    # Repay: value must be at least repay_factor * (tokens / budget). With 2.0, a piece using a quarter
    # of the budget must bring half a "best, all-new" piece's worth.
    repay_factor: float = 2.0

    # Span selection by rank: (max_rank, distinct query words a line must share). Ranks past the last
    # tier need span_min_shared_beyond. 0 keeps every line.
    # Chosen with bench/selection_grid.py on the click set (rag-eval/README.md): whole to rank 5, because the
    # answer line of a value lookup rarely shares a word with the question, and trimming ranks 3-5 lost it.
    span_tiers: tuple[tuple[int, int], ...] = ((5, 0), (10, 1), (20, 2))
    span_min_shared_beyond: int = 3
    # Lines of context kept around each matching line.
    span_context_lines: int = 0
    # Runs shorter than this are kept rather than replaced by a marker (a marker costs about a line).
    min_elided_run: int = 2
    # A multi-line signature is kept up to its closing ':' within this many lines.
    signature_max_lines: int = 6
    # If trimming saves less than this share of the tokens, the piece passes whole.
    min_trim_saving: float = 0.10


def params_for_retriever(retriever: str, **overrides) -> SelectionParams:
    """SelectionParams with the score floor that fits a built-in retriever's score scale."""
    retriever = "hybrid" if retriever == "graph" else retriever   # graph ranks with hybrid's scores
    floors: dict[str, float] = {"bm25": 0.0}  # BM25 0: no query term occurs in the chunk
    # RRF scores are flat (rank 1 in one head = 1/61, in both = 2/61): a bar at half the best admits
    # nearly everything, so hybrid needs a tighter relative bar (measured: bench/selection_grid.py).
    bars: dict[str, float] = {"hybrid": 0.85}
    base: dict = {}
    if retriever in floors:
        base["min_score"] = floors[retriever]
    if retriever in bars:
        base["relative_bar"] = bars[retriever]
    base.update(overrides)
    return SelectionParams(**base)


@dataclass
class SelectedPiece:
    chunk: CodeChunk
    text: str                      # what is returned: the span, possibly with elision markers
    tokens: int                    # estimate_tokens(text): the charged cost
    rank: int
    score: float
    heads: dict[str, HeadHit]
    trimmed: bool
    lines_kept: int
    lines_total: int
    reserve: bool = False          # admitted through the reserve slot

    @property
    def path(self) -> str:
        return self.chunk.path

    @property
    def start_line(self) -> int:
        return self.chunk.start_line

    @property
    def end_line(self) -> int:
        return self.chunk.end_line


@dataclass
class LeftOut:
    path: str
    start_line: int
    end_line: int
    reason: str                    # one of LEFT_OUT_REASONS
    tokens: int                    # what it would have cost (after trimming; whole chunk if never trimmed)
    rank: int
    score: float = 0.0
    symbol: str | None = None
    detail: str = ""               # why, in a few words (e.g. "overlaps a.py:10-40", "needs 900, 120 left")


@dataclass
class Selection:
    pieces: list[SelectedPiece]    # in rank order
    left_out: list[LeftOut]        # in rank order
    spent: int
    best_score: float | None
    budget: int
    relevance_bar: float | None
    reserve_tokens: int
    candidates: int
    above_bar: int
    query_terms: list[str]
    covered_query_terms: list[str]
    weak_reasons: list[str]
    params: SelectionParams
    # About the budget that would admit the best-ranked unit lost to the budget (None: none was).
    suggested_budget: int | None = None

    @property
    def weak_evidence(self) -> bool:
        return bool(self.weak_reasons)

    @property
    def nothing_matched(self) -> bool:
        return self.above_bar == 0

    @property
    def cleared_bar_left_out(self) -> list[LeftOut]:
        return [item for item in self.left_out if item.reason != REASON_BELOW_BAR]


def _tokenizers() -> tuple[Callable[[str], list[str]], Callable[[str], list[str]]]:
    # Lazy: the code-aware tokenizer is shared with the BM25 head; one tokenizer for all of nav.
    from navigator.index.tokenize import document_tokens
    from retrievers.query_terms import query_tokens
    return document_tokens, query_tokens


# ---------------------------------------------------------------- relevance

def relevance_bar(best_score: float, params: SelectionParams) -> float:
    relative = best_score - (1.0 - params.relative_bar) * abs(best_score)
    return relative if params.min_score is None else max(relative, params.min_score)


def relative_relevance(score: float, best_score: float) -> float:
    """Score as a share of the best, in [0, 1]; the same scale-free form the bar uses."""
    if best_score == 0:
        return 1.0 if score >= 0 else 0.0
    return min(1.0, max(0.0, 1.0 - (best_score - score) / abs(best_score)))


def _heads_agree(heads: Mapping[str, HeadHit], params: SelectionParams) -> bool:
    agreeing = sum(1 for hit in heads.values() if hit.rank <= params.head_agreement_rank)
    return agreeing >= params.head_agreement_min


def _clears_bar(cand: RetrievedChunk, bar: float, params: SelectionParams) -> bool:
    if params.min_score is not None and cand.score <= params.min_score:
        return False
    return cand.score >= bar or _heads_agree(cand.heads, params)


# ---------------------------------------------------------------- span selection

@dataclass
class TrimmedSpan:
    text: str
    kept: list[int]          # 0-based offsets of the chunk's lines that were kept
    lines_total: int
    trimmed: bool


def required_shared_terms(rank: int, params: SelectionParams) -> int:
    for max_rank, required in params.span_tiers:
        if rank <= max_rank:
            return required
    return params.span_min_shared_beyond


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _structure_lines(lines: list[str], kind: str, params: SelectionParams) -> set[int]:
    keep: set[int] = set()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        keep.add(first)
    pattern = _PROSE_STRUCTURE if kind in _PROSE_KINDS else _CODE_STRUCTURE
    for i, line in enumerate(lines):
        if not pattern.match(line):
            continue
        keep.add(i)
        if _DEF_LINE.match(line):  # carry a multi-line signature through to its ':'
            j = i
            while not lines[j].rstrip().endswith(":") and j + 1 < len(lines) and j - i < params.signature_max_lines:
                j += 1
                keep.add(j)
    return keep


def _enclosing_lines(lines: list[str], index: int) -> set[int]:
    """The lines that open the blocks a kept line sits in (if/for/with/def ...), so it reads in place."""
    found: set[int] = set()
    indent = _indent(lines[index])
    for j in range(index - 1, -1, -1):
        if lines[j].strip() and _indent(lines[j]) < indent:
            found.add(j)
            indent = _indent(lines[j])
            if indent == 0:
                break
    return found


def select_spans(text: str, rank: int, query_terms: set[str], params: SelectionParams,
                 kind: str = "code", document_tokens: Callable[[str], list[str]] | None = None) -> TrimmedSpan:
    """Trim a chunk's text by its rank tier; see the module docstring."""
    lines = text.split("\n")
    whole = TrimmedSpan(text, list(range(len(lines))), len(lines), False)
    required = required_shared_terms(rank, params)
    if query_terms:
        required = min(required, len(query_terms))  # a two-word question cannot ask for three
    if required <= 0:
        return whole
    if document_tokens is None:
        document_tokens = _tokenizers()[0]

    keep = _structure_lines(lines, kind, params)
    for i, line in enumerate(lines):
        if len(set(document_tokens(line)) & query_terms) >= required:
            low, high = max(0, i - params.span_context_lines), min(len(lines), i + params.span_context_lines + 1)
            keep.update(range(low, high))
            keep |= _enclosing_lines(lines, i)

    # Fill gaps too short to be worth a marker, then render.
    kept_sorted = sorted(keep)
    for a, b in zip(kept_sorted, kept_sorted[1:]):
        if 1 < b - a <= params.min_elided_run:
            keep.update(range(a + 1, b))
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in keep:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and j not in keep:
            j += 1
        run = lines[i:j]
        if all(not line.strip() for line in run):
            i = j  # trailing or separating blank lines: drop silently, they carry nothing
            continue
        if len(run) < params.min_elided_run:
            out.extend(run)
            keep.update(range(i, j))
        else:
            indent = next(line[:_indent(line)] for line in run if line.strip())
            out.append(indent + ELISION_MARKER.format(count=len(run)))
        i = j
    trimmed_text = "\n".join(out)
    if estimate_tokens(trimmed_text) > (1.0 - params.min_trim_saving) * estimate_tokens(text):
        return whole
    return TrimmedSpan(trimmed_text, sorted(keep), len(lines), True)


# ---------------------------------------------------------------- the walk

@dataclass
class _Draft:
    cand: RetrievedChunk
    span: TrimmedSpan
    tokens: int
    units: set[str]
    query_hits: set[str]
    full_terms: frozenset[str]


@dataclass
class _Admitted:
    draft: _Draft
    kept_lines: set[int]      # absolute line numbers returned


class _SelectionState:
    """What the admitted set already covers, and the checks a new candidate is weighed against."""

    def __init__(self, query_terms: set[str], best_score: float, budget: int, params: SelectionParams):
        self.query_terms = query_terms
        self.best_score = best_score
        self.budget = budget
        self.params = params
        self.admitted: list[_Admitted] = []
        self.covered_units: set[str] = set()
        self.covered_query: set[str] = set()
        self.spent = 0

    def duplicate_of(self, draft: _Draft) -> str | None:
        c = draft.cand.chunk
        own = set(range(c.start_line, c.end_line + 1))
        for adm in self.admitted:
            other = adm.draft.cand.chunk
            if other.path == c.path and adm.kept_lines & own:
                shared = len(adm.kept_lines & own)
                if shared >= self.params.duplicate_line_overlap * min(len(own), len(adm.kept_lines)):
                    return f"overlaps {other.location}"
            if other.text.strip() == c.text.strip():
                return f"same text as {other.location}"
            small = min(len(draft.full_terms), len(adm.draft.full_terms))
            if small >= self.params.duplicate_min_terms:
                union = draft.full_terms | adm.draft.full_terms
                if len(draft.full_terms & adm.draft.full_terms) / len(union) >= self.params.duplicate_jaccard:
                    return f"near-copy of {other.location}"
        return None

    def novelty(self, draft: _Draft) -> tuple[float, set[str]]:
        new_query = draft.query_hits - self.covered_query
        if not draft.units:
            return 0.0, new_query
        return len(draft.units - self.covered_units) / len(draft.units), new_query

    def informative(self, draft: _Draft) -> bool:
        novelty, new_query = self.novelty(draft)
        return bool(new_query) or novelty >= self.params.min_novelty

    def value(self, draft: _Draft) -> float:
        novelty, new_query = self.novelty(draft)
        query_share = len(new_query) / len(self.query_terms) if self.query_terms else 0.0
        relevance = relative_relevance(draft.cand.score, self.best_score)
        return relevance * (novelty + self.params.query_term_weight * query_share)

    def repays(self, draft: _Draft) -> bool:
        return self.value(draft) >= self.params.repay_factor * draft.tokens / self.budget

    def admit(self, draft: _Draft) -> None:
        start = draft.cand.chunk.start_line
        self.admitted.append(_Admitted(draft, {start + i for i in draft.span.kept}))
        self.covered_units |= draft.units
        self.covered_query |= draft.query_hits
        self.spent += draft.tokens


def _facets(chunk: CodeChunk) -> set[str]:
    units = {_FACET_FILE + chunk.path}
    if chunk.symbol:
        units.add(_FACET_SYMBOL + chunk.symbol)
    return units


def _names_in_question(chunk: CodeChunk, question: str) -> bool:
    if not chunk.symbol:
        return False
    name = chunk.symbol.rsplit(".", 1)[-1]
    return bool(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", question, re.IGNORECASE))


def _left_out(draft_or_cand: _Draft | RetrievedChunk, reason: str, detail: str) -> LeftOut:
    if isinstance(draft_or_cand, _Draft):
        cand, tokens = draft_or_cand.cand, draft_or_cand.tokens
    else:
        cand, tokens = draft_or_cand, estimate_tokens(draft_or_cand.chunk.text)
    c = cand.chunk
    return LeftOut(c.path, c.start_line, c.end_line, reason, tokens, cand.rank, cand.score, c.symbol, detail)


def _ordered_unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def select_context(question: str, candidates: list[RetrievedChunk], budget: int,
                   params: SelectionParams = SelectionParams()) -> Selection:
    """Choose what `nav context` returns for `question` within `budget` tokens of piece text."""
    if budget <= 0:
        raise UsageError(f"budget must be a positive number of tokens, got {budget}",
                         hint="pass --budget N with N > 0, e.g. --budget 4000")
    document_tokens, query_tokens = _tokenizers()
    query_list = _ordered_unique(query_tokens(question))
    query_terms = set(query_list)
    ranked = sorted(candidates, key=lambda c: c.rank)
    reserve = int(budget * params.reserve_fraction)

    if not ranked:
        return Selection([], [], 0, None, budget, None, reserve, 0, 0, query_list, [], [], params)

    best_score = max(c.score for c in ranked)
    bar = relevance_bar(best_score, params)
    state = _SelectionState(query_terms, best_score, budget, params)
    left: dict[int, LeftOut] = {}          # position in `ranked` -> why it is out
    deferred: list[tuple[int, _Draft]] = []  # lost only to budget in the greedy pass
    reserve_piece: _Draft | None = None
    above_bar = 0

    def draft_for(cand: RetrievedChunk) -> _Draft:
        span = select_spans(cand.chunk.text, cand.rank, query_terms, params, cand.chunk.kind, document_tokens)
        words = set(document_tokens(span.text))
        return _Draft(cand, span, estimate_tokens(span.text), words | _facets(cand.chunk),
                      words & query_terms, frozenset(document_tokens(cand.chunk.text)))

    def weigh(pos: int, draft: _Draft, room: int, check_repay: bool) -> bool:
        """Admit draft if it passes; otherwise record why. True when admitted."""
        dup = state.duplicate_of(draft)
        if dup:
            left[pos] = _left_out(draft, REASON_DUPLICATE, dup)
        elif not state.informative(draft):
            left[pos] = _left_out(draft, REASON_NO_NEW_INFORMATION, "its words are already covered by the pieces above")
        elif draft.tokens > room:
            left[pos] = _left_out(draft, REASON_BUDGET, f"needs {draft.tokens} tokens, {max(room, 0)} left")
        elif check_repay and not state.repays(draft):
            share = draft.tokens / budget
            left[pos] = _left_out(draft, REASON_BUDGET, f"{draft.tokens} tokens ({share:.0%} of the budget) "
                                                        "outweigh what it adds at this budget")
        else:
            left.pop(pos, None)
            state.admit(draft)
            return True
        return False

    # Pass 1: greedy over the ranking with the reserve held back. A necessary unit that loses there
    # (too big for what is left of the main share, or too costly per token) claims the reserve slot at
    # once, before lower-ranked pieces can use up the room it needs.
    for pos, cand in enumerate(ranked):
        if not _clears_bar(cand, bar, params):
            left[pos] = _left_out(cand, REASON_BELOW_BAR, f"score {cand.score:.4g} under bar {bar:.4g}")
            continue
        above_bar += 1
        draft = draft_for(cand)
        held_back = 0 if reserve_piece else reserve
        if weigh(pos, draft, budget - held_back - state.spent, check_repay=True):
            continue
        if left[pos].reason != REASON_BUDGET:
            continue
        necessary = cand.rank <= params.reserve_max_rank or _names_in_question(cand.chunk, question)
        if (reserve_piece is None and reserve > 0 and necessary
                and draft.tokens <= params.reserve_max_share * budget
                and weigh(pos, draft, budget - state.spent, check_repay=False)):
            reserve_piece = draft
        else:
            deferred.append((pos, draft))

    # Pass 2: whatever is left of the budget (the reserve, if unclaimed) goes to what lost only to it.
    for pos, draft in deferred:
        weigh(pos, draft, budget - state.spent, check_repay=True)

    pieces = sorted((SelectedPiece(a.draft.cand.chunk, a.draft.span.text, a.draft.tokens, a.draft.cand.rank,
                                   a.draft.cand.score, dict(a.draft.cand.heads), a.draft.span.trimmed,
                                   len(a.draft.span.kept), a.draft.span.lines_total,
                                   reserve=a.draft is reserve_piece)
                     for a in state.admitted), key=lambda p: p.rank)
    left_out = [left[pos] for pos in sorted(left)]
    covered = [t for t in query_list if t in state.covered_query]
    weak = _weak_reasons(ranked, pieces, left_out, best_score, query_list, covered, params)
    lost = [draft for pos, draft in deferred if left.get(pos) and left[pos].reason == REASON_BUDGET]
    suggested = _budget_to_admit(lost[0], state) if lost else None
    return Selection(pieces, left_out, state.spent, best_score, budget, bar, reserve, len(ranked), above_bar,
                     query_list, covered, weak, params, suggested)


def _budget_to_admit(draft: _Draft, state: _SelectionState) -> int:
    """A budget at which `draft` would fit beside what is already spent and repay its share."""
    fits = math.ceil((state.spent + draft.tokens) / (1.0 - state.params.reserve_fraction))
    value = state.value(draft)
    repays = math.ceil(state.params.repay_factor * draft.tokens / value) if value > 0 else fits
    return max(fits, repays, state.budget + 1)


def _weak_reasons(ranked: list[RetrievedChunk], pieces: list[SelectedPiece], left_out: list[LeftOut],
                  best_score: float, query_list: list[str], covered: list[str],
                  params: SelectionParams) -> list[str]:
    reasons: list[str] = []
    if not pieces and any(item.reason == REASON_BUDGET for item in left_out):
        smallest = min(item.tokens for item in left_out if item.reason == REASON_BUDGET)
        reasons.append(f"nothing that cleared the bar fits the budget (the smallest needs {smallest} tokens)")
    if params.weak_score_bar is not None and best_score < params.weak_score_bar:
        reasons.append(f"best score {best_score:.4g} is under the weak-evidence bar {params.weak_score_bar:.4g}")
    for head, head_bar in params.weak_head_score_bars.items():
        scores = [c.heads[head].score for c in ranked if head in c.heads]
        if scores and max(scores) < head_bar:
            reasons.append(f"best {head} score {max(scores):.3g} is under its bar {head_bar:.3g}")
    considered = query_list[:params.query_term_cap]
    if considered and pieces:
        needed = math.ceil(params.min_query_coverage * len(considered))
        hit = [t for t in considered if t in covered]
        if len(hit) < needed:
            missing = ", ".join(t for t in considered if t not in covered)
            reasons.append(f"the pieces cover {len(hit)} of {len(considered)} question terms (missing: {missing})")
    return reasons
