"""Agents search the code as it is now (issue 25, part 3): a search refreshes the files changed since the build
into the lexical index first, says what it refreshed, and has them embedded in the background; more changes
than NAV_REFRESH_MAX_FILES are left for reindex; a long-lived process notices edits through its watcher."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from navigator.core.config import Config
from navigator.index import coverage
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from navigator.index.refresh import TreeWatcher, refresh, refresh_repository, wait_for_background
from navigator.index.walk import diff_tree
from tests.repo_factory import make_repo, write

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def indexed(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=3)
    build_index(root, Config.from_env())
    return root


def _changed(root: Path) -> list[str]:
    index = NavIndex.open(root)
    return diff_tree(root, index.conn, index.manifest.get("skip") or [], Config.from_env())


def _bm25_paths(root: Path, query: str) -> list[str]:
    from retrievers.registry import get_retriever
    config = Config.from_env()
    return [r.chunk.path for r in get_retriever("bm25", NavIndex.open(root, config), config).retrieve(query, 5)]


def test_a_refresh_makes_changed_files_searchable_now_and_embeds_them_after(indexed):
    root = indexed
    write(root, "pkg/mod1.py", "def gravimetric_assay(sample):\n    return sample * 3\n")
    write(root, "pkg/new_tool.py", "def spectral_fingerprint(signal):\n    return signal[::-1]\n")
    (root / "pkg" / "mod2.py").unlink()
    changed = _changed(root)
    assert set(changed) == {"pkg/mod1.py", "pkg/new_tool.py", "pkg/mod2.py"}
    result = refresh(root, Config.from_env(), changed)
    assert sorted(result.refreshed) == ["pkg/mod1.py", "pkg/new_tool.py"] and result.deleted == ["pkg/mod2.py"]
    assert result.embedding == "started"
    note = result.note()
    assert note.startswith("refreshed 3 changed files before answering:") and "pkg/mod2.py (deleted)" in note
    assert _bm25_paths(root, "gravimetric_assay")[0] == "pkg/mod1.py"        # searchable before any embedding
    assert _bm25_paths(root, "spectral_fingerprint")[0] == "pkg/new_tool.py"
    assert "pkg/mod2.py" not in {c.path for c in NavIndex.open(root).chunks()}
    wait_for_background()
    index = NavIndex.open(root)
    assert coverage.is_complete(coverage.read(index.conn)) and _changed(root) == []


def test_more_changes_than_the_limit_are_left_for_reindex(indexed, monkeypatch):
    root = indexed
    monkeypatch.setenv("NAV_REFRESH_MAX_FILES", "1")
    for n in range(3):
        write(root, f"pkg/extra_{n}.py", f"VALUE_{n} = {n}\n")
    generation = NavIndex.open(root).generation
    result = refresh(root, Config.from_env(), _changed(root))
    assert result.refreshed == [] and "3 files changed since the build, more than NAV_REFRESH_MAX_FILES=1" in result.note()
    assert NavIndex.open(root).generation == generation
    monkeypatch.setenv("NAV_REFRESH_MAX_FILES", "many")
    from navigator.core.errors import UsageError
    with pytest.raises(UsageError, match="whole number"):
        refresh(root, Config.from_env(), _changed(root))


def test_a_refresh_does_not_wait_for_a_build_in_progress(indexed):
    from navigator.index.lock import IndexLock
    root = indexed
    write(root, "pkg/mod1.py", "def held():\n    return 1\n")
    with IndexLock(Config.from_env().index_dir_for(root)):
        result = refresh(root, Config.from_env(), _changed(root))
    assert result.refreshed == [] and "writing the index now" in result.note()


def test_search_and_context_refresh_flags(indexed):
    root = indexed
    write(root, "pkg/mod3.py", "def heliotrope_index(x):\n    return x + 11\n")
    env = os.environ.copy()
    out = subprocess.run([sys.executable, "-m", "navigator", "search", "heliotrope_index", "--repo", str(root),
                          "--refresh", "--retriever", "bm25", "-k", "1"], capture_output=True, text=True,
                         env=env, timeout=300, cwd=PROJECT_ROOT)
    assert out.returncode == 0, out.stderr
    assert "note: refreshed 1 changed file before answering: pkg/mod3.py" in out.stderr
    assert "pkg/mod3.py" in out.stdout and "STALE" not in out.stdout
    _wait_for_background_build(root)     # the embedding the refresh started, in a process of its own
    write(root, "pkg/mod3.py", "def heliotrope_index(x):\n    return x + 12\n")
    out = subprocess.run([sys.executable, "-m", "navigator", "context", "what does heliotrope_index add", "--repo",
                          str(root), "--refresh"], capture_output=True, text=True, env=env, timeout=300,
                         cwd=PROJECT_ROOT)
    assert out.returncode == 0 and "x + 12" in out.stdout
    _wait_for_background_build(root)
    assert coverage.is_complete(coverage.read(NavIndex.open(root).conn)) and refresh_repository(root).note() is None


def _wait_for_background_build(root: Path) -> None:
    from navigator.index.lock import building_pid
    index_dir = Config.from_env().index_dir_for(root)
    for _ in range(600):
        if building_pid(index_dir) is None and coverage.is_complete(coverage.read(NavIndex.open(root).conn)):
            return
        time.sleep(0.2)
    raise AssertionError("the background nav index did not finish")


def test_the_watcher_sees_edits_and_ignores_the_index_and_vcs(tmp_path):
    root = make_repo(tmp_path / "repo", modules=1)
    (root / ".git").mkdir(exist_ok=True)
    (root / ".nav").mkdir(exist_ok=True)
    watcher = TreeWatcher(root, ignored=(root / ".nav",))
    try:
        assert watcher.healthy and not watcher.pending()
        write(root, ".nav/nav.db-wal", "x")
        write(root, ".git/index", "x")
        time.sleep(1.0)
        assert not watcher.pending()
        write(root, "pkg/mod0.py", "def edited():\n    return 2\n")
        write(root, "docs/added.md", "# Added\n")
        for _ in range(50):
            if {"pkg/mod0.py", "docs/added.md"} <= set(watcher._paths):
                break
            time.sleep(0.1)
        assert {"pkg/mod0.py", "docs/added.md"} <= watcher.take()
        assert not watcher.pending()
    finally:
        watcher.close()
