"""`nav eval --budget N[,N...]`: score what `nav context` returns, next to plain top-k on the same queries.

For each query the retriever's candidates are fetched once; every budget's selection and the top-k
baseline are then scored on them: recall at budget (hit for expect_any, coverage for expect_all, over the
returned text — a trimmed piece counts only for the lines it kept), tokens spent, tokens per answered
query, and the wasted-context ratio (returned tokens outside every expected item's chunk). Queries are
paired against the baseline, so "fewer tokens with no query lost" is checked query by query.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from navigator.evaluation import metrics
from navigator.evaluation.metrics import ChunkView
from navigator.evaluation.queryset import EvalQuery
from navigator.evaluation.report import format_table

BASELINE_K = 5


@dataclass
class BudgetQueryResult:
    id: str
    lang: str
    category: str
    mode: str
    recall: float
    tokens: int
    wasted: int


@dataclass
class BudgetRun:
    label: str                                   # "top-5" or "context@2000"
    results: list[BudgetQueryResult] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"label": self.label, "results": [r.__dict__ for r in self.results]}


def score_returned(query: EvalQuery, returned: Sequence[ChunkView]) -> BudgetQueryResult:
    return BudgetQueryResult(
        id=query.id, lang=query.lang, category=query.category, mode=query.mode,
        recall=metrics.recall_at_budget(returned, query.items, query.mode),
        tokens=sum(v.tokens for v in returned), wasted=metrics.wasted_tokens(returned, query.items))


def run_budget_eval(queries: Sequence[EvalQuery], candidates_fn: Callable[[str], list],
                    select_fn: Callable[[str, list, int], list[ChunkView]], budgets: Sequence[int],
                    *, baseline_k: int = BASELINE_K) -> dict[str, BudgetRun]:
    """candidates_fn(query) -> ranked RetrievedChunks; select_fn(query, candidates, budget) -> returned views."""
    runs = {f"top-{baseline_k}": BudgetRun(f"top-{baseline_k}")}
    runs.update({f"context@{b}": BudgetRun(f"context@{b}") for b in budgets})
    for query in queries:
        candidates = candidates_fn(query.query)
        top = metrics.view_ranking(candidates[:baseline_k])
        runs[f"top-{baseline_k}"].results.append(score_returned(query, top))
        for b in budgets:
            runs[f"context@{b}"].results.append(score_returned(query, select_fn(query.query, candidates, b)))
    return runs


def _summary(results: Sequence[BudgetQueryResult]) -> tuple[str, str, str, str, str]:
    if not results:
        return ("0", "-", "-", "-", "-")
    n = len(results)
    recall = sum(r.recall for r in results) / n
    tokens = sum(r.tokens for r in results)
    per_answered = metrics.tokens_per_answered([r.tokens for r in results], [r.recall for r in results])
    wasted = sum(r.wasted for r in results) / tokens if tokens else 0.0
    return (str(n), f"{recall:.3f}", f"{tokens / n:.0f}", "-" if per_answered is None else f"{per_answered:.0f}",
            f"{wasted:.2f}")


def render_budget_table(runs: dict[str, BudgetRun]) -> str:
    names = list(runs)
    first = runs[names[0]].results
    groups: list[tuple[str, Callable[[BudgetQueryResult], bool]]] = []
    for cat in sorted({r.category for r in first}):
        groups.append((f"category {cat}", lambda r, c=cat: r.category == c))
    for lang in sorted({r.lang for r in first}):
        groups.append((f"lang {lang}", lambda r, l=lang: r.lang == l))
    groups.append(("overall", lambda r: True))
    header_groups = [(name, ["n", "recall", "tokens", "tok/ans", "waste"]) for name in names]
    rows = []
    for label, keep in groups:
        row = [label]
        for name in names:
            row.extend(_summary([r for r in runs[name].results if keep(r)]))
        rows.append(row)
    lines = ["recall at budget (hit for expect_any, coverage for expect_all, over the returned text); tokens = mean "
             "returned tokens per query; tok/ans = total tokens / queries answered in full; waste = share of "
             "returned tokens outside every expected item's chunk"]
    lines += format_table("group", header_groups, rows)
    base = runs[names[0]]
    lines.append("")
    lines.append(f"paired against {base.label} (same queries): ")
    for name in names[1:]:
        pairs = list(zip(base.results, runs[name].results))
        lost = [b.id for b, r in pairs if r.recall < b.recall]
        gained = [b.id for b, r in pairs if r.recall > b.recall]
        base_tokens = sum(b.tokens for b, _ in pairs)
        tokens = sum(r.tokens for _, r in pairs)
        change = (tokens - base_tokens) / base_tokens * 100 if base_tokens else 0.0
        lines.append(f"  {name}: tokens {change:+.1f}% vs {base.label}; lost {len(lost)} "
                     f"({', '.join(lost[:12])}{' ...' if len(lost) > 12 else ''}); gained {len(gained)} "
                     f"({', '.join(gained[:12])}{' ...' if len(gained) > 12 else ''})")
    return "\n".join(lines)
