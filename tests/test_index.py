"""The index: walking rules, incremental re-embedding, deletion, crash safety, locking, bad input."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from navigator.core.config import Config
from navigator.core.errors import (EmbedderMismatchError, IndexCorruptError, IndexLockedError, IndexMissingError,
                              InputError, UsageError)
from navigator.index.nav_index import NavIndex, resolve_repo
from navigator.index.indexer import IndexLock, build_index
from tests.repo_factory import make_repo, write


class SpyEmbed:
    """Wraps the real embedder and records every text it was asked to embed."""

    def __init__(self, config: Config):
        from navigator.index.embedder import Embedder
        self.embedder = Embedder(config.embed_model, config.embed_dtype)
        self.texts: list[str] = []

    def __call__(self, texts, on_batch=None):
        self.texts.extend(texts)
        return self.embedder.encode_documents(texts, on_batch=on_batch)


def build(root: Path, **kw):
    config = Config.from_env()
    spy = SpyEmbed(config)
    summary = build_index(root, config, embed_fn=spy, **kw)
    return summary, spy


def db_rows(root: Path, sql: str):
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_walk_rules_and_skip_reasons(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    summary, _ = build(root, skip=["repos,data"])
    paths = {r[0] for r in db_rows(root, "SELECT path FROM files")}
    assert "pkg/mod0.py" in paths and "pkg/sub/visible.py" in paths and "README.md" in paths
    assert "debug.log" not in paths and "generated/out.py" not in paths      # root .gitignore
    assert "pkg/sub/secret_keys.py" not in paths                             # nested .gitignore
    assert not any(p.startswith(("repos/", "data/", "node_modules/", ".nav/", "loop")) for p in paths)
    assert "image.bin" not in paths
    assert summary.skipped["binary"] == 1
    assert summary.skipped["symlink"] == 1
    assert summary.skipped["skip_rule"] == 2                                 # repos/ and data/
    assert summary.skipped["ignored"] >= 3
    # broken UTF-8 and syntax errors are indexed, not dropped, and counted
    assert "broken_utf8.py" in paths and "syntax_error.py" in paths
    assert summary.decode_error_files == 1 and summary.parse_error_files >= 1
    syntax_chunks = " ".join(r[0] for r in db_rows(root, "SELECT text FROM chunks WHERE path='syntax_error.py'"))
    assert "VALUE = 3" in syntax_chunks and "def ok" in syntax_chunks


def test_huge_file_skipped(tmp_path, nav_env, monkeypatch):
    root = make_repo(tmp_path / "repo", modules=1)
    write(root, "big.py", "X = 1\n" * 5000)
    monkeypatch.setenv("NAV_MAX_FILE_BYTES", "20000")
    summary, _ = build(root)
    assert summary.skipped["too_large"] == 1
    assert not db_rows(root, "SELECT 1 FROM files WHERE path='big.py'")


def test_edit_one_file_embeds_only_its_new_chunks(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    first, spy1 = build(root)
    assert first.chunks_embedded == len(spy1.texts) > 0
    before = {r[0]: r[1] for r in db_rows(root, "SELECT id, content_hash FROM chunks")}

    path = root / "pkg" / "mod2.py"
    path.write_text(path.read_text().replace("result = value * scale + 2", "result = value * scale - 99"))
    second, spy2 = build(root)

    after_rows = db_rows(root, "SELECT id, content_hash, path FROM chunks")
    new_hashes = {h for _, h, _ in after_rows} - set(before.values())
    assert len(new_hashes) == 1                       # only compute_2 changed
    assert len(spy2.texts) == 1 and "value * scale - 99" in spy2.texts[0]
    assert second.files_changed == 1 and second.chunks_embedded == 1
    assert second.chunks_reused == len([r for r in after_rows if r[2] == "pkg/mod2.py"]) - 1


def test_unchanged_reindex_embeds_nothing_and_loads_no_model(tmp_path, nav_env):
    from navigator.index import embedder
    root = make_repo(tmp_path / "repo")
    build(root)
    embedder._MODELS.clear()
    summary, spy = build(root)
    assert spy.texts == [] and summary.chunks_embedded == 0 and summary.files_changed == 0
    assert not summary.model_loaded and embedder._MODELS == {}


def test_reverting_an_edit_reuses_cached_embeddings(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    build(root)
    path = root / "pkg" / "mod1.py"
    original = path.read_text()
    path.write_text(original.replace("MAX_RETRIES_1 = 1", "MAX_RETRIES_1 = 7"))
    build(root)
    path.write_text(original)                          # like checking the old branch out again
    summary, spy = build(root)
    assert spy.texts == [] and summary.files_changed == 1


def test_deleted_file_disappears(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    build(root)
    (root / "pkg" / "mod3.py").unlink()
    summary, _ = build(root)
    assert summary.files_deleted == 1
    assert not db_rows(root, "SELECT 1 FROM chunks WHERE path='pkg/mod3.py'")
    index = NavIndex.open(root)
    hits = index.vector_search("compute_3 scale a value for feature 3", 50)
    assert hits and all(index.chunk_by_id(cid).path != "pkg/mod3.py" for cid, _ in hits)
    assert len(index._chroma().get(include=[])["ids"]) == index.vector_count == index.chunk_count - 1   # data/table.csv: lexical only


def test_status_reports_stale_files(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo")
    build(root)
    assert NavIndex.open(root).state()["state"] == "fresh"
    write(root, "pkg/new_module.py", "def added():\n    return 1\n")
    (root / "pkg" / "mod0.py").write_text("CHANGED = True\n")
    (root / "pkg" / "mod1.py").unlink()
    state = NavIndex.open(root).state()
    assert state["state"] == "stale" and state["files_changed_since"] == 3
    # touching a file without changing its content is not a change
    build(root)
    os.utime(root / "pkg" / "mod2.py", None)
    time.sleep(0.01)
    assert NavIndex.open(root).state()["files_changed_since"] == 0


def _index_cmd(root: Path) -> list[str]:
    return [sys.executable, "-m", "navigator", "index", str(root)]


def _snapshot(root: Path):
    chunks = db_rows(root, "SELECT c.id, c.content_hash, e.vector FROM chunks c JOIN embeddings e USING (content_hash) ORDER BY c.id")
    return {cid: (h, np.frombuffer(v, dtype=np.float32)) for cid, h, v in chunks}


def _chroma_ids(root: Path) -> set[str]:
    index = NavIndex.open(root)
    return set(index._chroma().get(include=[])["ids"])


@pytest.mark.parametrize("kill_at", ["embedded-group", "embedding-committed"])
def test_kill_minus_9_while_embedding_then_rerun_equals_clean_build(tmp_path, nav_env, kill_at):
    """Lexical first: a run killed while embedding leaves a searchable index whose vector head is partial
    (and says so); a plain rerun finishes the embedding and ends equal to a clean build. Killed right after
    a group reached the cache but before chroma got it ("embedding-committed"), the rerun must notice the
    vectors chroma lacks."""
    root = make_repo(tmp_path / "repo", modules=80)   # ~550 chunks: three embedding groups of 256
    env = {**os.environ, "NAV_TEST_KILL_AT": kill_at}
    out = subprocess.run(_index_cmd(root), env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == -signal.SIGKILL, out.stderr
    index = NavIndex.open(root)
    state = index.state()
    assert state["vectors"] == "partial" and state["vectors_embedded"] < state["vectors_wanted"]
    # the record counts what chroma was given: the group that only reached the cache is not counted yet
    assert (state["vectors_embedded"] > 0) == (kill_at == "embedded-group")
    assert "interrupted: run nav index to finish" in state["vector_note"]
    assert index.chunk_count - state["vectors_excluded"] == state["vectors_wanted"] > 0
    from navigator.context.search import search
    lexical = search(root, "compute a scaled value", 5, "bm25")
    assert lexical.results and "vector head partial" in lexical.render()
    hybrid = search(root, "compute a scaled value", 5, "hybrid")
    assert hybrid.results
    # the reader repaired chroma to what the cache holds, never more than nav.db's chunks
    assert _chroma_ids(root) <= {c.id for c in NavIndex.open(root).chunks()}

    out = subprocess.run(_index_cmd(root), env=os.environ.copy(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "reused" in out.stdout
    resumed = _snapshot(root)
    index = NavIndex.open(root)
    assert index.state()["vectors"] == "complete" and index.state()["vector_note"] is None
    assert _chroma_ids(root) == set(resumed) == {c.id for c in index.chunks() if c.path != "data/table.csv"}

    config_env = os.environ.copy()
    config_env["NAV_INDEX_DIR"] = str(tmp_path / "clean-index")
    subprocess.run(_index_cmd(root), env=config_env, check=True, capture_output=True, timeout=300)
    conn = sqlite3.connect(tmp_path / "clean-index" / "nav.db")
    clean = {cid: (h, np.frombuffer(v, dtype=np.float32)) for cid, h, v in conn.execute(
        "SELECT c.id, c.content_hash, e.vector FROM chunks c JOIN embeddings e USING (content_hash) ORDER BY c.id")}
    assert resumed.keys() == clean.keys()
    for cid in clean:
        assert resumed[cid][0] == clean[cid][0]
        np.testing.assert_allclose(resumed[cid][1], clean[cid][1], atol=1e-5)


def test_kill_minus_9_right_after_the_lexical_commit_reruns_to_a_full_index(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=3)
    build(root)
    for n in range(3, 40):
        write(root, f"pkg/more{n}.py", f"def extra_{n}(x):\n    return x + {n}\n\nLIMIT_{n} = {n}\n")
    # committed its lexical stage and one embedding group, then killed before chroma got that group
    env = {**os.environ, "NAV_TEST_KILL_AT": "embedding-committed"}
    subprocess.run(_index_cmd(root), env=env, capture_output=True, timeout=300)
    index = NavIndex.open(root)
    assert any(c.path == "pkg/more7.py" for c in index.chunks())
    assert index.vector_record["synced"] is False
    summary, spy = build(root)
    assert summary.files_changed == 0 and NavIndex.open(root).state()["vectors"] == "complete"
    assert _chroma_ids(root) == {c.id for c in NavIndex.open(root).chunks() if c.path != "data/table.csv"}


def test_kill_before_the_lexical_commit_keeps_previous_index_usable(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=3)
    build(root)
    before = set(r[0] for r in db_rows(root, "SELECT id FROM chunks"))
    for n in range(3, 120):
        write(root, f"pkg/more{n}.py", f"def extra_{n}(x):\n    return x + {n}\n\nLIMIT_{n} = {n}\n")
    env = {**os.environ, "NAV_TEST_KILL_AT": "lexical-commit"}
    out = subprocess.run(_index_cmd(root), env=env, capture_output=True, timeout=300)
    assert out.returncode == -signal.SIGKILL
    index = NavIndex.open(root)
    assert {c.id for c in index.chunks()} == before   # the previous index, whole
    assert index.state()["vectors"] == "complete"
    assert index.vector_search("compute a scaled value", 3)


def test_first_build_killed_before_its_lexical_commit_leaves_no_index(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=3)
    env = {**os.environ, "NAV_TEST_KILL_AT": "lexical-commit"}
    subprocess.run(_index_cmd(root), env=env, capture_output=True, timeout=300)
    with pytest.raises(IndexMissingError, match="never completed"):
        NavIndex.open(root)


def test_search_during_the_first_build_says_it_is_being_built(tmp_path, nav_env):
    from navigator.index import store
    from navigator.index.status import status
    root = make_repo(tmp_path / "repo", modules=1).resolve()
    index_dir = Config.from_env().index_dir_for(root)
    with IndexLock(index_dir):                        # a build that has not committed anything yet
        with pytest.raises(IndexMissingError, match="is being built"):
            NavIndex.open(root)
        store.connect(index_dir, create=True).close()   # nav.db created, no manifest yet
        with pytest.raises(IndexMissingError, match="is being built"):
            NavIndex.open(root)
        assert "is being built" in status(root).render()
    with pytest.raises(IndexMissingError, match="never completed"):   # the lock is free: no build runs
        NavIndex.open(root)


def test_partial_vector_head_while_a_build_runs(tmp_path, nav_env):
    """A reader that opens the index while the writer still embeds: it says so, searches what is embedded,
    and leaves chroma to the writer."""
    from navigator.index import coverage, store
    from navigator.index.status import status
    root = make_repo(tmp_path / "repo", modules=3)
    build(root)
    c = store.connect(root / ".nav", create=False)
    c.execute("DELETE FROM embeddings WHERE rowid IN (SELECT rowid FROM embeddings LIMIT 5)")
    coverage.write(c, coverage.measure(c, store.get_meta(c, "generation"), nav_env, synced=False))
    c.close()
    with IndexLock(Config.from_env().index_dir_for(root.resolve())):
        index = NavIndex.open(root)
        state = index.state()
        assert state["vectors"] == "partial" and state["building"] is True
        assert "is still embedding" in state["vector_note"]
        assert "vector head partial" in status(root).render()
        assert index.vector_search("compute a scaled value", 3)
    summary, spy = build(root)
    assert summary.chunks_embedded == len(spy.texts) > 0
    assert NavIndex.open(root).state()["vectors"] == "complete"


def test_the_coverage_counted_group_by_group_equals_a_fresh_measure(tmp_path, nav_env, monkeypatch):
    """An incremental run carries the last record over by the paths it changed (lexical commit) and counts each
    embedded group into it, instead of measuring again: the record must equal a fresh measure after added,
    vendored (excluded), edited, removed and restored files, and no full measure may have run."""
    from navigator.index import coverage, store
    root = make_repo(tmp_path / "repo", modules=3)
    build(root)
    full_measures = []
    real_measure = coverage.measure
    monkeypatch.setattr(coverage, "measure", lambda *a, **kw: full_measures.append(a) or real_measure(*a, **kw))
    shared = "def shared_helper(items):\n    return sorted(set(items))\n"
    removed = (root / "pkg/mod1.py").read_text()
    steps = [lambda: (write(root, "pkg/helpers.py", shared), write(root, "pkg/more.py", shared * 2)),
             lambda: write(root, "vendor/lone.py", "def only_vendored():\n    return 'v'\n"),
             lambda: write(root, "pkg/helpers.py", shared + "\n\ndef another(x):\n    return x * 2\n"),
             lambda: (root / "pkg/mod1.py").unlink(),
             lambda: write(root, "pkg/mod1.py", removed)]       # its vectors are still cached
    for step in steps:
        step()
        build(root)
        assert full_measures == []
        c = store.connect(root / ".nav", create=False)
        try:
            stored = coverage.read(c)
            fresh = real_measure(c, store.get_meta(c, "generation"), nav_env, synced=True)
        finally:
            c.close()
        assert stored == fresh
        assert coverage.is_complete(stored) and stored["excluded"] >= 1


def test_vector_search_on_a_local_index_is_exact_and_the_same_in_every_process(tmp_path, nav_env, monkeypatch):
    """patches/0016: chroma's HNSW search missed true neighbours and returned a different top 200 from one process
    to the next on a django index, so the same bug report ranked files differently run to run. A local index of
    this size is searched exactly over nav.db's vectors: the brute-force cosine top k, ties to the id."""
    import json
    root = make_repo(tmp_path / "repo", modules=6)
    build(root)
    index = NavIndex.open(root)
    query = "compute a scaled value"
    got = index.vector_search(query, 12)
    rows = index.conn.execute("SELECT c.id, c.path, e.vector FROM chunks c JOIN embeddings e "
                              "ON e.content_hash = c.content_hash").fetchall()
    ids = [r[0] for r in rows if not r[1].endswith(".csv")]           # data files stay lexical (embed rule)
    vectors = np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows if not r[1].endswith(".csv")])
    q = np.asarray(index.embed_query(query), dtype=np.float32)
    cosine = vectors @ q / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(q))
    expected = sorted(zip(ids, cosine), key=lambda item: (-item[1], item[0]))[:12]
    assert [cid for cid, _ in got] == [cid for cid, _ in expected]
    assert np.allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)
    assert len(index.vector_search(query, 10_000)) == len(ids)
    out = subprocess.run([sys.executable, "-m", "navigator", "search", query, "--retriever", "vector", "-k", "12",
                          "--json", "--repo", str(root)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)["results"]] == [cid for cid, _ in got]
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")                    # chroma's graph, still there on request
    assert {cid for cid, _ in NavIndex.open(root, Config.from_env()).vector_search(query, 12)} <= set(ids)
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "fast")
    with pytest.raises(UsageError, match="NAV_VECTOR_SEARCH"):
        NavIndex.open(root, Config.from_env()).vector_search(query, 3)


def test_the_exact_product_runs_in_one_blas_thread_and_leaves_the_process_as_it_found_it(tmp_path, nav_env):
    """Two OpenBLAS threads halved no wall time of a bug-report query but doubled its CPU time (the idle worker
    spins after each product); the limit holds for the product only, so a program that imports nav keeps its
    own BLAS threads."""
    from threadpoolctl import threadpool_info
    from navigator.index.nav_index import _one_blas_thread
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    index = NavIndex.open(root)

    def blas_threads():
        return [(i["filepath"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    assert before, "numpy's BLAS should be loaded by now"
    with _one_blas_thread():
        assert {n for _, n in blas_threads()} == {1}
    assert index.vector_search("compute a scaled value", 5)
    assert blas_threads() == before


def test_second_concurrent_run_is_refused(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=1)
    config = Config.from_env()
    with IndexLock(config.index_dir_for(root.resolve())):
        with pytest.raises(IndexLockedError, match="another `nav index`"):
            build_index(root.resolve(), config)
        out = subprocess.run(_index_cmd(root), env=os.environ.copy(), capture_output=True, text=True, timeout=120)
        assert out.returncode == 3 and "another `nav index`" in out.stderr


def test_bad_paths(tmp_path, nav_env):
    with pytest.raises(InputError, match="does not exist"):
        resolve_repo(tmp_path / "nope")
    write(tmp_path, "file.py", "x = 1\n")
    with pytest.raises(InputError, match="not a directory"):
        resolve_repo(tmp_path / "file.py")
    with pytest.raises(IndexMissingError):
        NavIndex.open(tmp_path)


def test_empty_repository(tmp_path, nav_env):
    root = tmp_path / "empty"
    root.mkdir()
    summary, spy = build(root)
    assert summary.chunks == 0 and spy.texts == []
    index = NavIndex.open(root)
    assert index.state()["state"] == "empty"
    assert index.vector_search("anything", 5) == []


def test_corrupt_index_is_reported_and_rebuild_recovers(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    db = root / ".nav" / "nav.db"
    for extra in ("-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.raises(IndexCorruptError, match="unreadable") as err:
        NavIndex.open(root)
    assert "--rebuild" in err.value.hint
    summary, _ = build(root, rebuild=True)
    assert summary.chunks > 0 and NavIndex.open(root).vector_search("worker runs jobs", 2)


def test_a_run_checks_nav_db_in_full_unless_it_is_exactly_as_the_last_run_left_it(tmp_path, nav_env, monkeypatch):
    """quick_check reads every page (0.44 s at django's size): skipped by a run that finds nav.db as the last
    run closed it, run again after any write by anyone else, and after a run that failed."""
    from navigator.index import repair
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    checks = []
    real = repair.quick_check
    monkeypatch.setattr(repair, "quick_check", lambda conn: checks.append(1) or real(conn))
    build(root)
    assert checks == []                                   # nothing touched nav.db since the first run
    db = root / ".nav" / "nav.db"
    st = db.stat()
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))   # written by something else
    build(root)
    assert checks == [1]
    build(root)
    assert checks == [1]                                  # the checked run recorded what it left
    write(root, "pkg/extra.py", "def extra():\n    return 1\n")
    build(root)                                           # its own writes are recorded too
    assert checks == [1]
    monkeypatch.setattr(repair, "quick_check", lambda conn: checks.append(1) or "page 3: btree damaged")
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000))
    with pytest.raises(IndexCorruptError, match="damaged"):
        build(root)
    with pytest.raises(IndexCorruptError):               # a refused run leaves no stamp: checked again
        build(root)
    assert checks == [1, 1, 1]


def test_damaged_vector_store_is_rebuilt_from_database(tmp_path, nav_env, monkeypatch):
    import shutil
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")      # the chroma collection is searched (and so kept)
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    shutil.rmtree(root / ".nav" / "chroma")
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    conn.execute("UPDATE meta SET value='0' WHERE key='chroma_generation'")
    conn.commit()
    conn.close()
    index = NavIndex.open(root)
    assert len(index.vector_search("worker", 100)) == index.vector_count


def test_an_index_searched_exactly_leaves_chroma_to_the_reader_that_needs_it(tmp_path, nav_env, monkeypatch):
    """Issue 25, part 4: under exact search (the default up to 250k chunks) nav index never opens the chroma
    collection (no chromadb import); a reader switched to chroma's search syncs it from nav.db first."""
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    assert not (root / ".nav" / "chroma").exists()
    exact = NavIndex.open(root)
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")
    ann = NavIndex.open(root, Config.from_env())
    assert [c for c, _ in ann.vector_search("worker", 5)] == [c for c, _ in exact.vector_search("worker", 5)]
    assert (root / ".nav" / "chroma").is_dir() and ann._chroma().count() == ann.vector_count


def test_a_run_that_changes_nothing_keeps_the_generation_and_loads_nothing(tmp_path, nav_env):
    """No new generation (a long-lived reader reopens nothing), no postings written, no model, no chromadb."""
    import subprocess, sys
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    generation = NavIndex.open(root).generation
    bm25_dirs = sorted(p.name for p in (root / ".nav" / "bm25").iterdir())
    code = ("import sys; from pathlib import Path; from navigator.core.config import Config; "
            "from navigator.index.indexer import build_index; "
            f"s = build_index(Path({str(root)!r}), Config.from_env()); "
            "print(s.files_changed, s.chunks_embedded, sorted(m for m in ('torch', 'chromadb', 'onnxruntime', "
            "'sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(),
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "0 0 []"
    assert NavIndex.open(root).generation == generation
    assert sorted(p.name for p in (root / ".nav" / "bm25").iterdir()) == bm25_dirs
    (root / "pkg" / "mod0.py").touch()                 # a new mtime, the same content: still nothing to do
    build(root)
    assert NavIndex.open(root).generation == generation


def _vectors_by_model(root: Path) -> dict[str, int]:
    return dict(db_rows(root, "SELECT model, COUNT(*) FROM embeddings GROUP BY model"))


@pytest.mark.parametrize("search", ["exact", "ann"])
def test_a_switched_embedder_re_embeds_and_switching_back_is_free(tmp_path, nav_env, other_tiny_embed_model,
                                                                  monkeypatch, search):
    """Issue 24: a changed model re-embeds, keyed by content hash + model, without --rebuild. The searches after
    each switch use that model's vectors (its own width: 32 then 48), exactly and through chroma."""
    from navigator.index.embedder import Embedder
    monkeypatch.setenv("NAV_VECTOR_SEARCH", search)
    root = make_repo(tmp_path / "repo", modules=2)
    first, _ = build(root)
    first_model = nav_env
    assert _vectors_by_model(root) == {first_model: first.chunks_embedded}

    monkeypatch.setenv("NAV_EMBED_MODEL", other_tiny_embed_model)
    with pytest.raises(EmbedderMismatchError, match="other-tiny-embedder") as err:
        NavIndex.open(root)                            # a search does not switch silently: the index run does
    assert "nav index" in err.value.hint and "--rebuild" not in err.value.hint
    switched, spy = build(root)
    assert switched.chunks_embedded == first.chunks_embedded and len(spy.texts) == first.chunks_embedded
    assert any("embedder switched" in note for note in switched.notes)
    assert _vectors_by_model(root) == {first_model: first.chunks_embedded, other_tiny_embed_model: first.chunks_embedded}

    def searches_with(model: str, width: int) -> None:
        index = NavIndex.open(root)
        assert index.manifest["embedder"] == model and not index.vectors_partial
        chunk = next(c for c in index.chunks() if c.kind == "function")
        (vec,) = Embedder(model, "fp32").encode_documents([chunk.embed_text])
        assert vec.shape == (width,)
        hits = index.vector_search_by_vector(vec, 3)    # a chunk's own vector finds it first
        assert hits[0][0] == chunk.id and hits[0][1] == pytest.approx(1.0, abs=1e-4)

    searches_with(other_tiny_embed_model, 48)
    from navigator.index.status import status
    report = status(root)                              # the first model's vectors are still there, and said so
    texts = report.state["embedded_texts"]
    assert report.state["other_models"] == {first_model: texts} and 0 < texts <= first.chunks_embedded
    assert f"cached     {first_model} has vectors of {texts:,} of these {texts:,} chunk texts" in report.render()
    monkeypatch.setenv("NAV_EMBED_MODEL", first_model)
    back, spy = build(root)
    assert back.chunks_embedded == 0 and spy.texts == []           # the first model's vectors were kept
    searches_with(first_model, 32)


def test_the_cache_prunes_unused_texts_first_then_other_models(tmp_path, nav_env):
    """Other models' vectors of live chunks survive a prune that unused texts' rows are enough for; past the
    slack even without those, only the index's own model keeps its vectors."""
    from navigator.index import store
    from navigator.index.stages.embed import CACHE_SLACK, prune_cache
    root = make_repo(tmp_path / "repo", modules=1)
    build(root)
    conn = store.connect(root / ".nav", create=False)
    live = [h for (h,) in conn.execute("SELECT DISTINCT content_hash FROM chunks")]
    own = conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    limit = CACHE_SLACK * 1000                  # prune_cache's floor: this repository has far fewer chunks
    conn.executemany("INSERT INTO embeddings VALUES (?, 'gone-model', x'00')", [(f"gone{i}",) for i in range(limit)])
    conn.executemany("INSERT INTO embeddings VALUES (?, 'older-model', x'00')", [(h,) for h in live])
    prune_cache(conn, len(live), nav_env)
    assert dict(conn.execute("SELECT model, COUNT(*) FROM embeddings GROUP BY model")) == \
        {nav_env: own, "older-model": len(live)}
    models = [f"model-{i}" for i in range(limit // len(live) + 1)]
    conn.executemany("INSERT INTO embeddings VALUES (?, ?, x'00')", [(h, m) for m in models for h in live])
    prune_cache(conn, len(live), nav_env)
    assert dict(conn.execute("SELECT model, COUNT(*) FROM embeddings GROUP BY model")) == {nav_env: own}
    conn.close()


def test_an_index_of_schema_2_gets_its_cache_keyed_by_model(tmp_path, nav_env):
    """A v2 nav.db (embeddings keyed by content hash alone) is rebuilt under (content hash, model) when opened,
    its vectors kept: nothing is embedded again."""
    root = make_repo(tmp_path / "repo", modules=1)
    first, _ = build(root)
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    conn.executescript("""
        ALTER TABLE embeddings RENAME TO new_layout;
        CREATE TABLE embeddings (content_hash TEXT PRIMARY KEY, model TEXT NOT NULL, vector BLOB NOT NULL);
        INSERT INTO embeddings SELECT * FROM new_layout; DROP TABLE new_layout;
        UPDATE meta SET value='2' WHERE key='schema_version';""")
    conn.close()
    before = sorted(db_rows(root, "SELECT content_hash, model, vector FROM embeddings"))
    index = NavIndex.open(root)
    key = [r[1] for r in index.conn.execute("PRAGMA table_info(embeddings)") if r[5]]
    assert sorted(key) == ["content_hash", "model"]
    assert index.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
    assert sorted(db_rows(root, "SELECT content_hash, model, vector FROM embeddings")) == before
    again, spy = build(root)
    assert again.chunks_embedded == 0 and spy.texts == [] and len(before) == first.chunks_embedded


def test_index_dir_override(tmp_path, nav_env, monkeypatch):
    root = make_repo(tmp_path / "repo", modules=1)
    monkeypatch.setenv("NAV_INDEX_DIR", str(tmp_path / "elsewhere"))
    build(root)
    assert (tmp_path / "elsewhere" / "nav.db").exists() and not (root / ".nav").exists()


def test_new_chunker_version_rechunks_everything_but_reuses_embeddings(tmp_path, nav_env, monkeypatch):
    import chunkers.base
    root = make_repo(tmp_path / "repo", modules=2)
    first, _ = build(root)
    monkeypatch.setattr(chunkers.base, "CHUNKER_VERSION", "test-next")
    summary, spy = build(root)
    assert summary.files_changed == first.files_indexed      # every file re-chunked
    assert spy.texts == [] and summary.chunks == first.chunks  # same texts: nothing re-embedded
    assert NavIndex.open(root).manifest["chunker_version"] == "test-next"


def test_onnx_export_serves_queries_and_small_reindexes_without_torch(tmp_path, nav_env, monkeypatch):
    monkeypatch.setenv("NAV_ONNX", "1")
    root = make_repo(tmp_path / "repo", modules=3)
    first = build_index(root.resolve(), Config.from_env())
    assert any("exported the embedder to ONNX" in n for n in first.notes)
    # a fresh process answers a vector search without importing torch
    code = ("import sys; from navigator.context.search import search; "
            "r = search(sys.argv[1], 'runs jobs for feature 1', 3, 'vector'); "
            "print(r.results[0].chunk.path); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "False"
    # a one-function edit is embedded through ONNX: no torch model is loaded
    path = root / "pkg" / "mod1.py"
    path.write_text(path.read_text().replace("result = value * scale + 1", "result = value * scale + 41"))
    from navigator.index import embedder
    embedder._MODELS.clear()
    summary = build_index(root.resolve(), Config.from_env())
    assert summary.chunks_embedded == 1 and not summary.model_loaded and embedder._MODELS == {}
    # and the ONNX vector of that chunk matches the torch vector
    (vec,) = [np.frombuffer(v, dtype=np.float32) for (v,) in db_rows(
        root, "SELECT e.vector FROM chunks c JOIN embeddings e USING (content_hash) WHERE c.text LIKE '%scale + 41%'")]
    (chunk,) = [c for c in NavIndex.open(root).chunks() if "scale + 41" in c.text]
    torch_vec = embedder.Embedder(Config.from_env().embed_model, "fp32").encode_documents([chunk.embed_text])[0]
    assert float(np.dot(vec, torch_vec)) > 0.999


def test_rebuild_and_query_three_times_in_one_process(tmp_path, nav_env):
    """A long-lived process (MCP server, notebook) that rebuilds must keep answering: chromadb caches one
    client system per directory for the life of the process, and a cached system whose directory nav
    deleted points at files that are gone."""
    root = make_repo(tmp_path / "repo", modules=2)
    build(root)
    first = NavIndex.open(root).vector_search("worker runs jobs", 3)
    assert first
    for round_ in range(3):
        write(root, f"pkg/extra_{round_}.py", f"def extra_{round_}():\n    return {round_}\n")
        summary, _ = build(root, rebuild=True)
        index = NavIndex.open(root)
        hits = index.vector_search("worker runs jobs", 100)
        assert len(hits) == index.vector_count == summary.chunks - summary.chunks_not_embedded
        assert any(cid for cid, _ in hits if f"extra_{round_}" in index.chunk_by_id(cid).text)



def test_data_files_stay_lexical_unless_embed_all(tmp_path, nav_env, monkeypatch):
    from navigator.context.search import search
    from navigator.index.embed_rule import category
    from navigator.index.status import status
    assert category("data/table.csv") == "data" and category("pkg/api_pb2.py") == "generated"
    assert category("src/_vendor/six.py") == "vendored" and category("src/click/core.py") is None
    root = make_repo(tmp_path / "repo", modules=1)
    write(root, "conf/settings.yaml", "retry_limit: 5\nbackoff_seconds: 3\n")
    summary, spy = build(root)
    assert summary.chunks_not_embedded == 2 and "NAV_EMBED_ALL=1" in summary.render()
    assert not any("retry_limit" in t for t in spy.texts)
    index = NavIndex.open(root)
    state = index.state()
    assert state["vectors"] == "complete" and state["vectors_excluded"] == 2
    assert "2 chunks not embedded" in status(root).render()
    hits = search(root, "retry_limit backoff_seconds", 3, "bm25").results
    assert hits and hits[0].chunk.path == "conf/settings.yaml"    # still found lexically
    monkeypatch.setenv("NAV_EMBED_ALL", "1")
    summary, spy = build(root)
    assert summary.chunks_embedded == 2 and any("retry_limit" in t for t in spy.texts)
    assert NavIndex.open(root).vector_count == NavIndex.open(root).chunk_count


def _add_modules(root: Path, start: int, count: int) -> None:
    for n in range(start, start + count):
        write(root, f"pkg/bulk{n}.py", f"def bulk_{n}(x):\n    return x * {n}\n\nBULK_LIMIT_{n} = {n}\n")


def test_a_large_fp32_reindex_embeds_through_the_onnx_export_and_falls_back_to_torch(tmp_path, nav_env, monkeypatch):
    # Where the index runs in fp32 (no native bf16), more than ONNX_SMALL_BATCH new chunks go through the
    # export's batch encoder: no torch model is loaded when the export is already on disk.
    monkeypatch.setenv("NAV_ONNX", "1")
    from navigator.core.errors import ModelError
    from navigator.index import embedder, onnx_query
    root = make_repo(tmp_path / "repo", modules=3)
    build_index(root.resolve(), Config.from_env())
    _add_modules(root, 0, 45)                                     # 90 new chunks
    embedder._MODELS.clear()
    summary = build_index(root.resolve(), Config.from_env())
    assert summary.chunks_embedded >= 90 > onnx_query.ONNX_SMALL_BATCH and embedder._MODELS == {}
    rows = db_rows(root, "SELECT c.text, e.vector FROM chunks c JOIN embeddings e USING (content_hash) "
                         "WHERE c.path LIKE 'pkg/bulk%' ORDER BY c.id")
    chunks = {c.text: c for c in NavIndex.open(root).chunks() if c.path.startswith("pkg/bulk")}
    torch_side = embedder.Embedder(Config.from_env().embed_model, "fp32")
    texts = [chunks[t].embed_text for t, _ in rows[:20]]
    torch_vectors = torch_side.encode_documents(texts)
    for (_, blob), torch_vec in zip(rows[:20], torch_vectors):
        assert float(np.dot(np.frombuffer(blob, dtype=np.float32), torch_vec)) > 0.9999

    class Refused:
        def __init__(self, *args, **kwargs):
            raise ModelError("onnxruntime cannot load model.onnx: test", hint="")

    monkeypatch.setattr(onnx_query, "OnnxQueryEncoder", Refused)
    _add_modules(root, 100, 45)
    summary = build_index(root.resolve(), Config.from_env())
    assert summary.chunks_embedded >= 90
    assert any(n.startswith("embedded with torch: onnxruntime cannot load") for n in summary.notes)
    assert NavIndex.open(root).state()["vectors"] == "complete"
