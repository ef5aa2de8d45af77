"""Damage nav must notice (issue 10 part 4): every damaged or unusable index part is detected, reported with
what to do, and repaired by a plain `nav index` where nav can rebuild it from nav.db; no command ends in a
traceback. One test per case of the issue."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from navigator.core.config import Config
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from tests.repo_factory import make_repo, write


def nav(*args: str, cwd: Path | None = None, stdout=subprocess.PIPE, timeout: int = 300):
    return subprocess.run([sys.executable, "-m", "navigator", *args], env=os.environ.copy(), cwd=cwd,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout)


def built(tmp_path: Path, modules: int = 6) -> Path:
    root = make_repo(tmp_path / "repo", modules=modules)
    build_index(root, Config.from_env())
    return root


def test_deleted_chroma_is_noticed_and_repaired_by_a_plain_index(tmp_path, nav_env, monkeypatch):
    """Case 1: `rm -rf .nav/chroma` gave 0 vector results with state fresh, and `nav index` did not repair it.
    (Under chroma's search: with exact search, the default at this size, nav index leaves the store to the
    reader that needs it, tests/test_index.py.)"""
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")
    root = built(tmp_path)
    shutil.rmtree(root / ".nav" / "chroma")
    status = nav("status", str(root), "--json")
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["state"] == "damaged" and any("vector store" in p for p in report["problems"])
    assert "nav index" in nav("status", str(root)).stdout
    summary = build_index(root, Config.from_env())
    assert summary.files_changed == 0
    index = NavIndex.open(root)
    assert index.state()["state"] == "fresh"
    assert len(index.vector_search("compute value scale", 5)) == 5
    # Deleted again: the exact search (the default on a local index this size) reads nav.db's vectors and never
    # needed the store; chroma's approximate search repairs the derived store from nav.db itself (no model
    # needed) rather than answering nothing.
    index.conn.close()
    shutil.rmtree(root / ".nav" / "chroma")
    for mode in ("exact", "ann"):
        monkeypatch.setenv("NAV_VECTOR_SEARCH", mode)
        out = nav("search", "compute value scale", "--retriever", "vector", "-k", "5", "--json", "--repo", str(root))
        assert out.returncode == 0, out.stderr
        assert len(json.loads(out.stdout)["results"]) == 5
        assert (root / ".nav" / "chroma").exists() == (mode == "ann")
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")
    # A collection that lost some vectors (count != chunks) is resynced too.
    from navigator.index.vector_store import open_collection, release_vector_store
    release_vector_store(root / ".nav")   # the subprocess rebuilt the directory this process had open
    _, collection = open_collection(root / ".nav")
    some = collection.get(include=[], limit=3)["ids"]
    collection.delete(ids=some)
    summary = build_index(root, Config.from_env())
    _, collection = open_collection(root / ".nav")
    index = NavIndex.open(root)
    assert collection.count() == index.vector_count == summary.chunks - 1   # data/table.csv: lexical only


def damage(path: Path, offset: int, length: int, seed: int = 0) -> None:
    """Overwrite `length` bytes at `offset` with deterministic noise (dd conv=notrunc)."""
    import random
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(random.Random(seed).randbytes(length))


def no_traceback(result) -> None:
    assert "Traceback" not in result.stderr, result.stderr


def test_damaged_nav_db_pages_are_reported_and_rebuild_recovers(tmp_path, nav_env):
    """Case 2: pages 20-59 of nav.db overwritten; search and status said fresh, `nav index` failed with a
    traceback after committing, and every later search failed with one."""
    root = built(tmp_path, modules=40)
    db = root / ".nav" / "nav.db"
    assert db.stat().st_size > 60 * 4096
    damage(db, 20 * 4096, 40 * 4096)
    status = nav("status", str(root))
    no_traceback(status)
    assert (status.returncode == 0 and "DAMAGED" in status.stdout and "--rebuild" in status.stdout) \
        or (status.returncode == 3 and "--rebuild" in status.stderr), (status.stdout, status.stderr)
    for _ in range(2):
        search = nav("search", "compute value scale", "--repo", str(root))
        no_traceback(search)
        assert search.returncode in (0, 3)
        if search.returncode == 3:
            assert "damaged" in search.stderr and "--rebuild" in search.stderr
        index = nav("index", str(root))
        no_traceback(index)
        assert index.returncode == 3 and "--rebuild" in index.stderr, (index.stdout, index.stderr)
    rebuilt = nav("index", str(root), "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    search = nav("search", "compute value scale", "--repo", str(root), "--json")
    assert search.returncode == 0 and json.loads(search.stdout)["results"]
    assert json.loads(nav("status", str(root), "--json").stdout)["state"] == "fresh"


def test_index_refuses_a_damaged_nav_db_wherever_the_damage_is_and_writes_nothing(tmp_path, nav_env):
    """Damage in pages no early read touches (measured: the tail of the chunk and cache tables) let a plain
    `nav index` commit a new generation into the damaged file and exit 0. Every window must be refused, with
    the --rebuild hint, before anything is written."""
    from navigator.core.errors import IndexCorruptError
    root = built(tmp_path, modules=40)
    db = root / ".nav" / "nav.db"
    pristine = db.read_bytes()
    pages = len(pristine) // 4096
    assert pages > 40
    for start in range(2, pages - 4, 4):
        for suffix in ("-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
        db.write_bytes(pristine)
        damage(db, start * 4096, 4 * 4096, seed=start)
        before = db.read_bytes()
        with pytest.raises(IndexCorruptError) as caught:
            build_index(root, Config.from_env())
        assert "--rebuild" in caught.value.hint, start
        assert db.read_bytes() == before, f"pages {start}-{start + 3}: the refused run wrote into nav.db"


def test_damaged_chroma_sqlite_is_rebuilt_by_a_plain_index(tmp_path, nav_env, monkeypatch):
    """Case 3: a damaged chroma.sqlite3; search rightly said run `nav index`, which then failed with four
    chained chromadb tracebacks. The exact search (the default at this size, patches/0016) never reads the store
    and still answers; chroma's own search says what to do."""
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")
    root = built(tmp_path)
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "exact")
    chroma_db = root / ".nav" / "chroma" / "chroma.sqlite3"
    damage(chroma_db, 0, min(chroma_db.stat().st_size, 64 * 4096))
    exact = nav("search", "compute value scale", "--retriever", "vector", "-k", "5", "--json", "--repo", str(root))
    assert exact.returncode == 0, exact.stderr
    assert len(json.loads(exact.stdout)["results"]) == 5
    monkeypatch.setenv("NAV_VECTOR_SEARCH", "ann")
    search = nav("search", "compute value scale", "--retriever", "vector", "--repo", str(root))
    no_traceback(search)
    assert search.returncode == 3 and "nav index" in search.stderr, search.stderr
    index = nav("index", str(root))
    no_traceback(index)
    assert index.returncode == 0, index.stderr
    search = nav("search", "compute value scale", "--retriever", "vector", "-k", "5", "--json", "--repo", str(root))
    assert search.returncode == 0, search.stderr
    assert len(json.loads(search.stdout)["results"]) == 5


def test_damaged_onnx_export_is_not_loaded_and_a_plain_index_exports_it_again(tmp_path, nav_env, monkeypatch):
    """Case 4: model.onnx overwritten in part; search failed with an onnxruntime InvalidProtobuf traceback
    and `nav index` left it broken (the check looked at file names, not contents)."""
    from navigator.index.onnx_query import MODEL_FILE, export_problem, is_exported, onnx_dir_for
    monkeypatch.setenv("NAV_ONNX", "1")
    root = built(tmp_path)
    onnx_dir = onnx_dir_for(root / ".nav", Config.from_env().embed_model)
    assert is_exported(onnx_dir)
    query = ["search", "runs jobs for feature 1", "--retriever", "vector", "-k", "5", "--json", "--repo", str(root)]
    before = nav(*query)
    assert before.returncode == 0, before.stderr
    model = onnx_dir / MODEL_FILE
    size = model.stat().st_size
    damage(model, size // 3, 4096)
    assert model.stat().st_size == size and export_problem(onnx_dir) and not is_exported(onnx_dir)
    status = nav("status", str(root))
    assert "DAMAGED" in status.stdout and "ONNX" in status.stdout, status.stdout
    during = nav(*query)        # the torch path answers instead: same vectors, no traceback
    no_traceback(during)
    assert during.returncode == 0, during.stderr
    ids = lambda out: [r["id"] for r in json.loads(out.stdout)["results"]]  # noqa: E731
    assert ids(during) == ids(before)
    summary = build_index(root, Config.from_env())
    assert any("damaged" in n for n in summary.notes) and any("exported the embedder" in n for n in summary.notes)
    assert is_exported(onnx_dir) and export_problem(onnx_dir) is None
    after = nav(*query)
    assert after.returncode == 0 and ids(after) == ids(before)
    assert json.loads(nav("status", str(root), "--json").stdout)["state"] == "fresh"


def test_interrupted_onnx_export_leaves_no_temporary_folder_behind(tmp_path, nav_env, monkeypatch):
    """Case 9c: an ONNX export killed mid-way left its temporary folder forever."""
    from navigator.index.onnx_query import STAGING_MARK, onnx_dir_for
    monkeypatch.setenv("NAV_ONNX", "1")
    root = built(tmp_path)
    parent = onnx_dir_for(root / ".nav", Config.from_env().embed_model).parent
    dead = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1 if Path("/proc/sys/kernel/pid_max").exists() else 2**22 + 1
    abandoned = parent / f".export{STAGING_MARK}{dead}-abc123"   # no process has that pid
    abandoned.mkdir()
    (abandoned / "model.onnx").write_bytes(b"half")
    live = parent / f".export{STAGING_MARK}{os.getppid()}-def456"   # a process still running: kept
    live.mkdir()
    write(root, "pkg/new.py", "def new_function():\n    return 1\n")
    summary = build_index(root, Config.from_env())
    assert not abandoned.exists() and live.exists()
    assert any("unfinished ONNX export" in n for n in summary.notes)


@pytest.fixture
def read_only(tmp_path):
    """Make a folder read-only for this process: chmod for a normal user; for root (which chmod does not
    stop) a read-only bind mount, or skip where mounting is not allowed."""
    mounted: list[Path] = []

    def make(folder: Path) -> None:
        if os.geteuid() != 0:
            for path in [folder, *folder.rglob("*")]:
                path.chmod(path.stat().st_mode & ~0o222)
            return
        ok = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True).returncode == 0
        if ok:
            mounted.append(folder)
            ok = subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True).returncode == 0
        if not ok:
            pytest.skip("cannot make a read-only folder here (root without mount)")

    yield make
    for folder in mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)
    for path in tmp_path.rglob("*"):
        try:
            path.chmod(path.stat().st_mode | 0o200)
        except OSError:
            pass


def test_read_only_index_searches_and_index_says_read_only(tmp_path, nav_env, read_only):
    """Case 5: a read-only .nav was reported as a corrupt database with advice to --rebuild, and `nav index`
    failed with a traceback (OSError: [Errno 30] Read-only file system: '.nav/lock')."""
    root = built(tmp_path)
    before = nav("search", "compute value scale", "-k", "5", "--json", "--repo", str(root))
    assert before.returncode == 0, before.stderr
    read_only(root / ".nav")
    for retriever in ("hybrid", "bm25", "vector"):
        search = nav("search", "compute value scale", "--retriever", retriever, "-k", "5", "--json", "--repo", str(root))
        no_traceback(search)
        assert search.returncode == 0, (retriever, search.stderr)
        assert len(json.loads(search.stdout)["results"]) == 5
    status = nav("status", str(root))
    no_traceback(status)
    assert status.returncode == 0 and "FRESH" in status.stdout, (status.stdout, status.stderr)
    index = nav("index", str(root))
    no_traceback(index)
    assert index.returncode == 3 and "read-only" in index.stderr and "--rebuild" not in index.stderr, index.stderr
    assert "searches still work" in index.stderr


def test_a_non_utf8_file_name_is_counted_not_fatal(tmp_path, nav_env):
    """Case 6: one file named x\\xff.py made the whole repository unindexable (UnicodeEncodeError in
    make_chunk_id)."""
    root = make_repo(tmp_path / "repo", modules=2)
    (root / os.fsdecode(b"x\xff.py")).write_text("def odd_name():\n    return 1\n")
    (root / os.fsdecode(b"d\xfe")).mkdir()
    (root / os.fsdecode(b"d\xfe") / "inner.py").write_text("def inner():\n    return 2\n")
    summary = build_index(root, Config.from_env())
    assert summary.skipped["non_utf8_name"] == 2 and summary.files_indexed > 0
    assert "2 non_utf8_name" in summary.render()
    index = NavIndex.open(root)
    assert index.state()["state"] == "fresh"
    out = nav("search", "compute value", "--repo", str(root))
    assert out.returncode == 0, out.stderr


def test_special_files_are_counted_as_special(tmp_path, nav_env):
    """Case 9a: FIFOs, sockets and device files were skipped without being counted."""
    import socket
    root = make_repo(tmp_path / "repo", modules=2)
    os.mkfifo(root / "pipe.py")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "s.sock"))
        summary = build_index(root, Config.from_env())
    finally:
        sock.close()
    assert summary.skipped["special"] == 2


@pytest.mark.parametrize("argv", [("status",), ("search", "compute value scale"), ("search", "compute", "--json")])
def test_a_reader_that_leaves_early_gets_no_traceback(tmp_path, nav_env, argv):
    """Case 7: `nav status | head -1` ended in a BrokenPipeError traceback. The read end of the pipe is closed
    before nav writes, so every write fails: deterministic, unlike a real `head`."""
    root = built(tmp_path, modules=2)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        args = [*argv, str(root)] if argv[0] == "status" else [*argv, "--repo", str(root)]
        result = nav(*args, stdout=write_end)
    finally:
        os.close(write_end)
    no_traceback(result)
    assert "BrokenPipe" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr
    assert result.returncode == 141


def test_no_chunk_exceeds_the_cap_for_minified_files_and_notebooks(tmp_path, nav_env):
    """Case 8: a 900 KB one-line minified file (or a notebook with a huge output line) became one chunk of
    hundreds of thousands of tokens; `nav context` then returned nothing and suggested --budget 285388."""
    from chunkers.dispatch import CHUNK_CHAR_CAP, chunk_file
    from chunkers.text import embed_chars
    minified = "".join(f"function f{i}(a,b){{return a*{i}+b}};" for i in range(30000))   # ~900 KB, one line
    assert len(minified) > 900_000 and "\n" not in minified
    notebook = json.dumps({"cells": [
        {"cell_type": "code", "source": ["def plot_results(rows):\n", "    return draw(rows)\n"],
         "outputs": [{"data": {"image/png": "iVBORw0KGgo" * 60000}}]}]}, indent=1)
    for path, text in (("static/app.js", minified), ("analysis.ipynb", notebook)):
        chunks = chunk_file(path, text).chunks
        assert chunks and max(embed_chars(c.header, len(c.text)) for c in chunks) <= CHUNK_CHAR_CAP
    # the notebook by cell: its code is indexed, its outputs are not, and the chunk points at the source rows
    (cell,) = chunk_file("analysis.ipynb", notebook).chunks
    assert cell.symbol == "plot_results" and "iVBOR" not in cell.text
    rows = notebook.split("\n")
    assert "def plot_results" in rows[cell.start_line - 1] and "return draw" in rows[cell.end_line - 1]
    assert chunk_file("broken.ipynb", "{not json\n").chunks   # not a notebook after all: chunked as text
    root = make_repo(tmp_path / "repo", modules=2)
    write(root, "static/app.js", minified[:200_000])
    build_index(root, Config.from_env())
    out = nav("context", "function f123 return", "--budget", "2000", "--json", "--repo", str(root))
    assert out.returncode == 0, out.stderr
    envelope = json.loads(out.stdout)
    sizes = [p["tokens"] for p in envelope["pieces"]] + [i["tokens"] for i in envelope["left_out"]["items"]]
    assert sizes and max(sizes) <= CHUNK_CHAR_CAP          # a token is at least one character
    assert not any(i["reason"] == "over_budget" for i in envelope["left_out"]["items"] if i["tokens"] > 2000)


def test_stale_search_marks_results_of_deleted_files(tmp_path, nav_env):
    """Case 9b: a stale search ranked chunks of deleted files first with no mark on those results."""
    root = built(tmp_path, modules=3)
    (root / "pkg" / "mod1.py").unlink()
    out = nav("search", "compute_1 scale value feature 1", "--retriever", "bm25", "--json", "--repo", str(root))
    assert out.returncode == 0, out.stderr
    response = json.loads(out.stdout)
    assert response["index"]["state"] == "stale"
    marks = {(r["path"], r["deleted_since_index"]) for r in response["results"]}
    assert ("pkg/mod1.py", True) in marks and all(flag == (path == "pkg/mod1.py") for path, flag in marks)
    text = nav("search", "compute_1 scale value feature 1", "--retriever", "bm25", "--repo", str(root)).stdout
    assert "pkg/mod1.py" in text and "[deleted since index]" in text
    files = nav("search", "compute_1 scale value feature 1", "--retriever", "bm25", "--level", "file", "--json",
                "--repo", str(root))
    assert ("pkg/mod1.py", True) in {(r["path"], r["deleted_since_index"]) for r in json.loads(files.stdout)["results"]}
