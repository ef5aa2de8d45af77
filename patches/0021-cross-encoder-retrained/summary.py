"""One table from measure.py's runs: hit@1 and hit@5 (expect_any), coverage@5 (cross_file) per set and variant."""
import sys
from pathlib import Path
from statistics import fmean
from navigator.evaluation import load_run

out = Path(sys.argv[1])
print("| set | variant | hit@1 | hit@5 | coverage@5 |")
print("|---|---|---|---|---|")
for path in sorted(out.glob("run-*.json"), key=lambda p: (p.name.rsplit("-", 1)[0], p.name.rsplit("-", 1)[1] != "graph.json", p.name)):
    run = load_run(path)
    anyq = [r for r in run.results if r.mode == "any"]
    allq = [r for r in run.results if r.mode != "any"]
    s = lambda rs, k: fmean(run.score(r, k) for r in rs) if rs else float("nan")
    name, variant = path.stem[4:].rsplit("-", 1)
    print(f"| {name} | {variant} | {s(anyq, 1):.3f} | {s(anyq, 5):.3f} | {s(allq, 5):.3f} |")
