#!/usr/bin/env python3
"""Warm latency of a bug-report query: one process, one opened index, every report of a django release
ranked at file level (nav search --level file) after one untimed first query; prints p50/p95/max in ms.

    python rag-eval/django_latency.py TREE QUERIES.jsonl [--retriever hybrid] [--rounds 2]

NAV_INDEX_DIR applies as for nav. The first query (index open, postings and file catalogue load, model load)
is reported apart as `first`. CPU time per query is printed too: on a loaded machine it is the figure
that says what the query costs.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree")
    parser.add_argument("queries")
    parser.add_argument("--retriever", default="hybrid")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex
    from retrievers.file_rank import FileRanker
    config = Config.from_env()
    ranker = FileRanker(NavIndex.open(args.tree, config), config, base=args.retriever)
    reports = [json.loads(line)["query"] for line in Path(args.queries).read_text().splitlines() if line.strip()]
    started = time.perf_counter()
    ranker.rank(reports[0], 10)
    first = time.perf_counter() - started
    times, cpu = [], []
    for _ in range(args.rounds):
        for report in reports:
            started, cpu_started = time.perf_counter(), time.process_time()
            ranker.rank(report, 10)
            times.append(1000 * (time.perf_counter() - started))
            cpu.append(1000 * (time.process_time() - cpu_started))
    times.sort()
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    chars = statistics.median(len(r) for r in reports)
    print(f"{args.retriever} file ranking, {len(reports)} reports (median {chars:.0f} chars) x {args.rounds}: "
          f"first {1000 * first:.0f} ms; warm p50 {statistics.median(times):.0f} ms, p95 {p95:.0f} ms, "
          f"max {times[-1]:.0f} ms; CPU time per query p50 {statistics.median(cpu):.0f} ms "
          f"(wall time on a shared machine is CPU time plus waiting for a core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
