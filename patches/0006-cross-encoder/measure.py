"""The measurements of patches/0006-cross-encoder/README.md: hybrid vs rerank (a cross-encoder over hybrid's
top N, N = 10/20/50) on click EN and ZH: `nav eval` tables, `nav compare` paired at k=5, p50 seconds per query.

    PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 10 python patches/0006-cross-encoder/measure.py CORPUS MODEL [OUT]

MODEL is what NAV_RERANK_MODEL takes (nav-code-reranker, an ONNX export directory, a CrossEncoder directory).
It calls the functions behind `nav eval --out` and `nav compare` (navigator.evaluation.commands) in one
process, so the index and the model load once per language instead of once per command: on the shared
2-core machine a cold `nav` start costs more than the runs themselves. The files it writes are the ones the
CLI writes (run-*.json are `nav eval --json` runs; `nav compare A.json B.json` reproduces compare-*.txt).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

from navigator.evaluation.commands import compare, evaluate

QUERY_SETS = {"en": "rag-eval/queries.en.jsonl", "zh": "rag-eval/queries.zh.jsonl"}
POOLS = tuple(int(p) for p in os.environ.get("POOLS", "10 20 50").split())


def main(corpus: str, model: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    os.environ["NAV_RERANK_MODEL"] = model
    latency = []
    for lang in os.environ.get("LANGS", "en zh").split():
        queries = QUERY_SETS[lang]
        runs = {"hybrid": None}
        runs.update({f"rerank{p}": p for p in POOLS})
        for name, pool in runs.items():
            if pool is not None:
                os.environ["NAV_RERANK_POOL"] = str(pool)
            result = evaluate(queries, corpus, ["rerank" if pool else "hybrid"])
            (out / f"run-{lang}-{name}.json").write_text(json.dumps(result.payload, separators=(",", ":")) + "\n")
            (out / f"eval-{lang}-{name}.txt").write_text(result.text + "\n")
            seconds = [q["seconds"] for q in result.payload["queries"]]
            latency.append(f"{lang} {name:9s} p50 {statistics.median(seconds) * 1000:7.1f} ms  "
                           f"mean {statistics.fmean(seconds) * 1000:7.1f} ms  (n={len(seconds)})")
            print(latency[-1], flush=True)
        for name in runs:
            if name != "hybrid":
                cmp = compare(str(out / f"run-{lang}-hybrid.json"), str(out / f"run-{lang}-{name}.json"), k=5)
                (out / f"compare-{lang}-{name}.txt").write_text(cmp.text + "\n")
    (out / "latency.txt").write_text("\n".join(latency) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]) if len(sys.argv) > 3 else Path("patches/0006-cross-encoder/results"))
