"""Agents search the code as it is now: a search brings the files changed since the build into the lexical
index first (when at most NAV_REFRESH_MAX_FILES changed, default 50), then has them embedded in the background.

    refresh(root, config)     the lexical part of `nav index` (walk, re-chunk what changed, commit files,
                              chunks, graph and BM25), no embedding; then a detached `nav index` embeds the
                              new chunks, and until it has, the vector head says it is partial
    TreeWatcher               which paths changed, for a long-lived process (`nav mcp`): watchfiles' native
                              notification (inotify) in a background thread, so a query asks "did anything
                              change?" without walking the tree; where watchfiles cannot run, a poll of every
                              file's mtime and size (what `nav status` does) answers instead

A refresh never waits for a build in progress: it says the index is being written and searches what is
there (the lock of navigator.index.lock). bench/refresh.py measures its cost and both ways of noticing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from navigator.core.config import Config

MAX_FILES_ENV = "NAV_REFRESH_MAX_FILES"
DEFAULT_MAX_FILES = 50
# How long the watcher waits for more changes after the first before reporting them: an edit is seen by the
# queries that start this long after it (an agent's next tool call comes far later).
WATCH_DEBOUNCE_MS = 20
# Directories whose changes never concern the index (the index folder itself is added per watcher).
IGNORED_DIRS = frozenset({".git", ".hg", ".svn", ".nav", "__pycache__", "node_modules", ".venv", "venv",
                          ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".idea", ".vscode"})


def refresh_limit(config: Config) -> int:
    text = config.extra.get(MAX_FILES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_FILES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        from navigator.core.errors import UsageError
        raise UsageError(f"{MAX_FILES_ENV} must be a whole number of files (0 turns refreshing off), got {text!r}")
    return value


@dataclass
class RefreshResult:
    refreshed: list[str] = field(default_factory=list)     # paths brought into the lexical index
    deleted: list[str] = field(default_factory=list)
    skipped_reason: str | None = None                      # why nothing was refreshed, when something changed
    embedding: str | None = None                           # "started" | "running" | None
    seconds: float = 0.0

    def note(self) -> str | None:
        if self.skipped_reason:
            return self.skipped_reason
        if not self.refreshed and not self.deleted:
            return None
        names = [*self.refreshed, *(f"{p} (deleted)" for p in self.deleted)]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        note = f"refreshed {len(names)} changed file{'s' if len(names) != 1 else ''} before answering: {shown}"
        if self.embedding:
            note += "; their embeddings are being computed in the background (the vector head says how far)"
        return note


def refresh(root: Path, config: Config, changed: list[str], *, embed_in_background: bool = True) -> RefreshResult:
    """Bring `changed` (the paths nav's freshness check found) into the lexical index, when there are at most
    NAV_REFRESH_MAX_FILES of them; start the embedding of what changed in a detached `nav index`."""
    from navigator.core.errors import IndexLockedError
    from navigator.index.indexer import build_index
    from navigator.index.lock import building_pid
    started = time.monotonic()
    result = RefreshResult()
    if not changed:
        return result
    limit = refresh_limit(config)
    if len(changed) > limit:
        result.skipped_reason = (f"{len(changed)} files changed since the build, more than {MAX_FILES_ENV}={limit} "
                                 "refreshes before a search; call reindex (or run nav index)")
        return result
    index_dir = config.index_dir_for(root)
    if building_pid(index_dir) is not None:
        result.skipped_reason = "nav index is writing the index now; searched what it holds so far"
        return result
    try:
        summary = build_index(root, config, embed_vectors=False)
    except IndexLockedError:
        result.skipped_reason = "nav index is writing the index now; searched what it holds so far"
        return result
    present = set(changed)
    result.refreshed = [p for p in changed if (root / p).exists()]
    result.deleted = [p for p in present if not (root / p).exists()]
    if summary.chunks and embed_in_background:
        result.embedding = start_background_embedding(root, config)
    result.seconds = time.monotonic() - started
    return result


def refresh_repository(repo: str | Path | None, config: Config | None = None) -> RefreshResult | None:
    """`nav search --refresh`, `nav context --refresh`: the files changed since the build, refreshed; None when
    there is no index to refresh (the search then says so itself)."""
    from navigator.core.errors import IndexMissingError
    from navigator.index.nav_index import NavIndex, resolve_repo
    from navigator.index.walk import diff_tree
    config = config or Config.from_env()
    root = resolve_repo(repo)
    try:
        index = NavIndex.open(root, config, check_embedder=False)
    except IndexMissingError:
        return None
    try:
        changed = diff_tree(root, index.conn, index.manifest.get("skip") or [], config)
    finally:
        index.conn.close()
    return refresh(root, config, changed)


_background: dict[Path, subprocess.Popen] = {}
_background_lock = threading.Lock()


def start_background_embedding(root: Path, config: Config) -> str:
    """A detached `nav index ROOT` (it embeds only what has no vector yet); one at a time per index."""
    index_dir = config.index_dir_for(root)
    with _background_lock:
        running = _background.get(index_dir)
        if running is not None and running.poll() is None:
            return "running"
        env = {**os.environ, **{k: v for k, v in config.extra.items()}}
        if config.index_dir is not None:
            env["NAV_INDEX_DIR"] = str(config.index_dir)
        _background[index_dir] = subprocess.Popen(
            [sys.executable, "-m", "navigator", "index", str(root)], env=env, cwd=str(root),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True)
        return "started"


def wait_for_background(timeout: float = 120) -> None:
    """Tests and a closing server: let the background embedders finish."""
    with _background_lock:
        processes = list(_background.values())
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()


class TreeWatcher:
    """The paths that changed under a tree since the last `take()`, noticed without walking the tree.

    watchfiles (Rust's notify: inotify on Linux) runs in a daemon thread and collects paths; `changed_since`
    says whether anything at all happened, which is what a query needs to know before deciding to check the
    index against the tree. When watchfiles cannot start (an unsupported file system, no inotify watches
    left) `healthy` is False and callers fall back to nav's stat walk, which is always right, only slower.
    """

    def __init__(self, root: Path, ignored: tuple[Path, ...] = ()):
        self.root = root.resolve()
        self.ignored = tuple(p.resolve() for p in ignored)
        self._paths: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.healthy = True
        self.events = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nav-watch", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=5)

    def _wanted(self, path: str) -> bool:
        resolved = Path(path)
        if any(resolved == p or p in resolved.parents for p in self.ignored):
            return False
        try:
            parts = resolved.relative_to(self.root).parts
        except ValueError:
            return False
        return not any(part in IGNORED_DIRS for part in parts)

    def _run(self) -> None:
        try:
            import logging
            logging.getLogger("watchfiles").setLevel(logging.WARNING)   # it logs every change at INFO
            from watchfiles import watch
            first = True
            for changes in watch(self.root, stop_event=self._stop, watch_filter=lambda _c, p: self._wanted(p),
                                 yield_on_timeout=True, rust_timeout=200, debounce=WATCH_DEBOUNCE_MS, step=10,
                                 raise_interrupt=False):
                if first:
                    self._ready.set()
                    first = False
                if not changes:
                    continue
                with self._lock:
                    for _change, path in changes:
                        self._paths.add(Path(path).relative_to(self.root).as_posix())
                    self.events += len(changes)
        except Exception:   # the watcher is an optimisation: any failure means "ask the file system"
            self.healthy = False
        finally:
            self._ready.set()

    def take(self) -> set[str]:
        """The paths changed since the last take (relative, '/'-separated), and forget them."""
        with self._lock:
            paths, self._paths = self._paths, set()
        return paths

    def pending(self) -> bool:
        with self._lock:
            return bool(self._paths)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
