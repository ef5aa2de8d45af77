"""Grid over context-selection parameters: for each setting, the paired result against plain top-5 on the
same candidates (tokens change, queries lost and gained, recall). The defaults in navigator/context/selection.py
are chosen from this table.

    python bench/selection_grid.py --queries rag-eval/queries.en.jsonl --repo CORPUS --budget 1000 \
        --grid "relative_bar=0.5,0.7,0.8;repay_factor=2,4"
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from navigator.core.config import Config
    from navigator.context.build import CANDIDATE_DEPTH
    from navigator.evaluation.commands import _prepared
    from navigator.evaluation.budget import run_budget_eval
    from navigator.evaluation.metrics import ChunkView
    from navigator.context.selection import params_for_retriever, select_context
    from retrievers.registry import get_retriever

    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", action="append", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--retriever", default="hybrid")
    ap.add_argument("--budget", default="1000")
    ap.add_argument("--grid", default="relative_bar=0.5,0.7,0.8")
    args = ap.parse_args()
    config = Config.from_env()
    axes = []
    for part in args.grid.split(";"):
        key, _, values = part.partition("=")
        axes.append([(key, float(v)) for v in values.split(",")])
    retriever = None
    cands: dict[str, list] = {}
    all_queries = []
    for qfile in args.queries:
        index, queries, _ = _prepared(qfile, args.repo, config)
        retriever = retriever or get_retriever(args.retriever, index, config)
        all_queries += queries
    for q in all_queries:
        cands[q.query] = retriever.retrieve(q.query, CANDIDATE_DEPTH)
    print(f"{'setting':<40} {'budget':>6} | {'top5 rec':>8} {'ctx rec':>8} | {'top5 tok':>8} {'ctx tok':>8} {'change':>7} | lost gained")
    for combo in itertools.product(*axes):
        params = params_for_retriever(args.retriever, **dict(combo))
        for budget in (int(b) for b in args.budget.split(",")):
            def select(question, candidates, b, params=params):
                sel = select_context(question, candidates, b, params)
                return [ChunkView(p.chunk.path, p.text, p.tokens) for p in sel.pieces]
            runs = run_budget_eval(all_queries, lambda q: cands[q], select, [budget])
            base, ctx = runs["top-5"].results, runs[f"context@{budget}"].results
            bt, ct = sum(r.tokens for r in base), sum(r.tokens for r in ctx)
            lost = sum(c.recall < b.recall for b, c in zip(base, ctx))
            gained = sum(c.recall > b.recall for b, c in zip(base, ctx))
            label = ",".join(f"{k}={v:g}" for k, v in combo)
            print(f"{label:<40} {budget:>6} | {sum(r.recall for r in base) / len(base):8.3f} "
                  f"{sum(r.recall for r in ctx) / len(ctx):8.3f} | {bt / len(base):8.0f} {ct / len(ctx):8.0f} "
                  f"{(ct - bt) / bt * 100:+6.1f}% | {lost:4d} {gained:6d}")


if __name__ == "__main__":
    main()
