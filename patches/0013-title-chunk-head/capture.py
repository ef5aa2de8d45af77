"""Capture per-head file rankings + extra candidate heads for every django query (0013; 0012's sweep reads the
same "rankings" and "asks" fields)."""
import json, sys, os
from pathlib import Path
import retrievers.file_rank as fr
from retrievers.query_analysis import analyse_query
from retrievers.bm25 import saturated_query_weights
from retrievers.query_terms import query_tokens
from retrievers.source_prior import asks_for_non_source
from navigator.core.config import Config
from navigator.index.nav_index import NavIndex
captured = {}
orig = fr.reciprocal_rank_fusion
def spy(rankings, weights, k):
    captured["r"] = {h: list(ids) for h, ids in rankings.items()}
    return orig(rankings, weights, k)
fr.reciprocal_rank_fusion = spy
out = []
base = sys.argv[1]; root = sys.argv[2]
vers = sys.argv[4].split(",") if len(sys.argv) > 4 else ["3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0"]
for v in vers:
    os.environ["NAV_INDEX_DIR"] = f"{root}/idx-{v}"
    if not Path(f"{root}/idx-{v}/nav.db").exists(): continue
    config = Config.from_env()
    tree = Path.home() / f".cache/nav-devsets/django-{v}"
    index = NavIndex.open(tree, config)
    ranker = fr.FileRanker(index, config, base=base)
    from retrievers.registry import get_retriever
    vec = get_retriever("vector", index, config)
    for line in open(f"../shared/devsets/swe-django/django-{v}.jsonl"):
        q = json.loads(line)
        hits = ranker.rank(q["query"], 10)
        rk = captured["r"]
        cat = ranker.catalog()
        title = q["query"].strip().split("\n", 1)[0]
        extra = {}
        extra["title_any"] = [p for p, _ in cat.file_bm25(saturated_query_weights(query_tokens(title)), 200)]
        tc = ranker.base.retrieve(title, 200)
        extra["title_chunks"] = fr._aggregate(tc)
        extra["title_chunk_paths"] = [x.chunk.path for x in tc]
        extra["chunk_paths"] = [x.chunk.path for x in ranker.base.retrieve(q["query"], 200)]
        ta = analyse_query(title)
        extra["title_defines"] = fr._definitions(ta, cat)[0]
        extra["title_vec"] = fr._aggregate(vec.retrieve(title, 200))
        a = analyse_query(q["query"])
        out.append({"id": q["id"], "v": v, "lite": q.get("in_lite274", False), "gold": q["expect_any"][0]["path"],
                    "asks": asks_for_non_source(q["query"]), "rankings": rk, "extra": extra,
                    "is_long": a.is_long, "title": title, "final": [h.path for h in hits],
                    "names": a.symbol_names()[:40]})
json.dump(out, open(sys.argv[3], "w"))
print(len(out))
