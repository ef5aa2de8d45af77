import json, math, itertools, sys
from collections import defaultdict
D = json.load(open(sys.argv[1]))
W = {"chunks": 1.0, "file_bm25": 1.0, "defines": 0.2, "mentioned": 0.5, "title": 1.0, "errors": 0.5}
VERS = ["3.0","3.1","3.2","4.0","4.1","4.2","5.0"]
SCORED = ("file_bm25", "title", "chunks")
def prep(q):
    base = defaultdict(float)
    for h, ids in q["rankings"].items():
        for i, p in enumerate(ids, 1):
            base[p] += W[h] / (10.0 + i)
    norm = {}
    for h in SCORED:
        sc = q["scores"].get(h, {})
        if not sc: continue
        vals = sorted(sc.values(), reverse=True)
        top = vals[0]; tenth = vals[min(9, len(vals)-1)]
        norm[h] = {p: ((s - tenth) / (top - tenth) if top > tenth else 0.0, s / top) for p, s in sc.items()}
    q["_base"] = dict(base); q["_norm"] = norm
for q in D: prep(q)
def rank(q, beta, gamma, form):
    s = dict(q["_base"])
    for h, b in zip(SCORED, beta):
        if b == 0 or h not in q["_norm"]: continue
        for p, (mm, ratio) in q["_norm"][h].items():
            x = max(mm, 0.0) if form == "mm" else ratio
            s[p] = s.get(p, 0.0) + b * x ** gamma
    for p in s:
        if q["non_source"].get(p, False): s[p] *= q["factor"]
    return sorted(s, key=lambda p: -s[p])
def hits(rows, fn, ks=(1,3,5,10)):
    return {k: sum(any(p in q["gold"] for p in fn(q)[:k]) for q in rows) for k in ks}
def obj(h): return h[1] * 1.0 + h[3] * 0.5 + h[5] * 0.5
grid = []
for form in ("mm", "ratio"):
    for gamma in ((1, 2, 4) if form == "mm" else (4, 10, 20)):
        for beta in itertools.product((0, .02, .05, .1), repeat=3):
            grid.append((beta, gamma, form))
print(len(grid), "settings")
# full-set table of a few
cache = {}
def evals(rows, g):
    return hits(rows, lambda q: rank(q, *g))
# LORO
held = {}
for v in VERS:
    train = [q for q in D if q["v"] != v]
    best = max(grid, key=lambda g: (obj(evals(train, g)), -sum(g[0])))
    test = [q for q in D if q["v"] == v]
    for q in test: held[q["id"]] = rank(q, *best)
    print(v, "chosen", best, flush=True)
lite = [q for q in D if q["lite"]]
base = hits(lite, lambda q: rank(q, (0,0,0), 1, "mm"))
new = {k: sum(any(p in q["gold"] for p in held[q["id"]][:k]) for q in lite) for k in (1,3,5,10)}
print("lite base", base, "held-out", new)
# gained / lost @1
for q in lite:
    a = rank(q, (0,0,0), 1, "mm")[0] in q["gold"]; b = held[q["id"]][0] in q["gold"]
    if a != b: print("  ", q["id"], "gained" if b else "lost")
