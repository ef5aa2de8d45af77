"""The command line end to end: the README's first command path, error messages and exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from tests.repo_factory import make_repo, write

HEAVY_MODULES = ("torch", "numpy", "chromadb", "tree_sitter", "anthropic", "sentence_transformers",
                 "transformers", "onnxruntime", "httpx", "httpx2", "rank_bm25")


def nav(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 300):
    return subprocess.run([sys.executable, "-m", "navigator", *args], env=env or os.environ.copy(), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_help_imports_nothing_heavy():
    code = ("import sys; from navigator.frontends.cli import build_parser; build_parser().format_help(); "
            "import navigator.frontends.cli, chunkers, retrievers, agent_loop, navigator.core.errors; "
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in %r)))" % (HEAVY_MODULES,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    help_out = nav("--help")
    assert help_out.returncode == 0 and "index" in help_out.stdout and "exit codes" in help_out.stdout


def test_readme_first_command_path_with_the_bundled_model(tmp_path):
    """`nav index` then `nav search` on the embedded default model (no NAV_EMBED_MODEL), as `make demo` does."""
    root = make_repo(tmp_path / "repo", modules=4)
    write(root, "pkg/storage.py", '"""Storage."""\n\n\ndef save_user_record(database, user):\n'
                                  '    """Persist a user row in the database and commit the transaction."""\n'
                                  '    database.insert("users", user)\n    database.commit()\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("NAV_")}
    out = nav("index", str(root), env=env)
    assert out.returncode == 0, out.stderr
    assert "chunks" in out.stdout and "embedded" in out.stdout
    res = nav("search", "write a user into the database", "--repo", str(root), "--retriever", "vector", "-k", "3",
              "--json", env=env)
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert payload["index"]["state"] == "fresh" and payload["retriever"] == "vector"
    top = payload["results"][0]
    assert top["path"] == "pkg/storage.py" and top["symbol"] == "save_user_record" and top["kind"] == "function"
    assert top["heads"]["vector"]["rank"] == 1 and top["start_line"] == 4
    status = nav("status", str(root), env=env)
    assert status.returncode == 0 and "FRESH" in status.stdout


def test_search_without_index_says_what_to_do(tmp_path, nav_env):
    (tmp_path / "repo").mkdir()
    out = nav("search", "anything", "--repo", str(tmp_path / "repo"))
    assert out.returncode == 3
    assert out.stderr.startswith("Error: no index at") and "nav index" in out.stderr


def test_index_of_missing_path_and_of_a_file(tmp_path, nav_env):
    out = nav("index", str(tmp_path / "missing"))
    assert out.returncode == 2 and "does not exist" in out.stderr
    write(tmp_path, "one.py", "x = 1\n")
    out = nav("index", str(tmp_path / "one.py"))
    assert out.returncode == 2 and "not a directory" in out.stderr


def test_unknown_retriever_lists_registered_names(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=1)
    assert nav("index", str(root)).returncode == 0
    out = nav("search", "x", "--repo", str(root), "--retriever", "nope")
    assert out.returncode == 2
    for name in ("vector", "bm25", "hybrid", "rerank", "baseline"):
        assert name in out.stderr
    env = os.environ.copy()
    env["RETRIEVER"] = "alsonope"
    assert "alsonope" in nav("search", "x", "--repo", str(root), env=env).stderr


def test_stale_search_warns(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=2)
    assert nav("index", str(root)).returncode == 0
    write(root, "pkg/mod0.py", "CHANGED = 1\n")
    out = nav("search", "worker", "--repo", str(root), "--retriever", "vector")
    assert out.returncode == 0 and "stale: 1 files changed" in out.stdout


def test_eval_refuses_an_indexed_answer_key(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=2)
    line = {"id": "q1", "lang": "en", "category": "value_lookup", "query": "how many retries for feature one",
            "expect_any": [{"path": "pkg/mod1.py", "text": "MAX_RETRIES_1 = 1"}]}
    write(root, "eval/queries.jsonl", json.dumps(line) + "\n")
    assert nav("index", str(root)).returncode == 0
    out = nav("eval", "--queries", str(root / "eval" / "queries.jsonl"), "--repo", str(root), "--retriever", "vector")
    assert out.returncode == 5 and "eval/queries.jsonl" in out.stderr and "--skip" in out.stderr
    assert nav("index", str(root), "--skip", "eval").returncode == 0
    out = nav("eval", "--queries", str(root / "eval" / "queries.jsonl"), "--repo", str(root), "--retriever", "vector")
    assert out.returncode == 0, out.stderr


def test_eval_reports_malformed_lines(tmp_path, nav_env):
    root = make_repo(tmp_path / "repo", modules=1)
    assert nav("index", str(root)).returncode == 0
    qfile = write(tmp_path, "q.jsonl", '{"id": "a", "query": "x", "expect_any": [{"path": "pkg/mod0.py"}]}\nnot json\n')
    out = nav("eval", "--queries", str(qfile), "--repo", str(root))
    assert out.returncode == 2 and "line 2" in out.stderr
