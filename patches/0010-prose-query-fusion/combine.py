#!/usr/bin/env python3
"""Estimate query-dependent fusion from two `nav eval --json` runs of the same query set: per query, the
ALT run's result where the question is prose (names no code: no identifier, dotted name, path or frame by
retrievers.query_analysis), the BASE run's elsewhere. Prints @k per category for base, alt, combined.

Usage:  python combine.py QUERIES.jsonl BASE.json ALT.json [--k 5]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from retrievers.query_analysis import analyse_query  # noqa: E402


def is_prose(text: str) -> bool:
    a = analyse_query(text)
    return not (a.identifiers or a.dotted or a.paths or a.frames)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("queries")
    ap.add_argument("base")
    ap.add_argument("alt")
    ap.add_argument("--k", default="5")
    args = ap.parse_args()
    texts = {q["id"]: q["query"] for q in (json.loads(line) for line in Path(args.queries).read_text().splitlines() if line.strip())}
    base = {q["id"]: q for q in json.loads(Path(args.base).read_text())["queries"]}
    alt = {q["id"]: q for q in json.loads(Path(args.alt).read_text())["queries"]}
    rows: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    prose_count = 0
    for qid, b in base.items():
        prose = is_prose(texts[qid])
        prose_count += prose
        a = alt[qid]
        for name, q in (("base", b), ("alt", a), ("combined", a if prose else b)):
            rows[(b["mode"], b["category"])][name].append(q["scores"][args.k])
            rows[(b["mode"], "overall")][name].append(q["scores"][args.k])
    print(f"{len(base)} queries, {prose_count} prose; score @{args.k} (hit for mode any, coverage for all)")
    print(f"{'mode':5s} {'category':18s} {'n':>3s} {'base':>6s} {'alt':>6s} {'comb':>6s}")
    for (mode, cat), d in sorted(rows.items()):
        n = len(d["base"])
        print(f"{mode:5s} {cat:18s} {n:3d} " + " ".join(f"{sum(d[x]) / n:6.3f}" for x in ("base", "alt", "combined")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
