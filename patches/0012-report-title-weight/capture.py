"""Capture the per-head file rankings of every django query (lexical indexes, bm25 base) into one JSON."""
import json, sys
from pathlib import Path
import retrievers.file_rank as fr
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
for v in ["3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0"]:
    import os
    os.environ["NAV_INDEX_DIR"] = f"{root}/idx-{v}"
    if not Path(f"{root}/idx-{v}/nav.db").exists(): continue
    config = Config.from_env()
    tree = Path.home() / f".cache/nav-devsets/django-{v}"
    index = NavIndex.open(tree, config)
    ranker = fr.FileRanker(index, config, base=base)
    for line in open(f"../shared/devsets/swe-django/django-{v}.jsonl"):
        q = json.loads(line)
        ranker.rank(q["query"], 10)
        out.append({"id": q["id"], "v": v, "lite": q.get("in_lite274", False), "gold": q["expect_any"][0]["path"],
                    "asks": bool(fr._ASKS_NON_SOURCE.search(q["query"])), "rankings": captured["r"]})
json.dump(out, open(sys.argv[3], "w"))
print(len(out))
