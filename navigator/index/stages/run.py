"""The facts of one `nav index` run that every stage reads."""
from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from navigator.core.config import Config


@dataclass
class IndexRun:
    repo_root: Path
    index_dir: Path
    config: Config
    conn: sqlite3.Connection
    embedder: object                  # navigator.index.embedder.Embedder (loads its model lazily)
    server: object                    # vector_store.ChromaServer, or None for the embedded store
    summary: object                   # indexer.IndexSummary, filled in as the stages run
    manifest: dict                    # the previous run's manifest ({} on a first run)
    progress_stream: object = None
    embed_fn: Callable | None = None
    skip_rules: list[str] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)


def crash_point(name: str) -> None:
    """Die here by SIGKILL when NAV_TEST_KILL_AT names this point: the crash-safety tests kill a run at an
    exact stage boundary instead of racing a poll loop against it."""
    import os
    if os.environ.get("NAV_TEST_KILL_AT") == name:
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
