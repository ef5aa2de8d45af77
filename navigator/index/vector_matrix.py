"""The vector head's matrix on disk, memory-mapped by readers: what a cold exact search needs without reading every
vector out of nav.db (issue 25, part 4).

    <index_dir>/vectors/<generation>/matrix.npy   float32, one L2-normalised row per embedded chunk, by chunk id
                                     ids.npy      the chunk ids (20 ASCII bytes each), in the same order
                                     meta.json    embedder, generation, rows, NAV_EMBED_ALL

Written by `nav index` once the vector head of a generation is complete (from the previous matrix plus the
vectors of the chunks that are new, so a one-file change rewrites the file but reads only its new rows from
nav.db), into a temporary folder renamed into place: a folder under vectors/ is always whole. nav.db stays
the source of truth: a reader that finds no matrix for the index's generation and embedder (an index built
before this file existed, a run killed while embedding, a partial vector head) reads nav.db as before.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from navigator.index import store

if TYPE_CHECKING:
    import sqlite3

VECTORS_DIR = "vectors"
MATRIX_FILE, IDS_FILE, META_FILE = "matrix.npy", "ids.npy", "meta.json"
ID_BYTES = 20


def _dir(index_dir: Path, generation: int) -> Path:
    return index_dir / VECTORS_DIR / str(int(generation))


def load_matrix(index_dir: Path, generation: int, identity: str, embed_all: bool):
    """(ids, matrix) memory-mapped, for this generation, embedder and embed rule; else None (read nav.db)."""
    import numpy as np
    folder = _dir(index_dir, generation)
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        if (meta.get("embedder"), meta.get("generation"), meta.get("embed_all")) != (identity, generation, embed_all):
            return None
        rows = int(meta["rows"])
        matrix = np.load(folder / MATRIX_FILE, mmap_mode="r", allow_pickle=False)
        ids = np.load(folder / IDS_FILE, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if matrix.ndim != 2 or len(matrix) != rows or len(ids) != rows:
        return None
    return [i.decode("ascii") for i in ids.tolist()], matrix


def write_matrix(index_dir: Path, conn: "sqlite3.Connection", generation: int, identity: str, embed_all: bool) -> int:
    """The matrix of this generation's embedded chunks (the embed rule's, this embedder's), written into a new
    folder renamed into place (the previous matrix's rows copied by the kernel: _write_matrix_file); older
    generations' folders removed. Returns its rows."""
    import numpy as np
    from navigator.index.embed_rule import embed_excluded
    # Two plain scans and a set, not a join in id order: the join walks the chunks table (texts and token
    # lists, ~100 MB at 79k chunks) in index order, 0.7 s there against 0.3 s for this. Chunk ids are ASCII
    # hex, so Python's sort is SQLite's BINARY order.
    embedded = {h for (h,) in conn.execute("SELECT content_hash FROM embeddings WHERE model = ?", (identity,))}
    ids = sorted(cid for cid, path, content_hash in conn.execute("SELECT id, path, content_hash FROM chunks")
                 if content_hash in embedded and (embed_all or not embed_excluded(path)))
    previous = _newest(index_dir, identity, embed_all)
    at = {cid: i for i, cid in enumerate(previous[0])} if previous else {}
    source = np.fromiter((at.get(cid, -1) for cid in ids), dtype=np.int64, count=len(ids))
    fresh_rows = np.flatnonzero(source < 0).tolist()
    missing = [ids[row] for row in fresh_rows]
    fetched = {cid: np.frombuffer(vector, dtype=np.float32) for cid, vector in store.select_where_in(
        conn, "SELECT c.id, e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash", "c.id",
        missing)} if missing else {}
    dim = previous[1].shape[1] if previous else (len(next(iter(fetched.values()))) if fetched else 0)
    fresh = {row: (fetched[ids[row]] / max(float(np.linalg.norm(fetched[ids[row]])), 1e-12)).astype(np.float32)
             for row in fresh_rows}
    root = index_dir / VECTORS_DIR
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=root))
    try:
        _write_matrix_file(staging / MATRIX_FILE, dim, source, previous[1] if previous else None, fresh)
        np.save(staging / IDS_FILE, np.array([cid.encode("ascii") for cid in ids], dtype=f"S{ID_BYTES}"),
                allow_pickle=False)
        (staging / META_FILE).write_text(json.dumps({"embedder": identity, "generation": generation,
                                                     "rows": len(ids), "embed_all": embed_all}), encoding="utf-8")
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


def _newest(index_dir: Path, identity: str, embed_all: bool):
    """The most recent whole matrix of this embedder (any generation): the base the next one is built on."""
    import numpy as np
    root = index_dir / VECTORS_DIR
    if not root.is_dir():
        return None
    for folder in sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: -int(p.name)):
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
            if meta.get("embedder") != identity or meta.get("embed_all") != embed_all:
                continue
            ids = [i.decode("ascii") for i in np.load(folder / IDS_FILE, allow_pickle=False).tolist()]
            return ids, np.load(folder / MATRIX_FILE, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            continue
    return None


def has_matrix(index_dir: Path, generation: int) -> bool:
    return (_dir(index_dir, generation) / META_FILE).is_file()


def delete_matrices(index_dir: Path) -> None:
    """Every matrix gone: a new nav.db restarts generations at 1, and an old vectors/1 must not pass for its."""
    shutil.rmtree(index_dir / VECTORS_DIR, ignore_errors=True)
