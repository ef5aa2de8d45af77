"""The languages nav reads with tree-sitter: one table, one query file per language, grammars loaded lazily.

A language is a row of LANGUAGES (the grammar wheel on PyPI, the file names it claims, how it writes qualified
names and imports) and a query file `chunkers/queries/<query>.scm` whose captures say what is a definition, an
import, a comment that travels with the code below it, and a reference (the contract is
chunkers/queries/README.md). Chunking (chunkers.syntax) and the symbol graph (navigator.index.graph) read the
same query; no language has code of its own. Python keeps its own chunker (chunkers.python), which predates
this table and whose figures every eval set is measured against.

Adding a language: declare its grammar wheel in pyproject.toml, add a row here, write its .scm file, and add
a fixture to tests/test_languages.py.

A grammar that fails to import or to load (a missing wheel, an ABI the installed tree-sitter cannot read) is
recorded once in `grammar_failures()`; its files fall back to line windows, nothing is dropped.
"""
from __future__ import annotations

import importlib
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tree_sitter loads lazily: `nav --help` must not pay for it
    from tree_sitter import Language, Parser, Query


@dataclass(frozen=True)
class LanguageSpec:
    name: str                          # the key users see in `nav status`: "go", "typescript", ...
    module: str                        # the grammar wheel's module
    entry: str = "language"            # its function returning the grammar's pointer
    suffixes: tuple[str, ...] = ()     # lower-case file name endings
    filenames: tuple[str, ...] = ()    # whole file names (Rakefile)
    interpreters: tuple[str, ...] = ()  # shebang programs, version digits stripped ("python3" -> "python")
    query: str = ""                    # chunkers/queries/<query>.scm (default: the name)
    separator: str = "."               # between a container's name and a member's: Type.method, Type::method
    import_style: str = "dotted"       # how an import names its target: dotted | path | rust (see ImportSource)
    package_is_directory: bool = False  # Go: every file of a folder is one package
    folder_files: tuple[str, ...] = ()  # file stems that stand for their folder (mod.rs, index.ts)

    @property
    def query_file(self) -> str:
        return f"{self.query or self.name}.scm"


LANGUAGES: dict[str, LanguageSpec] = {spec.name: spec for spec in (
    LanguageSpec("go", "tree_sitter_go", suffixes=(".go",), import_style="path", package_is_directory=True),
    LanguageSpec("typescript", "tree_sitter_typescript", "language_typescript", suffixes=(".ts", ".mts", ".cts"),
                 import_style="path", folder_files=("index",)),
    LanguageSpec("tsx", "tree_sitter_typescript", "language_tsx", suffixes=(".tsx",), query="typescript",
                 import_style="path", folder_files=("index",)),
    LanguageSpec("javascript", "tree_sitter_javascript", suffixes=(".js", ".mjs", ".cjs", ".jsx"),
                 interpreters=("node", "nodejs"), import_style="path", folder_files=("index",)),
    LanguageSpec("rust", "tree_sitter_rust", suffixes=(".rs",), separator="::", import_style="rust",
                 folder_files=("mod",)),
    LanguageSpec("java", "tree_sitter_java", suffixes=(".java",)),
    LanguageSpec("c", "tree_sitter_c", suffixes=(".c",), import_style="path"),
    LanguageSpec("cpp", "tree_sitter_cpp", suffixes=(".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++",
                                                      ".ipp", ".tpp"),
                 separator="::", import_style="path"),
    LanguageSpec("c_sharp", "tree_sitter_c_sharp", suffixes=(".cs",)),
    LanguageSpec("ruby", "tree_sitter_ruby", suffixes=(".rb", ".rake", ".gemspec", ".ru"),
                 filenames=("rakefile", "gemfile", "guardfile", "podfile"), interpreters=("ruby",),
                 separator="::", import_style="path"),
    LanguageSpec("php", "tree_sitter_php", "language_php", suffixes=(".php", ".phtml"), interpreters=("php",),
                 separator="::", import_style="path"),
    LanguageSpec("bash", "tree_sitter_bash", suffixes=(".sh", ".bash", ".zsh", ".ksh"),
                 filenames=(".bashrc", ".bash_profile", ".zshrc", ".profile"),
                 interpreters=("sh", "bash", "zsh", "dash", "ksh"), import_style="path"),
    LanguageSpec("kotlin", "tree_sitter_kotlin", suffixes=(".kt", ".kts")),
    LanguageSpec("swift", "tree_sitter_swift", suffixes=(".swift",)),
    LanguageSpec("scala", "tree_sitter_scala", suffixes=(".scala", ".sc")),
)}

# Python is read by its own chunker; listed so that detection (a shebang, `nav status`) knows it.
PYTHON = "python"
PYTHON_SUFFIXES = (".py", ".pyi")
PYTHON_INTERPRETERS = ("python", "pypy")

# `.h` is C or C++; the file says which. Any of these outside a comment marks C++.
_CPP_HEADER_MARKERS = re.compile(
    r"^\s*(?:namespace\s+\w|class\s+\w+[^;]*\{|template\s*<|using\s+namespace\b|public:|private:|protected:)"
    r"|\bstd::|#include\s*<(?:string|vector|memory|map|iostream|algorithm)>", re.MULTILINE)
HEADER_SUFFIXES = (".h",)
_SHEBANG = re.compile(r"^#!\s*(\S+)(?:\s+(?:-\S+\s+)*(\S+))?")

_by_suffix: dict[str, str] = {}
_by_filename: dict[str, str] = {}
_by_interpreter: dict[str, str] = {name: PYTHON for name in PYTHON_INTERPRETERS}
for _spec in LANGUAGES.values():
    _by_suffix.update(dict.fromkeys(_spec.suffixes, _spec.name))
    _by_filename.update(dict.fromkeys(_spec.filenames, _spec.name))
    _by_interpreter.update(dict.fromkeys(_spec.interpreters, _spec.name))
_by_suffix.update(dict.fromkeys(PYTHON_SUFFIXES, PYTHON))
_SUFFIXES_LONGEST_FIRST = sorted(_by_suffix, key=len, reverse=True)


def language_for_path(path: str) -> str | None:
    """The language a file name alone decides ("src/a.go" -> "go"), or None: no suffix we read, or `.h`
    (C or C++, see language_for) or a script whose shebang must be read."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in _by_filename:
        return _by_filename[name]
    for suffix in _SUFFIXES_LONGEST_FIRST:
        if name.endswith(suffix):
            return _by_suffix[suffix]
    return None


def language_for(path: str, text: str | None = None) -> str | None:
    """The language of a file, from its name, else from its content: a `.h` is C++ when it reads as C++,
    else C; a file without a known suffix is named by its shebang (`#!/usr/bin/env bash`)."""
    found = language_for_path(path)
    if found is not None or text is None:
        return found
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(HEADER_SUFFIXES):
        return "cpp" if _CPP_HEADER_MARKERS.search(text[:65536]) else "c"
    if text.startswith("#!"):
        return _interpreter_language(text.split("\n", 1)[0])
    return None


def _interpreter_language(line: str) -> str | None:
    match = _SHEBANG.match(line)
    if match is None:
        return None
    program = match.group(1).rsplit("/", 1)[-1]
    if program == "env" and match.group(2):
        program = match.group(2).rsplit("/", 1)[-1]
    return _by_interpreter.get(re.sub(r"[\d.]+$", "", program))


# ------------------------------------------------------------------------------------------- grammars

_lock = threading.Lock()
_failures: dict[str, str] = {}
_thread_state = threading.local()


class GrammarUnavailable(Exception):
    """A language's grammar could not be loaded here; its files are read as plain text."""


@lru_cache(maxsize=None)
def _language(name: str) -> "Language":
    spec = LANGUAGES[name]
    from tree_sitter import Language
    module = importlib.import_module(spec.module)
    return Language(getattr(module, spec.entry)())


def grammar(name: str) -> "Language":
    """The loaded tree-sitter grammar of a language. Raises GrammarUnavailable (once recorded in
    grammar_failures) when its wheel is missing or its ABI is one the installed tree-sitter cannot read."""
    if name in _failures:
        raise GrammarUnavailable(_failures[name])
    try:
        return _language(name)
    except Exception as exc:  # ImportError, ValueError (ABI), AttributeError (an older wheel's entry name)
        reason = f"{LANGUAGES[name].module}: {type(exc).__name__}: {exc}".strip()
        with _lock:
            _failures.setdefault(name, reason)
        raise GrammarUnavailable(reason) from exc


def grammar_failures() -> dict[str, str]:
    """language -> why its grammar did not load, for every language tried in this process."""
    with _lock:
        return dict(_failures)


def parser(name: str) -> "Parser":
    """One Parser per language per thread (Parsers are not thread-safe; building one is not free)."""
    parsers = getattr(_thread_state, "parsers", None)
    if parsers is None:
        parsers = _thread_state.parsers = {}
    found = parsers.get(name)
    if found is None:
        from tree_sitter import Parser
        found = parsers[name] = Parser(grammar(name))
    return found


def query_source(name: str) -> str:
    return resources.files("chunkers").joinpath("queries", LANGUAGES[name].query_file).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def query(name: str, *, references: bool = True) -> "Query":
    """The language's compiled query. Without references (what the chunker needs) the patterns that capture
    only references are disabled: they match nearly every identifier and cost most of a query's time."""
    from tree_sitter import Query
    source = query_source(name)
    compiled = Query(grammar(name), source)
    if not references:
        raw = source.encode("utf-8")
        for index in range(compiled.pattern_count):
            text = raw[compiled.start_byte_for_pattern(index):compiled.end_byte_for_pattern(index)].decode("utf-8")
            names = {n for n in re.findall(r"@([\w.]+)", text) if not n.startswith("_")}
            if names and all(n.startswith("reference.") or n == "qualifier" for n in names):
                compiled.disable_pattern(index)
    return compiled
