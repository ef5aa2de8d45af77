"""Warm p50/p95 of hybrid and graph on the click index, the bench's method (bench/run.py warm_latencies)."""
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
from pathlib import Path
import run
tree = Path(sys.argv[1]); index_dir = Path(sys.argv[2])
from retrievers import registry
names = ["hybrid", "graph"]
registry.registered_names = lambda: names
run.registered_names = lambda: names
res = run.warm_latencies(tree, index_dir, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
for n, r in res.items(): print(n, {k: round(v, 1) if isinstance(v, float) else v for k, v in r.items()})
