"""The vector head's memory-mapped matrix (navigator.index.vector_matrix): written whole by `nav index` once a
generation's vectors are complete, read by a cold exact search, and never trusted when it does not belong to
the index's generation, embedder or embed rule."""
from __future__ import annotations

import json

import numpy as np
import pytest

from navigator.core.config import Config
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from navigator.index.vector_matrix import META_FILE, VECTORS_DIR, load_matrix
from tests.repo_factory import make_repo, write

QUERY = "compute a scaled value"


def _build(root, **kw):
    return build_index(root.resolve(), Config.from_env(), **kw)


def _generations(index_dir):
    return sorted(p.name for p in (index_dir / VECTORS_DIR).iterdir())


def _from_db(root, query: str, k: int):
    """The ranking read from nav.db's cache, with the matrix hidden."""
    index = NavIndex.open(root)
    folder = index.index_dir / VECTORS_DIR
    hidden = folder.with_name("hidden-vectors")
    folder.rename(hidden)
    try:
        return NavIndex.open(root).vector_search(query, k)
    finally:
        hidden.rename(folder)


def test_a_complete_index_writes_the_matrix_and_searches_it_as_nav_db_would(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=6)
    _build(root)
    index = NavIndex.open(root)
    mapped = load_matrix(index.index_dir, index.generation, index.manifest["embedder"], False)
    assert mapped is not None
    ids, matrix = mapped
    assert isinstance(matrix, np.memmap) and len(ids) == index.vector_count == matrix.shape[0]
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert not any(i.endswith(".csv") for i in ids)          # the embed rule: data files stay lexical
    got = index.vector_search(QUERY, 10)
    assert isinstance(index._matrix[2], np.memmap)           # this search read the file, not nav.db
    expected = _from_db(root, QUERY, 10)
    assert [c for c, _ in got] == [c for c, _ in expected]
    assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-6)


def test_a_one_file_change_writes_the_next_generation_and_finds_the_new_chunk(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=6)
    _build(root)
    before = NavIndex.open(root)
    first, embedded = before.generation, before.vector_count
    assert _generations(before.index_dir) == [str(first)]
    _build(root)                                             # nothing changed: same generation, same file
    assert _generations(before.index_dir) == [str(first)]
    write(root, "pkg/weather.py", "def barometric_pressure_trend(readings):\n    return readings[-1] - readings[0]\n")
    _build(root)
    after = NavIndex.open(root)
    assert after.generation == first + 1 and _generations(after.index_dir) == [str(first + 1)]
    ids, matrix = load_matrix(after.index_dir, after.generation, after.manifest["embedder"], False)
    assert len(ids) == after.vector_count == embedded + 1
    joined = [r[0] for r in after.conn.execute(
        "SELECT c.id FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash WHERE e.model = ? "
        "ORDER BY c.id", (after.manifest["embedder"],))]
    paths = after.chunk_paths()
    assert ids == [c for c in joined if not paths[c].endswith(".csv")]   # the join's ids and order, rule applied
    new = [c for c, p in paths.items() if p == "pkg/weather.py"]
    assert len(new) == 1 and new[0] in ids
    (vector,), = after.conn.execute("SELECT e.vector FROM chunks c JOIN embeddings e ON e.content_hash = "
                                    "c.content_hash WHERE c.id = ?", (new[0],)).fetchall()
    vector = np.frombuffer(vector, dtype=np.float32)
    assert np.allclose(matrix[ids.index(new[0])], vector / np.linalg.norm(vector), atol=1e-6)
    hits = after.vector_search("barometric pressure trend of readings", 3)
    assert [c for c, _ in hits] == [c for c, _ in _from_db(root, "barometric pressure trend of readings", 3)]


def test_a_matrix_that_does_not_belong_is_ignored(tmp_path, nav_env, monkeypatch):
    root = make_repo(tmp_path / "repo", modules=4)
    _build(root)
    index = NavIndex.open(root)
    folder = index.index_dir / VECTORS_DIR / str(index.generation)
    expected = _from_db(root, QUERY, 8)
    identity = index.manifest["embedder"]
    assert load_matrix(index.index_dir, index.generation + 1, identity, False) is None   # another generation
    assert load_matrix(index.index_dir, index.generation, "another-model", False) is None
    assert load_matrix(index.index_dir, index.generation, identity, True) is None        # NAV_EMBED_ALL=1
    meta = json.loads((folder / META_FILE).read_text())
    (folder / META_FILE).write_text(json.dumps(meta | {"rows": meta["rows"] + 1}))
    assert load_matrix(index.index_dir, index.generation, identity, False) is None       # rows disagree
    (folder / META_FILE).write_text(json.dumps(meta))
    (folder / "matrix.npy").write_bytes(b"\x93NUMPY garbage")
    assert load_matrix(index.index_dir, index.generation, identity, False) is None       # damaged file
    got = NavIndex.open(root).vector_search(QUERY, 8)
    assert [c for c, _ in got] == [c for c, _ in expected]
    (folder / META_FILE).write_text("{not json")
    assert [c for c, _ in NavIndex.open(root).vector_search(QUERY, 8)] == [c for c, _ in expected]


def test_a_partial_head_writes_no_matrix_and_rebuild_removes_old_ones(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=4)
    _build(root)
    index_dir = NavIndex.open(root).index_dir
    write(root, "pkg/late.py", "def arrives_late():\n    return 'late'\n")
    _build(root, embed_vectors=False)                        # lexical only: the head is partial
    partial = NavIndex.open(root)
    assert partial.vectors_partial and _generations(index_dir) == [str(partial.generation - 1)]
    hits = partial.vector_search(QUERY, 5)                   # read from nav.db: the old matrix is not this one's
    assert hits and all(c in partial.chunk_paths() for c, _ in hits)
    _build(root)                                             # the rest embedded: the matrix of this generation
    assert _generations(index_dir) == [str(NavIndex.open(root).generation)]
    (index_dir / VECTORS_DIR / "99").mkdir()
    _build(root, rebuild=True)                               # generations restart: nothing old survives
    assert _generations(index_dir) == [str(NavIndex.open(root).generation)]


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_the_matrix_file_copies_reused_rows_and_writes_fresh_ones(tmp_path, monkeypatch, kernel_copy):
    """Rows reused in runs (kept in order, some dropped, the order broken once) and fresh rows between them:
    the file np.load reads back is the gather of the previous rows plus the fresh ones, with the kernel's
    copy_file_range and with the read/write fallback."""
    from navigator.index.vector_matrix import _write_matrix_file
    rng = np.random.default_rng(3)
    old = rng.standard_normal((40, 8)).astype(np.float32)
    np.save(tmp_path / "old.npy", old)
    previous = np.load(tmp_path / "old.npy", mmap_mode="r")
    source = np.array([0, 1, 2, -1, -1, 5, 6, 7, 3, 4, -1] + list(range(20, 40)) + [-1], dtype=np.int64)
    fresh = {i: rng.standard_normal(8).astype(np.float32) for i in np.flatnonzero(source < 0).tolist()}
    if not kernel_copy:
        def refuse(*_):
            raise OSError(38, "copy_file_range not supported")
        monkeypatch.setattr("os.copy_file_range", refuse)
    _write_matrix_file(tmp_path / "new.npy", 8, source, previous, fresh)
    got = np.load(tmp_path / "new.npy", allow_pickle=False)
    expected = np.stack([old[s] if s >= 0 else fresh[i] for i, s in enumerate(source.tolist())])
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    _write_matrix_file(tmp_path / "first.npy", 8, np.full(3, -1, dtype=np.int64), None, {i: old[i] for i in range(3)})
    assert np.array_equal(np.load(tmp_path / "first.npy"), old[:3])                 # a first build: no previous
