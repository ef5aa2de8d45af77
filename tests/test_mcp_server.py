"""`nav mcp` end to end: the MCP SDK's own client (ClientSession over stdio_client) drives one real server
subprocess (`python -m navigator mcp --repo DIR`) over a real index built with the tiny test embedder.
Every test of this module talks to the same server process, as an agent's session would."""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.repo_factory import make_repo, write

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TOOLS = {"search", "context", "read_span", "index_status", "reindex", "find_definition", "find_references",
         "symbol_neighbours"}
LANGUAGE_FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "languages"
# An edit reaches the server's watcher after its debounce (navigator.index.refresh.WATCH_DEBOUNCE_MS) and a
# poll step; an agent's next call comes far later. Generous, so a busy machine does not make the test flaky.
WATCHER_LATENCY_S = 1.0


class McpSession:
    """A ClientSession kept open on a background event loop, so that synchronous tests share one server.
    (anyio's cancel scopes must be entered and left by one task: _run is that task.)"""

    def __init__(self, params, errlog):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._ready: concurrent.futures.Future = concurrent.futures.Future()
        self._done = asyncio.run_coroutine_threadsafe(self._run(params, errlog), self.loop)
        self.session = self._ready.result(timeout=120)

    async def _run(self, params, errlog) -> None:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client
        self._stop = asyncio.Event()
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    self._ready.set_result(session)
                    await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, coroutine, timeout: float = 300):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def call(self, tool: str, **arguments):
        """(text of the result, is_error)."""
        result = self.run(self.session.call_tool(tool, arguments))
        return "\n".join(block.text for block in result.content if block.type == "text"), bool(result.is_error)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._done.result(timeout=60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory, tiny_embed_model):
    """(session, repo root, outside dir, env): one `nav mcp` process over an indexed repository."""
    from mcp.client.stdio import StdioServerParameters
    base = tmp_path_factory.mktemp("mcp")
    root = make_repo(base / "repo", modules=4)
    # nav's graph tools serve every language it parses: a Go package and two TypeScript modules
    write(root, "polyglot/router.go", (LANGUAGE_FIXTURES / "router.go").read_text(encoding="utf-8"))
    write(root, "polyglot/greeter.ts", "export class Greeter {\n  greet(name: string): string {\n"
                                       "    return `Hello, ${name}`;\n  }\n}\n\n"
                                       "export function makeGreeter(): Greeter {\n  return new Greeter();\n}\n")
    write(root, "polyglot/app.ts", 'import { makeGreeter } from "./greeter";\n\nexport const app = () => makeGreeter().greet("x");\n')
    outside = base / "outside"
    write(outside, "secret.txt", "TOP SECRET outside the repository\n")
    os.symlink(outside / "secret.txt", root / "escape.txt")
    env = {"NAV_EMBED_MODEL": tiny_embed_model, "NAV_EMBED_DTYPE": "fp32", "NAV_ONNX": "0",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
           "PYTHONPATH": str(PROJECT_ROOT)}
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("NAV_") and k != "RETRIEVER"} | env
    built = subprocess.run([sys.executable, "-m", "navigator", "index", str(root)], env=full_env, cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    params = StdioServerParameters(command=sys.executable, args=["-m", "navigator", "mcp", "--repo", str(root)],
                                   env=env, cwd=str(PROJECT_ROOT))
    with open(base / "server.log", "w") as errlog:
        session = McpSession(params, errlog)
        try:
            yield session, root, outside, full_env
        finally:
            session.close()


def test_graph_tools_find_definitions_and_references_in_typescript_and_go(server):
    session, *_ = server
    found, is_error = session.call("find_definition", name="Router.ServeHTTP")
    assert not is_error and found.startswith("index: fresh")
    assert "polyglot/router.go:36-43  method Router.ServeHTTP (in Router)" in found
    refs, is_error = session.call("find_references", name="makeGreeter")
    assert not is_error and "  polyglot/app.ts:3  call  in app" in refs.splitlines()
    around, _ = session.call("symbol_neighbours", name="Greeter")
    assert "polyglot/greeter.ts:2-4  method Greeter.greet (in Greeter)" in around
    missing, is_error = session.call("find_definition", name="no_such_name_anywhere")
    assert not is_error and "no definition named 'no_such_name_anywhere'" in missing
    empty, is_error = session.call("find_definition", name="  ")
    assert is_error and "name is empty" in empty


def test_lists_eight_tools_that_say_when_to_use_them(server):
    session, *_ = server
    listed = session.run(session.session.list_tools()).tools
    tools = {t.name: t for t in listed}
    assert set(tools) == TOOLS
    assert "best first call for a question" in tools["context"].description
    assert "STALE" in tools["reindex"].description and "prefer `context`" in tools["search"].description
    assert set(tools["search"].input_schema["properties"]) == {"query", "k", "level", "retriever"}
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["read_span"].annotations.read_only_hint and not tools["reindex"].annotations.read_only_hint


def test_search_ranks_chunks_and_files_with_the_index_state(server):
    session, *_ = server
    text, is_error = session.call("search", query="MAX_RETRIES_3 how many retries for feature 3", k=3)
    assert not is_error, text
    lines = text.splitlines()
    assert lines[0].startswith("index: fresh (") and lines[1] == "retriever: graph"
    assert lines[2].startswith(" 1. pkg/mod3.py:") and "MAX_RETRIES_3 = 3" in text
    assert sum(1 for line in lines if line[:4].strip().rstrip(".").isdigit()) == 3

    text, is_error = session.call("search", query="Worker runs jobs compute value", k=3, level="file")
    assert not is_error, text
    ranked = [line.split()[1] for line in text.splitlines()[2:]]
    assert len(ranked) == 3 and len(set(ranked)) == 3 and all(p.startswith("pkg/mod") for p in ranked)
    assert "lines " in text.splitlines()[2]

    text, is_error = session.call("search", query="x", level="line")
    assert is_error and "level must be 'chunk' or 'file'" in text
    text, is_error = session.call("search", query="x", retriever="nope")
    assert is_error and "unknown retriever 'nope'" in text and "hybrid" in text


def test_context_is_the_budgeted_envelope(server):
    session, *_ = server
    text, is_error = session.call("context", question="how many retries does feature 2 allow MAX_RETRIES_2",
                                  budget=300)
    assert not is_error, text
    assert text.startswith("nav context:") and "pkg/mod2.py" in text and "MAX_RETRIES_2 = 2" in text
    text, is_error = session.call("context", question="x", budget=0)
    assert is_error and "--budget must be a positive number" in text


def test_read_span_inside_the_repository_only(server):
    session, root, outside, _ = server
    text, is_error = session.call("read_span", path="pkg/mod2.py", start_line=5, end_line=6)
    assert not is_error and text.startswith("pkg/mod2.py lines 5-6 of ") and "MAX_RETRIES_2 = 2" in text
    for path in ("../outside/secret.txt", str(outside / "secret.txt"), "escape.txt", "pkg/../../outside/secret.txt"):
        text, is_error = session.call("read_span", path=path)
        assert is_error and ("refused" in text or "outside" in text), (path, text)
        assert "TOP SECRET" not in text
    text, is_error = session.call("read_span", path="pkg/missing.py")
    assert is_error and "does not exist" in text


def test_status_reports_a_fresh_index(server):
    session, root, *_ = server
    text, is_error = session.call("index_status")
    assert not is_error and text.startswith(f"Index of {root}: FRESH")


def test_changes_while_serving_are_noticed_and_reindexed(server):
    """Edit a file: the next search brings it into the lexical index first and says so, and its embeddings
    follow in the background; reindex (incremental), then by another process, then a rebuild: each next query
    of the same server finds the new text."""
    session, root, _, env = server
    path = root / "pkg" / "mod1.py"
    path.write_text(path.read_text() + "\n\ndef zorblax_frobnicator(signal):\n    return signal * 7\n")
    time.sleep(WATCHER_LATENCY_S)
    text, is_error = session.call("search", query="zorblax_frobnicator", k=3)
    assert not is_error and text.startswith("index: fresh"), text
    assert "note: refreshed 1 changed file before answering: pkg/mod1.py" in text
    hits = [line for line in text.splitlines() if line.startswith(" 1. ")]
    assert hits and hits[0].startswith(" 1. pkg/mod1.py:") and "zorblax_frobnicator" in text
    for _ in range(120):                     # the background nav index embeds the new chunks
        status, _ = session.call("index_status")
        if "vectors    complete" in status:
            break
        time.sleep(0.5)
    assert "vectors    complete" in status and "STALE" not in status, status
    text, is_error = session.call("search", query="zorblax_frobnicator signal", k=40, retriever="vector")
    assert not is_error and "pkg/mod1.py" in text and "refreshed" not in text

    path.write_text(path.read_text() + "\n\nMAXIMUM_FROB_LEVEL = 9\n")
    time.sleep(WATCHER_LATENCY_S)
    text, is_error = session.call("reindex")
    assert not is_error and "1 new or changed, 0 deleted" in text, text
    text, is_error = session.call("search", query="MAXIMUM_FROB_LEVEL", k=3)
    assert not is_error and text.startswith("index: fresh") and "refreshed" not in text
    assert text.splitlines()[2].startswith(" 1. pkg/mod1.py:") and "MAXIMUM_FROB_LEVEL" in text.splitlines()[2]

    # nav index in another process moves the generation on: the server reopens the index and the vectors
    write(root, "pkg/added.py", "def quuxwidget_calibrate(level):\n    return level + 1\n")
    out = subprocess.run([sys.executable, "-m", "navigator", "index", str(root)], env=env, cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text, is_error = session.call("search", query="quuxwidget_calibrate level", k=2, retriever="bm25")
    assert not is_error and text.splitlines()[2].startswith(" 1. pkg/added.py:"), text
    text, is_error = session.call("search", query="quuxwidget_calibrate level", k=40, retriever="vector")
    assert not is_error and "pkg/added.py" in text, text    # the vector store was read again from disk

    # a rebuild deletes nav.db and the vector store under the open server
    text, is_error = session.call("reindex", rebuild=True)
    assert not is_error, text
    for retriever in ("hybrid", "vector", "bm25"):
        text, is_error = session.call("search", query="zorblax_frobnicator quuxwidget_calibrate", k=40,
                                      retriever=retriever)
        assert not is_error and text.startswith("index: fresh"), text
        assert "pkg/mod1.py" in text and "pkg/added.py" in text
    text, is_error = session.call("context", question="what does zorblax_frobnicator return")
    assert not is_error and "zorblax_frobnicator" in text

    # a rebuild by another process: nav.db is a new file at generation 1 again, and the server sees it
    write(root, "pkg/later.py", "def plimsoll_gauge(depth):\n    return depth * 3\n")
    out = subprocess.run([sys.executable, "-m", "navigator", "index", str(root), "--rebuild"], env=env,
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for retriever in ("bm25", "vector"):
        text, is_error = session.call("search", query="plimsoll_gauge depth", k=40, retriever=retriever)
        assert not is_error and text.startswith("index: fresh") and "pkg/later.py" in text, text
