"""The tools the model may call, their JSON schemas, and the dispatcher.

search_code, read_file, list_files and run_command work on any repository; find_definition,
find_references and symbol_neighbours walk the index's symbol graph (navigator.index.graph), which
`nav index` builds for every language it parses (Python and the languages of chunkers.languages).

Every failure a tool call can meet (an unknown tool, malformed input, a refused command, a path
outside the repository, a retrieval error) becomes a ToolOutcome with is_error=True that goes back
to the model as an `is_error` tool_result, so the model can correct itself. Nothing here can
change what run_command allows: the guard is pure code over frozen data.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_loop import command_guard, repo_files
from navigator.core.errors import NavError

if TYPE_CHECKING:
    from navigator.index.graph import Definition, SymbolGraph

SearchCode = Callable[[str, int], str]
# Opens the symbol graph of the repository's index; raises NavError when there is no index.
OpenGraph = Callable[[], "SymbolGraph"]

MAX_QUERY_CHARS = 500
MIN_SEARCH_BUDGET = 100
MAX_DEFINITIONS_LISTED = 20
MAX_REFERENCES_LISTED = 40
MAX_NEIGHBOURS_LISTED = 25      # per group (members, uses, callers)

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "search_code",
        "description": (
            "Search the indexed repository for code relevant to a natural-language or keyword query. "
            "Returns the best matching code chunks with their file paths and line ranges, packed into "
            "a token budget. Start here."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for, e.g. 'where retries are configured'."},
                "budget_tokens": {"type": "integer", "description": "Optional smaller token budget for the result."},
            },
            "required": ["query"],
        },
    },
    {
        "name": "read_file",
        "description": (
            "Read lines of one file, by path relative to the repository root. Lines come numbered. "
            f"At most {repo_files.MAX_READ_LINES} lines per call; use start_line/end_line for more."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Repository-relative path, e.g. 'src/app/main.py'."},
                "start_line": {"type": "integer", "description": "First line, 1-based (default 1)."},
                "end_line": {"type": "integer", "description": "Last line, inclusive (default: as many as allowed)."},
            },
            "required": ["path"],
        },
    },
    {
        "name": "list_files",
        "description": "List files and directories under a repository-relative directory (directories end in '/').",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the repository root (default '.')."},
                "max_depth": {"type": "integer",
                              "description": f"How deep to list (default {repo_files.DEFAULT_LIST_DEPTH})."},
                "pattern": {"type": "string", "description": "Optional glob on the path or name, e.g. '*.py'."},
            },
        },
    },
    {
        "name": "run_command",
        "description": (
            "Run ONE read-only command in the repository root, without a shell: grep, ls, cat, head, tail, wc, "
            "nl, stat, find (no -exec/-delete), or git log/show/diff/status/blame/grep/ls-files/ls-tree/... "
            "No pipes, redirections, ';', '&&', '$', backticks, parentheses or braces. Paths must stay inside "
            "the repository (an argument starting with '/' counts as a path). Example: grep -rn \"def main\" src"
        ),
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line."}},
            "required": ["command"],
        },
    },
    {
        "name": "find_definition",
        "description": (
            "Find where a function, class, method, constant or module is defined, by name ('parse_args'), "
            "qualified name in the language's own spelling ('Parser.parse_args', 'Router.ServeHTTP', "
            "'Value::new') or dotted module ('click.core'). Python, Go, TypeScript, JavaScript, Rust, Java, "
            "C, C++, C#, Ruby, PHP, shell, Kotlin, Swift and Scala files. "
            "Returns each definition's path, line range, kind and container."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name to look up, e.g. 'Context.invoke'."},
            },
            "required": ["name"],
        },
    },
    {
        "name": "find_references",
        "description": (
            "Find where a definition is used across the repository: calls, imports, base classes, name and "
            "attribute uses that resolve to it. Returns path:line, the kind of use and the enclosing function "
            "or class."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Name or qualified name of the definition."},
                "path": {"type": "string", "description": "Optional file that defines it, when the name is ambiguous."},
            },
            "required": ["name"],
        },
    },
    {
        "name": "symbol_neighbours",
        "description": (
            "Show the code graph around one definition: its container (class or module), its members, what "
            "it calls or reads (callees, with their files) and what calls it (callers). Use it to follow a "
            "flow across files."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Name or qualified name of the definition."},
                "path": {"type": "string", "description": "Optional file that defines it, when the name is ambiguous."},
            },
            "required": ["name"],
        },
    },
]
TOOL_NAMES = tuple(schema["name"] for schema in TOOL_SCHEMAS)


class ToolInputError(Exception):
    """The model sent input that does not match the tool's schema."""


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool
    file_read: str | None = None     # repository-relative path when read_file succeeded


def _string(tool_input: dict[str, Any], key: str, *, required: bool) -> str | None:
    value = tool_input.get(key)
    if value is None:
        if required:
            raise ToolInputError(f"missing required field {key!r}")
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _integer(tool_input: dict[str, Any], key: str) -> int | None:
    value = tool_input.get(key)
    if value is None:
        return None
    # bool is an int subclass in Python; true/false is not a line number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"field {key!r} must be an integer, got {type(value).__name__}")
    return value


def _reject_unknown_fields(tool_input: dict[str, Any], schema: dict[str, Any]) -> None:
    unknown = sorted(set(tool_input) - set(schema["input_schema"]["properties"]))
    if unknown:
        raise ToolInputError(f"unknown field(s) {unknown}")


@dataclass
class RepoTools:
    """Runs tool calls against one repository. `search_budget` caps each search_code result."""
    repo_root: Path
    search_code: SearchCode
    search_budget: int
    open_graph: OpenGraph | None = None
    allow_secrets: bool = False       # --allow-secrets: secret-shaped files and values are served as they are
    files_read: list[str] = field(default_factory=list)
    _graph: "SymbolGraph | None" = field(default=None, init=False, repr=False)

    def call(self, name: str, tool_input: object) -> ToolOutcome:
        handler = {
            "search_code": self._search_code,
            "read_file": self._read_file,
            "list_files": self._list_files,
            "run_command": self._run_command,
            "find_definition": self._find_definition,
            "find_references": self._find_references,
            "symbol_neighbours": self._symbol_neighbours,
        }.get(name)
        if handler is None:
            return ToolOutcome(f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}", is_error=True)
        if not isinstance(tool_input, dict):
            return ToolOutcome(f"{name}: input must be a JSON object, got {type(tool_input).__name__}", is_error=True)
        schema = next(s for s in TOOL_SCHEMAS if s["name"] == name)
        try:
            _reject_unknown_fields(tool_input, schema)
            return handler(tool_input)
        except ToolInputError as err:
            return ToolOutcome(f"{name}: malformed input: {err}", is_error=True)
        except command_guard.CommandRefused as err:
            return ToolOutcome(f"run_command {err}", is_error=True)
        except repo_files.RepoAccessError as err:
            return ToolOutcome(f"{name}: {err}", is_error=True)
        except NavError as err:
            # No index, or one without a graph: worth telling the model, it can still grep and read files.
            return ToolOutcome(f"{name} failed: {err.message}" + (f" ({err.hint})" if err.hint else ""), is_error=True)

    def _search_code(self, tool_input: dict[str, Any]) -> ToolOutcome:
        query = _string(tool_input, "query", required=True)
        assert query is not None
        if not query.strip():
            raise ToolInputError("query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolInputError(f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
        asked = _integer(tool_input, "budget_tokens")
        # The model may ask for less context than the configured budget, never for more.
        budget = self.search_budget if asked is None else max(MIN_SEARCH_BUDGET, min(asked, self.search_budget))
        try:
            text = self.search_code(query, budget)
        except NavError as err:
            # A missing or stale index is worth telling the model: it can still grep and read files.
            return ToolOutcome(f"search_code failed: {err.message}" + (f" ({err.hint})" if err.hint else ""),
                               is_error=True)
        return ToolOutcome(text if text.strip() else f"no results for {query!r}", is_error=False)

    def _read_file(self, tool_input: dict[str, Any]) -> ToolOutcome:
        path = _string(tool_input, "path", required=True)
        assert path is not None
        excerpt = repo_files.read_file(self.repo_root, path, _integer(tool_input, "start_line"),
                                       _integer(tool_input, "end_line"), allow_secrets=self.allow_secrets)
        if excerpt.path not in self.files_read:
            self.files_read.append(excerpt.path)
        return ToolOutcome(excerpt.render(), is_error=False, file_read=excerpt.path)

    def _list_files(self, tool_input: dict[str, Any]) -> ToolOutcome:
        path = _string(tool_input, "path", required=False) or "."
        depth = _integer(tool_input, "max_depth")
        listing = repo_files.list_files(
            self.repo_root, path,
            max_depth=repo_files.DEFAULT_LIST_DEPTH if depth is None else depth,
            pattern=_string(tool_input, "pattern", required=False),
        )
        return ToolOutcome(listing.render(), is_error=False)

    def _run_command(self, tool_input: dict[str, Any]) -> ToolOutcome:
        command = _string(tool_input, "command", required=True)
        assert command is not None
        result = command_guard.run_command(command, self.repo_root, allow_secrets=self.allow_secrets)
        return ToolOutcome(result.render(), is_error=result.timed_out)

    # ---- the symbol graph
    def _symbol_graph(self) -> "SymbolGraph":
        from navigator.core.errors import IndexMissingError
        if self._graph is None:
            if self.open_graph is None:
                raise IndexMissingError("no index is open for this repository, so there is no symbol graph",
                                        hint="use search_code, run_command grep or read_file instead")
            graph = self.open_graph()
            if not graph.available:
                raise IndexMissingError("the index has no symbol graph yet",
                                        hint="run `nav index` on the repository; meanwhile use grep")
            self._graph = graph
        return self._graph

    def _named_definitions(self, tool_input: dict[str, Any]) -> tuple[str, list["Definition"]]:
        name = _string(tool_input, "name", required=True)
        assert name is not None
        name = name.strip()
        if not name:
            raise ToolInputError("name is empty")
        found = self._symbol_graph().definitions(name)
        path = _string(tool_input, "path", required=False)
        if path:
            path = path.strip().removeprefix("./")
            found = [d for d in found if d.path == path]
        return name, found

    def _find_definition(self, tool_input: dict[str, Any]) -> ToolOutcome:
        name, found = self._named_definitions(tool_input)
        if not found:
            return ToolOutcome(f"no definition named {name!r} in the index; "
                               "try search_code or run_command grep", is_error=False)
        lines = [_describe(d) for d in found[:MAX_DEFINITIONS_LISTED]]
        if len(found) > MAX_DEFINITIONS_LISTED:
            lines.append(f"... and {len(found) - MAX_DEFINITIONS_LISTED} more; give a qualified name")
        return ToolOutcome("\n".join(lines), is_error=False)

    def _find_references(self, tool_input: dict[str, Any]) -> ToolOutcome:
        name, found = self._named_definitions(tool_input)
        if not found:
            return ToolOutcome(f"no definition named {name!r} in the index, so no references to follow", is_error=False)
        graph = self._symbol_graph()
        blocks = []
        for definition in found[:5]:
            refs = graph.references_to(definition, limit=MAX_REFERENCES_LISTED + 1)
            head = f"{_describe(definition)}: {min(len(refs), MAX_REFERENCES_LISTED)}" \
                   f"{'+' if len(refs) > MAX_REFERENCES_LISTED else ''} references"
            body = [f"  {r.path}:{r.line}  {r.kind}  in {r.scope or '<module>'}" for r in refs[:MAX_REFERENCES_LISTED]]
            blocks.append("\n".join([head, *body]))
        if len(found) > 5:
            blocks.append(f"... {len(found) - 5} more definitions named {name!r}; give a path or qualified name")
        return ToolOutcome("\n".join(blocks), is_error=False)

    def _symbol_neighbours(self, tool_input: dict[str, Any]) -> ToolOutcome:
        name, found = self._named_definitions(tool_input)
        if not found:
            return ToolOutcome(f"no definition named {name!r} in the index", is_error=False)
        if len(found) > 1:
            return ToolOutcome(f"{len(found)} definitions are named {name!r}; call again with a path or qualified name:\n"
                               + "\n".join(_describe(d) for d in found[:MAX_DEFINITIONS_LISTED]), is_error=False)
        definition = found[0]
        graph = self._symbol_graph()
        container = graph.container(definition)
        callees: dict[tuple[str, str], str] = {}
        for ref, target in graph.callees(definition):
            callees.setdefault((target.path, target.qualname), f"{ref.kind:<5} {_describe(target)}")
        sections = [
            ("container", [_describe(container)] if container is not None else []),
            ("members", [_describe(d) for d in graph.members(definition)]),
            ("uses (calls, reads, bases)", list(callees.values())),
            ("used by (callers)", [_describe(d) for d in graph.callers(definition, limit=MAX_NEIGHBOURS_LISTED)]),
        ]
        lines = [_describe(definition)]
        for title, items in sections:
            if not items:
                continue
            lines.append(f"{title}:")
            lines.extend(f"  {item}" for item in items[:MAX_NEIGHBOURS_LISTED])
            if len(items) > MAX_NEIGHBOURS_LISTED:
                lines.append(f"  ... {len(items) - MAX_NEIGHBOURS_LISTED} more")
        return ToolOutcome("\n".join(lines), is_error=False)


def _describe(definition: "Definition") -> str:
    where = f" (in {definition.parent})" if definition.parent else ""
    return f"{definition.path}:{definition.start_line}-{definition.end_line}  {definition.kind} {definition.qualname}{where}"
