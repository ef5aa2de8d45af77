#!/usr/bin/env python3
"""Pool per-release `nav eval --json` runs of the django dev set into one run, all 114 rows and the 102
`in_lite274` rows, print file Acc@k and mean seconds per query, and save the pooled runs for `nav compare`.

    python rag-eval/django_pool.py OUT_PREFIX RUN_3.0.json RUN_3.1.json ... [--devset DIR]

writes OUT_PREFIX-all.json and OUT_PREFIX-lite.json. The rows' `in_lite274` flags are read from the dev set's
query files (default ../shared/devsets/swe-django next to the repository, or $NAV_DJANGO_DEVSET).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from navigator.evaluation.runner import EvalRun, load_run  # noqa: E402

DEFAULT_DEVSET = Path(os.environ.get("NAV_DJANGO_DEVSET", "/work/shared/devsets/swe-django"))


def lite_ids(devset: Path) -> set[str]:
    ids = set()
    for path in sorted(devset.glob("django-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("in_lite274"):
                    ids.add(row["id"])
    return ids


def pooled(runs: list[EvalRun], keep: set[str] | None = None) -> EvalRun:
    first = runs[0]
    results = [r for run in runs for r in run.results if keep is None or r.id in keep]
    meta = {"pooled_from": [run.meta.get("repo") for run in runs], "file_rank": first.meta.get("file_rank")}
    return EvalRun(retriever=first.retriever, level=first.level, ks=first.ks, depth=first.depth, results=results,
                   meta=meta)


def line(name: str, run: EvalRun) -> str:
    accs = " / ".join(f"{100 * fmean(run.score(r, k) for r in run.results):.1f}" for k in run.ks)
    secs = fmean(r.seconds for r in run.results)
    return f"{name:<6} n={len(run.results):<4} Acc@{','.join(map(str, run.ks))}: {accs}   mean {secs:.3f} s/query"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_prefix")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--devset", default=str(DEFAULT_DEVSET))
    args = parser.parse_args(argv)
    runs = [load_run(Path(p)) for p in args.runs]
    levels = {run.level for run in runs}
    if len(levels) != 1:
        raise SystemExit(f"runs of different levels cannot be pooled: {sorted(levels)}")
    everything = pooled(runs)
    lite = pooled(runs, lite_ids(Path(args.devset)))
    for suffix, run in (("all", everything), ("lite", lite)):
        Path(f"{args.out_prefix}-{suffix}.json").write_text(json.dumps(run.to_json(), indent=1), encoding="utf-8")
    print(f"{runs[0].retriever} level {runs[0].level} file_rank {runs[0].meta.get('file_rank')}")
    print(line("lite", lite))
    print(line("all", everything))
    return 0


if __name__ == "__main__":
    sys.exit(main())
