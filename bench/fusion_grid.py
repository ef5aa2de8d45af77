"""Grid over hybrid fusion settings on a query set: prints hit@1/@5 (expect_any) and coverage@5 (expect_all)
per setting, so the defaults in retrievers/hybrid.py are chosen from measurements, not guesses.

    NAV_INDEX_DIR=... python bench/fusion_grid.py --queries rag-eval/queries.en.jsonl --repo CORPUS
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from navigator.core.config import Config
    from navigator.evaluation.commands import _prepared
    from navigator.evaluation import run_eval
    from retrievers.registry import get_retriever

    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--rrf-k", default="5,20,60")
    ap.add_argument("--weights", default="vector=1,bm25=1;vector=1.5,bm25=1;vector=1,bm25=1.5")
    ap.add_argument("--depth", default="default,50")
    args = ap.parse_args()
    config = Config.from_env()
    index, queries, unanswerable = _prepared(args.queries, args.repo, config)
    print(f"{'rrf_k':>5} {'weights':<22} {'depth':>7} | {'hit@1':>6} {'hit@3':>6} {'hit@5':>6} {'hit@10':>6} | {'cov@5':>6} {'cov@10':>6}")
    for rrf_k, weights, depth in itertools.product(args.rrf_k.split(","), args.weights.split(";"), args.depth.split(",")):
        os.environ["NAV_RRF_K"] = rrf_k
        os.environ["NAV_HYBRID_WEIGHTS"] = weights
        if depth == "default":
            os.environ.pop("NAV_HYBRID_DEPTH", None)
        else:
            os.environ["NAV_HYBRID_DEPTH"] = depth
        retriever = get_retriever("hybrid", index, Config.from_env())
        run = run_eval(queries, lambda q, d: retriever.retrieve(q, d), ks=(1, 3, 5, 10), depth=10, retriever="hybrid")
        anys = [r for r in run.results if r.mode == "any"]
        alls = [r for r in run.results if r.mode == "all"]
        hit = {k: sum(run.score(r, k) for r in anys) / max(len(anys), 1) for k in (1, 3, 5, 10)}
        cov = {k: sum(run.score(r, k) for r in alls) / max(len(alls), 1) for k in (5, 10)}
        print(f"{rrf_k:>5} {weights:<22} {depth:>7} | {hit[1]:6.3f} {hit[3]:6.3f} {hit[5]:6.3f} {hit[10]:6.3f} | {cov[5]:6.3f} {cov[10]:6.3f}")


if __name__ == "__main__":
    main()
