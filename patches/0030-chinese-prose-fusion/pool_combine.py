#!/usr/bin/env python3
"""0010's combine.py pooled over several sets: per query, the ALT run's result where the question names no
code, the BASE run's elsewhere; @5 per category for base, alt, combined, and the answers gained and lost.

Usage:  python pool_combine.py BASE_DIR ALT_DIR "SET SET ..." ["en zh"]
        (the folders rag-eval/languages.sh writes: DIR/SET-LANG-graph.json)
"""
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "0010-prose-query-fusion"))
from combine import is_prose  # noqa: E402

base_dir, alt_dir, sets = sys.argv[1], sys.argv[2], sys.argv[3].split()
langs = sys.argv[4].split() if len(sys.argv) > 4 else ["en", "zh"]
for lang in langs:
    rows = defaultdict(lambda: defaultdict(list)); gained = lost = 0
    for s in sets:
        b = json.load(open(f"{base_dir}/{s}-{lang}-graph.json")); a = json.load(open(f"{alt_dir}/{s}-{lang}-graph.json"))
        texts = {q["id"]: q["query"] for q in map(json.loads, open(b["meta"]["queries_file"], encoding="utf-8")) }
        am = {q["id"]: q for q in a["queries"]}
        for q in b["queries"]:
            alt = am[q["id"]]; c = alt if is_prose(texts[q["id"]]) else q
            for name, x in (("base", q), ("alt", alt), ("comb", c)):
                rows[(q["mode"], q["category"])][name].append(x["scores"]["5"])
                rows[(q["mode"], "overall")][name].append(x["scores"]["5"])
            if q["mode"] == "any":
                gained += c["scores"]["5"] > q["scores"]["5"]; lost += c["scores"]["5"] < q["scores"]["5"]
    print(f"-- {lang}: combined vs base at @5, expect_any: +{gained} -{lost}")
    for (mode, cat), d in sorted(rows.items()):
        n = len(d["base"]); print(f"{lang} {mode:4s} {cat:17s} n{n:4d} " + " ".join(f"{x} {sum(d[x])/n:.3f}" for x in ("base", "alt", "comb")))
