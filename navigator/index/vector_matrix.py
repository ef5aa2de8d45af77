"""The vector head's matrix on disk, memory-mapped by readers: what a cold exact search needs without reading every
vector out of nav.db (issue 25, part 4).

    <index_dir>/vectors/<generation>/matrix.npy   float32, one L2-normalised row per chunk: the base
                                     ids.npy      the base rows' chunk ids (20 ASCII bytes each), same order
                                     delta.npy    rows added since the base was written (may be absent)
                                     delta_ids.npy
                                     dead.npy     int64, the base rows whose chunks are gone (may be absent)
                                     meta.json    embedder, generation, rows (live), base_rows, delta_rows, NAV_EMBED_ALL

An incremental run keeps the previous generation's base (a hard link: the file is never written in place) and
writes only the delta and the dead list, kilobytes for a one-file change where rewriting django's 98 MB base
took 0.45 s at this disk's speed. When delta and dead rows pass an eighth of the base, the run writes a new
base (the kept rows copied file to file by the kernel), so a search never scores many rows it throws away.
Each folder is written in a temporary folder renamed into place: a folder under vectors/ is always whole.
nav.db stays the source of truth: a reader that finds no matrix for the index's generation and embedder (an
index built before this file existed, a run killed while embedding, a partial vector head) reads nav.db.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from navigator.index import store

if TYPE_CHECKING:
    import sqlite3

    import numpy as np

VECTORS_DIR = "vectors"
MATRIX_FILE, IDS_FILE, META_FILE = "matrix.npy", "ids.npy", "meta.json"
DELTA_FILE, DELTA_IDS_FILE, DEAD_FILE = "delta.npy", "delta_ids.npy", "dead.npy"
ID_BYTES = 20
# A new base once delta plus dead rows pass this share of it: below it a search scores at most 1/8 more rows
# than it keeps, and a one-file change writes kilobytes; above it the rewrite (~0.5 s at 79k rows) pays off.
REBASE_SHARE = 8


@dataclass
class VectorRows:
    """A generation's unit vectors as a search scores them: the base rows, then the delta rows; `ids[i]` is row
    i's chunk, and a dead base row (its chunk gone since the base was written) scores -inf."""
    ids: list[str]
    base: "np.ndarray"
    delta: "np.ndarray | None" = None
    dead: "np.ndarray | None" = None

    @property
    def live(self) -> int:
        return len(self.ids) - (0 if self.dead is None else len(self.dead))

    def scores(self, unit_query: "np.ndarray") -> "np.ndarray":
        import numpy as np
        scores = self.base @ unit_query
        if self.delta is not None and len(self.delta):
            scores = np.concatenate([scores, self.delta @ unit_query])
        if self.dead is not None and len(self.dead):
            scores[self.dead] = -np.inf
        return scores

    def top(self, unit_query: "np.ndarray", k: int) -> list[tuple[str, float]]:
        """The k best live rows as (chunk id, cosine), best first, ties by id."""
        import numpy as np
        k = min(k, self.live)
        if k <= 0:
            return []
        scores = self.scores(unit_query)
        # Every row tied with the k-th best is kept, so which tied rows make the cut is decided by their ids
        # and not by where the rows sit (a base and a delta lay the same rows out differently).
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        ranked = sorted((-float(scores[i]), self.ids[i]) for i in np.flatnonzero(scores >= kth).tolist())[:k]
        return [(cid, -negative) for negative, cid in ranked]

    def live_rows(self) -> dict[str, int]:
        """Each live row's chunk id -> its row, in row order."""
        dead = self.dead_rows
        return {cid: row for row, cid in enumerate(self.ids) if row not in dead}

    def vector(self, row: int) -> "np.ndarray":
        base = len(self.base)
        return self.base[row] if row < base else self.delta[row - base]

    @functools.cached_property
    def dead_rows(self) -> frozenset[int]:
        return frozenset() if self.dead is None else frozenset(self.dead.tolist())


def _dir(index_dir: Path, generation: int) -> Path:
    return index_dir / VECTORS_DIR / str(int(generation))


def load_matrix(index_dir: Path, generation: int, identity: str, embed_all: bool) -> VectorRows | None:
    """The rows memory-mapped, for this generation, embedder and embed rule; else None (read nav.db)."""
    try:
        meta = json.loads((_dir(index_dir, generation) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or \
            (meta.get("embedder"), meta.get("generation"), meta.get("embed_all")) != (identity, generation, embed_all):
        return None
    return _read(_dir(index_dir, generation), meta)


def _read(folder: Path, meta: dict) -> VectorRows | None:
    """The folder's rows, or None when any file disagrees with its meta.json or cannot be read."""
    import numpy as np
    try:
        rows, base_rows, delta_rows = int(meta["rows"]), int(meta.get("base_rows", meta["rows"])), \
            int(meta.get("delta_rows", 0))
        base = np.load(folder / MATRIX_FILE, mmap_mode="r", allow_pickle=False)
        ids = [i.decode("ascii") for i in np.load(folder / IDS_FILE, allow_pickle=False).tolist()]
        delta = dead = None
        if delta_rows:
            delta = np.load(folder / DELTA_FILE, mmap_mode="r", allow_pickle=False)
            ids += [i.decode("ascii") for i in np.load(folder / DELTA_IDS_FILE, allow_pickle=False).tolist()]
            if delta.ndim != 2 or len(delta) != delta_rows or delta.shape[1] != base.shape[1]:
                return None
        if base_rows + delta_rows != rows:
            dead = np.load(folder / DEAD_FILE, allow_pickle=False)
            if dead.dtype != np.int64 or dead.ndim != 1 or base_rows - len(np.unique(dead)) + delta_rows != rows \
                    or (len(dead) and (dead.min() < 0 or dead.max() >= base_rows)):
                return None
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    if base.ndim != 2 or len(base) != base_rows or len(ids) != base_rows + delta_rows:
        return None
    return VectorRows(ids, base, delta, dead)


def write_matrix(index_dir: Path, conn: "sqlite3.Connection", generation: int, identity: str, embed_all: bool,
                 changes: tuple[set[str], set[str]] | None = None) -> int:
    """The rows of this generation's embedded chunks (the embed rule's, this embedder's), written into a new
    folder renamed into place: the previous generation's base kept with a delta beside it, or a new base
    (REBASE_SHARE); older generations' folders removed. Returns its live rows. `changes`: the chunk ids
    (removed, added) since the generation before; when that generation's matrix is the newest, this one's
    chunks are its rows with those applied (no pass over every chunk: 0.15 s at 79k)."""
    import numpy as np
    from navigator.index.embed_rule import embed_excluded
    newest = _newest(index_dir, identity, embed_all)
    previous = newest[1] if newest else None
    held = previous.live_rows() if previous is not None else {}
    if changes is not None and newest is not None and newest[0].name == str(generation - 1):
        removed, added = changes
        current = sorted((held.keys() - removed) | {cid for cid, path in store.select_where_in(
            conn, "SELECT id, path FROM chunks", "id", sorted(added)) if embed_all or not embed_excluded(path)})
    else:
        # The (path, id) covering index, not the table: 0.05 s at 79k chunks where reading the rows' texts took
        # 0.3 s. A chunk id fixes its text, so a row the previous matrix holds under that id holds this vector.
        current = sorted(cid for path, cid in conn.execute("SELECT path, id FROM chunks")
                         if embed_all or not embed_excluded(path))
    missing = [cid for cid in current if cid not in held]
    fetched = {cid: np.frombuffer(vector, dtype=np.float32) for cid, vector in store.select_where_in(
        conn, store.CHUNK_VECTORS, "c.id", missing, (identity,))} if missing else {}
    ids = [cid for cid in current if cid in held or cid in fetched]     # a chunk without a vector stays out
    fresh = {cid: (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32) for cid, v in fetched.items()}
    root = index_dir / VECTORS_DIR
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=root))
    try:
        meta = {"embedder": identity, "generation": generation, "rows": len(ids), "embed_all": embed_all}
        base_rows = len(previous.base) if previous is not None else 0
        keep = set(ids)
        # Set operations, not a walk over every row: a base row dies when its chunk is gone, and stays dead
        # when the chunk comes back (it returns as a delta row, being fresh).
        gone = held.keys() - keep
        dead_base = sorted(previous.dead_rows | {held[cid] for cid in gone if held[cid] < base_rows}) \
            if previous is not None else []
        delta_ids = sorted([cid for cid in previous.ids[base_rows:] if cid in keep] + list(fresh)) \
            if previous is not None else []
        if previous is not None and len(dead_base) + len(delta_ids) <= base_rows // REBASE_SHARE:
            meta |= _write_delta(staging, newest[0], previous, held, dead_base, delta_ids, fresh)
        else:
            meta |= _write_base(staging, ids, previous, held, fresh)
        (staging / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
        target = _dir(index_dir, generation)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for old in root.iterdir():
        if old.name != str(int(generation)):
            shutil.rmtree(old, ignore_errors=True)
    return len(ids)


def _write_delta(staging: Path, base_folder: Path, previous: VectorRows, held: dict, dead_base: list,
                 delta_ids: list, fresh: dict) -> dict:
    """The previous base hard-linked (copied where the file system has no links), the delta rows (the previous
    delta's kept rows and the fresh ones, in id order) and the dead base rows written beside it."""
    import numpy as np
    for name in (MATRIX_FILE, IDS_FILE):
        try:
            os.link(base_folder / name, staging / name)
        except OSError:
            shutil.copyfile(base_folder / name, staging / name)
    dim = previous.base.shape[1]
    delta = np.stack([fresh[cid] if cid in fresh else previous.vector(held[cid]) for cid in delta_ids]) \
        if delta_ids else np.zeros((0, dim), np.float32)
    np.save(staging / DELTA_FILE, delta.astype(np.float32, copy=False), allow_pickle=False)
    np.save(staging / DELTA_IDS_FILE, np.array([c.encode("ascii") for c in delta_ids], dtype=f"S{ID_BYTES}"),
            allow_pickle=False)
    np.save(staging / DEAD_FILE, np.array(dead_base, dtype=np.int64), allow_pickle=False)
    return {"base_rows": len(previous.base), "delta_rows": len(delta_ids)}


def _write_base(staging: Path, ids: list, previous: VectorRows | None, held: dict, fresh: dict) -> dict:
    """A new base of every live row in id order: the previous base's rows copied by the kernel, the previous
    delta's and the fresh ones written."""
    import numpy as np
    base_rows = len(previous.base) if previous is not None else 0
    source = np.fromiter((row if (row := held.get(cid, -1)) < base_rows else -1 for cid in ids),
                         dtype=np.int64, count=len(ids))
    rows = {row: fresh[ids[row]] if ids[row] in fresh else previous.vector(held[ids[row]])
            for row in np.flatnonzero(source < 0).tolist()}
    dim = previous.base.shape[1] if previous is not None else (len(next(iter(fresh.values()))) if fresh else 0)
    _write_matrix_file(staging / MATRIX_FILE, dim, source, previous.base if previous is not None else None, rows)
    np.save(staging / IDS_FILE, np.array([cid.encode("ascii") for cid in ids], dtype=f"S{ID_BYTES}"),
            allow_pickle=False)
    return {"base_rows": len(ids), "delta_rows": 0}


def _write_matrix_file(path: Path, dim: int, source, previous, fresh: dict) -> None:
    """matrix.npy with one row per entry of `source`: the previous matrix's row source[i], or fresh[i] where
    source[i] is -1. Runs of rows the previous file holds in the same order (all but a few in an incremental
    run: both are in id order) are copied file to file by the kernel, so no page of the ~100 MB passes
    through this process; a gather from the memory map faulted every page in (0.6 s at 64k rows)."""
    import numpy as np
    rows, row_bytes = len(source), dim * 4
    reused = source >= 0
    # A run starts where a row is fresh, or reused but not the row after its predecessor's source.
    continues = np.zeros(rows, dtype=bool)
    if rows > 1:
        continues[1:] = reused[1:] & reused[:-1] & (source[1:] == source[:-1] + 1)
    starts = np.flatnonzero(~continues).tolist() + [rows]
    with open(path, "wb") as out:
        np.lib.format.write_array_header_1_0(out, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                                                  "fortran_order": False, "shape": (rows, dim)})
        base, fd = out.tell(), out.fileno()
        with open(previous.filename, "rb") if previous is not None else contextlib.nullcontext() as old:
            for start, end in zip(starts, starts[1:]):
                if reused[start]:
                    _copy_range(old.fileno(), fd, (end - start) * row_bytes,
                                previous.offset + int(source[start]) * row_bytes, base + start * row_bytes)
                else:
                    os.pwrite(fd, b"".join(fresh[row].tobytes() for row in range(start, end)), base + start * row_bytes)
        out.truncate(base + rows * row_bytes)


def _copy_range(src: int, dst: int, count: int, src_at: int, dst_at: int) -> None:
    """`count` bytes from src_at in src to dst_at in dst: os.copy_file_range where the kernel has it, else
    read and write in 8 MB pieces."""
    while count > 0:
        try:
            done = os.copy_file_range(src, dst, count, src_at, dst_at)
        except (AttributeError, OSError):
            done = os.pwrite(dst, os.pread(src, min(count, 8 << 20), src_at), dst_at)
        if done <= 0:
            raise OSError(f"copying the previous vector matrix stopped {count} bytes short")
        count, src_at, dst_at = count - done, src_at + done, dst_at + done


def _newest(index_dir: Path, identity: str, embed_all: bool) -> tuple[Path, VectorRows] | None:
    """The most recent whole matrix of this embedder and embed rule (any generation): the base the next one is
    built on."""
    root = index_dir / VECTORS_DIR
    if not root.is_dir():
        return None
    for folder in sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: -int(p.name)):
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(meta, dict) or meta.get("embedder") != identity or meta.get("embed_all") != embed_all:
            continue
        rows = _read(folder, meta)
        if rows is not None:
            return folder, rows
    return None


def has_matrix(index_dir: Path, generation: int) -> bool:
    return (_dir(index_dir, generation) / META_FILE).is_file()


def delete_matrices(index_dir: Path) -> None:
    """Every matrix gone: a new nav.db restarts generations at 1, and an old vectors/1 must not pass for its."""
    shutil.rmtree(index_dir / VECTORS_DIR, ignore_errors=True)
