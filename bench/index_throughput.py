#!/usr/bin/env python3
"""Full-index throughput of each index-time embedding backend, side by side in one run (issue 10, part 3).

For each corpus size and each variant, `nav index TREE --json` runs on an empty index (a fresh temporary
index directory) and is timed from process spawn to exit. Printed per run: wall seconds, chunks, chunks/s,
peak RSS, and the ratio of chunks/s to the first variant's on the same corpus.

Variants (environment given to `nav index`):
  bf16        NAV_EMBED_DTYPE=bf16: torch in bfloat16, nav's default before `auto`
  torch-fp32  NAV_EMBED_DTYPE=fp32 NAV_ONNX=0: torch in float32 (and no ONNX export at all)
  auto        nav's default: bf16 where the CPU has it natively, else the ONNX export in fp32

Usage:  python bench/index_throughput.py [--sizes small,medium] [--variants bf16,torch-fp32,auto]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
from run import nav_index  # noqa: E402

VARIANTS = {
    "bf16": {"NAV_EMBED_DTYPE": "bf16"},
    "torch-fp32": {"NAV_EMBED_DTYPE": "fp32", "NAV_ONNX": "0"},
    "auto": {"NAV_EMBED_DTYPE": "auto"},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="small,medium")
    ap.add_argument("--variants", default="bf16,torch-fp32,auto")
    args = ap.parse_args()
    for key, value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("ANONYMIZED_TELEMETRY", "False")):
        os.environ.setdefault(key, value)
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {unknown}; known: {sorted(VARIANTS)}")
    rows = []
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for size in args.sizes.split(","):
        corpus = corpora.CORPORA[size]
        tree = corpora.ensure_sdist(corpus.current)
        first_rate = None
        for variant in variants:
            saved = {k: os.environ.get(k) for k in VARIANTS[variant]}
            os.environ.update(VARIANTS[variant])
            try:
                with tempfile.TemporaryDirectory(prefix="nav-throughput-") as tmp:
                    run, summary = nav_index(tree, Path(tmp) / "index")
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            chunks = summary["chunks"]
            rate = chunks / run.wall_s
            first_rate = first_rate or rate
            row = (size, corpus.current.requirement, variant, run.wall_s, chunks, rate, rate / first_rate, run.max_rss_mb)
            rows.append(row)
            print(f"  {size} {variant}: {run.wall_s:.1f} s, {chunks} chunks, {rate:.1f} chunks/s, "
                  f"x{rate / first_rate:.2f}, peak {run.max_rss_mb:.0f} MB", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")
    print(f"| corpus | variant | full index | chunks | chunks/s | x {variants[0]} | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for size, label, variant, wall, chunks, rate, ratio, rss in rows:
        print(f"| {size} ({label}) | {variant} | {wall:.1f} s | {chunks:,} | {rate:.1f} | {ratio:.2f} | {rss:.0f} MB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
