#!/usr/bin/env python3
"""Where one cold `nav search` or one `nav index` run spends its time, stage by stage, in a fresh process.
Run by bench/run.py on the largest corpus (a separate process each time, so every stage is cold):

    python bench/stages.py search TREE "a query"     # NAV_INDEX_DIR as for nav itself
    python bench/stages.py index TREE

Prints one JSON object: stage -> milliseconds (wall), plus "total_ms" from process start (interpreter
start-up and exit are not in it: run.py measures the whole process separately).

search: the stages are those of navigator.context.search.search with the default retriever (hybrid), in its order;
the vector head's first query embeds on a worker thread while chromadb is imported and opened, so
"vector head" is that overlap plus the chroma query.
index: the indexer's stage functions are wrapped; what is left is walking, reading, chunking, committing.
"""
from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()
REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))


def search_stages(tree: str, query: str) -> dict[str, float]:
    marks: list[tuple[str, float]] = [("", STARTED)]

    def mark(label: str) -> None:
        marks.append((label, time.perf_counter()))

    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex
    from retrievers.registry import get_retriever
    mark("import nav modules")
    config = Config.from_env()
    index = NavIndex.open(tree, config)
    mark("open index")
    index.state()
    mark("freshness check (walk + stat)")
    retriever = get_retriever("hybrid", index, config)
    mark("load retriever")
    index.vector_search(query, 200)
    mark("vector head (embed || import + open chroma, query)")
    retriever.bm25.scorer()
    mark("load BM25 state")
    retriever.bm25.ranked_ids(query, 200)
    mark("BM25 head")
    retriever.retrieve(query, 10)
    mark("hybrid retrieve again (warm: fusion, 10 chunks loaded)")
    return {label: (t - marks[i][1]) * 1000 for i, (label, t) in enumerate(marks[1:])} | {
        "total_ms": (marks[-1][1] - STARTED) * 1000}


def index_stages(tree: str) -> dict[str, float]:
    from navigator.index import indexer
    from navigator.core.config import Config
    times: dict[str, float] = {}

    def timed(module, name: str, label: str) -> None:
        fn = getattr(module, name)

        @functools.wraps(fn)
        def inner(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[label] = times.get(label, 0.0) + (time.perf_counter() - start) * 1000

        setattr(module, name, inner)

    # The stages as navigator.index.indexer calls them (navigator/index/stages/).
    for name, label in [("_open_run", "open (nav.db, quick_check)"), ("walk", "walk"), ("chunk", "read + chunk"),
                        ("commit_lexical", "lexical commit (graph)"), ("prune_cache", "prune cache"),
                        ("write_postings", "write BM25 postings"), ("embed", "embed"),
                        ("sync_multilingual", "multilingual"), ("ensure_onnx_export", "ONNX export check")]:
        timed(indexer, name, label)
    for method, label in (("start", "vector sync: start"), ("finish", "vector sync: finish")):
        timed(indexer.VectorSync, method, label)
    imported = time.perf_counter()
    summary = indexer.build_index(Path(tree).resolve(), Config.from_env())
    done = time.perf_counter()
    times["imports"] = (imported - STARTED) * 1000
    times["other (read, chunk, commit)"] = (done - imported) * 1000 - sum(
        v for k, v in times.items() if not k.startswith(" ") and k != "imports")
    times["total_ms"] = (done - STARTED) * 1000
    times["chunks_embedded"] = summary.chunks_embedded
    return times


def main() -> int:
    mode, tree = sys.argv[1], sys.argv[2]
    out = search_stages(tree, sys.argv[3]) if mode == "search" else index_stages(tree)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
