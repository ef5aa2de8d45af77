"""Chunks from a syntax tree: the machinery every tree-sitter chunker shares, and the one chunker that reads
every language of chunkers.languages through its query file.

`SyntaxChunker` holds what does not depend on a grammar: rows of a node, leading comments, the depth ranking
pack_rows cuts by, emitting pieces, and the final pass that turns uncovered lines into "code" chunks (nothing
in a file is dropped). The Python chunker (chunkers.python) and `QueryChunker` both build on it.

`QueryChunker` walks the top level of a file. A node the language's query captures as a definition (directly,
or through a wrapper that ends where it ends: `export class`, `template <..> class`) is a unit of its own, with
the comments and attributes directly above it; consecutive imports form one unit; a package clause, or a comment
block opening the file, is the module doc. A unit over the cap is cut: a container (class, struct, interface,
trait, impl, enum, namespace) into its own lines plus one piece per member definition, each carrying the
container's header; a function at its statement boundaries, each piece carrying the signature; anything else
at its shallowest syntax boundaries (chunkers.text.pack_rows).

`collect` and `qualify` are shared with the symbol graph (navigator.index.graph), so a chunk's symbol and the
graph's qualified name of the same definition are the same string.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from chunkers.base import CodeChunk
from chunkers.languages import LANGUAGES, parser, query
from chunkers.text import (
    CHUNK_CHAR_CAP,
    Piece,
    SourceLines,
    embed_chars,
    join_header,
    make_chunk,
    pack_rows,
    shorten_component,
)

if TYPE_CHECKING:
    from tree_sitter import Node

# What a definition capture's kind makes of it.
CONTAINER_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "impl", "module"})
FUNCTION_KINDS = frozenset({"function", "method", "macro"})
VALUE_KINDS = frozenset({"constant", "variable", "type"})  # cut as statements
TYPE_KINDS = frozenset({"type"})          # a type alias is a "class" chunk: it defines a type
# Node types that only group statements: a cut before a statement of such a block ranks with the statements.
BLOCK_TYPES = frozenset({
    "block", "statement_block", "compound_statement", "declaration_list", "class_body", "field_declaration_list",
    "statement_list", "body_statement", "interface_body", "enum_body", "constructor_body", "function_body",
    "template_body", "statements", "switch_body", "enum_class_body", "protocol_body", "enum_variant_list",
    "enumerator_list", "do_group", "enum_member_declaration_list", "enum_declaration_list",
})
# A row that only closes what rows above opened.
_CLOSER = re.compile(r"(?:[)\]}]+[;,]?\s*)+(?://.*|/\*.*\*/)?|end")
# How deep a wrapper (export_statement > lexical_declaration, expression_statement > internal_module) may hide
# the definition it holds.
MAX_WRAPPER_DEPTH = 3


def count_error_nodes(root: "Node") -> int:
    """ERROR and MISSING nodes in the tree (descends only into subtrees that contain errors)."""
    if not root.has_error:
        return 0
    count = 0
    cursor = root.walk()
    while True:
        node = cursor.node
        if node.is_error or node.is_missing:
            count += 1
        if node.has_error and cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return count


def node_text(node: "Node") -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


# ------------------------------------------------------------------------------------------- captures

@dataclass
class DefinitionSite:
    """One definition the query captured: its node, what kind of thing it is, its name(s), its body."""
    node: "Node"
    kind: str
    pattern: int
    names: list["Node"] = field(default_factory=list)
    body: "Node | None" = None
    receiver: str | None = None

    @property
    def name(self) -> str:
        return ", ".join(dict.fromkeys(node_text(n) for n in self.names)) or "<anonymous>"


@dataclass
class ImportSite:
    """One imported name: the module it comes from (as written), the name, and the local alias."""
    statement: "Node | None"
    source: str = ""
    name: str = ""
    alias: str = ""
    line: int = 0


@dataclass
class ReferenceSite:
    kind: str                     # call | base | type | name
    node: "Node"
    qualifier: str = ""


@dataclass
class Captures:
    """What a language's query found in one tree."""
    definitions: dict[int, DefinitionSite] = field(default_factory=dict)
    imports: dict[int, "Node"] = field(default_factory=dict)       # statement node id -> node
    packages: dict[int, "Node"] = field(default_factory=dict)
    package_name: str = ""
    transparent: set[int] = field(default_factory=set)              # blocks whose statements are top-level
    attached: list["Node"] = field(default_factory=list)            # comments and attributes
    imported: list[ImportSite] = field(default_factory=list)
    references: list[ReferenceSite] = field(default_factory=list)


def collect(root: "Node", language: str, *, references: bool) -> Captures:
    """Run the language's query over a tree and sort its matches by the capture contract
    (chunkers/queries/README.md). Where patterns disagree about a node, the earlier pattern's kind wins."""
    from tree_sitter import QueryCursor
    found = Captures()
    import_matches: list[dict] = []
    statement_sources: dict[int, str] = {}
    for pattern, caps in QueryCursor(query(language, references=references)).matches(root):
        for capture, nodes in caps.items():
            if capture.startswith("definition."):
                _add_definition(found, capture[len("definition."):], pattern, nodes[0], caps)
            elif capture == "import":
                statement = nodes[0]
                found.imports.setdefault(statement.id, statement)
                if "import.source" in caps and "import.name" not in caps:
                    statement_sources[statement.id] = node_text(caps["import.source"][0])
            elif capture == "package":
                found.packages.setdefault(nodes[0].id, nodes[0])
                if "package.name" in caps and not found.package_name:
                    found.package_name = node_text(caps["package.name"][0])
            elif capture == "attach":
                found.attached.extend(nodes)
            elif capture == "transparent":
                found.transparent.add(nodes[0].id)
            elif references and capture.startswith("reference."):
                qualifier = caps.get("qualifier")
                found.references.append(ReferenceSite(capture[len("reference."):], nodes[0],
                                                      node_text(qualifier[0]) if qualifier else ""))
        if any(c in caps for c in ("import.source", "import.name", "import.alias", "import.system")):
            import_matches.append(caps)
    if references:
        found.imported = _import_sites(found, import_matches, statement_sources)
    return found


def _add_definition(found: Captures, kind: str, pattern: int, node: "Node", caps: dict) -> None:
    site = found.definitions.get(node.id)
    if site is None or pattern < site.pattern:
        previous = site
        site = DefinitionSite(node, kind, pattern)
        if previous is not None:
            site.names = previous.names
        found.definitions[node.id] = site
    for name in caps.get("name", ()):
        if all(name.id != n.id for n in site.names):
            site.names.append(name)
    if site.body is None and caps.get("body"):
        site.body = caps["body"][0]
    if site.receiver is None and caps.get("receiver"):
        site.receiver = node_text(caps["receiver"][0])


def _import_sites(found: Captures, matches: list[dict], statement_sources: dict[int, str]) -> list[ImportSite]:
    """One ImportSite per imported name, each tied to the import statement that holds it."""
    statements = sorted(found.imports.values(), key=lambda n: n.start_byte)
    sites: list[ImportSite] = []
    bare: list[ImportSite] = []

    def statement_of(node: "Node") -> "Node | None":
        for statement in statements:
            if statement.start_byte <= node.start_byte and node.end_byte <= statement.end_byte:
                return statement
        return None

    for caps in matches:
        anchor = next(iter(caps.values()))[0]
        statement = statement_of(anchor)
        if statement is None:
            continue
        source = node_text(caps["import.source"][0]) if "import.source" in caps else \
            statement_sources.get(statement.id, "")
        if "import.system" in caps:
            continue  # <stdio.h>: outside the repository
        prefix = node_text(caps["import.prefix"][0]) if "import.prefix" in caps else ""
        name = node_text(caps["import.name"][0]) if "import.name" in caps else ""
        alias = node_text(caps["import.alias"][0]) if "import.alias" in caps else ""
        if prefix:
            source = f"{source}::{prefix}" if source else prefix
        if not name and not alias and "import" in caps:
            bare.append(ImportSite(statement, source, name, alias, anchor.start_point.row + 1))
            continue
        sites.append(ImportSite(statement, source, name, alias, anchor.start_point.row + 1))
    # The statement's own match, with its source and no name, counts only when nothing inside it named what it
    # imports (`import {a} from "m"` imports a, not m; `import "m"` and `use x;` import m).
    named = {s.statement.id for s in sites}
    sites += [s for s in bare if s.statement.id not in named]
    covered = {s.statement.id for s in sites}
    for statement in statements:
        if statement.id not in covered and statement.id in statement_sources:
            sites.append(ImportSite(statement, statement_sources[statement.id], "", "", statement.start_point.row + 1))
    # one site per (statement, source, name, alias)
    unique: dict[tuple, ImportSite] = {}
    for site in sites:
        unique.setdefault((site.statement.id, site.source, site.name, site.alias), site)
    sites = list(unique.values())
    return sites


@dataclass(frozen=True)
class Qualified:
    qualname: str            # "Router.ServeHTTP", "Value::new"
    parent: str | None       # the container's qualname; None at the top level
    container_kind: str | None  # the kind of the enclosing definition (a method is a function in a container)


def qualify(definitions: Iterable[DefinitionSite], separator: str) -> dict[int, Qualified]:
    """Qualified names by nesting: a definition inside another's span is named through it, a Go method through
    its receiver's type. Constants inside functions were never captured (the queries anchor them)."""
    ordered = sorted(definitions, key=lambda d: (d.node.start_byte, -d.node.end_byte))
    out: dict[int, Qualified] = {}
    open_: list[tuple[DefinitionSite, str]] = []
    for site in ordered:
        while open_ and open_[-1][0].node.end_byte <= site.node.start_byte:
            open_.pop()
        container = open_[-1] if open_ else None
        if site.receiver:
            parent, container_kind = site.receiver, "struct"
        elif container is not None:
            parent, container_kind = container[1], container[0].kind
        else:
            parent, container_kind = None, None
        qualname = f"{parent}{separator}{site.name}" if parent else site.name
        out[site.node.id] = Qualified(qualname, parent, container_kind)
        open_.append((site, qualname))
    return out


def chunk_kind(site: DefinitionSite, qualified: Qualified) -> str:
    if site.kind in CONTAINER_KINDS or site.kind in TYPE_KINDS:
        return "class"
    if site.kind in FUNCTION_KINDS:
        return "method" if site.kind == "method" or qualified.container_kind in CONTAINER_KINDS else "function"
    return "constant"


# ------------------------------------------------------------------------------------------- the shared base

@dataclass
class Unit:
    kind: str
    first: int                  # 0-based rows, leading comments included
    last: int
    nodes: list["Node"] = field(default_factory=list)
    symbol: str | None = None


class SyntaxChunker:
    """Geometry and emission over one file's tree; subclasses decide what the units are."""

    # Node types a row-depth walk does not count as a level (see row_depths).
    block_types: frozenset[str] = BLOCK_TYPES

    def __init__(self, path: str, lines: SourceLines, cap: int):
        self.path = path
        self.lines = lines
        self.cap = cap
        self.chunks: list[CodeChunk] = []

    def rows(self, node: "Node") -> tuple[int, int]:
        first = node.start_point.row
        last = node.end_point.row
        if node.end_point.column == 0 and last > first:  # ends at the start of the next line
            last -= 1
        top = len(self.lines) - 1
        return min(first, top), min(last, top)

    def indent_bytes(self, row: int) -> int:
        line = self.lines.rows[row]
        return len(line.encode("utf-8", "surrogatepass")) - len(line.lstrip().encode("utf-8", "surrogatepass"))

    def is_attached_row(self, row: int) -> bool:
        """A row that travels with the code below it (a comment line, an attribute)."""
        raise NotImplementedError

    def with_leading_comments(self, first: int, floor: int) -> int:
        """Move `first` up over attached rows directly above it (no blank line between), not past floor."""
        while first - 1 >= floor and self.is_attached_row(first - 1):
            first -= 1
        return first

    def row_depths(self, nodes: list["Node"]) -> dict[int, int]:
        """For each row that begins a syntax node, the shallowest such node's depth (blocks not counted).

        pack_rows prefers cutting before shallow rows: a body statement beats a line of an expression.
        """
        depths: dict[int, int] = {}
        row_count = len(self.lines)
        blocks = self.block_types
        for top in nodes:
            cursor = top.walk()
            levels = [0]
            while True:
                node = cursor.node
                depth = levels[-1]
                start = node.start_point
                if node.is_named and start.row < row_count and depth < depths.get(start.row, depth + 1) \
                        and start.column == self.indent_bytes(start.row):
                    depths[start.row] = depth
                # Nodes inside a one-row node start on that row, to the right of it: nothing to learn there.
                if node.end_point.row > start.row and cursor.goto_first_child():
                    levels.append(depth + (1 if node.is_named and node.type not in blocks else 0))
                    continue
                while not cursor.goto_next_sibling():
                    if not cursor.goto_parent():
                        break
                    levels.pop()
                else:
                    continue
                break
        return depths

    def fits(self, header: str, first: int, last: int) -> bool:
        return embed_chars(header, self.lines.span_chars(first, last)) <= self.cap

    def emit(self, pieces: list[Piece], kind: str, symbol: str | None, parent: str | None) -> None:
        for piece in pieces:
            self.chunks.append(make_chunk(self.path, self.lines, piece.first, piece.last, kind,
                                          symbol=symbol, parent=parent, header=piece.header))

    def pack_statements(self, first: int, last: int, nodes: list["Node"], context: str) -> list[Piece]:
        """Cut a run of statements; a piece starting inside a statement is headed by that statement's first line."""
        if self.fits(context, first, last):
            return [Piece(first, self.lines.trim_end(first, last), context)]
        starts = [(self.rows(n)[0], self.rows(n)[1]) for n in nodes]

        def header_for(row: int) -> str:
            for start, end in starts:
                if start < row <= end:
                    return join_header(context, shorten_component(self.lines.rows[start]))
            return context

        return pack_rows(self.lines, first, last, header_for, self.row_depths(nodes), self.cap)

    def uncovered_runs(self) -> list[tuple[int, int]]:
        """(first, last) rows of every run of non-blank lines no chunk holds yet."""
        covered = [False] * len(self.lines)
        for chunk in self.chunks:
            for row in range(chunk.start_line - 1, chunk.end_line):
                covered[row] = True
        runs = []
        row = 0
        while row < len(self.lines):
            if covered[row] or self.lines.blank[row]:
                row += 1
                continue
            end = row
            while end + 1 < len(self.lines) and not covered[end + 1]:
                end += 1
            runs.append((row, end))
            row = end + 1
        return runs

    def fill_gaps(self) -> None:
        """Every non-blank line must lie in some chunk: uncovered runs (stray comments) become "code"."""
        for first, last in self.uncovered_runs():
            self.emit(pack_rows(self.lines, first, last, lambda _row: "", None, self.cap), "code", None, None)


# ------------------------------------------------------------------------------------------- every other language

class QueryChunker(SyntaxChunker):
    """The chunker of every language in chunkers.languages, driven by its query's captures."""

    def __init__(self, path: str, lines: SourceLines, cap: int, language: str, captures: Captures):
        super().__init__(path, lines, cap)
        self.spec = LANGUAGES[language]
        self.captures = captures
        self.qualified = qualify(captures.definitions.values(), self.spec.separator)
        self.attached_ids = {n.id for n in captures.attached}
        self.attached_rows: set[int] = set()
        for node in captures.attached:
            first, last = self.rows(node)
            if node.start_point.column == self.indent_bytes(first):  # a whole-line comment, not a trailing one
                self.attached_rows.update(range(first, last + 1))

    def is_attached_row(self, row: int) -> bool:
        return row in self.attached_rows

    def run(self, root: "Node") -> list[CodeChunk]:
        for unit in self.units(root.named_children, floor=0):
            self.emit_unit(unit, "")
        self.emit_leading_doc()
        self.fill_gaps()
        self.chunks.sort(key=lambda c: (c.start_line, c.end_line))
        return self.chunks

    # ---- what a node is
    def definition_of(self, node: "Node") -> DefinitionSite | None:
        """The definition a top-level node is, directly or through wrappers that end where it ends."""
        current = node
        for _ in range(MAX_WRAPPER_DEPTH + 1):
            site = self.captures.definitions.get(current.id)
            if site is not None:
                return site
            inner = [c for c in current.named_children
                     if c.id not in self.attached_ids and c.end_point.row == current.end_point.row]
            if not inner:
                return None
            current = inner[-1]
        return None

    def classify(self, node: "Node") -> tuple[str, DefinitionSite | None]:
        if node.id in self.captures.imports:
            return "imports", None
        if node.id in self.captures.packages:
            return "module_doc", None
        site = self.definition_of(node)
        if site is None:
            return "code", None
        return chunk_kind(site, self.qualified[site.node.id]), site

    def top_level(self, nodes: list["Node"]) -> list["Node"]:
        """The file's top-level statements, with those of transparent blocks (a C header guard's
        `#ifndef X ... #endif`, `extern "C" { }`) in their place."""
        out: list["Node"] = []
        for node in nodes:
            if node.id in self.captures.transparent:
                out.extend(self.top_level(node.named_children))
            else:
                out.append(node)
        return out

    def units(self, nodes: list["Node"], floor: int) -> list[tuple[Unit, DefinitionSite | None]]:
        units: list[tuple[Unit, DefinitionSite | None]] = []
        for node in self.top_level(nodes):
            if node.id in self.attached_ids:
                continue  # attached to the unit below it, or picked up by fill_gaps
            first, last = self.rows(node)
            if first < floor:
                continue
            if units and first <= units[-1][0].last:  # two statements on one row: one unit
                units[-1][0].last = max(units[-1][0].last, last)
                units[-1][0].nodes.append(node)
                continue
            kind, site = self.classify(node)
            if units and kind in ("imports", "code") and units[-1][0].kind == kind:
                units[-1][0].last = last  # consecutive imports / loose code form one unit
                units[-1][0].nodes.append(node)
                continue
            start = units[-1][0].last + 1 if units else floor
            symbol = self.qualified[site.node.id].qualname if site is not None else None
            units.append((Unit(kind, self.with_leading_comments(first, start), last, [node], symbol), site))
        return units

    # ---- emitting
    def emit_unit(self, entry: tuple[Unit, DefinitionSite | None], context: str) -> None:
        unit, site = entry
        if site is not None and len(unit.nodes) == 1:
            qualified = self.qualified[site.node.id]
            if site.kind in CONTAINER_KINDS:
                self.emit_container(site, unit.first, unit.last, context)
                return
            if site.kind in FUNCTION_KINDS:
                self.emit_function(site, unit.first, unit.last, context, unit.kind)
                return
            self.emit(self.pack_statements(unit.first, unit.last, unit.nodes, context), unit.kind,
                      qualified.qualname, qualified.parent)
            return
        kind = "code" if site is not None else unit.kind   # definitions sharing a row with other code
        self.emit(self.pack_statements(unit.first, unit.last, unit.nodes, context), kind, unit.symbol, None)

    def head_row(self, site: DefinitionSite) -> int:
        """The last row of a definition's head: where its body opens (the signature may span rows)."""
        if site.body is not None and site.body.start_byte > site.node.start_byte:
            return min(site.body.start_point.row, len(self.lines) - 1)
        return self.rows(site.node)[0]

    def signature(self, site: DefinitionSite) -> str:
        return shorten_component(self.lines.span_text(site.node.start_point.row, self.head_row(site)))

    def emit_function(self, site: DefinitionSite, first: int, last: int, context: str, kind: str) -> None:
        qualified = self.qualified[site.node.id]
        if self.fits(context, first, last):
            self.emit([Piece(first, last, context)], kind, qualified.qualname, qualified.parent)
            return
        head = self.head_row(site)
        inner = join_header(context, self.signature(site))

        def header_for(row: int) -> str:
            return context if row <= head else inner

        self.emit(pack_rows(self.lines, first, last, header_for, self.row_depths([site.node]), self.cap),
                  kind, qualified.qualname, qualified.parent)

    def emit_container(self, site: DefinitionSite, first: int, last: int, context: str) -> None:
        qualified = self.qualified[site.node.id]
        qualname = qualified.qualname
        if self.fits(context, first, last) or site.body is None:
            self.emit(self.pack_statements(first, last, [site.node], context), "class", qualname, qualified.parent)
            return
        head = self.head_row(site)
        inner = join_header(context, self.signature(site))
        own_runs: list[tuple[int, int, list]] = []   # the container's own lines between members
        own_nodes: list = []
        cursor = first
        closers = self.closing_rows(last)
        members = [m for m in site.body.named_children if m.id not in self.attached_ids]
        for index, member in enumerate(members):
            member_site = self.definition_of(member)
            member_first, member_last = self.rows(member)
            if index == len(members) - 1 and closers <= member_last + 1:
                member_last = last   # the container's closing `}` travels with its last member
            if member_site is None or member_site.kind in VALUE_KINDS or member_first <= max(head, cursor - 1):
                own_nodes.append(member)
                continue
            member_first = self.with_leading_comments(member_first, max(cursor, head + 1))
            if cursor < member_first:
                own_runs.append((cursor, member_first - 1, own_nodes))
            own_nodes = []
            if member_site.kind in CONTAINER_KINDS:
                self.emit_container(member_site, member_first, member_last, inner)
            else:
                self.emit_function(member_site, member_first, member_last, inner,
                                   chunk_kind(member_site, self.qualified[member_site.node.id]))
            cursor = member_last + 1
        if cursor <= last:
            own_runs.append((cursor, last, own_nodes))
        for run_first, run_last, nodes in own_runs:
            if self.lines.is_blank_span(run_first, run_last):
                continue
            if run_first <= head:  # the run holding the container's own head: no header needed
                def header_for(row: int, head=head) -> str:
                    return context if row <= head else inner
                if self.fits(context, run_first, run_last):
                    pieces = [Piece(run_first, self.lines.trim_end(run_first, run_last), context)]
                else:
                    pieces = pack_rows(self.lines, run_first, run_last, header_for,
                                       self.row_depths([site.node]), self.cap)
            else:
                pieces = self.pack_statements(run_first, run_last, nodes, inner)
            self.emit(pieces, "class", qualname, qualified.parent)

    def closing_rows(self, last: int) -> int:
        """The first of the rows ending at `last` that only close brackets (`}`, `};`, `end`): nothing
        anyone searches for, so they join the piece above instead of making a chunk of their own."""
        row = last
        while row >= 0 and (self.lines.blank[row] or _CLOSER.fullmatch(self.lines.rows[row].strip())):
            row -= 1
        return row + 1

    def emit_leading_doc(self) -> None:
        """A comment block opening the file, not attached to the unit below it, is the module doc."""
        runs = self.uncovered_runs()
        if not runs:
            return
        first, last = runs[0]
        if self.lines.next_nonblank(0, len(self.lines) - 1) != first:
            return
        end = first
        while end + 1 <= last and self.is_attached_row(end + 1):
            end += 1
        if self.is_attached_row(first):
            self.emit(pack_rows(self.lines, first, end, lambda _row: "", None, self.cap), "module_doc", None, None)


def chunk_syntax(path: str, text: str, language: str, cap: int = CHUNK_CHAR_CAP) -> tuple[list[CodeChunk], int]:
    """Chunks of one file in a language of chunkers.languages, and the ERROR/MISSING nodes tree-sitter
    recovered from. Raises chunkers.languages.GrammarUnavailable when the grammar cannot be loaded."""
    lines = SourceLines(text)
    if all(lines.blank):
        return [], 0
    tree = parser(language).parse(lines.normalised.encode("utf-8", "surrogatepass"))
    captures = collect(tree.root_node, language, references=False)
    chunks = QueryChunker(path, lines, cap, language, captures).run(tree.root_node)
    return chunks, count_error_nodes(tree.root_node)
