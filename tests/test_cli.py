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


def loaded_heavy_modules(code: str, env: dict | None = None) -> str:
    """Run `code` in a fresh interpreter and list the heavy modules it left loaded."""
    code += "\nimport sys; print('heavy:' + ','.join(sorted(m for m in sys.modules if m.split('.')[0] in %r)))" % (HEAVY_MODULES,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return out.stdout.splitlines()[-1].removeprefix("heavy:")


def test_help_imports_nothing_heavy():
    code = ("import contextlib, io; from navigator.frontends.cli import main\n"
            "for argv in (['--help'], ['search', '--help'], ['index', '--help'], ['eval', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()): assert main(argv) == 0\n"
            "import navigator.frontends.cli, chunkers, retrievers, agent_loop, navigator.core.errors")
    assert loaded_heavy_modules(code) == ""
    help_out = nav("--help")
    assert help_out.returncode == 0 and "index" in help_out.stdout and "exit codes" in help_out.stdout
    assert "_NAV_COMPLETE=bash_source nav" in help_out.stdout


def test_shell_completion_comes_from_click_and_imports_nothing_heavy():
    env = {**os.environ, "_NAV_COMPLETE": "bash_source"}
    script = nav(env=env)
    assert script.returncode == 0
    assert "_nav_completion()" in script.stdout and "complete -o nosort -F _nav_completion nav" in script.stdout
    for shell in ("zsh_source", "fish_source"):
        assert nav(env={**os.environ, "_NAV_COMPLETE": shell}).stdout.strip()

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        out = nav(env={**os.environ, "_NAV_COMPLETE": "bash_complete", "COMP_WORDS": line,
                       "COMP_CWORD": str(len(words) - 1)})
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    assert complete("nav s") == ["plain,search", "plain,status"]
    assert complete("nav search q --re") == ["plain,--repo", "plain,--retriever", "plain,--refresh"]
    from retrievers.registry import registered_names
    assert complete("nav search q --retriever ") == [f"plain,{n}" for n in sorted(registered_names())]
    assert {"baseline", "bm25", "hybrid", "rerank", "vector"} <= set(registered_names())
    assert complete("nav eval --level ") == ["plain,chunk", "plain,file"]
    assert complete("nav index ") == ["dir,"]          # the shell completes directories itself
    code = ("import os, sys, contextlib, io; os.environ.update(_NAV_COMPLETE='bash_complete', "
            "COMP_WORDS='nav search q --retriever ', COMP_CWORD='4'); from navigator.frontends.cli import main\n"
            "try: main()\n"
            "except SystemExit: pass")
    assert loaded_heavy_modules(code) == ""


def test_usage_errors_exit_2_with_clicks_message(capsys, tmp_path):
    from navigator.frontends.cli import main
    cases = {("search",): ("Missing argument", "QUERY"), ("search", "q", "-k", "many"): ("not a valid integer", "many"),
             ("search", "q", "--nope"): ("No such option", "--nope"), ("frobnicate",): ("No such command", "frobnicate"),
             ("eval", "--level", "line"): ("is not one of", "line"), ("eval",): ("Missing option", "--queries")}
    for argv, fragments in cases.items():
        assert main(list(argv)) == 2, argv
        err = capsys.readouterr().err
        assert all(f in err for f in fragments) and "Usage: nav" in err, (argv, err)
    # nav tune --worker takes one or two words: `claude` or `patches DIR` (DIR arrives as an extra argument)
    for worker in (["claude", "stray"], ["patches"]):
        assert main(["tune", "--queries", "q.jsonl", "--worker", *worker]) == 2
        assert "--worker takes `claude` or `patches DIR`" in capsys.readouterr().err
    (tmp_path / "candidate.py").write_text("# a candidate policy\n")
    assert main(["tune", "--queries", "/nonexistent/q.jsonl", "--worker", "patches", str(tmp_path)]) == 2
    assert "query file not found" in capsys.readouterr().err   # the worker spec was accepted
    assert main([]) == 2                              # no command: the help, and bad usage
    assert "Commands:" in capsys.readouterr().err


def test_nav_errors_are_translated_in_one_place(tmp_path, nav_env, capsys, monkeypatch):
    """Every NavError subclass becomes "Error: message" + hint on stderr and its class's exit code; with
    standalone=False the error propagates unchanged (what the tests of stages use)."""
    import pytest
    from navigator.core import errors
    from navigator.frontends import cli
    (tmp_path / "repo").mkdir()
    assert cli.main(["search", "anything", "--repo", str(tmp_path / "repo")]) == 3
    assert capsys.readouterr().err.startswith("Error: no index at")
    assert cli.main(["search", "anything", "-k", "0", "--repo", str(tmp_path / "repo")]) == 2
    assert capsys.readouterr().err == "Error: -k must be a positive number, got 0\n  (see `nav --help`)\n"
    with pytest.raises(errors.IndexMissingError):
        cli.main(["search", "anything", "--repo", str(tmp_path / "repo")], standalone=False)

    import navigator.index.status as status_module
    expected = {errors.NavError: 1, errors.UsageError: 2, errors.InputError: 2, errors.QueryFileError: 2, errors.IndexError_: 3,
                errors.IndexMissingError: 3, errors.IndexCorruptError: 3, errors.IndexLockedError: 3, errors.IndexReadOnlyError: 3,
                errors.EmbedderMismatchError: 3, errors.IndexOutdatedError: 3, errors.ModelError: 4, errors.RetrieverError: 2,
                errors.LeakageError: 5, errors.LLMError: 6, errors.MissingAPIKeyError: 7, errors.PolicyError: 2,
                errors.VectorStoreUnavailableError: 8}
    every_class = {c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.NavError)}
    assert every_class == set(expected)               # a new error class gets its exit code decided here
    for error_class, code in expected.items():
        def fail(*args, **kwargs):
            raise error_class(f"{error_class.__name__} happened", hint="do this instead")
        monkeypatch.setattr(status_module, "status", fail)
        assert cli.main(["status", str(tmp_path)]) == code, error_class
        err = capsys.readouterr().err
        assert err.startswith(f"Error: {error_class.__name__} happened\n  do this instead\n"), err

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(status_module, "status", interrupted)
    assert cli.main(["status", str(tmp_path)]) == 130
    assert "Interrupted. The previous index is intact" in capsys.readouterr().err


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


def _as_if_built_by_an_older_nav(root: Path) -> None:
    """What an index from before chunker 4, symbol graph 3 and secret redaction records of itself."""
    import sqlite3
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    manifest = json.loads(conn.execute("SELECT value FROM meta WHERE key='manifest'").fetchone()[0])
    manifest["chunker_version"] = "3"
    del manifest["redaction"]
    conn.execute("UPDATE meta SET value=? WHERE key='manifest'", (json.dumps(manifest),))
    conn.execute("UPDATE meta SET value='2' WHERE key='graph_version'")
    conn.commit()
    conn.close()


def test_an_index_built_by_an_older_nav_is_stale_until_rebuilt(tmp_path, nav_env):
    """An upgraded nav searched an old index and called it fresh: graph ranking ran without the graph (a stale
    graph version is not read) and an index from before redaction may hold secrets. Now every reader says
    what is outdated, a measurement refuses it, and `nav index` rebuilds it with no file changed."""
    root = make_repo(tmp_path / "repo", modules=2)
    line = {"id": "q1", "lang": "en", "category": "value_lookup", "query": "how many retries for feature one",
            "expect_any": [{"path": "pkg/mod1.py", "text": "MAX_RETRIES_1 = 1"}]}
    write(tmp_path, "queries.jsonl", json.dumps(line) + "\n")
    assert nav("index", str(root)).returncode == 0
    _as_if_built_by_an_older_nav(root)

    status = json.loads(nav("status", str(root), "--json").stdout)
    assert status["state"] == "stale" and status["files_changed_since"] == 0
    assert [r.split(" (")[0] for r in status["outdated"]] == ["chunks from chunker 3", "symbol graph 2",
                                                              "built before secret redaction: secret values may be in it"]
    out = nav("search", "retries for feature one", "--repo", str(root))
    assert out.returncode == 0 and "built by an older nav (chunks from chunker 3" in out.stdout
    assert "files changed since" not in out.stdout
    envelope = json.loads(nav("context", "retries for feature one", "--repo", str(root), "--json").stdout)
    assert envelope["index"]["state"] == "stale" and len(envelope["index"]["outdated"]) == 3
    assert "built by an older nav" in envelope["sufficiency"]["explanation"]
    out = nav("eval", "--queries", str(tmp_path / "queries.jsonl"), "--repo", str(root))
    assert out.returncode == 3 and "older nav" in out.stderr and f"nav index {root}" in out.stderr

    assert nav("index", str(root)).returncode == 0    # no file changed: rebuilt for what is outdated
    status = json.loads(nav("status", str(root), "--json").stdout)
    assert status["state"] == "fresh" and status["outdated"] == []
    assert nav("eval", "--queries", str(tmp_path / "queries.jsonl"), "--repo", str(root)).returncode == 0


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


def test_version_flag_and_version_command():
    import subprocess, sys
    from navigator import __version__
    out = subprocess.run([sys.executable, "-m", "navigator", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"nav {__version__}"
    out = subprocess.run([sys.executable, "-m", "navigator", "version", "--json"], capture_output=True, text=True,
                         timeout=60)
    facts = json.loads(out.stdout)
    from chunkers.base import CHUNKER_VERSION
    from navigator.index.store import SCHEMA_VERSION
    assert facts["nav"] == __version__ and facts["index_schema"] == SCHEMA_VERSION
    assert facts["chunker"] == CHUNKER_VERSION and "go" in facts["languages"] and facts["python"].count(".") == 2
    assert facts["embedder"]
