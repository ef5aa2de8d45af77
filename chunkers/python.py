"""Python chunker: one chunk per top-level unit, found with tree-sitter.

Units: the module docstring, the import block, each top-level assignment (the answers to
"what is X set to?"), each function and each class, with decorators and the comment lines
directly above attached. Anything else (an `if __name__ == "__main__":` block, stray statements,
error-recovered code) becomes kind "code", and a final pass turns any still-uncovered line into
a "code" chunk, so every non-blank line of the file lies in some chunk.

A unit above CHUNK_CHAR_CAP is cut: a class into its own lines plus one chunk per method or
nested class; a function (or a huge statement such as a dict literal) at its shallowest
statement boundaries, each piece carrying the enclosing class line / signature as its header.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from chunkers.base import CodeChunk
from chunkers.syntax import SyntaxChunker, Unit, count_error_nodes
from chunkers.text import CHUNK_CHAR_CAP, Piece, SourceLines, join_header, pack_rows, shorten_component

if TYPE_CHECKING:  # tree_sitter loads lazily: `nav --help` must not pay for it
    from tree_sitter import Node, Parser

IMPORT_TYPES = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
DOCSTRING_TYPES = frozenset({"string", "concatenated_string"})
ASSIGNMENT_TYPES = frozenset({"assignment", "augmented_assignment"})
DEF_TYPES = frozenset({"function_definition", "class_definition"})
# Statements allowed inside an import guard (`try: import x / except ImportError: x = None`).
IMPORT_GUARD_TYPES = IMPORT_TYPES | frozenset({"pass_statement", "expression_statement", "comment"})
IMPORT_GUARD_CLAUSES = frozenset({
    "block", "else_clause", "elif_clause", "except_clause", "finally_clause",
    "try_statement", "if_statement",
})
TARGET_LIST_TYPES = frozenset({"pattern_list", "tuple_pattern", "list_pattern"})

_thread_state = threading.local()


def _parser() -> Parser:
    """One tree-sitter Parser per thread (Parser objects are not thread-safe; building one is not free)."""
    parser = getattr(_thread_state, "parser", None)
    if parser is None:
        import tree_sitter_python
        from tree_sitter import Language, Parser

        parser = Parser(Language(tree_sitter_python.language()))
        _thread_state.parser = parser
    return parser


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


class _PythonChunker(SyntaxChunker):
    block_types = frozenset({"block"})

    def is_attached_row(self, row: int) -> bool:
        return self.lines.rows[row].lstrip().startswith("#")

    def colon_row(self, definition: Node) -> int:
        """The last row of a def/class line (signatures may span lines): the row of its ':'."""
        body = definition.child_by_field_name("body")
        row = definition.start_point.row
        for child in definition.children:
            if body is not None and child.start_byte >= body.start_byte:
                break
            if child.type == ":":
                row = child.start_point.row
        return min(row, len(self.lines) - 1)

    def signature(self, definition: Node) -> str:
        return shorten_component(self.lines.span_text(definition.start_point.row, self.colon_row(definition)))

    # ---- module level -----------------------------------------------------------------------
    def run(self, root: Node) -> list[CodeChunk]:
        for unit in self.module_units(root):
            self.emit_unit(unit)
        self.fill_gaps()
        self.chunks.sort(key=lambda c: (c.start_line, c.end_line))
        return self.chunks

    def module_units(self, root: Node) -> list[Unit]:
        units: list[Unit] = []
        for node in root.named_children:
            if node.type == "comment":
                continue  # attached to the unit below it, or picked up by fill_gaps
            first, last = self.rows(node)
            if units and first <= units[-1].last:  # `a = 1; b = 2`: one row, one unit
                units[-1].last = max(units[-1].last, last)
                units[-1].nodes.append(node)
                continue
            kind, symbol = self.classify(node, is_first=not units)
            if units and kind in ("imports", "code") and units[-1].kind == kind:
                units[-1].last = last  # consecutive imports / loose code form one unit
                units[-1].nodes.append(node)
                continue
            floor = units[-1].last + 1 if units else 0
            units.append(Unit(kind, self.with_leading_comments(first, floor), last, [node], symbol))
        return units

    def classify(self, node: Node, is_first: bool) -> tuple[str, str | None]:
        kind = node.type
        if kind == "decorated_definition":
            definition = node.child_by_field_name("definition")
            kind = definition.type if definition is not None else "code"
            node = definition if definition is not None else node
        if kind == "function_definition":
            return "function", self.def_name(node)
        if kind == "class_definition":
            return "class", self.def_name(node)
        if kind in IMPORT_TYPES or (kind in ("try_statement", "if_statement") and self.is_import_guard(node)):
            return "imports", None
        if kind == "expression_statement" and node.named_child_count:
            inner = node.named_children[0]
            if is_first and inner.type in DOCSTRING_TYPES:
                return "module_doc", None
            if inner.type in ASSIGNMENT_TYPES:
                return "constant", self.assignment_targets(inner)
        if kind == "type_alias_statement" and node.named_child_count:
            return "constant", _text(node.named_children[0])
        return "code", None

    def def_name(self, definition: Node) -> str:
        name = definition.child_by_field_name("name")
        return _text(name) if name is not None else "<anonymous>"

    def is_import_guard(self, node: Node) -> bool:
        """try/if blocks that only import (plus fallbacks like `x = None`): part of the import block."""
        saw_import = False
        stack = [node]
        while stack:
            current = stack.pop()
            for child in current.named_children:
                if child.type in IMPORT_TYPES:
                    saw_import = True
                elif child.type in IMPORT_GUARD_CLAUSES:
                    stack.append(child)
                elif child.type == "expression_statement":
                    if not (child.named_child_count and child.named_children[0].type in ASSIGNMENT_TYPES):
                        return False
                elif child.type in IMPORT_GUARD_TYPES:
                    continue
                elif current.type in ("if_statement", "elif_clause") and child.type not in IMPORT_GUARD_CLAUSES:
                    continue  # the condition expression
                elif current.type == "except_clause" and child.type != "block":
                    continue  # the exception type(s)
                else:
                    return False
        return saw_import

    def assignment_targets(self, assignment: Node) -> str:
        """`A = 1` -> "A"; `A, B = 1, 2` -> "A, B"; `A = B = 1` -> "A, B"; `X: int = 3` -> "X"."""
        names: list[str] = []
        current: Node | None = assignment
        while current is not None and current.type in ASSIGNMENT_TYPES:
            left = current.child_by_field_name("left")
            if left is not None:
                if left.type in TARGET_LIST_TYPES:
                    names.extend(_text(t) for t in left.named_children)
                else:
                    names.append(_text(left))
            current = current.child_by_field_name("right")
        return ", ".join(names) if names else _text(assignment).split("=", 1)[0].strip()

    def emit_unit(self, unit: Unit) -> None:
        node = unit.nodes[0]
        if unit.kind in ("function", "class") and len(unit.nodes) == 1:
            definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
            if unit.kind == "function":
                self.emit_def(definition, unit.first, unit.last, "", unit.symbol, None, "function")
            else:
                self.emit_class(definition, unit.first, unit.last, "", "", None)
            return
        kind = "code" if unit.kind in ("function", "class") else unit.kind  # defs sharing a row with code
        self.emit(self.pack_statements(unit.first, unit.last, unit.nodes, ""), kind, unit.symbol, None)

    # ---- functions and classes --------------------------------------------------------------
    def emit_def(self, definition: Node, first: int, last: int, context: str,
                 symbol: str | None, parent: str | None, kind: str) -> None:
        if self.fits(context, first, last):
            self.emit([Piece(first, last, context)], kind, symbol, parent)
            return
        colon = self.colon_row(definition)
        inner = join_header(context, self.signature(definition))

        def header_for(row: int) -> str:
            return context if row <= colon else inner

        self.emit(pack_rows(self.lines, first, last, header_for, self.row_depths([definition]), self.cap),
                  kind, symbol, parent)

    def emit_class(self, definition: Node, first: int, last: int, context: str,
                   prefix: str, parent: str | None) -> None:
        qualname = prefix + self.def_name(definition)
        if self.fits(context, first, last):
            self.emit([Piece(first, last, context)], "class", qualname, parent)
            return
        colon = self.colon_row(definition)
        inner = join_header(context, self.signature(definition))
        body = definition.child_by_field_name("body")
        members = body.named_children if body is not None else []

        own_runs: list[tuple[int, int, list[Node]]] = []  # the class's own lines between members
        own_nodes: list[Node] = []
        cursor = first
        for member in members:
            target = member.child_by_field_name("definition") if member.type == "decorated_definition" else member
            member_first, member_last = self.rows(member)
            if target is None or target.type not in DEF_TYPES or member_first <= max(colon, cursor - 1):
                own_nodes.append(member)
                continue
            member_first = self.with_leading_comments(member_first, max(cursor, colon + 1))
            if cursor < member_first:
                own_runs.append((cursor, member_first - 1, own_nodes))
            own_nodes = []
            if target.type == "function_definition":
                self.emit_def(target, member_first, member_last, inner,
                              f"{qualname}.{self.def_name(target)}", qualname, "method")
            else:
                self.emit_class(target, member_first, member_last, inner, qualname + ".", qualname)
            cursor = member_last + 1
        if cursor <= last:
            own_runs.append((cursor, last, own_nodes))

        for run_first, run_last, nodes in own_runs:
            if self.lines.is_blank_span(run_first, run_last):
                continue
            if run_first <= colon:  # the run holding the class line itself: no class header needed
                pieces = self.pack_class_head(run_first, run_last, colon, context, inner, nodes)
            else:
                pieces = self.pack_statements(run_first, run_last, nodes, inner)
            self.emit(pieces, "class", qualname, parent)

    def pack_class_head(self, first: int, last: int, colon: int, context: str, inner: str,
                        nodes: list[Node]) -> list[Piece]:
        def header_for(row: int) -> str:
            return context if row <= colon else inner

        if self.fits(context, first, last):
            return [Piece(first, self.lines.trim_end(first, last), context)]
        return pack_rows(self.lines, first, last, header_for, self.row_depths(nodes), self.cap)


def chunk_python(path: str, text: str, cap: int = CHUNK_CHAR_CAP) -> tuple[list[CodeChunk], int]:
    """Chunks of one Python file, and the number of ERROR/MISSING nodes tree-sitter recovered from."""
    lines = SourceLines(text)
    if all(lines.blank):
        return [], 0
    tree = _parser().parse(lines.normalised.encode("utf-8", "surrogatepass"))
    chunks = _PythonChunker(path, lines, cap).run(tree.root_node)
    return chunks, count_error_nodes(tree.root_node)
