"""The vector head's memory-mapped matrix (navigator.index.vector_matrix): written by `nav index` once a
generation's vectors are complete (a base, and after a small change the previous base kept with a delta and
a dead list beside it), read by a cold exact search as nav.db would rank, and never trusted when it does not
belong to the index's generation, embedder or embed rule."""
from __future__ import annotations

import json

import numpy as np
import pytest

from navigator.core.config import Config
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from navigator.index.vector_matrix import MATRIX_FILE, META_FILE, VECTORS_DIR, load_matrix
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
    assert mapped is not None and mapped.delta is None       # a first build writes a base alone
    ids, matrix = mapped.ids, mapped.base
    assert isinstance(matrix, np.memmap) and len(ids) == index.vector_count == matrix.shape[0] == mapped.live
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    paths = index.chunk_paths()
    assert not any(paths[i].endswith(".csv") for i in ids)   # the embed rule: data files stay lexical
    got = index.vector_search(QUERY, 10)
    assert isinstance(index._matrix[1].base, np.memmap)      # this search read the file, not nav.db
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
    rows = load_matrix(after.index_dir, after.generation, after.manifest["embedder"], False)
    assert rows.live == after.vector_count == embedded + 1
    assert rows.delta is not None and len(rows.delta) == 1   # the base kept, the new chunk beside it
    assert sorted(rows.live_rows()) == _joined(after)          # the join's ids, rule applied
    new = [c for c, p in after.chunk_paths().items() if p == "pkg/weather.py"]
    assert len(new) == 1 and rows.ids.index(new[0]) == len(rows.base)
    assert np.allclose(rows.vector(rows.ids.index(new[0])), _unit_vector(after, new[0]), atol=1e-6)
    hits = after.vector_search("barometric pressure trend of readings", 3)
    assert [c for c, _ in hits] == [c for c, _ in _from_db(root, "barometric pressure trend of readings", 3)]


def _joined(index) -> list[str]:
    """The ids of the chunks nav.db holds a vector for, in id order, the embed rule applied."""
    paths = index.chunk_paths()
    return [r[0] for r in index.conn.execute(
        "SELECT c.id FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash WHERE e.model = ? "
        "ORDER BY c.id", (index.manifest["embedder"],)) if not paths[r[0]].endswith(".csv")]


def _unit_vector(index, chunk_id: str):
    (vector,), = index.conn.execute("SELECT e.vector FROM chunks c JOIN embeddings e ON e.content_hash = "
                                    "c.content_hash WHERE c.id = ?", (chunk_id,)).fetchall()
    vector = np.frombuffer(vector, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def _same_ranking(root, queries, k: int = 8) -> None:
    for query in queries:
        got = NavIndex.open(root).vector_search(query, k)
        expected = _from_db(root, query, k)
        assert [c for c, _ in got] == [c for c, _ in expected], query
        assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-6)


SMALL_CHANGE_QUERIES = [QUERY, "barometric pressure trend of readings", "the module's helper", "return a note"]


def test_small_changes_keep_the_base_and_rank_as_nav_db_does(tmp_path, nav_env):
    """Add, delete, edit, delete and restore: each run keeps the first base (the same file, hard-linked) and
    writes a delta and a dead list; the live rows are the join's, and a search ranks as nav.db does."""
    root = make_repo(tmp_path / "repo", modules=16)
    _build(root)
    first = NavIndex.open(root)
    base_inode = (first.index_dir / VECTORS_DIR / str(first.generation) / MATRIX_FILE).stat().st_ino
    removed = [c for c, p in first.chunk_paths().items() if p == "pkg/mod3.py"]
    original = (root / "pkg/mod3.py").read_text()
    steps = [lambda: write(root, "pkg/weather.py", "def barometric_pressure_trend(readings):\n"
                                                    "    return readings[-1] - readings[0]\n"),
             lambda: (root / "pkg/mod3.py").unlink(),
             lambda: write(root, "pkg/weather.py", "def barometric_pressure_trend(readings, hours):\n"
                                                    "    return (readings[-1] - readings[0]) / hours\n"),
             lambda: write(root, "pkg/mod3.py", original)]          # back: its chunks are live again
    for step in steps:
        step()
        _build(root)
        index = NavIndex.open(root)
        folder = index.index_dir / VECTORS_DIR / str(index.generation)
        assert (folder / MATRIX_FILE).stat().st_ino == base_inode
        rows = load_matrix(index.index_dir, index.generation, index.manifest["embedder"], False)
        live = list(rows.live_rows())
        assert len(live) == len(set(live)) == rows.live == index.vector_count
        assert sorted(live) == _joined(index)
        for row, cid in enumerate(rows.ids):
            if cid in live and row >= len(rows.base):
                assert np.allclose(rows.vector(row), _unit_vector(index, cid), atol=1e-6)
        _same_ranking(root, SMALL_CHANGE_QUERIES)
    assert set(removed) <= set(live)                         # restored: the same ids, now as delta rows
    assert all(rows.ids.index(c) < len(rows.base) and rows.ids.index(c) in rows.dead.tolist() for c in removed)


def test_a_large_change_writes_a_new_base(tmp_path, nav_env):
    """Past an eighth of the base in delta and dead rows, the next matrix is a base again: every live row in
    id order, no delta, the old file no longer used."""
    root = make_repo(tmp_path / "repo", modules=16)
    _build(root)
    first = NavIndex.open(root)
    old_inode = (first.index_dir / VECTORS_DIR / str(first.generation) / MATRIX_FILE).stat().st_ino
    for n in range(8):
        write(root, f"pkg/extra{n}.py", f"def extra_{n}(x):\n    return x * {n}\n\n\n"
                                         f"def other_{n}(y):\n    return y + {n}\n")
    _build(root)
    index = NavIndex.open(root)
    rows = load_matrix(index.index_dir, index.generation, index.manifest["embedder"], False)
    assert rows.delta is None and rows.dead is None and rows.ids == _joined(index)
    assert (index.index_dir / VECTORS_DIR / str(index.generation) / MATRIX_FILE).stat().st_ino != old_inode
    _same_ranking(root, SMALL_CHANGE_QUERIES)


def test_without_hard_links_the_base_is_copied(tmp_path, nav_env, monkeypatch):
    root = make_repo(tmp_path / "repo", modules=16)
    _build(root)

    def refuse(*_):
        raise OSError(1, "Operation not permitted")
    monkeypatch.setattr("os.link", refuse)
    (root / "pkg/mod5.py").unlink()
    _build(root)
    index = NavIndex.open(root)
    rows = load_matrix(index.index_dir, index.generation, index.manifest["embedder"], False)
    assert rows.dead is not None and len(rows.dead) > 0 and sorted(rows.live_rows()) == _joined(index)
    _same_ranking(root, SMALL_CHANGE_QUERIES)


def test_a_damaged_delta_is_not_trusted(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=16)
    _build(root)
    write(root, "pkg/weather.py", "def barometric_pressure_trend(readings):\n    return readings[-1]\n")
    (root / "pkg/mod2.py").unlink()
    _build(root)
    index = NavIndex.open(root)
    folder = index.index_dir / VECTORS_DIR / str(index.generation)
    identity = index.manifest["embedder"]
    expected = _from_db(root, QUERY, 8)
    for name, damage in [("delta.npy", b"\x93NUMPY garbage"), ("dead.npy", None), ("delta_ids.npy", None)]:
        kept = (folder / name).read_bytes()
        if damage is None:
            (folder / name).unlink()
        else:
            (folder / name).write_bytes(damage)
        assert load_matrix(index.index_dir, index.generation, identity, False) is None, name
        assert [c for c, _ in NavIndex.open(root).vector_search(QUERY, 8)] == [c for c, _ in expected]
        (folder / name).write_bytes(kept)
    assert load_matrix(index.index_dir, index.generation, identity, False) is not None
    np.save(folder / "dead.npy", np.array([10 ** 6], dtype=np.int64))      # a row the base does not have
    assert load_matrix(index.index_dir, index.generation, identity, False) is None


def test_ties_are_cut_by_id_wherever_the_rows_sit():
    """Rows with equal scores (chunks of equal text share a vector) make the top k by id, in a base or a delta."""
    from navigator.index.vector_matrix import VectorRows
    rng = np.random.default_rng(5)
    shared = rng.standard_normal(4).astype(np.float32)
    others = rng.standard_normal((5, 4)).astype(np.float32) * 0.01
    vectors = np.vstack([np.tile(shared, (4, 1)), others])
    ids = ["d", "b", "a", "c"] + [f"z{i}" for i in range(5)]
    unit = shared / np.linalg.norm(shared)
    whole = VectorRows(ids, vectors)
    split = VectorRows(ids[4:] + ids[:4], vectors[4:], delta=vectors[:4])
    assert [c for c, _ in whole.top(unit, 2)] == [c for c, _ in split.top(unit, 2)] == ["a", "b"]
    dead = VectorRows(ids[4:] + ids[:4], vectors[4:], delta=vectors[:4], dead=np.array([0, 1, 2, 3, 4]))
    assert [c for c, _ in dead.top(unit, 9)] == ["a", "b", "c", "d"]          # dead rows never come back


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
