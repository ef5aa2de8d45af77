"""`nav mcp`: nav as a Model Context Protocol server over stdio, on the official `mcp` SDK (MCPServer).

One process serves one repository for as long as the client keeps it. What it keeps between calls:
  - the open index (NavIndex: its SQLite connection, the chroma collection, the query encoder) and one
    retriever per name, reopened when the index changes under it: a new generation (a re-index by the
    `reindex` tool or by `nav index` in another process) or a new nav.db (`--rebuild`);
  - nothing about the tree: every search, context and status call compares the tree with the index, so
    edited files are reported as stale in the result, and the `reindex` tool brings the index up to date.

All nav work runs on one worker thread: SQLite connections belong to the thread that opened them, and a
re-index must not interleave with a query. Failures reach the client as tool errors carrying nav's message
and hint (navigator.core.errors); a read outside the repository is refused by agent_loop.repo_files, the
same rules `nav ask`'s read_file follows.
"""
from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from navigator.core.config import Config

SERVER_NAME = "nav"
DEFAULT_K = 10
MAX_K = 50
FILE_LEVEL_CHUNK_DEPTH = 5    # chunks retrieved per file asked for, to fill the file-level ranking
FILE_LEVEL_SPANS_SHOWN = 3    # matching spans listed per file, best first; the rest are counted

INSTRUCTIONS = """nav searches one local repository through a prebuilt index (vector + BM25 over code-aware
chunks, fused, then lifted along the symbol graph). Start with `context` for a question (a budgeted selection
of code that says what it left out and whether the evidence is enough), or `search` for a ranked list; then
`read_span` to read exact lines.
Results report the index state: when it says STALE, files changed since the index was built; call `reindex`
if the changed files matter to the question."""

SEARCH_DESCRIPTION = """Ranked search over the repository's index. Use it to find WHERE something is: a
definition, the callers of a name, the files that implement a feature. level="chunk" (default) returns the
top k code chunks (functions, classes, sections) with a preview of each; level="file" returns the top k
files, each with the line spans that matched, best first; read them with read_span. Every result starts
with the index state (fresh or stale, and which files changed since the build). For answering a question
with code to read in one step, prefer `context`."""

CONTEXT_DESCRIPTION = """The best first call for a question about the code ("how does X work", "where is Y
configured", "why does Z fail"). Returns a budgeted selection of whole code units (not a slice of a
ranking): duplicates dropped, what was left out and why, the tokens spent, the index state, and a
sufficiency signal (ok / weak_evidence / nothing_matched / nothing_searched) with what to do next. Raise
`budget` (tokens, default 2000) for broad questions; follow up with read_span for surrounding lines."""

READ_SPAN_DESCRIPTION = """Read lines of one file of the repository, with line numbers. Use it after search
or context to see a whole function, the lines around a hit, or a file's header. `path` is relative to the
repository root; paths that leave the repository (absolute, `..`, symlinks out) are refused. At most 400
lines or 24000 characters per call; the result says where to continue."""

STATUS_DESCRIPTION = """The state of the repository's index: when it was built, at which git HEAD, how many
files and chunks it holds, what was skipped, and which files changed since (STALE). Use it to judge whether
results can be trusted, or to decide whether to call reindex."""

# The symbol-graph tools are nav ask's own (agent_loop.tools): one implementation, the same words.
GRAPH_TOOLS = ("find_definition", "find_references", "symbol_neighbours")

REINDEX_DESCRIPTION = """Bring the index up to date with the files on disk (incremental: only changed files
are re-chunked and re-embedded; usually seconds). Call it when a result or index_status says the index is
STALE and the changed files matter, or after editing code you want to search. rebuild=true discards the
index and re-embeds everything (slow; only for a damaged index or a changed embedding model)."""


class NavService:
    """The repository, its open index and retrievers, kept across tool calls of one server process."""

    def __init__(self, repo: str | Path | None, config: Config | None = None):
        from navigator.index.nav_index import resolve_repo
        self.root = resolve_repo(repo)
        self.config = config or Config.from_env()
        self.index_dir = self.config.index_dir_for(self.root)
        self._index = None
        self._generation: int | None = None      # the generation the open index was read at
        # nav.db's (device, inode) when opened: a --rebuild writes a new file. Not an open descriptor: closing
        # a second descriptor of a file drops every POSIX lock this process holds on it, SQLite's included.
        self._db_id: tuple[int, int] | None = None
        self._retrievers: dict[str, object] = {}
        self._watcher = None                      # navigator.index.refresh.TreeWatcher, started with the service
        self._fresh_since_watch = False           # the index matched the tree when the watcher last had news
        self.last_refresh = None                  # the RefreshResult of the latest call, said in its result

    def watch(self) -> None:
        """Notice edits without walking the tree per query (NAV_WATCH=0 turns it off: every call walks)."""
        from navigator.index.refresh import TreeWatcher
        if self._watcher is None and self.config.extra.get("NAV_WATCH", "1").strip() != "0":
            self._watcher = TreeWatcher(self.root, ignored=(self.index_dir,))

    def refreshed_index(self):
        """The open index, first brought up to date with the files changed on disk when at most
        NAV_REFRESH_MAX_FILES changed (lexically now, embedded in the background: navigator.index.refresh).
        With a healthy watcher that saw nothing since the index last matched the tree, no walk at all."""
        from navigator.index.refresh import refresh
        index = self.index()
        self.last_refresh = None
        watcher = self._watcher
        if watcher is not None and watcher.healthy and self._fresh_since_watch and not watcher.pending():
            index.known_fresh = True
            return index
        if watcher is not None:
            watcher.take()
        index.known_fresh = False
        fresh = index.freshness()
        # Built by an older nav with no file changed: a refresh has nothing to bring in (the result says
        # stale, and the reindex tool rebuilds it).
        if fresh.state != "stale" or not fresh.files_changed_since:
            self._fresh_since_watch = True
            return index
        from navigator.index.walk import diff_tree
        changed = diff_tree(self.root, index.conn, index.manifest.get("skip") or [], self.config)
        result = refresh(self.root, self.config, changed)
        self.last_refresh = result
        if result.refreshed or result.deleted:
            previous = self._index
            index = self.index()           # the refresh committed a new generation: reopen, keep the encoder
            index.adopt_query_encoder(previous)
            self._fresh_since_watch = True
        return index

    # ---- the open index
    def _index_changed(self) -> bool:
        """A new nav.db (a --rebuild deletes the file and writes another) or a new generation in it."""
        from navigator.index import store
        if self._db_id is None or _file_id(self.index_dir / store.DB_NAME) != self._db_id:
            return True
        manifest = store.get_meta(self._index.conn, "manifest") or {}
        return manifest.get("generation") != self._generation

    def index(self):
        """The open NavIndex, reopened when the index changed since it was read (see _index_changed)."""
        from navigator.index import store
        from navigator.index.nav_index import NavIndex
        if self._index is not None:
            if not self._index_changed():
                return self._index
            self.close()
            # The vector store changed under this process's chromadb client: read it from disk again.
            from navigator.index.vector_store import release_vector_store
            release_vector_store(self.index_dir)
        db_id = _file_id(self.index_dir / store.DB_NAME)
        index = NavIndex.open(self.root, self.config)   # a missing index raises IndexMissingError here
        self._index, self._generation, self._db_id = index, index.generation, db_id
        return index

    def retriever(self, name: str | None):
        """(name, retriever) over the open index (refreshed first), built once per index generation."""
        from retrievers.registry import get_retriever, selected_name
        index = self.refreshed_index()
        name = selected_name(name, self.config)
        if name not in self._retrievers:
            self._retrievers[name] = get_retriever(name, index, self.config)
        return name, self._retrievers[name]

    def close(self) -> None:
        if self._index is not None:
            self._index.conn.close()
        self._index, self._generation, self._db_id, self._retrievers = None, None, None, {}

    # ---- the tools' work
    def search(self, query: str, k: int, level: str, retriever: str | None) -> str:
        from navigator.context.search import files_in_rank_order, search_open_index
        from navigator.core.errors import UsageError
        if level not in ("chunk", "file"):
            raise UsageError(f"level must be 'chunk' or 'file', got {level!r}")
        if not 1 <= k <= MAX_K:
            raise UsageError(f"k must be between 1 and {MAX_K}, got {k}")
        name, ranker = self.retriever(retriever)
        depth = k if level == "chunk" else min(k * FILE_LEVEL_CHUNK_DEPTH, MAX_K * FILE_LEVEL_CHUNK_DEPTH)
        response = search_open_index(self._index, ranker, name, query, depth)
        head = [describe_index_state(response.index_state), f"retriever: {name}"]
        head += [f"note: {note}" for note in [*self.refresh_notes(), *response.notes]]
        if level == "chunk":
            return "\n".join(head + [response.render()])
        files = files_in_rank_order(response.results, k)
        lines = head + ([f"no results for {query!r}"] if not files else [])
        for hit in files:
            spans = ", ".join(f"{s['start_line']}-{s['end_line']}" + (f" {s['symbol']}" if s["symbol"] else "")
                              for s in hit.spans[:FILE_LEVEL_SPANS_SHOWN])
            more = len(hit.spans) - FILE_LEVEL_SPANS_SHOWN
            lines.append(f"{hit.rank:>2}. {hit.path}  score {hit.score:.4f}  lines {spans}"
                         + (f" (+{more} more)" if more > 0 else ""))
        return "\n".join(lines)

    def context(self, question: str, budget: int, retriever: str | None) -> str:
        from navigator.context.build import context_from_open_index, load_selector
        selector = load_selector(None, self.config)   # per call: an edited policy file is a new policy
        name, ranker = self.retriever(retriever)
        envelope = context_from_open_index(question, budget, self._index, ranker, name, selector)
        return "\n".join([*(f"note: {n}" for n in self.refresh_notes()), envelope.render_text()])

    def refresh_notes(self) -> list[str]:
        note = self.last_refresh.note() if self.last_refresh is not None else None
        return [note] if note else []

    def read_span(self, path: str, start_line: int | None, end_line: int | None) -> str:
        from agent_loop.repo_files import read_file
        from navigator.index.secrets import secrets_allowed
        return read_file(self.root, path, start_line, end_line,
                         allow_secrets=secrets_allowed(self.config.extra)).render()

    def graph_tool(self, tool: str, arguments: dict) -> str:
        """find_definition, find_references or symbol_neighbours over the open index's symbol graph."""
        from agent_loop.tools import RepoTools
        from navigator.core.errors import UsageError
        from navigator.index.graph import SymbolGraph
        index = self.index()
        tools = RepoTools(repo_root=self.root, search_code=_no_search, search_budget=0,
                          open_graph=lambda: SymbolGraph(index.conn))   # graph tools read no files
        outcome = tools.call(tool, {k: v for k, v in arguments.items() if v is not None})
        if outcome.is_error:
            raise UsageError(outcome.content)
        return "\n".join([describe_index_state(index.state()), outcome.content])

    def status(self) -> str:
        from navigator.index.status import status
        if self._index is not None or (self.index_dir / "nav.db").exists():
            try:
                self.refreshed_index()
            except Exception:      # a damaged or missing index: status itself says so below
                pass
        report = status(self.root, self.config)
        text = report.render()
        if report.state["state"] in ("stale", "missing"):
            text += f"\n  (or call the reindex tool to {'refresh' if report.state['state'] == 'stale' else 'build'} it)"
        return text

    def reindex(self, rebuild: bool) -> str:
        from navigator.index.indexer import build_index
        from navigator.index.refresh import wait_for_background
        wait_for_background()   # a refresh's background embedding finishes first: it holds the index lock
        self.close()   # no connection of this process holds the database while it is rewritten
        summary = build_index(self.root, self.config, rebuild=rebuild)
        self.index()   # reopen now: the next query pays nothing, and a broken index shows here
        return summary.render()


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _no_search(query: str, budget: int) -> str:
    raise AssertionError("the graph tools never search")


def tool_error_text(exc) -> str:
    """A NavError as the client sees it: the SDK prefixes "Error executing tool NAME: ", so the message and
    the hint of navigator.core.errors without the CLI's own "Error: "."""
    return exc.message + (f"\n  {exc.hint}" if exc.hint else "")


def describe_index_state(state: dict) -> str:
    if state["state"] == "stale" and state.get("outdated") and not state["files_changed_since"]:
        return f"index: STALE (built by an older nav: {'; '.join(state['outdated'])}); call reindex to rebuild it"
    if state["state"] == "stale":
        return (f"index: STALE ({state['files_changed_since']} files changed since the build: "
                f"{', '.join(state['changed_examples'])}); call reindex to include the changes")
    if state["state"] == "empty":
        return "index: EMPTY (no files were indexed); nothing was searched"
    return f"index: fresh (built {state['built_at']}, {state['chunk_count']} chunks, {state['files_indexed']} files)"


def build_server(service: NavService):
    """The MCPServer with nav's eight tools over `service`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    from agent_loop.repo_files import RepoAccessError
    from agent_loop.tools import TOOL_SCHEMAS
    from navigator.context.build import DEFAULT_BUDGET
    import sqlite3
    from navigator.core.errors import IndexMissingError, NavError

    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nav")

    async def on_worker(fn, *args):
        """Run nav's work on the one worker thread; nav's failures become tool errors with message + hint."""
        try:
            return await asyncio.get_running_loop().run_in_executor(worker, fn, *args)
        except IndexMissingError as exc:
            raise ToolError(tool_error_text(exc) + "\n  or call the reindex tool to build it") from exc
        except NavError as exc:
            raise ToolError(tool_error_text(exc)) from exc
        except RepoAccessError as exc:
            raise ToolError(str(exc)) from exc
        except sqlite3.DatabaseError as exc:   # nav.db damaged or read-only where no stage caught it
            from navigator.index.repair import database_error
            raise ToolError(tool_error_text(database_error(exc))) from exc

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(description=SEARCH_DESCRIPTION, annotations=read_only)
    async def search(query: str, k: int = DEFAULT_K, level: str = "chunk", retriever: str | None = None) -> str:
        return await on_worker(service.search, query, k, level, retriever)

    @server.tool(description=CONTEXT_DESCRIPTION, annotations=read_only)
    async def context(question: str, budget: int = DEFAULT_BUDGET, retriever: str | None = None) -> str:
        return await on_worker(service.context, question, budget, retriever)

    @server.tool(description=READ_SPAN_DESCRIPTION, annotations=read_only)
    async def read_span(path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        return await on_worker(service.read_span, path, start_line, end_line)

    descriptions = {schema["name"]: schema["description"] for schema in TOOL_SCHEMAS}

    @server.tool(description=descriptions["find_definition"], annotations=read_only)
    async def find_definition(name: str) -> str:
        return await on_worker(service.graph_tool, "find_definition", {"name": name})

    @server.tool(description=descriptions["find_references"], annotations=read_only)
    async def find_references(name: str, path: str | None = None) -> str:
        return await on_worker(service.graph_tool, "find_references", {"name": name, "path": path})

    @server.tool(description=descriptions["symbol_neighbours"], annotations=read_only)
    async def symbol_neighbours(name: str, path: str | None = None) -> str:
        return await on_worker(service.graph_tool, "symbol_neighbours", {"name": name, "path": path})

    @server.tool(description=STATUS_DESCRIPTION, annotations=read_only)
    async def index_status() -> str:
        return await on_worker(service.status)

    @server.tool(description=REINDEX_DESCRIPTION,
                 annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    async def reindex(rebuild: bool = False) -> str:
        return await on_worker(service.reindex, rebuild)

    return server


def serve(repo: str | Path | None) -> int:
    """Serve the repository over stdio until the client closes the connection."""
    service = NavService(repo)
    service.watch()
    build_server(service).run("stdio")
    return 0
