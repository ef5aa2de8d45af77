import json, sys
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.file_rank import FILE_RRF_K
from retrievers.source_prior import is_non_source, NON_SOURCE_PRIOR
BASE_W = {"chunks": 1.0, "file_bm25": 1.0, "defines": 0.2, "mentioned": 0.5, "title": 1.0, "errors": 0.5}
data = []
for f in sys.argv[1:]:
    data += json.load(open(f))
def acc(weights, rows, extra=()):
    ks = (1, 3, 5, 10); hit = {k: 0 for k in ks}; ranks = {}
    for r in rows:
        rk = {h: v for h, v in r["rankings"].items() if h in BASE_W}
        if "title" in rk:
            for h in extra: rk[h] = r["extra"][h]
        fused = reciprocal_rank_fusion(rk, weights, FILE_RRF_K)
        scored = sorted(((p, s * (1.0 if r["asks"] or not is_non_source(p) else NON_SOURCE_PRIOR)) for p, s in fused), key=lambda x: -x[1])
        paths = [p for p, _ in scored]
        rank = paths.index(r["gold"]) + 1 if r["gold"] in paths else 999
        ranks[r["id"]] = rank
        for k in ks: hit[k] += rank <= k
    return tuple(round(100 * hit[k] / max(1, len(rows)), 1) for k in ks), ranks
lite = [r for r in data if r["lite"]]
first = [r for r in lite if r["v"] in ("3.0", "3.1", "3.2")]
held = [r for r in lite if r["v"] not in ("3.0", "3.1", "3.2")]
print("rows", len(lite), "first", len(first), "held", len(held))
_, rb = acc(BASE_W, lite)
def show(name, W, extra=()):
    a, ra = acc(W, lite, extra); f, _ = acc(W, first, extra); h, _ = acc(W, held, extra)
    g = sorted(i for i in ra if ra[i] == 1 and rb[i] != 1); l = sorted(i for i in ra if ra[i] != 1 and rb[i] == 1)
    print(f"{name:26s} all {a} first {f} held {h}  @1 +{len(g)} -{len(l)}  {g} {l}")
show("base", BASE_W)
for h in ("title_chunks", "title_vec"):
    for w in (0.25, 0.5, 1.0, 1.5):
        W = dict(BASE_W); W[h] = w
        show(f"{h} {w}", W, (h,))
