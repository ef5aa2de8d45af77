"""The symbol graph of the index: what each source file defines, what it uses, and what holds what.

Three kinds of facts, extracted with tree-sitter and kept in nav.db beside the chunks they point into (Python's
captures are in data/python-graph.scm; every other language's come from its query in chunkers/queries/, read by
navigator.index.graph_languages):

    graph_defs   one row per definition: module, class, function, method, constant (module- or class-level
                 assignment), with its qualified name, its container (`parent`: the class of a method or class
                 constant, NULL at module level: that is the containment module -> units, class -> members),
                 its lines and the id of the chunk that holds its first line
    graph_refs   one row per distinct use of a name in one scope: a call, an attribute use, a plain name use,
                 a base class, an import (with the module it names, made absolute, and the repository file it
                 resolves to when there is one)

The graph is derived from the stored chunks, not from the files on disk: a file is rebuilt from its chunks'
spans (the chunker covers every non-blank line), so the graph always describes exactly the chunks of the
same index generation, and an index whose graph is missing or from an older extractor (GRAPH_VERSION) gets
one without reading a file. `update_graph` runs inside the index run's transaction: it re-extracts only the
files whose chunks changed, drops deleted files' rows, and re-resolves the imports (a file added this run may
be the target of an import written earlier).

Query time (`SymbolGraph`) resolves names the way a reader would: a definition in the same file, else what
the file imports under that name, else `self.x`/`cls.x` in the enclosing class, else a unique-enough name in
the whole repository.
"""
from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from navigator.index import store
from navigator.index.symbols import (  # noqa: F401  (re-exported: the graph's readers import them here)
    IGNORED_NAMES,
    Definition,
    LineToChunk,
    Reference,
    spelt_as,
    graph_language,
    has_graph,
    is_python,
    module_name,
    name_parts,
    package_folder,
    text_from_chunks,
)

if TYPE_CHECKING:
    from tree_sitter import Node

    from chunkers.base import CodeChunk

# Bump when what is extracted changes: the next index run re-extracts every file from its stored chunks.
GRAPH_VERSION = 3   # 3: every language of chunkers.languages, not Python alone
GRAPH_META_KEY = "graph_version"

# A node captured under several roles keeps the first of these.
CAPTURE_PRIORITY = ("def.class", "def.function", "def.constant", "ref.base", "ref.call", "ref.attr", "ref.name")
REF_KINDS = ("import", "base", "call", "attr", "name")

# Identifiers in these positions bind a name (parameters, keyword names, import names) rather than use one.
_BINDING_PARENTS = frozenset({
    "parameters", "typed_parameter", "lambda_parameters",
    "list_splat_pattern", "dictionary_splat_pattern", "keyword_argument", "aliased_import", "dotted_name",
    "global_statement", "nonlocal_statement", "import_prefix", "relative_import",
})



# ------------------------------------------------------------------------------------------- extraction

@lru_cache(maxsize=1)
def _query():
    import tree_sitter_python
    from tree_sitter import Language, Query
    source = resources.files("navigator.index").joinpath("data/python-graph.scm").read_text(encoding="utf-8")
    return Query(Language(tree_sitter_python.language()), source)


def _text(node: "Node") -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def extract_file(path: str, chunks: Sequence["CodeChunk"]) -> tuple[list[Definition], list[Reference]]:
    """Definitions and references of one source file, from its chunks. A language whose grammar cannot be
    loaded here has no graph (its chunks are line windows already)."""
    source = text_from_chunks(chunks)
    if not source.strip():
        return [], []
    language = graph_language(path, source)
    if language == "python":
        return _extract_python(path, chunks, source)
    if language is None:
        return [], []
    from chunkers.languages import GrammarUnavailable
    from navigator.index.graph_languages import extract_syntax_file
    try:
        return extract_syntax_file(path, chunks, source, language)
    except GrammarUnavailable:
        return [], []


def _extract_python(path: str, chunks: Sequence["CodeChunk"], source: str) -> tuple[list[Definition], list[Reference]]:
    from chunkers.python import _parser
    tree = _parser().parse(source.encode("utf-8", "surrogatepass"))
    chunk_at = LineToChunk(chunks)
    root = tree.root_node
    module = module_name(path)
    first_chunk = min(chunks, key=lambda c: c.start_line).id if chunks else None
    defs = [Definition(path, module, module.rsplit(".", 1)[-1], "module", None, 1, root.end_point.row + 1,
                       first_chunk)]
    from tree_sitter import QueryCursor
    captures = QueryCursor(_query()).captures(root)
    scopes = _Scopes([n.parent for role in ("def.class", "def.function") for n in captures.get(role, ())])
    scope_of = scopes.around
    role_of: dict[int, tuple[str, "Node"]] = {}
    for role in CAPTURE_PRIORITY:
        for node in captures.get(role, ()):
            role_of.setdefault(node.id, (role, node))

    refs: dict[tuple[str, str, str, str], Reference] = {}    # one row per (scope, kind, name, qualifier)
    bound: set[tuple[str, str]] = set()     # (scope, name) of parameters and local assignments
    uses: list[tuple[str, "Node"]] = []
    for role, node in role_of.values():
        if not role.startswith("def."):
            uses.append((role[4:], node))
            continue
        line = node.start_point.row + 1
        definition = node.parent
        if role == "def.constant":
            while definition is not None and definition.type not in ("expression_statement",):
                definition = definition.parent
            _, container_name = scope_of(node)
            kind, parent, qualname = "constant", container_name or None, (
                f"{container_name}.{_text(node)}" if container_name else _text(node))
        else:
            container, container_name = scope_of(definition)
            qualname = scopes.qualname(definition)
            parent = container_name or None
            if role == "def.class":
                kind = "class"
            elif container == "class_definition":
                kind = "method"
            else:
                kind = "function"
            if container == "function_definition":
                parent = None if kind == "function" else parent   # a nested function is its own unit
        end = (definition.end_point.row + 1) if definition is not None else line
        if definition is not None and definition.parent is not None and definition.parent.type == "decorated_definition":
            line_start = definition.parent.start_point.row + 1
        else:
            line_start = line
        defs.append(Definition(path, qualname, _text(node), kind, parent, line_start, end,
                               chunk_at(line)))
    for node in captures.get("import.statement", ()):
        _, scope = scope_of(node)
        for ref in _import_refs(path, node, scope, chunk_at(node.start_point.row + 1)):
            refs.setdefault((scope, "import", ref.alias or ref.name, ref.qualifier), ref)
    # A plain name, or an attribute of a plain name, can only be followed when the file defines or imports
    # that name (or it is self/cls): other uses are local variables and foreign objects, left out.
    imported = {r.alias for r in refs.values() if r.alias}
    followable = {d.name.encode("utf-8", "surrogatepass") for d in defs if d.parent is None and d.kind != "module"}
    followable |= {a.encode("utf-8", "surrogatepass") for a in imported}
    qualifier_heads = imported | {"self", "cls"}
    for kind, node in uses:
        if kind == "name" and node.text not in followable:
            continue
        name = _text(node)
        if name in IGNORED_NAMES or not name:
            continue
        parent = node.parent
        qualifier = ""
        if kind == "name" and parent is not None and _binds(node, parent):
            bound.add((scope_of(node)[1], name))
            continue
        if kind in ("call", "attr", "base") and parent is not None and parent.type == "attribute":
            obj = parent.child_by_field_name("object")
            if obj is not None and obj.type in ("identifier", "attribute"):
                qualifier = _text(obj)[:80]
            if kind == "attr" and qualifier.split(".", 1)[0] not in qualifier_heads:
                continue
        _, scope = scope_of(node)
        key = (scope, kind, name, qualifier)
        if key not in refs:
            line = node.start_point.row + 1
            refs[key] = Reference(path, scope, chunk_at(line), kind, name, qualifier, None, line)
    # A name also imported or called in the same scope needs no plain-name row.
    # A plain name use adds nothing when the scope also calls or imports the name, and names a local
    # variable when the scope binds it (parameters, assignments, loop targets).
    strong = {(r.scope, r.name) for r in refs.values() if r.kind in ("call", "import", "base")}
    return defs, [r for r in refs.values()
                  if not (r.kind == "name" and ((r.scope, r.name) in strong or (r.scope and (r.scope, r.name) in bound)))]


def _binds(node: "Node", parent: "Node") -> bool:
    """Whether this identifier binds a name (a parameter, an assignment or loop target, a keyword name)
    instead of reading one."""
    if parent.type in ("default_parameter", "typed_default_parameter", "keyword_argument"):
        return parent.child_by_field_name("name") == node
    if parent.type in _BINDING_PARENTS or parent.type in ("pattern_list", "tuple_pattern", "as_pattern_target"):
        return True
    return parent.type in ("assignment", "for_statement", "for_in_clause") and parent.child_by_field_name("left") == node


class _Scopes:
    """Which function or class holds a position of one file: the definitions' byte spans, nested, looked up
    by bisection and a walk out through the enclosing spans (cheaper than walking every node's parents)."""

    def __init__(self, definitions: list["Node"]):
        ordered = sorted(definitions, key=lambda d: (d.start_byte, -d.end_byte))
        self.starts = [d.start_byte for d in ordered]
        self.ends = [d.end_byte for d in ordered]
        self.types = [d.type for d in ordered]
        self.names: list[str] = []
        self.parents: list[int] = []
        self.index = {d.id: i for i, d in enumerate(ordered)}
        open_: list[int] = []
        for i, d in enumerate(ordered):
            while open_ and self.ends[open_[-1]] <= d.start_byte:
                open_.pop()
            parent = open_[-1] if open_ else -1
            name_node = d.child_by_field_name("name")
            name = _text(name_node) if name_node is not None else "<anonymous>"
            self.names.append(f"{self.names[parent]}.{name}" if parent >= 0 else name)
            self.parents.append(parent)
            open_.append(i)

    def _innermost(self, position: int, below: int) -> int:
        i = bisect_right(self.starts, position, 0, below) - 1
        while i >= 0 and not (self.starts[i] <= position < self.ends[i]):
            i = self.parents[i]
        return i

    def around(self, node: "Node") -> tuple[str | None, str]:
        """(type, qualname) of the innermost definition holding `node` other than `node` itself;
        (None, "") at module level."""
        own = self.index.get(node.id)
        i = self.parents[own] if own is not None else self._innermost(node.start_byte, len(self.starts))
        return (self.types[i], self.names[i]) if i >= 0 else (None, "")

    def qualname(self, definition: "Node") -> str:
        return self.names[self.index[definition.id]]


def _import_refs(path: str, node: "Node", scope: str, chunk_id: str | None) -> list[Reference]:
    line = node.start_point.row + 1
    out: list[Reference] = []
    if node.type == "import_statement":
        for child in node.named_children:
            target = child.child_by_field_name("name") if child.type == "aliased_import" else child
            alias_node = child.child_by_field_name("alias") if child.type == "aliased_import" else None
            dotted = _text(target)
            module, _, last = dotted.rpartition(".")
            out.append(Reference(path, scope, chunk_id, "import", last or dotted, module,
                                 _text(alias_node) if alias_node is not None else dotted.split(".")[0], line))
        return out
    module_node = node.child_by_field_name("module_name")
    module = _absolute_module(path, module_node) if module_node is not None else ""
    for child in node.children_by_field_name("name"):
        target = child.child_by_field_name("name") if child.type == "aliased_import" else child
        alias_node = child.child_by_field_name("alias") if child.type == "aliased_import" else None
        name = _text(target)
        out.append(Reference(path, scope, chunk_id, "import", name, module,
                             _text(alias_node) if alias_node is not None else name.split(".")[-1], line))
    if any(c.type == "wildcard_import" for c in node.named_children):
        out.append(Reference(path, scope, chunk_id, "import", "*", module, None, line))
    return out


def _absolute_module(path: str, module_node: "Node") -> str:
    """The module an import names; a relative one ("..utils") made absolute from the file's own folder, as a
    path-like dotted name ("src.click.utils") that resolve_module matches like any other."""
    if module_node.type != "relative_import":
        return _text(module_node)
    dots = 0
    rest = ""
    for child in module_node.children:
        if child.type == "import_prefix":
            dots = _text(child).count(".")
        elif child.type == "dotted_name":
            rest = _text(child)
    folder = path.split("/")[:-1]
    if dots > 1:
        folder = folder[:len(folder) - (dots - 1)] if dots - 1 <= len(folder) else []
    return ".".join([*folder, *([rest] if rest else [])])


class ModuleFiles:
    """dotted module name -> the repository's Python file for it, by suffix: "click.core" finds
    "src/click/core.py" (a checkout's source root is not known; the shortest matching path wins)."""

    def __init__(self, paths: Iterable[str]):
        self.by_suffix: dict[str, str] = {}
        ordered = sorted(paths, key=lambda p: (p.count("/"), p))
        for path in ordered:
            parts = module_name(path).split(".")
            for i in range(len(parts)):
                self.by_suffix.setdefault(".".join(parts[i:]), path)
        # A Go import names a folder: it resolves to a file of that folder, and lookups search the folder.
        for path in ordered:
            folder = package_folder(path)
            if folder:
                parts = folder.split("/")
                for i in range(len(parts)):
                    self.by_suffix.setdefault(".".join(parts[i:]), path)

    def resolve(self, module: str) -> str | None:
        return self.by_suffix.get(module) if module else None


def resolve_imports(conn: sqlite3.Connection) -> None:
    """Point every import at the repository file it names: `from a import b` at a/b.py when b is a module,
    else at a's file; imports of other distributions keep NULL."""
    paths = [r[0] for r in conn.execute("SELECT path FROM graph_defs WHERE kind='module'")]
    modules = ModuleFiles(paths)
    updates = []
    for rowid, name, qualifier, target in conn.execute(
            "SELECT rowid, name, qualifier, target_path FROM graph_refs WHERE kind='import'"):
        found = (modules.resolve(f"{qualifier}.{name}" if qualifier else name) if name != "*" else None) \
            or modules.resolve(qualifier)
        if found != target:
            updates.append((found, rowid))
    conn.executemany("UPDATE graph_refs SET target_path=? WHERE rowid=?", updates)


def update_graph(conn: sqlite3.Connection, changed: Mapping[str, Sequence["CodeChunk"]],
                 deleted: Iterable[str]) -> None:
    """Bring the graph in line with this run's chunks, inside the caller's transaction: `changed` holds each
    new or modified file's chunks, `deleted` the paths gone. An index whose graph is missing or from another
    GRAPH_VERSION is extracted whole, from its stored chunks."""
    stale = [*deleted, *changed]
    if store.get_meta(conn, GRAPH_META_KEY) != GRAPH_VERSION:
        conn.execute("DELETE FROM graph_defs")
        conn.execute("DELETE FROM graph_refs")
        todo = _stored_chunks_by_path(conn, exclude=set(changed))
        todo.update(changed)
    else:
        for path in stale:
            conn.execute("DELETE FROM graph_defs WHERE path=?", (path,))
            conn.execute("DELETE FROM graph_refs WHERE path=?", (path,))
        todo = dict(changed)
    for path, chunks in todo.items():
        if not has_graph(path):
            continue
        defs, refs = extract_file(path, chunks)
        conn.executemany("INSERT INTO graph_defs VALUES (?,?,?,?,?,?,?,?)", [d.row() for d in defs])
        conn.executemany("INSERT INTO graph_refs VALUES (?,?,?,?,?,?,?,?,?)", [r.row() for r in refs])
    if todo or stale:
        resolve_imports(conn)
    store.set_meta(conn, GRAPH_META_KEY, GRAPH_VERSION)


def _stored_chunks_by_path(conn: sqlite3.Connection, exclude: set[str]) -> dict[str, list["CodeChunk"]]:
    out: dict[str, list] = {}
    for row in conn.execute(f"SELECT {store.CHUNK_COLUMNS} FROM chunks ORDER BY path, seq"):
        if row[1] not in exclude and has_graph(row[1]):
            out.setdefault(row[1], []).append(store.chunk_from_row(row))
    return out


# ------------------------------------------------------------------------------------------- query time

def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_DEF_COLUMNS = "path, qualname, name, kind, parent, start_line, end_line, chunk_id"
_REF_COLUMNS = "path, scope, chunk_id, kind, name, qualifier, alias, line, target_path"
# A name defined in more places than this is too ambiguous to follow without a file or import to go by.
MAX_GLOBAL_MATCHES = 3


class SymbolGraph:
    """Questions over the graph of one index: definitions by name, references, neighbours."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.available = bool(conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='graph_defs'").fetchone()) and \
            store.get_meta(conn, GRAPH_META_KEY) == GRAPH_VERSION
        self._imports: dict[str, dict[str, Reference]] = {}

    def _defs(self, where: str, params: Sequence) -> list[Definition]:
        if not self.available:
            return []
        return [Definition(*r) for r in self.conn.execute(
            f"SELECT {_DEF_COLUMNS} FROM graph_defs WHERE {where} ORDER BY path, start_line, qualname", params)]

    def _refs(self, where: str, params: Sequence) -> list[Reference]:
        if not self.available:
            return []
        return [Reference(*r) for r in self.conn.execute(
            f"SELECT {_REF_COLUMNS} FROM graph_refs WHERE {where} ORDER BY path, line, kind, name", params)]

    # ---- definitions
    def definitions(self, name: str) -> list[Definition]:
        """Definitions named `name` ("parse_args"), or with that qualified name, spelt any language's way
        ("Parser.parse_args", "Value::new", "pkg.Func", "memory.manager.consolidate": the qualifiers in order,
        module and class parts optional), or a module's dotted name ("click.core"). Exact spellings first;
        when none is exact, the qualifiers in order; when none matches so, the name with its first qualifier
        dropped (an alias the index cannot know)."""
        parts = name_parts(name)
        if not parts:
            return []
        found = self._defs("name=?", (parts[-1],))
        if len(parts) > 1:
            found = ([d for d in found if spelt_as(d, parts, exact=True)]
                     or [d for d in found if spelt_as(d, parts, exact=False)]
                     or [d for d in found if spelt_as(d, parts[1:], exact=False)])
        return sorted(found, key=lambda d: (d.kind == "module", d.path, d.start_line))

    def defined_in_chunk(self, chunk_id: str) -> list[Definition]:
        return self._defs("chunk_id=? AND kind!='module'", (chunk_id,))

    def members(self, definition: Definition) -> list[Definition]:
        """What a class or module holds directly."""
        if definition.kind == "module":
            return self._defs("path=? AND parent IS NULL AND kind!='module'", (definition.path,))
        if definition.kind == "class":
            return self._defs("path=? AND parent=?", (definition.path, definition.qualname))
        return []

    def container(self, definition: Definition) -> Definition | None:
        if definition.kind == "module":
            return None
        if definition.parent:
            found = self._defs("path=? AND qualname=? AND kind!='module'", (definition.path, definition.parent))
        else:
            found = self._defs("path=? AND kind='module'", (definition.path,))
        return found[0] if found else None

    # ---- resolution
    def imports_of(self, path: str) -> dict[str, Reference]:
        """local name -> the import that binds it in `path` (module level and function level alike)."""
        if path not in self._imports:
            self._imports[path] = {r.alias or r.name: r for r in self._refs("path=? AND kind='import'", (path,))}
        return self._imports[path]

    def resolve(self, ref: Reference) -> list[Definition]:
        """The definitions a reference most likely means (empty when it names nothing in the repository)."""
        if ref.kind == "import":
            if not ref.target_path:
                return []
            found = self._top_level_in(ref.target_path, ref.name)
            return found or self._defs("path=? AND kind='module'", (ref.target_path,))
        head = ref.qualifier.split(".", 1)[0] if ref.qualifier else ""
        if head in ("self", "cls") and ref.scope:
            owner = self._enclosing_class(ref.path, ref.scope)
            if owner is not None:
                found = self._defs("path=? AND parent=? AND name=?", (ref.path, owner, ref.name))
                if found:
                    return found
            return self._global(ref.name, methods=True)
        imports = self.imports_of(ref.path)
        if ref.qualifier:
            bound = imports.get(ref.qualifier) or imports.get(head)
            if bound is not None and bound.target_path:
                found = self._top_level_in(bound.target_path, ref.name)
                if found:
                    return found
            if ref.kind == "attr":
                return []     # obj.name on an unknown object: too vague to follow
            return self._global(ref.name, methods=True)
        local = self._defs("path=? AND name=? AND parent IS NULL AND kind!='module'", (ref.path, ref.name))
        if local:
            return local
        bound = imports.get(ref.name)
        if bound is not None:
            return self.resolve(bound)
        return self._global(ref.name, methods=False)

    def _top_level_in(self, target_path: str, name: str) -> list[Definition]:
        """Top-level definitions named `name` in the module an import resolved to: the file, or for a language
        whose packages are folders (Go), every file directly in the file's folder."""
        folder = package_folder(target_path)
        if folder is None:
            return self._defs("path=? AND name=? AND parent IS NULL AND kind!='module'", (target_path, name))
        prefix = f"{folder}/" if folder else ""
        found = self._defs("path LIKE ? ESCAPE '\\' AND name=? AND parent IS NULL AND kind!='module'",
                           (_like_prefix(prefix) + "%", name))
        return [d for d in found if "/" not in d.path[len(prefix):]]

    def _global(self, name: str, *, methods: bool) -> list[Definition]:
        kinds = "('function','class','constant','method')" if methods else "('function','class','constant')"
        found = self._defs(f"name=? AND kind IN {kinds}", (name,))
        return found if len(found) <= MAX_GLOBAL_MATCHES else []

    def _enclosing_class(self, path: str, scope: str) -> str | None:
        parts = scope.split(".")
        for end in range(len(parts) - 1, 0, -1):
            candidate = ".".join(parts[:end])
            if self._defs("path=? AND qualname=? AND kind='class'", (path, candidate)):
                return candidate
        return None

    # ---- edges
    def references_to(self, definition: Definition, limit: int = 50) -> list[Reference]:
        """Uses of `definition` elsewhere: the references whose resolution includes it."""
        out = []
        for ref in self._refs("name=? AND kind!='import'", (definition.name,)):
            if ref.path == definition.path and ref.scope == definition.qualname:
                continue      # recursion, or a class using its own name
            if any(d.path == definition.path and d.qualname == definition.qualname for d in self.resolve(ref)):
                out.append(ref)
                if len(out) >= limit:
                    break
        return out

    def callees(self, definition: Definition, kinds: Sequence[str] = ("call", "name", "base")) -> list[tuple[Reference, Definition]]:
        """What `definition`'s body uses (calls, names, base classes), resolved; nested scopes included."""
        prefix = definition.qualname
        placeholders = ",".join("?" * len(kinds))
        if definition.kind == "module":
            refs = self._refs(f"path=? AND scope='' AND kind IN ({placeholders})", (definition.path, *kinds))
        else:
            refs = self._refs(f"path=? AND (scope=? OR scope LIKE ?) AND kind IN ({placeholders})",
                              (definition.path, prefix, prefix + ".%", *kinds))
        out = []
        for ref in refs:
            for target in self.resolve(ref):
                if (target.path, target.qualname) != (definition.path, definition.qualname):
                    out.append((ref, target))
        return out

    def callers(self, definition: Definition, limit: int = 50) -> list[Definition]:
        """The definitions whose bodies use `definition`."""
        out: dict[tuple[str, str], Definition] = {}
        for ref in self.references_to(definition, limit=limit):
            scope = ref.scope
            found = self._defs("path=? AND qualname=? AND kind!='module'", (ref.path, scope)) if scope else \
                self._defs("path=? AND kind='module'", (ref.path,))
            for d in found:
                out.setdefault((d.path, d.qualname), d)
        return list(out.values())

    def uses_in_chunk(self, chunk_id: str, kinds: Sequence[str] = ("call", "name", "base")) -> list[tuple[Reference, Definition]]:
        """What the code of one chunk uses, resolved (a chunk may hold part of a definition, or several)."""
        placeholders = ",".join("?" * len(kinds))
        out = []
        for ref in self._refs(f"chunk_id=? AND kind IN ({placeholders})", (chunk_id, *kinds)):
            out.extend((ref, target) for target in self.resolve(ref))
        return out

    def reference_count(self, name: str) -> int:
        """How many scopes use `name` (imports not counted)."""
        if not self.available:
            return 0
        return self.conn.execute("SELECT COUNT(*) FROM graph_refs WHERE name=? AND kind!='import'", (name,)).fetchone()[0]

    def definitions_at(self, path: str, qualname: str) -> list[Definition]:
        """The definitions with this qualified name in one file (a module and its function may share one)."""
        return self._defs("path=? AND qualname=? AND kind!='module'", (path, qualname))
