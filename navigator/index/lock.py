"""The one-writer lock of an index (<index_dir>/lock), and how a reader tells that a build is running."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from navigator.core.errors import IndexLockedError

LOCK_NAME = "lock"


class IndexLock:
    """An exclusive flock on <index_dir>/lock. The kernel drops it when the holder dies, even by kill -9.
    The file holds the holder's pid while it runs and is emptied on a clean exit, so a reader can tell
    a build in progress (building_pid) without touching the lock in the common case."""

    def __init__(self, index_dir: Path):
        self.path = index_dir / LOCK_NAME
        self.fd: int | None = None

    def __enter__(self):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            from navigator.index.repair import is_read_only_error, read_only_error
            if is_read_only_error(exc):
                raise read_only_error(self.path.parent, exc) from exc
            raise
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(self.fd)
            raise IndexLockedError(f"another `nav index` (pid {holder}) is writing {self.path.parent}",
                                   hint="wait for it to finish; searches keep working on the previous index meanwhile")
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode(), 0)
        return self

    def __exit__(self, *exc):
        os.ftruncate(self.fd, 0)
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def building_pid(index_dir: Path) -> int | None:
    """The pid of a `nav index` writing this index now, or None. A pid left by a killed run is dead (or,
    reused, holds no lock): only a live pid is checked against the lock itself, with a shared probe that
    fails while the writer holds it."""
    path = index_dir / LOCK_NAME
    try:
        pid = int(path.read_text(errors="replace").strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    if pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass   # alive, another user's
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return pid
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
