"""`nav compare A.json B.json`: pair two saved runs query by query.

Queries are paired by id; ids present in one run only are listed, never paired. Each paired query
gets its score at k in A and B (hit or coverage as its schema says, or file Acc at file level).
The overall difference B - A per schema gets a paired bootstrap confidence interval: resample the
per-query differences with replacement, seeded so the same inputs always print the same interval.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from navigator.core.errors import UsageError
from navigator.evaluation.queryset import MODE_ALL, MODE_ANY
from navigator.evaluation.report import format_table
from navigator.evaluation.runner import EvalRun, QueryResult

DEFAULT_K = 5
DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
# Resamples drawn per numpy batch: bounds memory to batch x queries indices for large sets.
BOOTSTRAP_BATCH = 1_000

@dataclass(frozen=True)
class GroupDelta:
    group: str
    n: int
    mean_a: float
    mean_b: float

    @property
    def diff(self) -> float:
        return self.mean_b - self.mean_a


@dataclass(frozen=True)
class OverallDelta(GroupDelta):
    ci_low: float = 0.0
    ci_high: float = 0.0

    @property
    def excludes_zero(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0


@dataclass
class Comparison:
    label_a: str
    label_b: str
    k: int
    level: str
    paired: int
    gained: list[str]                  # ids scoring higher in B than in A at k
    lost: list[str]                    # ids scoring lower in B than in A at k
    only_in_a: list[str]
    only_in_b: list[str]
    expectation_changed: list[str]     # paired ids whose expected items differ between the runs
    by_category: dict[str, list[GroupDelta]] = field(default_factory=dict)   # per mode
    by_language: dict[str, list[GroupDelta]] = field(default_factory=dict)   # per mode
    overall: dict[str, OverallDelta] = field(default_factory=dict)           # per mode
    tokens: GroupDelta | None = None   # mean tokens of the top k, all paired queries
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0


def compare_runs(
    a: EvalRun,
    b: EvalRun,
    k: int = DEFAULT_K,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Comparison:
    if a.level != b.level:
        raise UsageError(
            f"cannot pair a {a.level}-level run with a {b.level}-level run",
            hint="Run both with the same --level.",
        )
    for run in (a, b):
        if k not in run.ks:
            raise UsageError(
                f"run {run.retriever} has no scores at k={k} (it has k = {', '.join(map(str, run.ks))})",
                hint="Choose --k from the values both runs were measured at.",
            )
    if resamples < 1 or not 0 < confidence < 1:
        raise UsageError(f"bad bootstrap settings: {resamples} resamples, confidence {confidence}")

    b_by_id = {r.id: r for r in b.results}
    a_ids = {r.id for r in a.results}
    pairs = [
        _Pair(ra, b_by_id[ra.id], a.score(ra, k), b.score(b_by_id[ra.id], k))
        for ra in a.results if ra.id in b_by_id
    ]
    comparison = Comparison(
        label_a=a.retriever, label_b=b.retriever, k=k, level=a.level, paired=len(pairs),
        gained=[p.a.id for p in pairs if p.score_b > p.score_a],
        lost=[p.a.id for p in pairs if p.score_b < p.score_a],
        only_in_a=[r.id for r in a.results if r.id not in b_by_id],
        only_in_b=[r.id for r in b.results if r.id not in a_ids],
        expectation_changed=[p.a.id for p in pairs if (p.a.mode, p.a.items) != (p.b.mode, p.b.items)],
        confidence=confidence, resamples=resamples, seed=seed,
    )
    for mode in (MODE_ANY, MODE_ALL):
        in_mode = [p for p in pairs if p.a.mode == mode]
        if not in_mode:
            continue
        comparison.by_category[mode] = _group_deltas(in_mode, lambda p: p.a.category)
        comparison.by_language[mode] = _group_deltas(in_mode, lambda p: p.a.lang)
        low, high = paired_bootstrap_ci(
            [p.score_b - p.score_a for p in in_mode], seed=seed, resamples=resamples, confidence=confidence,
        )
        overall = _group_deltas(in_mode, lambda p: "overall")[0]
        comparison.overall[mode] = OverallDelta(overall.group, overall.n, overall.mean_a, overall.mean_b, low, high)
    if pairs:
        comparison.tokens = GroupDelta(
            f"mean tokens of the top {k}", len(pairs),
            fmean(a.tokens(p.a, k) for p in pairs), fmean(b.tokens(p.b, k) for p in pairs),
        )
    return comparison


@dataclass(frozen=True)
class _Pair:
    a: QueryResult
    b: QueryResult
    score_a: float
    score_b: float


def _group_deltas(pairs: Sequence[_Pair], key: Callable[[_Pair], str]) -> list[GroupDelta]:
    deltas = []
    for group in sorted({key(p) for p in pairs}):
        members = [p for p in pairs if key(p) == group]
        deltas.append(GroupDelta(
            group, len(members), fmean(p.score_a for p in members), fmean(p.score_b for p in members),
        ))
    return deltas


def paired_bootstrap_ci(
    diffs: Sequence[float],
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float, float]:
    """Percentile interval of the mean of per-query differences, resampling queries with replacement."""
    import numpy as np  # lazy: keeps `nav --help` instant

    values = np.asarray(diffs, dtype=float)
    if values.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = []
    for start in range(0, resamples, BOOTSTRAP_BATCH):
        batch = min(BOOTSTRAP_BATCH, resamples - start)
        picks = rng.integers(0, values.size, size=(batch, values.size))
        means.append(values[picks].mean(axis=1))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(np.concatenate(means), [tail, 100 - tail])
    return float(low), float(high)


def render_comparison(c: Comparison) -> str:
    metric = {MODE_ANY: "hit", MODE_ALL: "coverage"}
    lines = [
        f"nav compare: A = {c.label_a}, B = {c.label_b}; level {c.level}; k = {c.k}; {c.paired} paired queries",
        "",
        f"gained at @{c.k} (B scores higher than A), {len(c.gained)}: {_ids(c.gained)}",
        f"lost at @{c.k} (B scores lower than A), {len(c.lost)}: {_ids(c.lost)}",
    ]
    if c.only_in_a or c.only_in_b:
        lines.append(f"only in A, not paired, {len(c.only_in_a)}: {_ids(c.only_in_a)}")
        lines.append(f"only in B, not paired, {len(c.only_in_b)}: {_ids(c.only_in_b)}")
    if c.expectation_changed:
        lines.append(
            f"paired but with different expected items, {len(c.expectation_changed)}: {_ids(c.expectation_changed)}"
        )
    for mode, overall in c.overall.items():
        name = f"file Acc@{c.k}" if c.level == "file" else f"{metric[mode]}@{c.k}"
        lines += ["", f"{name}, expect_{mode} queries"]
        rows = [_delta_row(f"category {d.group}", d) for d in c.by_category[mode]]
        rows += [_delta_row(f"lang {d.group}", d) for d in c.by_language[mode]]
        rows.append(_delta_row("overall", overall))
        lines += format_table("group", [("", ["n", "A", "B", "B-A"])], rows)
        verdict = "excludes 0" if overall.excludes_zero else "includes 0"
        lines.append(
            f"{c.confidence:.0%} CI of B-A: [{overall.ci_low:+.3f}, {overall.ci_high:+.3f}] ({verdict}; "
            f"paired bootstrap, {c.resamples} resamples, seed {c.seed})"
        )
    if c.tokens is not None:
        t = c.tokens
        relative = f" ({t.diff / t.mean_a:+.1%})" if t.mean_a else ""
        lines += ["", f"{t.group}: A {t.mean_a:.1f}, B {t.mean_b:.1f}, B-A {t.diff:+.1f}{relative}"]
    return "\n".join(lines)


def _delta_row(label: str, d: GroupDelta) -> list[str]:
    return [label, str(d.n), f"{d.mean_a:.3f}", f"{d.mean_b:.3f}", f"{d.diff:+.3f}"]


def _ids(ids: Sequence[str]) -> str:
    return " ".join(ids) if ids else "-"
