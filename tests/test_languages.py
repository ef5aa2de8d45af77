"""Every language of chunkers.languages: detection, chunks and the symbol graph, through one shared mechanism.

Each language has a fixture under tests/fixtures/languages/; what nav makes of it (its chunks, and the graph's
definitions, calls, bases and imports) is compared with tests/fixtures/languages/expected.txt, read by a person
when it was written. A change shows as a readable diff; `NAV_UPDATE_GOLDEN=1 pytest tests/test_languages.py`
rewrites the file, to be read again before it is committed.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from chunkers import chunk_file
from chunkers import languages
from chunkers.languages import LANGUAGES, grammar_failures, language_for
from chunkers.text import CHUNK_CHAR_CAP, embed_chars
from navigator.index.graph import extract_file

FIXTURES = Path(__file__).parent / "fixtures" / "languages"
GOLDEN = FIXTURES / "expected.txt"
SOURCES = sorted(p for p in FIXTURES.iterdir() if p.name != GOLDEN.name)


def _chunks(path: Path):
    return chunk_file(path.name, path.read_text(encoding="utf-8"))


def _describe(path: Path) -> list[str]:
    result = _chunks(path)
    lines = [f"== {path.name} ({result.language}, {result.parse_errors} parse errors)"]
    for c in result.chunks:
        header = f"  | {c.header.splitlines()[-1].strip()}" if c.header else ""
        symbol = f" {c.symbol}" if c.symbol else ""
        parent = f" (in {c.parent})" if c.parent else ""
        lines.append(f"chunk {c.start_line}-{c.end_line} {c.kind}{symbol}{parent}{header}")
    defs, refs = extract_file(path.name, result.chunks)
    for d in defs:
        parent = f" (in {d.parent})" if d.parent else ""
        lines.append(f"def {d.kind} {d.qualname}{parent} {d.start_line}-{d.end_line}")
    for r in sorted(refs, key=lambda r: (r.kind, r.line, r.name)):
        if r.kind == "import":
            alias = f" as {r.alias}" if r.alias and r.alias != r.name else ""
            lines.append(f"import {r.qualifier + '.' if r.qualifier else ''}{r.name}{alias}")
        elif r.kind in ("call", "base"):
            qualifier = f"{r.qualifier}." if r.qualifier else ""
            lines.append(f"{r.kind} {qualifier}{r.name} in {r.scope or '<top>'}")
    return lines


def test_every_language_has_a_fixture_and_a_grammar_that_loads_here():
    covered = {_chunks(p).language for p in SOURCES}
    assert set(LANGUAGES) - {"tsx"} <= covered, set(LANGUAGES) - covered
    for name in LANGUAGES:
        languages.query(name)           # compiles against the installed grammar, or raises
    assert grammar_failures() == {}


def test_chunks_and_graph_match_the_reviewed_golden_file():
    actual = [line for path in SOURCES for line in _describe(path)]
    if os.environ.get("NAV_UPDATE_GOLDEN"):
        GOLDEN.write_text("\n".join(actual) + "\n", encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8").splitlines()
    diff = "\n".join(difflib.unified_diff(expected, actual, "expected.txt", "now", lineterm="", n=2))
    assert actual == expected, "\n" + diff


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_nothing_in_a_file_is_dropped_and_no_chunk_passes_the_cap(path):
    text = path.read_text(encoding="utf-8")
    result = _chunks(path)
    assert result.parse_errors == 0 and result.fallback is None
    covered = {line for c in result.chunks for line in range(c.start_line, c.end_line + 1)}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            assert number in covered, f"{path.name}:{number} is in no chunk: {line!r}"
    for c in result.chunks:
        assert embed_chars(c.header, len(c.text)) <= CHUNK_CHAR_CAP
        assert c.text == "\n".join(text.splitlines()[c.start_line - 1:c.end_line])


def _by_symbol(name: str) -> dict:
    found: dict = {}
    for c in _chunks(FIXTURES / name).chunks:
        found.setdefault(c.symbol, []).append(c)
    return found


def test_a_definition_is_its_own_chunk_with_its_doc_comment_and_qualified_name():
    go = _by_symbol("router.go")
    (serve,) = go["Router.ServeHTTP"]
    assert serve.kind == "method" and serve.parent == "Router"
    assert serve.text.startswith("// ServeHTTP dispatches")
    assert go["MaxParams"][0].kind == "constant" and go["MaxParams"][0].text.startswith("// MaxParams")
    assert go["methodGet, methodPost"][0].kind == "constant"
    ts = _by_symbol("store.ts")
    assert ts["Store.get"][0].kind == "method" and ts["Store.get"][0].text.lstrip().startswith("/**")
    assert ts["DEFAULT_TTL_MS"][0].text.startswith("/** How long")
    assert ts["isExpired"][0].kind == "function"          # export const f = () => ...
    java = _by_symbol("Cache.java")
    assert [c.kind for c in java["Cache.put"]] == ["method"]
    assert java["Cache.EvictionListener"][0].parent == "Cache"
    js = _by_symbol("queue.js")
    assert js["Queue.done"][0].kind == "method"           # Queue.prototype.done = function ...
    assert js["createQueue"][0].kind == "function"        # exports.createQueue = function ...


def test_an_oversized_unit_is_cut_with_its_parents_header_carried():
    go = _by_symbol("router.go")["cleanPath"]
    assert len(go) == 2 and go[0].text.startswith("// cleanPath normalises")
    assert go[1].header == "func cleanPath(p string) string {"
    ts = _by_symbol("store.ts")
    assert all(c.header == "export class Store<V> extends EventEmitter {" for c in ts["Store.sweep"])
    # the class's closing brace travels with its last member instead of making a chunk of one `}`
    assert ts["Store.sweep"][-1].text.rstrip().endswith("}\n}") or ts["Store.sweep"][-1].text.endswith("}")
    assert not any(c.text.strip() == "}" for c in _chunks(FIXTURES / "store.ts").chunks)


def test_the_graph_knows_containment_calls_bases_and_imports():
    result = _chunks(FIXTURES / "value.rs")
    defs, refs = extract_file("value.rs", result.chunks)
    by_name = {d.qualname: d for d in defs}
    assert by_name["Value::parse"].kind == "method" and by_name["Value::parse"].parent == "Value"
    assert by_name["MAX_DEPTH"].kind == "constant"
    assert by_name["ToValue"].kind == "class"
    assert any(r.kind == "base" and r.name == "ToValue" for r in refs)
    assert any(r.kind == "call" and r.name == "depth" and r.scope == "check_depth" for r in refs)
    result = _chunks(FIXTURES / "store.ts")
    defs, refs = extract_file("store.ts", result.chunks)
    imports = {(r.name, r.qualifier) for r in refs if r.kind == "import"}
    assert ("Clock", "clock") in imports and ("EventEmitter", "events") in imports
    assert any(r.kind == "base" and r.name == "EventEmitter" and r.scope == "Store" for r in refs)


def test_detection_by_name_shebang_and_header_content():
    assert language_for("src/a.go") == "go" and language_for("A.TSX") == "tsx"
    assert language_for("lib/x.mjs") == "javascript" and language_for("Rakefile") == "ruby"
    assert language_for("include/x.h", "struct s { int a; };\n") == "c"
    assert language_for("include/x.h", "namespace a {\nclass B {\n public:\n};\n}\n") == "cpp"
    assert language_for("bin/run", "#!/usr/bin/env bash\necho hi\n") == "bash"
    assert language_for("bin/tool", "#!/usr/bin/node --harmony\n") == "javascript"
    assert language_for("bin/py", "#!/usr/bin/python3.12\n") == "python"
    assert language_for("README") is None and language_for("notes.txt", "#!/bin/nothing-we-know\n") is None
    result = chunk_file("bin/deploy", "#!/bin/sh\n# go\nrun() {\n  echo x\n}\n")
    assert result.language == "bash" and any(c.symbol == "run" for c in result.chunks)


def test_a_grammar_that_does_not_load_falls_back_to_windows_once(monkeypatch):
    broken = languages.LanguageSpec("go", "tree_sitter_not_installed_anywhere", suffixes=(".go",))
    monkeypatch.setitem(languages.LANGUAGES, "go", broken)
    monkeypatch.setattr(languages, "_failures", {})
    languages._language.cache_clear()
    languages.query.cache_clear()
    monkeypatch.setattr(languages._thread_state, "parsers", {}, raising=False)
    text = (FIXTURES / "router.go").read_text(encoding="utf-8")
    try:
        first = chunk_file("router.go", text)
        second = chunk_file("other.go", text)
        assert first.language == "go" and "tree_sitter_not_installed_anywhere" in first.fallback
        assert {c.kind for c in first.chunks} == {"text"} and second.fallback == first.fallback
        covered = {line for c in first.chunks for line in range(c.start_line, c.end_line + 1)}
        assert all(n in covered for n, line in enumerate(text.splitlines(), 1) if line.strip())
        assert list(grammar_failures()) == ["go"]
        assert extract_file("router.go", first.chunks) == ([], [])
    finally:
        languages._language.cache_clear()
        languages.query.cache_clear()
