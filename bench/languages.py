#!/usr/bin/env python3
"""The cost of reading each language (issue 23): chunking and graph extraction per chunk beside Python's, and
what a language's first use costs beside importing its grammar wheel.

For each pinned corpus (click for Python; rag-eval/<set>/corpus.json for the others), every file of the set's
language is read, chunked (chunkers.chunk_file) and its graph extracted (navigator.index.graph.extract_file)
in this process, three times (the best is kept: the machine is shared). Printed per language: files, chunks,
microseconds per chunk for chunking, for the graph, and both; the ratio of that sum to Python's.

First use, each in a fresh interpreter (the best of five): `import tree_sitter_LANG` alone, then nav's
first use of the language (the grammar loaded, its chunking query compiled, one small file chunked). The
ratio says what nav adds to the import.

Whole-index figures (embedding included) come from `rag-eval/languages.sh`, whose index summaries record
seconds and chunks per corpus; `--index-summaries DIR` prints their seconds per 1,000 chunks beside these.

Usage:  python bench/languages.py [--sets go,typescript,javascript,rust,java] [--index-summaries DIR]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from chunkers import chunk_file  # noqa: E402
from chunkers.languages import LANGUAGES, language_for  # noqa: E402
from navigator.index.graph import extract_file  # noqa: E402

REPEATS = 3
FIRST_USE_REPEATS = 5
SETS = "go,typescript,javascript,rust,java"
MAX_FILE_BYTES = 1 << 20
SAMPLE = {"go": "package p\n\nfunc F() int { return 1 }\n", "typescript": "export function f(): number { return 1; }\n",
          "javascript": "function f() { return 1; }\n", "rust": "pub fn f() -> i32 { 1 }\n",
          "java": "class A { int f() { return 1; } }\n", "python": "def f():\n    return 1\n"}


def _fetcher():
    spec = importlib.util.spec_from_file_location("nav_fetch_corpus", REPO / "rag-eval" / "fetch_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def files_of(root: Path, language: str) -> list[tuple[str, str]]:
    out = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES or "node_modules" in path.parts:
            continue
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        found = language_for(rel, text)
        if found == language or (language == "typescript" and found == "tsx"):
            out.append((rel, text))
    return out


def cost(files: list[tuple[str, str]]) -> dict:
    best_chunk = best_graph = float("inf")
    chunks = 0
    for _ in range(REPEATS):
        started = time.perf_counter()
        results = [(rel, chunk_file(rel, text)) for rel, text in files]
        chunked = time.perf_counter()
        for rel, result in results:
            extract_file(rel, result.chunks)
        done = time.perf_counter()
        best_chunk, best_graph = min(best_chunk, chunked - started), min(best_graph, done - chunked)
        chunks = sum(len(r.chunks) for _, r in results)
    per = 1e6 / max(chunks, 1)
    return {"files": len(files), "chunks": chunks, "chunk_us": best_chunk * per, "graph_us": best_graph * per}


def first_use(language: str) -> dict:
    """Fresh interpreters: importing the grammar wheel (and tree_sitter, which nav needs to use it) against
    nav chunking one small file of the language, chunkers already imported in both."""
    module = "tree_sitter_python" if language == "python" else LANGUAGES[language].module
    clock = "import time, chunkers.dispatch; from chunkers import chunk_file; t = time.perf_counter(); "
    imp = clock + f"import tree_sitter, {module}; print(time.perf_counter() - t)"
    nav = clock + f"chunk_file('x.{_suffix(language)}', {SAMPLE[language]!r}); print(time.perf_counter() - t)"

    def best(code: str) -> float:
        runs = []
        for _ in range(FIRST_USE_REPEATS):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
            runs.append(float(out.stdout.strip().splitlines()[-1]))
        return min(runs)

    return {"import_ms": best(imp) * 1e3, "first_use_ms": best(nav) * 1e3}


def _suffix(language: str) -> str:
    return {"python": "py", "go": "go", "typescript": "ts", "javascript": "js", "rust": "rs", "java": "java"}[language]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--index-summaries", type=Path, default=None)
    args = ap.parse_args()
    fetch = _fetcher()
    rows = {"python": ("click", cost(files_of(fetch.ensure_corpus(), "python")))}
    for name in [s for s in args.sets.split(",") if s]:
        spec = fetch.load_set_spec(name)
        rows[spec.get("language", name)] = (name, cost(files_of(fetch.ensure_set_corpus(name), spec.get("language", name))))
    print(f"load average: {os.getloadavg()[0]:.2f}")
    py = rows["python"][1]
    py_total = py["chunk_us"] + py["graph_us"]
    print(f"{'language':<11} {'set':<11} {'files':>5} {'chunks':>6} {'chunk us':>9} {'graph us':>9} {'us/chunk':>9} "
          f"{'vs python':>9} {'import ms':>9} {'1st use ms':>10}")
    report = {}
    for language, (name, c) in rows.items():
        total = c["chunk_us"] + c["graph_us"]
        first = first_use(language)
        report[language] = {**c, **first, "set": name, "ratio_to_python": total / py_total}
        print(f"{language:<11} {name:<11} {c['files']:>5} {c['chunks']:>6} {c['chunk_us']:>9.0f} {c['graph_us']:>9.0f} "
              f"{total:>9.0f} {total / py_total:>9.2f} {first['import_ms']:>9.1f} {first['first_use_ms']:>10.1f}")
    if args.index_summaries:
        print("\nwhole index (rag-eval/languages.sh summaries, embedding included): seconds per 1,000 chunks")
        for path in sorted(args.index_summaries.glob("*-index.json")):
            summary = json.loads(path.read_text(encoding="utf-8"))
            print(f"  {path.name[:-11]:<11} {summary['chunks']:>6} chunks {summary['seconds']:>7.1f} s "
                  f"{1000 * summary['seconds'] / max(summary['chunks'], 1):>6.1f} s/1k chunks")
    out = HERE / "results" / "languages.json"
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"\nwritten {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
