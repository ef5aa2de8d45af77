"""The symbol graph of a file in any language of chunkers.languages, read through that language's query.

The same captures that cut the file into chunks (chunkers.syntax.collect) give its definitions, with qualified
names the language's own way (`Router.ServeHTTP`, `Value::new`, `Node.attr`); the query's reference captures
give the calls, base types and names it uses, each in the scope of the innermost definition around it; its
import captures give what it imports, with the module made absolute the way the language names modules (a
relative path, a dotted package, a Rust `crate::`/`super::` path). The rows are navigator.index.graph's, so
every reader of the graph (lifts, definition lookup, `find_references`) works on every language alike.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

from chunkers.languages import LANGUAGES, LanguageSpec, parser
from chunkers.syntax import (
    CONTAINER_KINDS,
    FUNCTION_KINDS,
    TYPE_KINDS,
    VALUE_KINDS,
    DefinitionSite,
    ImportSite,
    collect,
    node_text,
    qualify,
)
from navigator.index.symbols import IGNORED_NAMES, Definition, LineToChunk, Reference, module_name

if TYPE_CHECKING:
    from chunkers.base import CodeChunk

# A node captured under several reference roles keeps the first of these (a call's name is a call, not also a
# plain name use).
REFERENCE_PRIORITY = ("call", "base", "type", "name")
GRAPH_REF_KIND = {"call": "call", "base": "base", "type": "name", "name": "name"}
# Names every language uses that say nothing about the repository's own code.
COMMON_NAMES = frozenset({
    "this", "super", "new", "nil", "null", "undefined", "true", "false", "void", "self", "Self", "err",
    "string", "number", "boolean", "any", "unknown", "never", "object", "error", "bool", "byte", "rune",
    "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
    "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f32", "f64", "char", "String",
    "Vec", "Option", "Result", "Some", "None", "Ok", "Err", "Box", "append", "make", "panic", "require",
    "console", "Object", "Array", "Promise", "Map", "Set", "Error", "Integer", "Boolean", "Override",
})
_SOURCE_EXTENSIONS = re.compile(r"\.(?:[cm]?[jt]sx?|d\.ts|h|hh|hpp|hxx|c|cc|cpp|cxx|rb|php|sh|bash|go|rs|java)$")


def extract_syntax_file(path: str, chunks: Sequence["CodeChunk"], source: str,
                        language: str) -> tuple[list[Definition], list[Reference]]:
    """Definitions and references of one file of `language`, from its chunks' text."""
    spec = LANGUAGES[language]
    tree = parser(language).parse(source.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    captures = collect(root, language, references=True)
    qualified = qualify(captures.definitions.values(), spec.separator)
    chunk_at = LineToChunk(chunks)
    module = module_name(path)
    first_chunk = min(chunks, key=lambda c: c.start_line).id if chunks else None
    defs = [Definition(path, module, module.rsplit(".", 1)[-1], "module", None, 1, root.end_point.row + 1,
                       first_chunk)]
    name_nodes: set[int] = set()
    scopes: list[tuple[int, int, str]] = []
    for site in captures.definitions.values():
        if site.node.id in captures.imports:
            continue   # `const util = require("./util")` imports; it defines nothing of its own
        where = qualified[site.node.id]
        if where.container_kind in FUNCTION_KINDS and (site.kind in VALUE_KINDS or site.body is None):
            continue   # a local of a function (a variable; C++'s `Matrix out(a, b);` reads as a declaration)
        kind = graph_kind(site, where.container_kind)
        start, end = site.node.start_point.row + 1, site.node.end_point.row + 1
        if site.node.end_point.column == 0 and end - 1 > start:   # ends at the start of the next line
            end -= 1
        for name_node in site.names:
            name = node_text(name_node)
            if not name:
                continue
            name_nodes.add(name_node.id)
            qualname = f"{where.parent}{spec.separator}{name}" if where.parent else name
            parent = None if kind == "function" else where.parent
            defs.append(Definition(path, qualname, name, kind, parent, start, end,
                                   chunk_at(name_node.start_point.row + 1)))
        if site.kind in CONTAINER_KINDS or site.kind in FUNCTION_KINDS:
            scopes.append((site.node.start_byte, site.node.end_byte, where.qualname))
    refs: dict[tuple[str, str, str, str], Reference] = {}
    for site in captures.imported:
        for ref in _import_refs(path, site, spec, chunk_at):
            refs.setdefault((ref.scope, "import", ref.alias or ref.name, ref.qualifier), ref)
    followable = {d.name for d in defs if d.parent is None and d.kind != "module"}
    followable |= {r.alias or r.name for r in refs.values()}
    scope_of = _ScopeLookup(scopes)
    role_of: dict[int, tuple[int, str, object]] = {}
    for ref in captures.references:
        if ref.node.id in name_nodes:
            continue
        rank = REFERENCE_PRIORITY.index(ref.kind) if ref.kind in REFERENCE_PRIORITY else len(REFERENCE_PRIORITY)
        if ref.node.id not in role_of or rank < role_of[ref.node.id][0]:
            role_of[ref.node.id] = (rank, ref.kind, ref)
    for _, kind, ref in role_of.values():
        name = node_text(ref.node)
        if not name or name in IGNORED_NAMES or name in COMMON_NAMES or len(name) > 120:
            continue
        if kind == "name" and name not in followable:
            continue
        scope = scope_of(ref.node.start_byte)
        graph_kind_ = GRAPH_REF_KIND.get(kind, "name")
        qualifier = ref.qualifier[:80]
        key = (scope, graph_kind_, name, qualifier)
        if key not in refs:
            line = ref.node.start_point.row + 1
            refs[key] = Reference(path, scope, chunk_at(line), graph_kind_, name, qualifier, None, line)
    strong = {(r.scope, r.name) for r in refs.values() if r.kind in ("call", "import", "base")}
    return defs, [r for r in refs.values() if not (r.kind == "name" and (r.scope, r.name) in strong)]


def graph_kind(site: DefinitionSite, container_kind: str | None) -> str:
    if site.kind in CONTAINER_KINDS or site.kind in TYPE_KINDS:
        return "class"
    if site.kind in FUNCTION_KINDS:
        if site.kind == "method" or site.receiver or container_kind in CONTAINER_KINDS:
            return "method"
        return "function"
    return "constant"


class _ScopeLookup:
    """The qualified name of the innermost function or container around a byte offset ("" at the top)."""

    def __init__(self, scopes: list[tuple[int, int, str]]):
        ordered = sorted(scopes, key=lambda s: (s[0], -s[1]))
        self.starts = [s[0] for s in ordered]
        self.scopes = ordered

    def __call__(self, position: int) -> str:
        i = bisect_right(self.starts, position) - 1
        while i >= 0:
            start, end, name = self.scopes[i]
            if start <= position < end:
                # a later, shorter span inside this one may hold it too: the bisection found the last start
                return name
            i -= 1
        return ""


def import_module(source: str, spec: LanguageSpec, path: str) -> str:
    """The dotted, repository-absolute name of what an import names, the way navigator.index.graph's
    module_name spells a file ("./util/x.js" in src/a.js -> "src.util.x"; "crate::parser" -> "parser")."""
    text = source.strip().strip("\"'`<>")
    folder = path.split("/")[:-1]
    if spec.import_style == "rust":
        parts = [p for p in text.split("::") if p]
        if parts and parts[0] == "crate":
            return ".".join(parts[1:])
        own = module_name(path).split(".")
        if parts and parts[0] in ("self", "super"):
            base = own
            while parts and parts[0] in ("self", "super"):
                if parts.pop(0) == "super":
                    base = base[:-1]
            return ".".join(base + parts)
        return ".".join(parts)
    if text.startswith(".") or (spec.import_style == "path" and "/" in text):
        parts = _SOURCE_EXTENSIONS.sub("", text).split("/")
        if parts and parts[0] in (".", ".."):
            base = list(folder)
            while parts and parts[0] in (".", ".."):
                if parts.pop(0) == "..":
                    base = base[:-1]
            parts = base + parts
        return ".".join(p for p in parts if p and p not in (".", ".."))
    return ".".join(p for p in re.split(r"[./\\:]+", _SOURCE_EXTENSIONS.sub("", text)) if p)


def _import_refs(path: str, site: ImportSite, spec: LanguageSpec, chunk_at) -> list[Reference]:
    module = import_module(site.source, spec, path) if site.source else ""
    chunk_id = chunk_at(site.line)
    if site.name and site.name not in ("self", "*"):
        return [Reference(path, "", chunk_id, "import", site.name, module, site.alias or site.name, site.line)]
    if not module:
        return []
    qualifier, _, last = module.rpartition(".")
    if site.name == "*":
        return [Reference(path, "", chunk_id, "import", "*", module, None, site.line)]
    return [Reference(path, "", chunk_id, "import", last, qualifier, site.alias or last, site.line)]
