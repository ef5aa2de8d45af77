"""Plain-text reports for `nav eval` and `nav ceiling`.

Rows: one per category, one per language, then overall. expect_any queries (hit@k) and expect_all
queries (coverage@k) are reported in separate labelled blocks, so one number never means both.
Several runs (retrievers, or heads of one retriever) are laid side by side, each with its own n.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import fmean

from navigator.evaluation import metrics
from navigator.evaluation.queryset import MODE_ALL, MODE_ANY
from navigator.evaluation.runner import EvalRun, QueryResult

# nav ceiling: rank buckets (inclusive bounds); ranks past the last bound, or absent, form the final bucket.
RANK_BUCKETS = ((1, 5), (6, 50), (51, 100))
DEFAULT_POOLS = (5, 10, 20, 50, 100)

SCORE_DIGITS = 3
TOKEN_DIGITS = 1
COLUMN_GAP = "  "
GROUP_GAP = " | "

Row = tuple[str, Callable[[QueryResult], bool]]

_METRIC_TITLES = {
    ("chunk", MODE_ANY): "hit@k, expect_any queries: 1 if any of the top k chunks matches any item",
    ("chunk", MODE_ALL): "coverage@k, expect_all queries: matched items / all items in the top k chunks",
    ("file", MODE_ANY): "file Acc@k, expect_any queries: 1 if any item's file is among the top k files",
    ("file", MODE_ALL): "file Acc@k, expect_all queries: 1 if every item's file is among the top k files",
}


def render_eval_table(runs: EvalRun | Mapping[str, EvalRun]) -> str:
    """The `nav eval` report for one run, or several side by side (keys name the column groups)."""
    named = _named(runs)
    first = next(iter(named.values()))
    all_results = [r for run in named.values() for r in run.results]
    rows = _group_rows(all_results)
    lines = [
        f"nav eval: {', '.join(named)}; level {first.level}; candidate depth {first.depth}; "
        f"{len({r.id for r in all_results})} queries",
    ]
    for mode in (MODE_ANY, MODE_ALL):
        if not any(r.mode == mode for r in all_results):
            continue
        lines += ["", _METRIC_TITLES[(first.level, mode)]]
        lines += _render_block(named, rows, mode, first.ks, _mean_score)
    token_unit = "files" if first.level == "file" else "chunks"
    lines += ["", f"mean tokens of the top k {token_unit} (all queries)"]
    lines += _render_block(named, rows, None, first.ks, _mean_tokens)
    latency = ", ".join(
        f"{name} {fmean(r.seconds for r in run.results):.3f}" for name, run in named.items() if run.results
    )
    lines += ["", f"mean seconds per query: {latency}"]
    lines += _render_unanswerable(named.values())
    return "\n".join(lines)


def render_ceiling_table(run: EvalRun, *, pools: Sequence[int] = DEFAULT_POOLS) -> str:
    """The `nav ceiling` report: where the expected items rank, and what a perfect reranker could reach."""
    rows = _group_rows(run.results)
    subject = "each expected item's file" if run.level == "file" else "each expected item"
    last_bound = RANK_BUCKETS[-1][1]
    bucket_labels = [f"{low}-{high}" for low, high in RANK_BUCKETS] + [f">{last_bound}/absent"]
    lines = [
        f"nav ceiling: {run.retriever}; level {run.level}; candidate depth {run.depth}; {len(run.results)} queries",
        "",
        f"rank of {subject} in the full ranking (counted per item; absent = not in the top {run.depth})",
    ]
    table_rows = []
    for label, keep in rows:
        ranks = [rank for result in run.results if keep(result) for rank in run.ranks(result)]
        if ranks:
            counts = _bucket_counts(ranks)
            table_rows.append([label, str(len(ranks))] + [f"{c} ({100 * c / len(ranks):.0f}%)" for c in counts])
    lines += format_table("group", [("", ["items"] + bucket_labels)], table_rows)

    for mode in (MODE_ANY, MODE_ALL):
        if not any(r.mode == mode for r in run.results):
            continue
        what = "hit" if mode == MODE_ANY else "coverage"
        lines += [
            "",
            f"ceiling: the {what} a perfect reranker reaches from a candidate pool of N, expect_{mode} queries",
        ]
        table_rows = []
        for label, keep in rows:
            selected = [r for r in run.results if r.mode == mode and keep(r)]
            if selected:
                cells = [
                    _fmt(fmean(metrics.ceiling_at_pool(run.ranks(r), pool, mode) for r in selected), SCORE_DIGITS)
                    if pool <= run.depth else "-"
                    for pool in pools
                ]
                table_rows.append([label, str(len(selected))] + cells)
        lines += format_table("group", [("", ["n"] + [f"N={pool}" for pool in pools])], table_rows)
    if any(pool > run.depth for pool in pools):
        lines.append(f"(-: pool deeper than the candidate depth {run.depth}; raise --depth)")
    return "\n".join(lines)


# ---------------------------------------------------------------- blocks

def _named(runs: EvalRun | Mapping[str, EvalRun]) -> dict[str, EvalRun]:
    named = {runs.retriever: runs} if isinstance(runs, EvalRun) else dict(runs)
    if not named:
        raise ValueError("no runs to report")
    return named


def _group_rows(results: Sequence[QueryResult]) -> list[Row]:
    categories = sorted({r.category for r in results})
    languages = sorted({r.lang for r in results})
    rows: list[Row] = [(f"category {c}", lambda r, c=c: r.category == c) for c in categories]
    rows += [(f"lang {lang}", lambda r, lang=lang: r.lang == lang) for lang in languages]
    rows.append(("overall", lambda r: True))
    return rows


def _mean_score(run: EvalRun, results: Sequence[QueryResult], k: int) -> str:
    return _fmt(fmean(run.score(r, k) for r in results), SCORE_DIGITS)


def _mean_tokens(run: EvalRun, results: Sequence[QueryResult], k: int) -> str:
    return _fmt(fmean(run.tokens(r, k) for r in results), TOKEN_DIGITS)


def _render_block(
    named: Mapping[str, EvalRun],
    rows: Sequence[Row],
    mode: str | None,
    ks: Sequence[int],
    cell: Callable[[EvalRun, Sequence[QueryResult], int], str],
) -> list[str]:
    """One table: a row per group, and per run a column group "n @k1 @k2 ..."."""
    groups = [(name, ["n"] + [f"@{k}" for k in ks]) for name in named]
    table_rows = []
    for label, keep in rows:
        row = [label]
        for run in named.values():
            selected = [r for r in run.results if keep(r) and (mode is None or r.mode == mode)]
            row.append(str(len(selected)))
            row += [cell(run, selected, k) if selected and k in run.ks else "-" for k in ks]
        if any(n != "0" for n in row[1::len(ks) + 1]):
            table_rows.append(row)
    return format_table("group", groups, table_rows)


def _bucket_counts(ranks: Sequence[int | None]) -> list[int]:
    counts = [0] * (len(RANK_BUCKETS) + 1)
    for rank in ranks:
        index = next((i for i, (low, high) in enumerate(RANK_BUCKETS) if rank is not None and low <= rank <= high),
                     len(RANK_BUCKETS))
        counts[index] += 1
    return counts


def _render_unanswerable(runs: Iterable[EvalRun]) -> list[str]:
    seen: dict[tuple[str, object], str] = {}
    for run in runs:
        for entry in run.unanswerable:
            seen.setdefault((entry.query_id, entry.item), entry.reason)
    if not seen:
        return []
    lines = ["", f"unanswerable items ({len(seen)}): no chunk of the indexed corpus can match them; "
                 "their queries are still scored"]
    for (query_id, item), reason in seen.items():
        lines.append(f"  {query_id}  {item.describe()}: {reason}")
    return lines


# ---------------------------------------------------------------- plain-text table

def _fmt(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def format_table(first_header: str, groups: Sequence[tuple[str, Sequence[str]]], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned first column, right-aligned cells, column groups titled on a line of their own."""
    headers = [first_header] + [label for _, labels in groups for label in labels]
    widths = [max([len(headers[i])] + [len(row[i]) for row in rows]) for i in range(len(headers))]
    # Widen a group's last column when its title is longer than its columns.
    start = 1
    spans = []
    for title, labels in groups:
        end = start + len(labels)
        span = sum(widths[start:end]) + len(COLUMN_GAP) * (len(labels) - 1)
        if len(title) > span:
            widths[end - 1] += len(title) - span
            span = len(title)
        spans.append((start, end, span))
        start = end

    def line(cells: Sequence[str]) -> str:
        parts = [
            COLUMN_GAP.join(cells[i].rjust(widths[i]) for i in range(a, b)) for a, b, _ in spans
        ]
        return (cells[0].ljust(widths[0]) + COLUMN_GAP + GROUP_GAP.join(parts)).rstrip()

    out = []
    if any(title for title, _ in groups):
        titles = GROUP_GAP.join(title.ljust(span) for (title, _), (_, _, span) in zip(groups, spans))
        out.append((" " * widths[0] + COLUMN_GAP + titles).rstrip())
    out.append(line(headers))
    out += [line(row) for row in rows]
    return out

