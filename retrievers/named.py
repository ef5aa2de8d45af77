"""A name the question gives is found first: when a question names a definition (`consolidate`,
`MemoryManager.consolidate`, `memory.manager.consolidate`, `Foo::bar`, `pkg.Func`), the chunk holding that
definition's first line goes to rank 1, and its file to rank 1 at file level, whatever the question's other
words; when several definitions share the name they fill the top ranks together, in the order the ranking
already gave them.

What counts as naming: a backticked identifier or qualified name, or, unquoted, a word no one writes in prose
(snake_case, camelCase, a qualified name with `.` or `::`, `name()`). A name with more definitions than
MAX_DEFINITIONS says too little to pick any (`render`, `__init__`), and a long query (a bug report) names
many things it only uses: neither moves anything. The record is patches/0024-named-definition-first.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrievers.query_analysis import LONG_QUERY_CHARS

if TYPE_CHECKING:
    from navigator.index.graph import Definition, SymbolGraph

HEAD = "named"
SETTING_ENV = "NAV_NAMED_FIRST"   # 0 turns the rule off (for a paired measurement); default on
MAX_DEFINITIONS = 8           # a name defined in more places than this is not lifted
MAX_NAMES = 4                 # names taken from one question, in order of appearance
_BACKTICKED = re.compile(r"`([^`\n]{1,120})`")
_QUALIFIED_OR_CALL = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|\.|#|->)[A-Za-z_$][\w$]*)+(?:\(\))?|[A-Za-z_][\w]*\(\)")
_WORD = re.compile(r"[A-Za-z_][\w]*")
_IDENTIFIER_SHAPE = re.compile(r"[A-Za-z_$][\w$]*(?:(?:::|\.|#|->)[A-Za-z_$][\w$]*)*")
# English written with a dot is not a name: "e.g.", "i.e.", a file name's extension.
_NOT_NAMES = frozenset({"e.g", "i.e", "etc", "vs"})
_FILE_EXTENSION = re.compile(r"\.(?:py|go|rs|ts|tsx|js|jsx|java|c|h|cc|cpp|hpp|cs|rb|php|sh|md|rst|txt|json|ya?ml|toml|"
                             r"cfg|ini|html|css)$", re.IGNORECASE)


def _prose_free(word: str) -> bool:
    """snake_case, camelCase or MixedCaps with an inner capital (initialisms too: URLParam, HTTPServer): a
    shape prose does not take (URLs, APIs and JSON are prose)."""
    core = word.strip("_")
    if "_" in core and re.search(r"[A-Za-z]", core):
        return True
    return bool(re.search(r"[a-z][A-Z]", word) or re.match(r"[A-Z][a-z0-9]+[A-Z]", word)
                or re.search(r"[A-Z]{2,}[a-z]{2,}", word[1:]))


def names_in(question: str) -> list[str]:
    """The definition names a question gives, in order of appearance, at most MAX_NAMES."""
    if len(question) > LONG_QUERY_CHARS:
        return []
    found: dict[str, None] = {}
    for match in _BACKTICKED.finditer(question):
        text = match.group(1).strip().rstrip("()").strip()
        if _IDENTIFIER_SHAPE.fullmatch(text) and text.lower() not in _NOT_NAMES and not _FILE_EXTENSION.search(text):
            found.setdefault(text, None)
    unquoted = _BACKTICKED.sub(" ", question)
    for match in _QUALIFIED_OR_CALL.finditer(unquoted):
        text = match.group(0).rstrip("()")
        parts = re.split(r"::|\.|#|->", text)
        if text.lower() in _NOT_NAMES or _FILE_EXTENSION.search(text):
            continue
        # Any qualified name: prose puts a space after its full stops.
        if match.group(0).endswith("()") or len(parts) > 1 or any(_prose_free(p) for p in parts):
            found.setdefault(text, None)
    for match in _WORD.finditer(_QUALIFIED_OR_CALL.sub(" ", unquoted)):
        if _prose_free(match.group(0)):
            found.setdefault(match.group(0), None)
    return list(found)[:MAX_NAMES]


@dataclass(frozen=True)
class NamedDefinitions:
    """The definitions a question names, in the order they should lead a ranking."""
    names: tuple[str, ...]
    definitions: tuple["Definition", ...]

    @property
    def chunk_ids(self) -> list[str]:
        return list(dict.fromkeys(d.chunk_id for d in self.definitions if d.chunk_id))

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys(d.path for d in self.definitions))


def rule_enabled(extra: Mapping[str, str]) -> bool:
    return extra.get(SETTING_ENV, "1").strip() not in ("0", "off", "false", "no")


def named_definitions(question: str, graph: "SymbolGraph", extra: Mapping[str, str] | None = None) -> NamedDefinitions:
    """Look the question's names up in the symbol graph; a name with no definition, or with more than
    MAX_DEFINITIONS, adds nothing. Definitions of code come before a module of the same name."""
    if not graph.available or (extra is not None and not rule_enabled(extra)):
        return NamedDefinitions((), ())
    names: list[str] = []
    chosen: list["Definition"] = []
    from navigator.index.symbols import name_parts, spelt_as
    for name in names_in(question):
        parts = name_parts(name)
        # Every qualifier the question gives must be one of the definition's (no alias guessing here).
        found = [d for d in graph.definitions(name) if len(parts) == 1 or spelt_as(d, parts, exact=False)]
        code = [d for d in found if d.kind != "module"]
        found = code or found
        if not found or len(found) > MAX_DEFINITIONS:
            continue
        names.append(name)
        chosen.extend(d for d in found if d not in chosen)
    return NamedDefinitions(tuple(names), tuple(chosen))


def lead_with(ranked_ids: Sequence[str], named_ids: Sequence[str]) -> list[str]:
    """`ranked_ids` with the named ones first: those the ranking holds in its order, then the rest as named."""
    if not named_ids:
        return list(ranked_ids)
    named = set(named_ids)
    held = [cid for cid in ranked_ids if cid in named]
    missing = [cid for cid in named_ids if cid not in set(held)]
    return held + missing + [cid for cid in ranked_ids if cid not in named]
