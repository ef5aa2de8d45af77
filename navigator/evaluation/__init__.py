"""The evaluation harness: query sets, metrics, leakage guard, runs, reports, run comparison.

It reaches retrieval only through a ranking callable, `rank_fn(query_text, depth) -> ranking`,
so it imports nothing from the index or the retrievers.

    queries, unanswerable = prepare_query_set(queries_path, repo_root, indexed_files)
    run = run_eval(queries, rank_fn, retriever="hybrid", unanswerable=unanswerable)
    print(render_eval_table(with_head_views(run)))      # fused result with per-head columns
    print(render_ceiling_table(run))
    print(render_comparison(compare_runs(load_run(a_json), load_run(b_json), k=5)))
"""
from navigator.evaluation.compare import Comparison, compare_runs, paired_bootstrap_ci, render_comparison
from navigator.evaluation.leakage import check_leakage
from navigator.evaluation.queryset import (
    EvalQuery, ExpectItem, Unanswerable, find_unanswerable, load_queries,
)
from navigator.evaluation.report import render_ceiling_table, render_eval_table
from navigator.evaluation.runner import (
    DEFAULT_DEPTH, DEFAULT_KS, EvalRun, QueryResult, RankFn, RankView,
    load_run, prepare_query_set, run_eval, run_evals, with_head_views,
)

__all__ = [
    "Comparison", "compare_runs", "paired_bootstrap_ci", "render_comparison",
    "check_leakage",
    "EvalQuery", "ExpectItem", "Unanswerable", "find_unanswerable", "load_queries",
    "render_ceiling_table", "render_eval_table",
    "DEFAULT_DEPTH", "DEFAULT_KS", "EvalRun", "QueryResult", "RankFn", "RankView",
    "load_run", "prepare_query_set", "run_eval", "run_evals", "with_head_views",
]
