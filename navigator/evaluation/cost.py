"""`nav cost`: what answering costs by pasting the repository into a long context, against nav's budgeted
context (navigator.context.build.build_context), in tokens and money, for one turn and for a session.

The two arms, per question (tokens are chunkers.base.estimate_tokens, the one estimator nav uses):
  long context  the indexed corpus pasted as file blocks ("=== path ===\\n" + text + "\\n"), in path order.
                When it does not fit the model's window (less the question and the answer), the largest part
                that does: files in path order, each taken when it still fits, skipped when it does not; the
                report says "partial" with the files and tokens left out.
  nav           the rendered `nav context` envelope (render_text(): what an agent pastes) at --budget.
Each turn's input is the arm's context + the question; each answer is `answer_tokens` long (price table).

A session of T turns on a stateless API (the whole conversation is resent each turn), turn t = 1..T:
  long context  the paste is sent once and stays:   input_t = P + t*q + (t-1)*a
  nav           every turn adds a fresh context:    input_t = t*(C + q) + (t-1)*a
so   long context total = T*P + q*T(T+1)/2 + a*T(T-1)/2     (linear in P, quadratic in the history)
     nav total          = (C+q)*T(T+1)/2 + a*T(T-1)/2        (quadratic in C)
nav stays cheaper while (T+1)/2 * C < P; the report gives that crossover turn, and the turns each arm can
run before its input no longer fits the window.

Hit and coverage (when a query set is given) reuse navigator.evaluation.metrics: nav is scored on the
envelope's pieces (recall at budget), long context on the pasted files (an expected text "hits" when it
lies inside a pasted file: an upper bound, since a text in the window is not a text the model uses). Routing per query category compares the two on the chosen model.

Prices come from a small TOML table shipped as package data (navigator/evaluation/data/prices.toml) or the
file NAV_PRICES / --prices names; it carries the date the prices were written and a note to check them.
"""
from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from chunkers.base import TOKEN_ESTIMATOR, estimate_tokens
from navigator.core.config import Config
from navigator.core.errors import InputError, UsageError
from navigator.evaluation import metrics
from navigator.evaluation.metrics import ChunkView
from navigator.evaluation.report import format_table

PRICES_ENV = "NAV_PRICES"
DEFAULT_PRICES = Path(__file__).parent / "data" / "prices.toml"
DEFAULT_TURNS = 10
# Routing: long context is suggested only when it answers this much more of a category than nav does, and
# more than one query's worth (1/n): a difference of one query in a category is not evidence.
ROUTE_MARGIN = 0.10


# ---------------------------------------------------------------- the price table

@dataclass(frozen=True)
class ModelPrice:
    name: str
    input_per_mtok: float
    output_per_mtok: float
    window: int

    def price(self, input_tokens: float, output_tokens: float) -> float:
        """USD for this many tokens in and out."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    source: str
    prices_written: str
    note: str
    answer_tokens: int
    default_model: str
    models: dict[str, ModelPrice]

    def pick(self, names: Sequence[str] | None) -> list[ModelPrice]:
        if not names:
            return list(self.models.values())
        unknown = [n for n in names if n not in self.models]
        if unknown:
            raise UsageError(f"no model {', '.join(map(repr, unknown))} in the price table {self.source}",
                             hint=f"models there: {', '.join(self.models)}; add a [models.NAME] table to the file")
        return [self.models[n] for n in names]


def price_table_path(path: str | Path | None = None) -> Path:
    """--prices, else NAV_PRICES, else the table shipped with nav."""
    chosen = path or os.environ.get(PRICES_ENV, "").strip() or None
    return Path(chosen).expanduser() if chosen else DEFAULT_PRICES


def load_price_table(path: str | Path | None = None) -> PriceTable:
    """Read and validate the price table; every problem found is reported at once as an InputError."""
    source = price_table_path(path)
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"price table {source} cannot be read ({exc.strerror})",
                         hint=f"give a TOML file with --prices or {PRICES_ENV}, or unset them for the shipped table") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"price table {source} is not valid TOML: {exc}", hint=_TABLE_HINT) from exc
    problems: list[str] = []
    written = data.get("prices_written")
    if not isinstance(written, str) or not written.strip():
        problems.append("prices_written: missing (the date the prices were written, e.g. \"2026-12-01\")")
    note = data.get("note", "")
    if not isinstance(note, str):
        problems.append("note: must be a string")
    answer = data.get("answer_tokens")
    if not _is_int(answer) or answer <= 0:
        problems.append(f"answer_tokens: must be a positive whole number, got {answer!r}")
    raw_models = data.get("models")
    models: dict[str, ModelPrice] = {}
    if not isinstance(raw_models, dict) or not raw_models:
        problems.append("models: missing; add one [models.NAME] table per model")
        raw_models = {}
    for name, spec in raw_models.items():
        if not isinstance(spec, dict):
            problems.append(f"models.{name}: must be a table with input_per_mtok, output_per_mtok, window")
            continue
        fields = {}
        for key in ("input_per_mtok", "output_per_mtok"):
            value = spec.get(key)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0 or math.isnan(value):
                problems.append(f"models.{name}.{key}: must be a number >= 0 (USD per million tokens), got {value!r}")
            fields[key] = value
        window = spec.get("window")
        if not _is_int(window) or window <= 0:
            problems.append(f"models.{name}.window: must be a positive whole number of tokens, got {window!r}")
        fields["window"] = window
        if len(fields) == 3 and not any(p.startswith(f"models.{name}.") for p in problems):
            models[name] = ModelPrice(name, float(fields["input_per_mtok"]), float(fields["output_per_mtok"]), int(window))
    default = data.get("default_model") or (next(iter(raw_models)) if raw_models else None)
    if raw_models and default not in raw_models:
        problems.append(f"default_model: {default!r} is not one of the [models.*] tables")
    if problems:
        raise InputError(f"price table {source} is malformed:\n    " + "\n    ".join(problems), hint=_TABLE_HINT)
    return PriceTable(str(source), written.strip(), note, int(answer), default, models)


_TABLE_HINT = ("see navigator/evaluation/data/prices.toml for the format: prices_written, note, answer_tokens, "
               "default_model, and [models.NAME] tables with input_per_mtok, output_per_mtok, window")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------- the long-context arm

def file_block(path: str, text: str) -> str:
    """One file as pasted into a long context."""
    return f"=== {path} ===\n{text}\n"


@dataclass
class Paste:
    """What the long-context arm sends: whole files, in path order, up to a token limit."""
    limit: int                      # tokens the paste may take (window less question and answer)
    files: list[str]                # pasted, in order
    tokens: int                     # estimate_tokens of the pasted blocks (they are joined without separators)
    total_files: int
    total_tokens: int               # of the whole corpus as blocks
    left_out: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.left_out)

    def views(self, file_texts: Mapping[str, str]) -> list[ChunkView]:
        """The pasted files as one 'returned' set for the metrics: a text hits when it lies inside a file."""
        return [ChunkView(path, file_texts[path], 0) for path in self.files]


def paste_repository(file_texts: Mapping[str, str], limit: int) -> Paste:
    """The whole corpus when it fits in `limit` tokens, else the largest part that does: files in path
    order, each taken when it still fits and skipped when it does not (a greedy first fit)."""
    blocks = {path: estimate_tokens(file_block(path, file_texts[path])) for path in sorted(file_texts)}
    files, left_out, used = [], [], 0
    for path, tokens in blocks.items():
        if used + tokens <= limit:
            files.append(path)
            used += tokens
        else:
            left_out.append(path)
    return Paste(limit=limit, files=files, tokens=used, total_files=len(blocks),
                 total_tokens=sum(blocks.values()), left_out=left_out)


# ---------------------------------------------------------------- sessions

def session_inputs(first_context: float, per_turn_context: float, question: float, answer: float,
                   turns: int) -> list[float]:
    """Input tokens of each turn of a session on a stateless API (module docstring): turn t carries the
    first context once, t per-turn contexts and questions, and the t-1 answers before it."""
    return [first_context + t * (per_turn_context + question) + (t - 1) * answer for t in range(1, turns + 1)]


def turns_that_fit(first_context: int, per_turn_context: int, question: int, answer: int, window: int,
                   limit: int = 10_000) -> int:
    """How many turns run before a turn's input plus its answer no longer fits the window."""
    turns = 0
    while turns < limit and first_context + (turns + 1) * (per_turn_context + question) + turns * answer + answer <= window:
        turns += 1
    return turns


def crossover_turn(paste_tokens: float, nav_context_tokens: float) -> int | None:
    """The first session length T at which nav's total input reaches long context's: (T+1)/2 * C >= P."""
    if nav_context_tokens <= 0:
        return None
    return max(1, math.ceil(2 * paste_tokens / nav_context_tokens - 1))


# ---------------------------------------------------------------- one question / a query set

@dataclass
class QuestionCost:
    id: str
    category: str
    lang: str
    question_tokens: int
    nav_tokens: int                       # tokens of the rendered envelope
    nav_recall: float | None              # None without a query set
    long_recall: dict[str, float | None]  # model -> recall of that model's paste


@dataclass
class ModelCost:
    model: str
    window: int
    paste_tokens: int
    paste_files: int
    partial: bool
    left_out_files: int
    one_turn: dict                        # arm -> {input_tokens, output_tokens, usd}   (means per question)
    session: dict                         # arm -> {input_tokens, output_tokens, usd, turns_fit}
    crossover_turn: int | None
    long_recall: float | None


@dataclass
class CostReport:
    repo: str
    estimator: str
    prices: dict
    budget: int
    retriever: str
    turns: int
    answer_tokens: int
    corpus_files: int
    corpus_tokens: int
    reference_model: str
    questions: list[QuestionCost]
    models: list[ModelCost]
    routing: list[dict]

    def to_json(self) -> dict:
        return asdict(self)

    def render(self) -> str:
        lines = [f"nav cost: {self.repo}: {self.corpus_files} files, {self.corpus_tokens} tokens pasted whole "
                 f"(estimator {self.estimator})",
                 f"  nav context at budget {self.budget} ({self.retriever}); {len(self.questions)} question(s); "
                 f"answers assumed {self.answer_tokens} tokens; session of {self.turns} turns",
                 f"  prices written {self.prices['prices_written']} in {self.prices['source']}: {self.prices['note']}",
                 ""]
        scored = any(q.nav_recall is not None for q in self.questions)
        groups = [("", ["window", "paste"]),
                  ("1 turn (mean)", ["long tok", "nav tok", "long $", "nav $"]),
                  (f"{self.turns} turns", ["long tok", "nav tok", "long $", "nav $", "fit L/N"]),
                  ("", ["cross"] + (["long rec", "nav rec"] if scored else []))]
        nav_recall = _mean([q.nav_recall for q in self.questions])
        rows = []
        for m in self.models:
            paste = f"{m.paste_tokens}" + (f" partial (-{m.left_out_files} files)" if m.partial else " whole")
            one, ses = m.one_turn, m.session
            row = [m.model, str(m.window), paste,
                   f"{one['long']['input_tokens']:.0f}", f"{one['nav']['input_tokens']:.0f}",
                   _usd(one["long"]["usd"]), _usd(one["nav"]["usd"]),
                   f"{ses['long']['input_tokens']:.0f}", f"{ses['nav']['input_tokens']:.0f}",
                   _usd(ses["long"]["usd"]), _usd(ses["nav"]["usd"]),
                   f"{ses['long']['turns_fit']}/{ses['nav']['turns_fit']}",
                   "-" if m.crossover_turn is None else str(m.crossover_turn)]
            if scored:
                row += [_fmt(m.long_recall), _fmt(nav_recall)]
            rows.append(row)
        lines += format_table("model", groups, rows)
        lines += ["",
                  "tok = input tokens (context + question, plus the history in a session); $ = input and output at "
                  "the table's prices; fit L/N = turns that fit the window (long context / nav; a longer session overflows it, "
                  "so its figures are what it would cost with a wide enough window); cross = session "
                  "length at which nav's input reaches long context's; rec = hit (expect_any) or coverage "
                  "(expect_all): nav over the envelope's pieces, long context over the pasted files (an upper bound: the "
                  "text is in the window, which does not mean the model uses it)."]
        if self.routing:
            lines += ["", f"routing for {self.reference_model}, per query category:"]
            rows = [[r["category"], str(r["n"]), _fmt(r["nav_recall"]), _fmt(r["long_recall"]),
                     f"{r['nav_tokens']:.0f}", f"{r['long_tokens']:.0f}"] for r in self.routing]
            lines += format_table("category", [("", ["n"]), ("recall", ["nav", "long"]), ("tokens", ["nav", "long"])],
                                  rows)
            lines += [f"  {r['category']}: {r['suggestion']}" for r in self.routing]
        return "\n".join(lines)


def _usd(value: float) -> str:
    return f"{value:.4f}" if value < 1 else f"{value:.2f}"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def compute_costs(questions: list[QuestionCost], pastes: dict[str, Paste], table: PriceTable,
                  models: list[ModelPrice], turns: int) -> list[ModelCost]:
    """Token and price arithmetic for every model, from per-question measurements (means over questions)."""
    a = table.answer_tokens
    q = sum(x.question_tokens for x in questions) / len(questions)
    c = sum(x.nav_tokens for x in questions) / len(questions)
    out = []
    for model in models:
        paste = pastes[model.name]
        p = paste.tokens
        long_total = sum(session_inputs(p, 0, q, a, turns))
        nav_total = sum(session_inputs(0, c, q, a, turns))
        one = {"long": _arm(model, p + q, a), "nav": _arm(model, c + q, a)}
        session = {"long": {**_arm(model, long_total, a * turns),
                            "turns_fit": turns_that_fit(p, 0, math.ceil(q), a, model.window)},
                   "nav": {**_arm(model, nav_total, a * turns),
                           "turns_fit": turns_that_fit(0, math.ceil(c), math.ceil(q), a, model.window)}}
        out.append(ModelCost(model=model.name, window=model.window, paste_tokens=p, paste_files=len(paste.files),
                             partial=paste.partial, left_out_files=len(paste.left_out), one_turn=one,
                             session=session, crossover_turn=crossover_turn(p, c),
                             long_recall=_mean([x.long_recall.get(model.name) for x in questions])))
    return out


def _arm(model: ModelPrice, input_tokens: float, output_tokens: float) -> dict:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "usd": model.price(input_tokens, output_tokens)}


def route(questions: list[QuestionCost], reference: ModelCost) -> list[dict]:
    """Per query category: which arm to send such questions to, on the reference model."""
    by_category: dict[str, list[QuestionCost]] = {}
    for x in questions:
        if x.nav_recall is not None:
            by_category.setdefault(x.category, []).append(x)
    rows = []
    for category in sorted(by_category):
        group = by_category[category]
        nav_recall = _mean([x.nav_recall for x in group])
        long_recall = _mean([x.long_recall.get(reference.model) for x in group])
        nav_tokens = sum(x.nav_tokens + x.question_tokens for x in group) / len(group)
        long_tokens = reference.paste_tokens + sum(x.question_tokens for x in group) / len(group)
        ratio = long_tokens / nav_tokens if nav_tokens else float("inf")
        margin = max(ROUTE_MARGIN, 1 / len(group))
        if long_recall is None or long_recall - nav_recall <= margin:
            suggestion = (f"nav: recall {nav_recall:.2f} vs {long_recall:.2f} (within {margin:.2f}) at 1/{ratio:.0f} "
                          f"of the tokens" if long_recall is not None else "nav")
        else:
            suggestion = (f"long context: +{long_recall - nav_recall:.2f} recall for {ratio:.0f}x the tokens"
                          + (f" (only part of the repository fits {reference.model})" if reference.partial else ""))
            if nav_recall == 0 and long_recall == 0:
                suggestion = "neither answers these: review the questions or the corpus"
        rows.append({"category": category, "n": len(group), "nav_recall": nav_recall, "long_recall": long_recall,
                     "nav_tokens": nav_tokens, "long_tokens": long_tokens, "suggestion": suggestion})
    return rows


def cost_report(repo: str | Path | None, *, question: str | None = None, queries_path: str | None = None,
                models: Sequence[str] | None = None, turns: int = DEFAULT_TURNS, budget: int | None = None,
                retriever: str | None = None, prices: str | Path | None = None,
                config: Config | None = None) -> CostReport:
    """Measure both arms on one question or a query set (exactly one of the two) over an indexed repository."""
    from navigator.context.build import DEFAULT_BUDGET, context_from_open_index, load_selector
    from navigator.index.nav_index import NavIndex
    if (question is None) == (queries_path is None):
        raise UsageError("nav cost takes either one question or --queries FILE, not both and not neither")
    if turns <= 0:
        raise UsageError(f"--turns must be a positive number, got {turns}")
    budget = budget or DEFAULT_BUDGET
    config = config or Config.from_env()
    table = load_price_table(prices)
    chosen = table.pick(models)
    reference = models[0] if models else table.default_model
    if reference not in [m.name for m in chosen]:
        reference = chosen[0].name
    if queries_path is not None:
        from navigator.evaluation.commands import prepared_query_set
        index, queries, _ = prepared_query_set(queries_path, repo, config)
        asked = [(x.id, x.category, x.lang, x.query, x) for x in queries]
    else:
        index = NavIndex.open(repo, config)
        asked = [("question", "(none)", "(none)", question, None)]
    if not asked:
        raise InputError(f"the query set {queries_path} holds no queries")
    file_texts = index.file_texts()
    longest_question = max(estimate_tokens(text) for _, _, _, text, _ in asked)
    pastes = {m.name: paste_repository(file_texts, m.window - longest_question - table.answer_tokens) for m in chosen}
    whole = paste_repository(file_texts, 10 ** 12)
    from retrievers.registry import get_retriever, selected_name
    name = selected_name(retriever, config)
    # One index, retriever and policy for every question: the model and postings load once.
    ranker, selector = get_retriever(name, index, config), load_selector(None, config)
    measured: list[QuestionCost] = []
    for qid, category, lang, text, query in asked:
        envelope = context_from_open_index(text, budget, index, ranker, name, selector)
        nav_tokens = estimate_tokens(envelope.render_text())
        nav_recall, long_recall = None, {m.name: None for m in chosen}
        if query is not None:
            returned = [ChunkView(p.path, p.text, p.tokens) for p in envelope.pieces]
            nav_recall = metrics.recall_at_budget(returned, query.items, query.mode)
            long_recall = {m: metrics.recall_at_budget(paste.views(file_texts), query.items, query.mode)
                           for m, paste in pastes.items()}
        measured.append(QuestionCost(qid, category, lang, estimate_tokens(text), nav_tokens, nav_recall, long_recall))
    costs = compute_costs(measured, pastes, table, chosen, turns)
    reference_cost = next(c for c in costs if c.model == reference)
    return CostReport(repo=str(index.root), estimator=TOKEN_ESTIMATOR,
                      prices={"source": table.source, "prices_written": table.prices_written, "note": table.note},
                      budget=budget, retriever=name, turns=turns, answer_tokens=table.answer_tokens,
                      corpus_files=whole.total_files, corpus_tokens=whole.total_tokens, reference_model=reference,
                      questions=measured, models=costs, routing=route(measured, reference_cost))
