"""The four tools the model may call, their JSON schemas, and the dispatcher.

Every failure a tool call can meet (an unknown tool, malformed input, a refused command, a path
outside the repository, a retrieval error) becomes a ToolOutcome with is_error=True that goes back
to the model as an `is_error` tool_result, so the model can correct itself. Nothing here can
change what run_command allows: the guard is pure code over frozen data.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_loop import command_guard, repo_files
from navigator.core.errors import NavError

SearchCode = Callable[[str, int], str]

MAX_QUERY_CHARS = 500
MIN_SEARCH_BUDGET = 100

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
    files_read: list[str] = field(default_factory=list)

    def call(self, name: str, tool_input: object) -> ToolOutcome:
        handler = {
            "search_code": self._search_code,
            "read_file": self._read_file,
            "list_files": self._list_files,
            "run_command": self._run_command,
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
                                       _integer(tool_input, "end_line"))
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
        result = command_guard.run_command(command, self.repo_root)
        return ToolOutcome(result.render(), is_error=result.timed_out)
