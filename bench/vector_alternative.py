#!/usr/bin/env python3
"""What chromadb costs a cold query, next to an alternative measured here and not used by nav: the index's
vectors as one memory-mapped numpy matrix, searched exactly (one matrix-vector product and a partial sort).

    python bench/vector_alternative.py TREE [--index-dir DIR]      # default: $NAV_INDEX_DIR or TREE/.nav

Reports, for the index of TREE:
  cold    process start to exit (median of 5) of: the vector head as nav runs it (ONNX query embedding while
          chromadb is imported, collection opened, top-200 query), and the same with the matrix instead of
          chromadb; plus each piece alone
  warm    per-query time of the top-200 search, chroma (HNSW) vs the matrix in float32 and float16
  recall  how many of the exact top-10 / top-200 (by cosine over the cached vectors) chroma's HNSW returns,
          over the bench's 20 queries
The matrix files are written to a temporary directory and removed afterwards.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from run import QUERIES  # noqa: E402  (bench/ is not a package: sibling scripts)

DEPTH = 200           # the hybrid retriever's candidate depth at 2,000+ chunks
COLD_RUNS = 5

# One cold process each; {onnx}, {index}, {matrix} are filled in. Every probe embeds one query first.
_EMBED = ("import sys, numpy as np; sys.path.insert(0, {repo!r}); from navigator.index.onnx_query import OnnxQueryEncoder; "
          "v = OnnxQueryEncoder({onnx!r}).encode('where is logging configured'); ")
PROBES = {
    "ONNX query embedding alone": _EMBED,
    "chromadb (nav's import) + open + top-200 query, no embedding":
        ("import sys; sys.path.insert(0, {repo!r}); import numpy as np; from navigator.index.vector_store import open_collection; "
         "_, c = open_collection(__import__('pathlib').Path({index!r})); "
         "c.query(query_embeddings=[[0.05] * {dim}], n_results=200, include=['distances'])"),
    "vector head as nav runs it (embedding || chromadb, then query)":
        ("import sys; sys.path.insert(0, {repo!r}); from navigator.index.nav_index import NavIndex; from navigator.core.config import Config; "
         "NavIndex.open({tree!r}, Config.from_env()).vector_search('where is logging configured', 200)"),
    "matrix alternative: embedding + mmap float32 matrix + exact top-200":
        _EMBED + "m = np.load({matrix!r}, mmap_mode='r'); s = m @ v; top = np.argpartition(-s, 200)[:200]; "
                 "top = top[np.argsort(-s[top])]",
}


def cached_vectors(index_dir: Path):
    """(chunk ids, float32 matrix) of the index's chunks, from nav.db's embedding cache."""
    import numpy as np
    conn = sqlite3.connect(index_dir / "nav.db")
    try:
        rows = conn.execute("SELECT c.id, e.vector FROM chunks c JOIN embeddings e USING (content_hash) "
                            "ORDER BY c.path, c.seq").fetchall()
    finally:
        conn.close()
    return [r[0] for r in rows], np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])


def exact_top(matrix, vec, k: int):
    import numpy as np
    scores = matrix @ vec.astype(matrix.dtype)
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def cold_process(code: str, env: dict) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--index-dir", type=Path, default=None)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.index_dir:
        os.environ["NAV_INDEX_DIR"] = str(args.index_dir)
    import numpy as np

    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex
    from navigator.index.onnx_query import onnx_dir_for
    config = Config.from_env()
    index = NavIndex.open(tree, config)
    index_dir = index.index_dir
    onnx_dir = onnx_dir_for(index_dir, index.manifest["embedder"])
    ids, matrix = cached_vectors(index_dir)
    work = Path(tempfile.mkdtemp(prefix="nav-vector-alt-"))
    try:
        np.save(work / "vectors32.npy", matrix)
        np.save(work / "vectors16.npy", matrix.astype(np.float16))
        fill = {"repo": str(REPO_ROOT), "onnx": str(onnx_dir), "index": str(index_dir), "tree": str(tree),
                "matrix": str(work / "vectors32.npy"), "dim": matrix.shape[1]}
        env = dict(os.environ)
        cold = {"python -c pass": statistics.median(cold_process("pass", env) for _ in range(COLD_RUNS))}
        for label, code in PROBES.items():
            cold[label] = statistics.median(cold_process(code.format(**fill), env) for _ in range(COLD_RUNS))

        # Warm: the same opened index, one query vector per bench query.
        vectors = [index.embed_query(q) for q in QUERIES]
        m16 = np.load(work / "vectors16.npy", mmap_mode="r")
        collection = index._chroma()
        warm: dict[str, list[float]] = {"chroma HNSW": [], "matrix float32": [], "matrix float16": []}
        recall10, recall200 = [], []
        for vec in vectors:
            start = time.perf_counter()
            res = collection.query(query_embeddings=[vec.tolist()], n_results=DEPTH, include=["distances"])
            warm["chroma HNSW"].append(time.perf_counter() - start)
            start = time.perf_counter()
            exact = exact_top(matrix, vec, DEPTH)
            warm["matrix float32"].append(time.perf_counter() - start)
            start = time.perf_counter()
            exact_top(m16, vec, DEPTH)
            warm["matrix float16"].append(time.perf_counter() - start)
            exact_ids = [ids[i] for i in exact]
            got = res["ids"][0]
            recall10.append(len(set(got[:10]) & set(exact_ids[:10])) / 10)
            recall200.append(len(set(got) & set(exact_ids)) / DEPTH)
        report = {
            "index_dir": str(index_dir), "chunks": len(ids), "dimension": int(matrix.shape[1]),
            "matrix_mb": {"float32": matrix.nbytes / 2**20, "float16": matrix.nbytes / 2**21},
            "cold_process_s": cold,
            "warm_top200_ms_p50": {k: statistics.median(v) * 1000 for k, v in warm.items()},
            "hnsw_recall_vs_exact": {"top10": statistics.mean(recall10), "top200": statistics.mean(recall200)},
        }
    finally:
        index.conn.close()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
