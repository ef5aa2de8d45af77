"""patches/measure.py end to end: a tiny patch against this repository's HEAD, measured on a tiny corpus."""
from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MEASURE = REPO / "patches" / "measure.py"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def tiny_patch(tmp_path: Path) -> Path:
    """A one-line change to the query side of bm25 (no re-index needed): the title weight of query terms."""
    path = "retrievers/bm25.py"
    before = git("show", f"HEAD:{path}")
    after = before.replace("K3 = 7.0\n", "K3 = 0.5\n")
    assert after != before
    diff = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                f"a/{path}", f"b/{path}")
    patch = tmp_path / "9999-k3-small.patch"
    patch.write_text("".join(diff))
    return patch


def tiny_corpus(root: Path) -> tuple[Path, Path]:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "cache.py").write_text('"""Disk cache."""\n\nCACHE_DIR = "~/.cache/app"\n\n\n'
                                           "def clear_cache(path):\n    \"\"\"Remove every cached file.\"\"\"\n"
                                           "    return path\n")
    (root / "pkg" / "net.py").write_text('"""Network."""\n\nTIMEOUT = 30\n\n\n'
                                         "def fetch(url, timeout=TIMEOUT):\n    return url\n")
    queries = root.parent / "queries.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in [
        {"id": "q1", "lang": "en", "category": "exact_identifier", "query": "how is the disk cache emptied",
         "expect_any": [{"path": "pkg/cache.py", "text": "def clear_cache"}]},
        {"id": "q2", "lang": "en", "category": "value_lookup", "query": "default network timeout in seconds",
         "expect_any": [{"path": "pkg/net.py", "text": "TIMEOUT = 30"}]},
    ]) + "\n")
    return root, queries


def test_measure_applies_a_patch_indexes_both_sides_and_pairs_the_runs(tmp_path, nav_env):
    corpus, queries = tiny_corpus(tmp_path / "corpus")
    patch = tiny_patch(tmp_path)
    work, out = tmp_path / "work", tmp_path / "out"
    cmd = [sys.executable, str(MEASURE), str(patch), "--set", f"tiny={queries}:{corpus}", "--base", "HEAD",
           "--retriever", "bm25", "--k", "1", "--work", str(work), "--out", str(out), "--keep-trees"]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=os.environ.copy())
        assert run.returncode == 0, run.stderr
        assert "== tiny" in run.stdout and "nav compare" in run.stdout and "2 paired queries" in run.stdout
        base, patched = (json.loads((out / f"tiny-{side}.json").read_text()) for side in ("base", "patched"))
        assert [q["id"] for q in base["queries"]] == ["q1", "q2"] == [q["id"] for q in patched["queries"]]
        assert (out / "tiny-compare.txt").read_text() in run.stdout
        # the patch is in the patched worktree only, and the corpus tree was never written
        assert "K3 = 0.5" in (work / "trees" / "patched" / "retrievers" / "bm25.py").read_text()
        assert "K3 = 7.0" in (work / "trees" / "base" / "retrievers" / "bm25.py").read_text()
        assert not (corpus / ".nav").exists()
        # the patched index was seeded from the base one: its second run re-embeds nothing
        index_summary = json.loads((out / "tiny-patched-index.json").read_text())
        assert index_summary["chunks_embedded"] == 0
        # a patch that does not apply is an error that names it
        bad = tmp_path / "bad.patch"
        bad.write_text(patch.read_text().replace("K3 = 7.0", "K3 = 9.9"))
        failed = subprocess.run([*cmd[:2], str(bad), *cmd[3:-1]], capture_output=True, text=True, timeout=600)
        assert failed.returncode != 0 and "bad.patch does not apply" in failed.stderr
        listed = git("worktree", "list")     # without --keep-trees the scratch trees leave the shared .git
        assert str(work / "trees" / "base") not in listed and str(work / "trees" / "patched") not in listed
    finally:
        for side in ("base", "patched"):
            subprocess.run(["git", "worktree", "remove", "--force", str(work / "trees" / side)], cwd=REPO,
                           capture_output=True)
        subprocess.run(["git", "worktree", "prune"], cwd=REPO, capture_output=True)
