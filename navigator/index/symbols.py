"""The records of the symbol graph and how its files and names are spelt, shared by the extractors
(navigator.index.graph for Python, navigator.index.graph_languages for the rest) and by its readers."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkers.base import CodeChunk

PYTHON_SUFFIXES = (".py", ".pyi")

# Names whose uses say nothing about the repository's own code.
IGNORED_NAMES = frozenset({
    "self", "cls", "True", "False", "None", "print", "len", "str", "int", "float", "bool", "list", "dict",
    "set", "tuple", "object", "type", "isinstance", "issubclass", "getattr", "setattr", "hasattr", "super",
    "range", "enumerate", "zip", "map", "filter", "sorted", "reversed", "min", "max", "sum", "any", "all",
    "iter", "next", "repr", "hash", "id", "callable", "open", "bytes", "frozenset", "property",
    "staticmethod", "classmethod", "Exception", "ValueError", "TypeError", "KeyError", "RuntimeError",
    "NotImplementedError", "AttributeError", "IndexError", "OSError", "t", "typing", "_",
})


@dataclass(frozen=True)
class Definition:
    path: str
    qualname: str
    name: str
    kind: str                    # module | class | function | method | constant
    parent: str | None           # the containing class's qualname; None at module level
    start_line: int
    end_line: int
    chunk_id: str | None

    def row(self) -> tuple:
        return (self.path, self.qualname, self.name, self.kind, self.parent, self.start_line, self.end_line,
                self.chunk_id)

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Reference:
    path: str
    scope: str                   # qualname of the innermost enclosing def; "" at module level
    chunk_id: str | None
    kind: str                    # import | base | call | attr | name
    name: str                    # the name used (for an import: the imported name, or the module's last part)
    qualifier: str = ""          # `a.b` of `a.b.name(...)`; for an import: the absolute module
    alias: str | None = None     # an import's local name
    line: int = 0
    target_path: str | None = None

    def row(self) -> tuple:
        return (self.path, self.scope, self.chunk_id, self.kind, self.name, self.qualifier, self.alias,
                self.line, self.target_path)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def is_python(path: str) -> bool:
    return path.endswith(PYTHON_SUFFIXES)


def graph_language(path: str, text: str | None = None) -> str | None:
    """The language whose graph a file gets ("python", "go", ...), or None for prose and data. A `.h` needs
    its text to say C or C++; without it the answer is "c" (a header has a graph either way)."""
    if is_python(path):
        return "python"
    from chunkers.languages import HEADER_SUFFIXES, LANGUAGES, language_for
    found = language_for(path, text)
    if found is None and text is None and path.lower().endswith(HEADER_SUFFIXES):
        return "c"
    return found if found in LANGUAGES else None


def has_graph(path: str) -> bool:
    return graph_language(path) is not None


def module_name(path: str) -> str:
    """"src/click/core.py" -> "src.click.core"; a file that stands for its folder (a package's __init__.py,
    Rust's mod.rs, JavaScript's index.js) names the folder."""
    from chunkers.languages import LANGUAGES, language_for_path
    parts = path.rsplit(".", 1)[0].split("/")
    language = LANGUAGES.get(language_for_path(path) or "")
    folder_files = ("__init__",) + (language.folder_files if language is not None else ())
    if parts[-1] in folder_files and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def package_folder(path: str) -> str | None:
    """The folder whose files form one package with `path` (Go), or None when a file is its own module."""
    from chunkers.languages import LANGUAGES, language_for_path
    language = LANGUAGES.get(language_for_path(path) or "")
    if language is None or not language.package_is_directory:
        return None
    return path.rsplit("/", 1)[0] if "/" in path else ""


def text_from_chunks(chunks: Iterable["CodeChunk"]) -> str:
    """A file rebuilt from its chunks' spans; a line no chunk holds was blank."""
    lines: dict[int, str] = {}
    for c in chunks:
        for offset, line in enumerate(c.text.split("\n")):
            lines.setdefault(c.start_line + offset, line)
    return "\n".join(lines.get(i, "") for i in range(1, max(lines, default=0) + 1))


class LineToChunk:
    """The innermost (shortest) chunk holding each line of one file."""

    def __init__(self, chunks: Sequence["CodeChunk"]):
        self.by_line: dict[int, str] = {}
        for c in sorted(chunks, key=lambda c: c.end_line - c.start_line, reverse=True):
            for line in range(c.start_line, c.end_line + 1):
                self.by_line[line] = c.id

    def __call__(self, line: int) -> str | None:
        return self.by_line.get(line)


# How languages join a qualifier to a name: Type.method, Type::method, Class#method, $obj->method, pkg/path.
_QUALIFIER_SEPARATORS = re.compile(r"::|->|[.#\\/]")


def name_parts(name: str) -> list[str]:
    """"a.b::C#d" -> ["a", "b", "C", "d"]."""
    return [p for p in _QUALIFIER_SEPARATORS.split(name.strip().strip("`()")) if p]


def _spellings(definition: Definition) -> list[list[str]]:
    """The ways a definition can be named: its qualified name, prefixed by its module's dotted path, and (Go)
    by its package folder."""
    qualified = name_parts(definition.qualname)
    if definition.kind == "module":
        return [qualified]
    out = [qualified, name_parts(module_name(definition.path)) + qualified]
    folder = package_folder(definition.path)
    if folder:
        out.append(folder.split("/") + qualified)
    return out


def spelt_as(definition: Definition, parts: list[str], *, exact: bool) -> bool:
    """Whether `parts` name this definition: as the tail of one of its spellings (exact), or with every part
    in order in one of them and the last part last."""
    for spelling in _spellings(definition):
        if len(spelling) < len(parts) or spelling[-1] != parts[-1]:
            continue
        if exact:
            if spelling[-len(parts):] == parts:
                return True
            continue
        position = 0
        for part in parts[:-1]:
            try:
                position = spelling.index(part, position, len(spelling) - 1) + 1
            except ValueError:
                break
        else:
            return True
    return False
