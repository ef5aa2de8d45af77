import json, math, sys
import numpy as np
from collections import defaultdict
D = json.load(open(sys.argv[1]))
VERS = ["3.0","3.1","3.2","4.0","4.1","4.2","5.0"]
HEADS = ["chunks", "file_bm25", "defines", "mentioned", "title", "errors"]
W = {"chunks": 1.0, "file_bm25": 1.0, "defines": 0.2, "mentioned": 0.5, "title": 1.0, "errors": 0.5}
def feats(q):
    pos = {h: {p: i for i, p in enumerate(ids, 1)} for h, ids in q["rankings"].items()}
    base = defaultdict(float)
    for h, ids in q["rankings"].items():
        for i, p in enumerate(ids, 1): base[p] += W[h] / (10.0 + i)
    for p in base:
        if q["non_source"].get(p, False): base[p] *= q["factor"]
    cands = sorted(base, key=lambda p: -base[p])[:30]
    X = []
    for p in cands:
        f = [base[p] * 10]
        for h in HEADS:
            r = pos.get(h, {}).get(p)
            f += [0.0 if r is None else 1.0 / (1 + r), 1.0 if r == 1 else 0.0]
        for h in ("file_bm25", "title", "chunks"):
            sc = q["scores"].get(h, {})
            if sc:
                vals = sorted(sc.values(), reverse=True); top = vals[0]; tenth = vals[min(9, len(vals)-1)]
                s = sc.get(p, 0.0)
                f.append(max(0.0, (s - tenth) / (top - tenth)) if top > tenth else 0.0)
            else: f.append(0.0)
        f.append(1.0 if q["non_source"].get(p, False) else 0.0)
        f.append(math.log1p(q["n_chunks"].get(p, 1)))
        f.append(1.0 if "title" in q["rankings"] else 0.0)
        X.append(f)
    return cands, np.array(X)
F = {q["id"]: feats(q) for q in D}
from sklearn.linear_model import LogisticRegression
def pairs(rows):
    Xs, ys = [], []
    for q in rows:
        cands, X = F[q["id"]]
        gold = [i for i, p in enumerate(cands) if p in q["gold"]]
        if not gold: continue
        g = gold[0]
        for i in range(len(cands)):
            if i == g: continue
            Xs.append(X[g] - X[i]); ys.append(1)
            Xs.append(X[i] - X[g]); ys.append(0)
    return np.array(Xs), np.array(ys)
def run(C):
    held = {}
    for v in VERS:
        train = [q for q in D if q["v"] != v]
        Xp, yp = pairs(train)
        m = LogisticRegression(C=C, fit_intercept=False, max_iter=2000).fit(Xp, yp)
        for q in D:
            if q["v"] != v: continue
            cands, X = F[q["id"]]
            s = X @ m.coef_[0]
            held[q["id"]] = [cands[i] for i in np.argsort(-s, kind="stable")]
    return held
lite = [q for q in D if q["lite"]]
def acc(rk): return {k: sum(any(p in q["gold"] for p in rk[q["id"]][:k]) for q in lite) for k in (1,3,5,10)}
print("base", acc({q["id"]: F[q["id"]][0] for q in D}))
for C in (0.001, 0.01, 0.1, 1, 10):
    print(C, acc(run(C)))
