"""The measurements of patches/0021: a cross-encoder over the default retriever's (graph) top 50, at chunk level.

    PYTHONPATH=. OMP_NUM_THREADS=1 python patches/0021-cross-encoder-retrained/measure.py MODEL OUT \
        click-en=rag-eval/queries.en.jsonl:CLICK_TREE ...

Per question it ranks once with graph (depth 50) and scores the 50 (question, passage) pairs once with MODEL
(what NAV_RERANK_MODEL takes), timing the scoring of the first 10, 20 and 50 pairs separately (the added cost
of each pool). The variants are read from those scores:
  graph      the base ranking
  ceN        the top N in the cross-encoder's order (what `--retriever rerank` does), the rest as graph had it
  fuseN      the top N by 1/(10 + graph rank) + 1/(10 + cross-encoder rank), the rest as graph had it
Each variant is measured by the harness behind `nav eval` (run-SET-VARIANT.json, loadable by `nav compare`) and
paired with graph at k=5 (compare-SET-VARIANT.txt); latency.txt has the p50 seconds per pool.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from navigator.core.config import Config
from navigator.evaluation import run_eval
from navigator.evaluation.commands import compare, prepared_query_set
from retrievers.base import RetrievedChunk
from retrievers.crosslingual import expand_query
from retrievers.registry import get_retriever
from retrievers.rerank import MAX_QUERY_CHARS, PREDICT_BATCH_SIZE, load_cross_encoder, passage_text

POOLS = (10, 20, 50)
DEPTH = max(POOLS)


def reorder(cands, scores, pool, fuse):
    top = list(range(min(pool, len(cands))))
    ce_rank = {i: r for r, i in enumerate(sorted(top, key=lambda i: (-scores[i], i)), start=1)}
    if fuse:
        key = lambda i: (-(1 / (10 + i + 1) + 1 / (10 + ce_rank[i])), i)
    else:
        key = lambda i: (ce_rank[i], i)
    order = sorted(top, key=key) + list(range(len(top), len(cands)))
    return [RetrievedChunk(chunk=cands[i].chunk, score=scores[i], rank=r, heads=cands[i].heads)
            for r, i in enumerate(order, start=1)]


def main(model_name: str, out: Path, sets: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    config = Config.from_env()
    model = load_cross_encoder(model_name)
    latency_lines = []
    for spec in sets:
        name, rest = spec.split("=", 1)
        queries_path, corpus = rest.split(":", 1)
        index, queries, unanswerable = prepared_query_set(queries_path, corpus, config)
        graph = get_retriever("graph", index, config)
        cache, seconds = {}, {p: [] for p in POOLS}
        for q in queries:
            cands = graph.retrieve(q.query, DEPTH)
            ce_query = expand_query(q.query)[:MAX_QUERY_CHARS]
            pairs = [(ce_query, passage_text(c.chunk, True)) for c in cands]
            for p in POOLS:     # each pool scored on its own, to time it; the largest (= DEPTH) covers every pair
                started = time.perf_counter()
                scores = model.predict(pairs[:p], batch_size=PREDICT_BATCH_SIZE, show_progress_bar=False)
                seconds[p].append(time.perf_counter() - started)
            cache[q.query] = (cands, [float(s) for s in scores])
        for p in POOLS:
            latency_lines.append(f"{name} pool {p:2d}: cross-encoder p50 {statistics.median(seconds[p]) * 1000:6.1f} ms, "
                                 f"mean {statistics.fmean(seconds[p]) * 1000:6.1f} ms (n={len(seconds[p])})")
            print(latency_lines[-1], flush=True)
        variants = {"graph": (DEPTH, None)}
        variants.update({f"ce{p}": (p, False) for p in POOLS})
        variants.update({f"fuse{p}": (p, True) for p in POOLS})
        meta = {"queries_file": str(Path(queries_path).resolve()), "repo": str(index.root), "model": model_name}
        for variant, (pool, fuse) in variants.items():
            if fuse is None:
                fn = lambda query, depth: cache[query][0][:depth]
            else:
                fn = lambda query, depth, pool=pool, fuse=fuse: reorder(*cache[query], pool, fuse)[:depth]
            run = run_eval(queries, fn, retriever=variant, unanswerable=unanswerable, meta=meta)
            (out / f"run-{name}-{variant}.json").write_text(json.dumps(run.to_json(), separators=(",", ":")) + "\n")
        for variant in variants:
            if variant != "graph":
                cmp = compare(str(out / f"run-{name}-graph.json"), str(out / f"run-{name}-{variant}.json"), k=5)
                (out / f"compare-{name}-{variant}.txt").write_text(cmp.text + "\n")
    (out / "latency.txt").write_text("\n".join(latency_lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
