"""A shared index on a real chroma server (`chroma run` from the installed chromadb package, loopback only):
index, search, re-index after an edit and a deletion, a second machine attaching to the same vectors, a
server that is down, and a server that goes away mid-run without losing anything."""
from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from navigator.core.config import Config
from navigator.core.errors import UsageError, VectorStoreUnavailableError
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from navigator.index.vector_store import collection_name, open_collection, parse_chroma_url
from tests.repo_factory import make_repo

CHROMA_BIN = Path(sys.executable).with_name("chroma")
START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChromaProcess:
    """`chroma run --path DATA --host 127.0.0.1 --port PORT`, started and stopped by the test."""

    def __init__(self, data: Path, port: int, log: Path):
        self.data, self.port, self.log = data, port, log
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ChromaProcess":
        import httpx
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([str(CHROMA_BIN), "run", "--path", str(self.data), "--host", "127.0.0.1",
                                          "--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"chroma run gave no heartbeat within {START_TIMEOUT}s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def chroma(tmp_path):
    if not CHROMA_BIN.exists():
        pytest.skip(f"no chroma CLI beside {sys.executable}")
    server = ChromaProcess(tmp_path / "chroma-server", free_port(), tmp_path / "chroma.log")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def served(chroma, nav_env, monkeypatch):
    monkeypatch.setenv("NAV_CHROMA_URL", chroma.url)
    monkeypatch.delenv("NAV_CHROMA_COLLECTION", raising=False)
    return chroma


class SpyEmbed:
    def __init__(self, config: Config, before=None):
        from navigator.index.embedder import Embedder
        self.embedder = Embedder(config.embed_model, config.embed_dtype)
        self.texts: list[str] = []
        self.before = before

    def __call__(self, texts, on_batch=None):
        if self.before:
            self.before()
        self.texts.extend(texts)
        return self.embedder.encode_documents(texts, on_batch=on_batch)


def build(root: Path, index_dir: Path | None = None, before_embed=None):
    config = Config.from_env()
    if index_dir is not None:
        config.index_dir = index_dir
    spy = SpyEmbed(config, before_embed)
    return build_index(root, config, embed_fn=spy), spy


def open_index(root: Path, index_dir: Path | None = None) -> NavIndex:
    config = Config.from_env()
    if index_dir is not None:
        config.index_dir = index_dir
    return NavIndex.open(root, config)


def server_ids(index: NavIndex) -> set[str]:
    _, collection = open_collection(index.index_dir, index.chroma_server)
    return set(collection.get(include=[])["ids"])


def local_ids(index: NavIndex) -> set[str]:
    """The chunks that have a vector (the embed rule leaves data files such as data/table.csv lexical only)."""
    return {r[0] for r in index.conn.execute(
        "SELECT c.id FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash")}


def vector_of(index: NavIndex, chunk_id: str) -> np.ndarray:
    row = index.conn.execute("SELECT e.vector FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash "
                             "WHERE c.id=?", (chunk_id,)).fetchone()
    return np.frombuffer(row[0], dtype=np.float32)


def chunk_id(index: NavIndex, path: str, symbol: str) -> str:
    return index.conn.execute("SELECT id FROM chunks WHERE path=? AND symbol=?", (path, symbol)).fetchone()[0]


def test_index_search_edit_and_delete_through_the_server(tmp_path, served):
    root = make_repo(tmp_path / "repo")
    build(root)
    index = open_index(root)
    assert not (index.index_dir / "chroma").exists()          # nothing embedded: the vectors are on the server
    assert server_ids(index) == local_ids(index) and index.chunk_count > 0
    target = chunk_id(index, "pkg/mod2.py", "compute_2")
    hits = index.vector_search_by_vector(vector_of(index, target), 3)
    assert hits[0][0] == target and hits[0][1] == pytest.approx(1.0, abs=1e-4)

    path = root / "pkg" / "mod2.py"
    path.write_text(path.read_text().replace("result = value * scale + 2", "result = value * scale - 99"))
    summary, spy = build(root)
    assert summary.chunks_embedded == 1 and len(spy.texts) == 1
    index = open_index(root)
    assert target not in server_ids(index) and server_ids(index) == local_ids(index)
    edited = chunk_id(index, "pkg/mod2.py", "compute_2")
    assert index.vector_search_by_vector(vector_of(index, edited), 1)[0][0] == edited

    (root / "pkg" / "mod3.py").unlink()
    summary, _ = build(root)
    assert summary.files_deleted == 1
    index = open_index(root)
    assert server_ids(index) == local_ids(index)
    assert not any(p == "pkg/mod3.py" for (p,) in index.conn.execute("SELECT path FROM chunks"))
    hits = index.vector_search("compute scale a value for feature 3", 50)
    assert len(hits) == index.vector_count and all(index.chunk_by_id(cid).path != "pkg/mod3.py" for cid, _ in hits)


def test_second_machine_attaches_to_the_same_vectors(tmp_path, served):
    root_a = make_repo(tmp_path / "machine-a" / "repo")
    build(root_a)
    a = open_index(root_a)
    # Machine B: a copy of the tree elsewhere, its own nav.db, the same server.
    root_b = tmp_path / "machine-b" / "repo"
    shutil.copytree(root_a, root_b, symlinks=True, ignore=shutil.ignore_patterns(".nav"))
    assert collection_name(root_b, a.manifest["embedder"]) == a.chroma_server.collection
    summary, _ = build(root_b)                                # B's own run: same tree, same chunk ids
    assert summary.chunks == a.chunk_count
    b = open_index(root_b)
    assert local_ids(b) == local_ids(a) == server_ids(b)

    # Machine B edits and re-indexes: A, still at the old tree, notices the collection changed and re-syncs
    # it from its own nav.db before searching (last writer wins; nothing is re-embedded).
    path = root_b / "pkg" / "mod1.py"
    path.write_text(path.read_text().replace("MAX_RETRIES_1 = 1", "MAX_RETRIES_1 = 7"))
    build(root_b)
    b = open_index(root_b)
    assert server_ids(b) == local_ids(b) != local_ids(a)
    a = open_index(root_a)
    target = chunk_id(a, "pkg/mod1.py", "MAX_RETRIES_1")
    assert a.vector_search_by_vector(vector_of(a, target), 1)[0][0] == target
    assert server_ids(a) == local_ids(a)


def test_server_down_is_a_typed_error(tmp_path, nav_env, monkeypatch):
    root = make_repo(tmp_path / "repo", modules=2)
    monkeypatch.setenv("NAV_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(VectorStoreUnavailableError) as err:
        build(root)
    assert err.value.exit_code == 8 and "127.0.0.1" in err.value.message
    # The chunks and embeddings were committed before the sync: nothing to redo once a server is there.
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] > 0
    assert conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] > 0
    with pytest.raises(UsageError):
        parse_chroma_url("127.0.0.1:8000")


def test_server_lost_mid_run_loses_nothing_and_syncs_when_back(tmp_path, served):
    root = make_repo(tmp_path / "repo")
    build(root)
    path = root / "pkg" / "mod4.py"
    path.write_text(path.read_text().replace("result = value * scale + 4", "result = value * scale + 444"))
    with pytest.raises(VectorStoreUnavailableError):
        build(root, before_embed=served.stop)                 # the server dies while the run embeds
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    texts = [r[0] for r in conn.execute("SELECT text FROM chunks WHERE path='pkg/mod4.py'")]
    assert any("scale + 444" in t for t in texts)             # nav.db holds the run's chunks and vectors
    conn.close()
    with pytest.raises(VectorStoreUnavailableError):          # searching without the server: typed error too
        open_index(root).vector_search("compute", 3)

    served.start()                                            # back, same data directory and port
    index = open_index(root)
    edited = chunk_id(index, "pkg/mod4.py", "compute_4")
    assert index.vector_search_by_vector(vector_of(index, edited), 1)[0][0] == edited
    assert server_ids(index) == local_ids(index)
    summary, spy = build(root)                                # in step again: nothing to embed or upload
    assert spy.texts == [] and summary.files_changed == 0


def test_collection_names_separate_repositories_and_embedders(tmp_path):
    a = collection_name(tmp_path / "alpha", "model-x")
    assert a.startswith("nav-alpha-") and a != collection_name(tmp_path / "beta", "model-x")
    assert a != collection_name(tmp_path / "alpha", "model-y")
    assert a == collection_name(tmp_path / "elsewhere" / "alpha", "model-x")
    assert collection_name(tmp_path / "alpha", "model-x", "custom-name") == "custom-name"


def test_cli_flag_and_exit_code_8(tmp_path, served):
    """The --chroma-url flag reaches the stages; a server that is down is exit 8 with the URL named."""
    root = make_repo(tmp_path / "repo", modules=2)
    env = {k: v for k, v in os.environ.items() if k != "NAV_CHROMA_URL"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])

    def nav(*args):
        return subprocess.run([sys.executable, "-m", "navigator", *args], capture_output=True, text=True, env=env,
                              timeout=300)

    done = nav("index", str(root), "--chroma-url", served.url)
    assert done.returncode == 0, done.stderr
    status = nav("status", str(root), "--chroma-url", served.url)
    assert "chroma server " + served.url in status.stdout
    found = nav("search", "compute", "--repo", str(root), "--retriever", "vector", "--chroma-url", served.url, "--json")
    assert found.returncode == 0 and len(__import__("json").loads(found.stdout)["results"]) > 0
    down = f"http://127.0.0.1:{free_port()}"
    failed = nav("search", "compute", "--repo", str(root), "--retriever", "vector", "--chroma-url", down)
    assert failed.returncode == 8 and down in failed.stderr and "NAV_CHROMA_URL" in failed.stderr
