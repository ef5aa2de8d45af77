import json, sys, itertools
from retrievers.fusion import reciprocal_rank_fusion
from retrievers.file_rank import HEAD_WEIGHTS, FILE_RRF_K
from retrievers.source_prior import NON_SOURCE_PRIOR, is_non_source
data = json.load(open(sys.argv[1]))
def acc(weights, rows, k_rrf=FILE_RRF_K):
    ks = (1, 3, 5); hit = {k: 0 for k in ks}
    for r in rows:
        fused = reciprocal_rank_fusion(r["rankings"], weights, k_rrf)
        scored = sorted(((p, s * (1.0 if r["asks"] or not is_non_source(p) else NON_SOURCE_PRIOR)) for p, s in fused), key=lambda x: -x[1])
        paths = [p for p, _ in scored]
        rank = paths.index(r["gold"]) + 1 if r["gold"] in paths else 999
        for k in ks: hit[k] += rank <= k
    return tuple(round(100 * hit[k] / len(rows), 1) for k in ks)
lite = [r for r in data if r["lite"]]
first = [r for r in lite if r["v"] in ("3.0", "3.1", "3.2")]
held = [r for r in lite if r["v"] not in ("3.0", "3.1", "3.2")]
print("base", acc(HEAD_WEIGHTS, lite), "first", acc(HEAD_WEIGHTS, first), "held", acc(HEAD_WEIGHTS, held))
for head in ["chunks", "file_bm25", "defines", "mentioned", "title", "errors"]:
    for w in [0.0, 0.25, 0.5, 1.0, 1.5, 2.0]:
        W = dict(HEAD_WEIGHTS); W[head] = w
        print(head, w, "all", acc(W, lite), "first", acc(W, first), "held", acc(W, held))
