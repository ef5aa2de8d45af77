"""Noticing damage to an index, saying what to do, and repairing what nav can rebuild itself.

nav.db is the source of truth of an index; everything else under <index_dir> is derived from it and is
rebuilt by a plain `nav index` (no re-embedding: vectors come from nav.db's cache):

    chroma/      missing, unopenable, or holding another number of vectors than nav.db has chunks
                 -> dropped and synced again from nav.db (navigator.index.vector_store.sync_chroma)
    onnx/        a model.onnx whose size or sha256 differs from what the export recorded
                 -> not loaded (queries use sentence-transformers) and exported again by `nav index`
    bm25/        missing or of another generation -> rebuilt in memory by a query, written by `nav index`

nav.db itself cannot be rebuilt from itself: its source is the repository, so a damaged nav.db is an
IndexCorruptError whose hint is `nav index PATH --rebuild`. `PRAGMA quick_check` reads every page (measured
here: 0.33 s for a 126 MB database, 60k rows of 1.5 KB vectors, warm page cache), too slow for every search,
so it runs in `nav status`; elsewhere SQLite's own "database disk image is malformed" is the detector, and
every sqlite3.DatabaseError no stage expected becomes this error (database_error, called by the CLI's and
the MCP server's one translation point).

A .nav on a read-only file system (or not writable by this user) is an IndexReadOnlyError for
`nav index`, not "corrupt"; searches open nav.db read-only and keep working.
"""
from __future__ import annotations

import errno
import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

from navigator.core.errors import IndexCorruptError, IndexReadOnlyError

CHROMA_FILE = "chroma.sqlite3"
REBUILD_HINT = "rebuild it: nav index PATH --rebuild (the index is derived data; nothing of yours is lost)"
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def chroma_missing(chroma_dir: Path) -> bool:
    """True when the embedded vector store's database file is gone (deleted by hand, or never synced).
    (This module imports nothing of the index it checks: store, vector_store and onnx_query call into it.)"""
    return not (Path(chroma_dir) / CHROMA_FILE).is_file()


# What nav.db looked like (size and mtime of it and its WAL) when the last `nav index` run closed it after a
# clean quick_check or its own writes: a run that finds it so skips the check (0.44 s at django's 320 MB).
# Any write since, by nav or anything else, changes the stamp and the check runs; damage that changes neither
# size nor mtime (a failing disk) is left to SQLite's own errors, as for searches.
VERIFIED_STAMP = "verified.json"


def _db_stamp(index_dir: Path) -> list:
    out = []
    for name in ("nav.db", "nav.db-wal"):
        try:
            st = os.stat(Path(index_dir) / name)
            out.append([st.st_size, st.st_mtime_ns])
        except FileNotFoundError:
            out.append(None)
    return out


def unchanged_since_verified(index_dir: Path) -> bool:
    """Whether nav.db is exactly as the last run that verified it left it (VERIFIED_STAMP)."""
    try:
        recorded = json.loads((Path(index_dir) / VERIFIED_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return recorded == _db_stamp(index_dir)


def record_verified(index_dir: Path) -> None:
    """Called after a run that checked (or wrote) nav.db closed its connection."""
    try:
        (Path(index_dir) / VERIFIED_STAMP).write_text(json.dumps(_db_stamp(index_dir)), encoding="utf-8")
    except OSError:
        pass   # a read-only index: the next run checks again


def forget_verified(index_dir: Path) -> None:
    try:
        (Path(index_dir) / VERIFIED_STAMP).unlink()
    except OSError:
        pass


def quick_check(conn: sqlite3.Connection) -> str | None:
    """None when SQLite's quick_check finds nav.db sound, else its first complaint."""
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if rows and rows[0][0] == "ok":
        return None
    return "; ".join(str(r[0]) for r in rows[:3]) or "quick_check returned nothing"


def corrupt_database(db_path: Path | str, exc: BaseException | str) -> IndexCorruptError:
    return IndexCorruptError(f"the index database {db_path} is damaged ({exc})", hint=REBUILD_HINT)


def is_read_only_error(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in READ_ONLY_ERRNOS
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "readonly" in text or "read-only" in text
    return False


def read_only_error(index_dir: Path | str, exc: BaseException | None = None) -> IndexReadOnlyError:
    why = f" ({exc})" if exc is not None else ""
    return IndexReadOnlyError(f"cannot write to {index_dir}: it is read-only{why}",
                              hint="searches still work on the index as it is; to update it, make the folder "
                                   "writable (or set NAV_INDEX_DIR to a writable place) and run `nav index PATH`")


def writable(index_dir: Path) -> bool:
    """Whether this process can create files in index_dir (the lock, nav.db's WAL files)."""
    return os.access(index_dir, os.W_OK)


@contextmanager
def database_errors(db_path: Path | str):
    """Every sqlite3.DatabaseError inside becomes a typed NavError: corrupt (with `--rebuild`), or read-only."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if is_read_only_error(exc):
            raise read_only_error(Path(db_path).parent, exc) from exc
        raise corrupt_database(db_path, exc) from exc


def database_error(exc: sqlite3.DatabaseError, db_path: Path | str | None = None):
    """The NavError for a sqlite3 error no stage caught: read-only, or a damaged index database."""
    where = db_path or "nav.db"
    if is_read_only_error(exc):
        return read_only_error(Path(db_path).parent if db_path else ".nav", exc)
    return IndexCorruptError(f"the index database ({where}) is damaged or unreadable ({exc})", hint=REBUILD_HINT)
