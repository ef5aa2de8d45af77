"""Capture, for every django report, each file-evidence head's ranking WITH its scores, and the default's final
ranking (0020). Usage, from the repository root:
    PYTHONPATH=. .venv/bin/python patches/0020-file-score-fusion/capture.py INDEX_ROOT OUT.json [3.0,3.1,...]
INDEX_ROOT holds idx-X.Y (rag-eval/django.sh with INDEX_ROOT set builds them)."""
import json
import os
import sys
from pathlib import Path

import retrievers.file_rank as fr
from navigator.core.config import Config
from navigator.index.nav_index import NavIndex
from retrievers.bm25 import saturated_query_weights
from retrievers.query_analysis import analyse_query
from retrievers.query_terms import query_tokens
from retrievers.source_prior import factor_for, is_non_source, prior_setting

DEVSET = Path(__file__).resolve().parents[2] / "../shared/devsets/swe-django"
captured = {}
_orig = fr.reciprocal_rank_fusion


def _spy(rankings, weights, k):
    captured["rankings"] = {h: list(ids) for h, ids in rankings.items()}
    return _orig(rankings, weights, k)


fr.reciprocal_rank_fusion = _spy


def main(root, out_path, versions):
    out = []
    for v in versions:
        os.environ["NAV_INDEX_DIR"] = f"{root}/idx-{v}"
        config = Config.from_env()
        tree = Path.home() / f".cache/nav-devsets/django-{v}"
        index = NavIndex.open(tree, config)
        ranker = fr.FileRanker(index, config, base="graph")
        base_retrieve = ranker.base.retrieve

        def spy_retrieve(query, k, _f=base_retrieve):
            res = _f(query, k)
            captured["chunks"] = res
            return res
        ranker.base.retrieve = spy_retrieve
        cat = ranker.catalog()
        prior = prior_setting(config.extra)
        for line in open(DEVSET / f"django-{v}.jsonl"):
            q = json.loads(line)
            query = q["query"]
            hits = ranker.rank(query, 10)
            analysis = analyse_query(query)
            scores = {"chunks": fr.chunk_evidence(captured["chunks"])}
            scores["file_bm25"] = dict(cat.file_bm25(saturated_query_weights(query_tokens(query)), 200))
            title = query.strip().split("\n", 1)[0]
            if analysis.is_long and title.strip():
                scores["title"] = dict(cat.file_bm25(saturated_query_weights(query_tokens(title)), 200))
            scores["defines"] = fr.definition_evidence(analysis, cat)[0]
            rankings = captured["rankings"]
            candidates = sorted({p for ids in rankings.values() for p in ids[:50]})
            out.append({
                "id": q["id"], "v": v, "lite": q.get("in_lite274", False),
                "gold": [e["path"] for e in q["expect_any"]],
                "factor": factor_for(prior, query),
                "rankings": {h: ids[:200] for h, ids in rankings.items()},
                "scores": {h: {p: s for p, s in sc.items() if p in candidates} for h, sc in scores.items()},
                "non_source": {p: is_non_source(p) for p in candidates},
                "n_chunks": {p: len(cat.chunks_by_path.get(p, [])) for p in candidates},
                "final": [h.path for h in hits],
            })
        print(v, len(out), flush=True)
    json.dump(out, open(out_path, "w"))


if __name__ == "__main__":
    vers = sys.argv[3].split(",") if len(sys.argv) > 3 else ["3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0"]
    main(sys.argv[1], sys.argv[2], vers)
