#!/usr/bin/env python3
"""Time to the first search on a new repository: `nav index` on the medium corpus (werkzeug 3.1.3) from an
empty index, with `nav search --retriever bm25` polled in separate processes from the moment it starts.

Prints: seconds from the start of `nav index` to the first search that answers with results (and the note
it carried about the vector head), the full index time, and chunks/s. The lexical index is committed before
embedding (navigator/index/stages/), so the first answer comes long before the index run ends.

Two ways to wait for the lexical head, both printed:
  polled   `nav search` processes run back to back from the start (each ~0.6 s of CPU, competing with the
           indexer for the cores): the first one with results is the figure;
  one      the bench watches the index directory for the BM25 postings of the first commit (a stat every
           50 ms, no CPU to speak of), then runs one `nav search`: what a user who starts one search
           once `nav index` reports the lexical head gets.

Usage:  python bench/first_search.py [--size medium] [--runs 1] [--first-only] [--mode polled|one|both]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpora  # noqa: E402
from run import nav_command, nav_env  # noqa: E402

QUERY = "parse the cookie header into a dict"
POLL_GAP_S = 0.05


def _search(tree: Path, env: dict):
    """The answer of one `nav search --retriever bm25 --json`, or None when it has no results."""
    out = subprocess.run(nav_command() + ["search", QUERY, "--repo", str(tree), "--retriever", "bm25", "--json"],
                         env=env, capture_output=True, text=True)
    if out.returncode == 0:
        answer = json.loads(out.stdout)
        if answer.get("results"):
            return answer
    return None


def _postings_written(index_dir: Path) -> bool:
    return any((index_dir / "bm25").glob("*/params.json"))


def one_run(tree: Path, first_only: bool = False, mode: str = "polled") -> dict:
    with tempfile.TemporaryDirectory(prefix="nav-first-search-") as tmp:
        index_dir = Path(tmp) / "index"
        env = nav_env(index_dir)
        started = time.monotonic()
        indexer = subprocess.Popen(nav_command() + ["index", str(tree), "--json"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        first = first_note = commit = None
        polls = 0
        while indexer.poll() is None and first is None:
            if mode == "one" and not _postings_written(index_dir):
                time.sleep(POLL_GAP_S)
                continue
            if mode == "one" and commit is None:
                commit = time.monotonic() - started
            polls += 1
            answer = _search(tree, env)
            if answer is not None:
                first = time.monotonic() - started
                first_note = answer["index"].get("vector_note")
                break
            time.sleep(POLL_GAP_S)
        if first_only and indexer.poll() is None:
            # The index run is stopped once searches answer: what it leaves is a valid lexical index
            # with a partial vector head (and the next `nav index` would finish it).
            indexer.kill()
            indexer.wait()
            return {"first_search_s": first, "first_note": first_note, "polls": polls, "full_index_s": None,
                    "postings_s": commit,
                    "chunks": None, "chunks_per_s": None, "chunks_not_embedded": None}
        stdout, _ = indexer.communicate()
        full = time.monotonic() - started
        if indexer.returncode != 0:
            raise corpora.BenchError(f"nav index exited {indexer.returncode}")
        summary = json.loads(stdout)
        return {"first_search_s": first, "first_note": first_note, "polls": polls, "full_index_s": full,
                "postings_s": commit,
                "chunks": summary["chunks"], "chunks_per_s": summary["chunks"] / full,
                "chunks_not_embedded": summary.get("chunks_not_embedded", 0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="medium", choices=sorted(corpora.CORPORA))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--first-only", action="store_true",
                    help="stop `nav index` once the first search answers (no full-index figures)")
    ap.add_argument("--mode", default="both", choices=("polled", "one", "both"))
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    corpus = corpora.CORPORA[args.size]
    tree = corpora.ensure_sdist(corpus.current)
    print(f"corpus {corpus.current.label} ({args.size}), tree {tree}")
    modes = ("polled", "one") if args.mode == "both" else (args.mode,)
    for i, mode in ((i, m) for i in range(args.runs) for m in modes):
        r = one_run(tree, args.first_only, mode)
        first = f"{r['first_search_s']:.1f} s" if r["first_search_s"] is not None else "never (index ended first)"
        how = (f"{r['polls']} polls" if mode == "polled" else
               f"postings on disk at {r['postings_s']:.1f} s, then {r['polls']} search(es)" if r["postings_s"] else "no postings seen")
        if r["full_index_s"] is None:
            print(f"run {i + 1} ({mode}): first bm25 answer {first} after `nav index` started ({how}); "
                  "index run stopped there (--first-only)")
        else:
            print(f"run {i + 1} ({mode}): first bm25 answer {first} after `nav index` started ({how}); "
                  f"full index {r['full_index_s']:.1f} s, {r['chunks']} chunks, {r['chunks_per_s']:.0f} chunks/s; "
                  f"{r['chunks_not_embedded']} chunks not embedded")
        if r["first_note"]:
            print(f"  the first answer said: {r['first_note']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
