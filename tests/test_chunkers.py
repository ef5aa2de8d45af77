"""Tests of the chunkers stage: Python units, size-cap splitting with headers, markdown, text, naive."""
from __future__ import annotations

import re
import sysconfig
from pathlib import Path

import pytest

from chunkers import ChunkResult, chunk_file
from chunkers.base import CHUNK_KINDS, CodeChunk
from chunkers.dispatch import CHUNK_CHAR_CAP, chunker_for
from chunkers.naive import naive_chunk_file
from chunkers.text import TEXT_OVERLAP_LINES, SourceLines

FIXTURES = Path(__file__).parent / "fixtures" / "chunkers"


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def chunk_fixture(name: str) -> ChunkResult:
    return chunk_file(name, load(name))


def line_of(text: str, needle: str) -> int:
    """1-based number of the first line containing `needle`."""
    for number, line in enumerate(text.split("\n"), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in fixture")


def by_symbol(chunks: list[CodeChunk], symbol: str) -> list[CodeChunk]:
    return [c for c in chunks if c.symbol == symbol]


def assert_well_formed(path: str, text: str, chunks: list[CodeChunk], *, disjoint: bool, capped: bool = True) -> None:
    """The invariants every chunker keeps, checked against the source itself."""
    lines = SourceLines(text)
    owners = [0] * len(lines)
    cut_rows: set[int] = set()       # rows longer than the cap, cut into several pieces (enforce_cap)
    for chunk in chunks:
        assert chunk.path == path and chunk.kind in CHUNK_KINDS
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk.location
        full = lines.span_text(chunk.start_line - 1, chunk.end_line - 1)
        if chunk.text != full:
            # only a piece of one line longer than the cap, verbatim
            assert chunk.start_line == chunk.end_line and chunk.text in full, chunk.location
            if chunk.start_line - 1 in cut_rows:
                continue
            cut_rows.add(chunk.start_line - 1)
        assert chunk.text.strip(), f"blank chunk {chunk.location}"
        # The cap holds for header + text, even for a single line longer than it (cut into pieces).
        # (The context line "path: symbol" that embed_text starts with is location metadata on top of the cap.)
        sized = len(chunk.embed_text) - len(chunk.context_line) - 1
        assert not capped or sized <= CHUNK_CHAR_CAP, (chunk.location, sized)
        for row in range(chunk.start_line - 1, chunk.end_line):
            owners[row] += 1
    uncovered = [row + 1 for row in range(len(lines)) if not lines.blank[row] and owners[row] == 0]
    assert not uncovered, f"{path}: lines {uncovered[:10]} in no chunk"
    if disjoint:
        doubled = [row + 1 for row, count in enumerate(owners) if count > 1]
        assert not doubled, f"{path}: lines {doubled[:10]} in several chunks"
    starts = [(c.start_line, c.end_line) for c in chunks]
    assert starts == sorted(starts)


# ---- Python: top-level units ---------------------------------------------------------------

def test_constants_get_one_chunk_each_with_their_leading_comments():
    text = load("settings.py")
    chunks = chunk_fixture("settings.py").chunks

    (max_steps,) = by_symbol(chunks, "MAX_STEPS")
    assert max_steps.kind == "constant"
    assert max_steps.start_line == line_of(text, "# How many pages")
    assert max_steps.end_line == line_of(text, "MAX_STEPS = 10")

    (timeout,) = by_symbol(chunks, "TIMEOUT_SECONDS")  # annotated assignment
    assert timeout.start_line == timeout.end_line == line_of(text, "TIMEOUT_SECONDS: float")

    (retry,) = by_symbol(chunks, "RETRY_ATTEMPTS, BACKOFF_BASE")  # tuple target
    assert retry.kind == "constant"
    assert retry.text.startswith("# Retry policy")

    (colors,) = by_symbol(chunks, "PRIMARY_COLOR, SECONDARY_COLOR")  # chained assignment
    assert colors.text == 'PRIMARY_COLOR = SECONDARY_COLOR = "#224488"'
    # one statement per constant chunk (the fixture's are one-liners): no grouping of neighbours
    constants = [c for c in chunks if c.kind == "constant"]
    assert len(constants) == 5
    for chunk in constants:
        assert sum(1 for line in chunk.text.split("\n") if not line.startswith("#")) == 1


def test_module_docstring_and_import_block_including_import_guard():
    text = load("settings.py")
    chunks = chunk_fixture("settings.py").chunks
    (doc,) = [c for c in chunks if c.kind == "module_doc"]
    assert doc.start_line == 1 and "Runtime settings" in doc.text  # the shebang line rides along
    (imports,) = [c for c in chunks if c.kind == "imports"]
    assert imports.start_line == line_of(text, "from __future__")
    assert imports.end_line == line_of(text, "tomllib = None")
    assert "import os" in imports.text and "except ImportError" in imports.text
    main_block = next(c for c in chunks if "__main__" in c.text)
    assert main_block.kind == "code"
    assert_well_formed("settings.py", text, chunks, disjoint=True)


def test_decorated_functions_keep_decorators_comments_and_nested_defs():
    text = load("decorated.py")
    chunks = chunk_fixture("decorated.py").chunks
    (fetch,) = by_symbol(chunks, "fetch")
    assert fetch.kind == "function"
    assert fetch.start_line == line_of(text, "# Fetching is flaky")
    assert "@retry(times=3)" in fetch.text and "@functools.lru_cache" in fetch.text
    (retry,) = by_symbol(chunks, "retry")
    assert "def inner" in retry.text and not by_symbol(chunks, "inner")  # closures stay inside
    (crawl,) = by_symbol(chunks, "crawl")
    assert crawl.kind == "function" and crawl.text.startswith("async def crawl")
    assert_well_formed("decorated.py", text, chunks, disjoint=True)


def test_small_class_with_docstring_and_nested_classes_is_one_chunk():
    text = load("decorated.py")
    chunks = chunk_fixture("decorated.py").chunks
    (page,) = by_symbol(chunks, "Page")
    assert page.kind == "class"
    assert page.start_line == line_of(text, "@dataclass(frozen=True)")
    assert '"""A fetched page' in page.text and "class Meta" in page.text and "class Storage" in page.text
    assert not [c for c in chunks if c.symbol and "Meta" in c.symbol]


def test_file_with_syntax_error_still_chunks_and_counts_error_nodes():
    text = load("broken.py")
    result = chunk_file("broken.py", text)
    assert result.parse_errors > 0
    assert_well_formed("broken.py", text, result.chunks, disjoint=True)
    (good,) = by_symbol(result.chunks, "good")  # units before the error are still recognised
    assert good.kind == "function" and good.text.startswith("def good")
    assert chunk_fixture("settings.py").parse_errors == 0


# ---- Python: splitting above the cap -------------------------------------------------------

def test_large_class_becomes_class_chunk_plus_method_chunks_with_class_header():
    text = load("big_class.py")
    assert len(text) > 4 * CHUNK_CHAR_CAP
    chunks = chunk_fixture("big_class.py").chunks
    assert_well_formed("big_class.py", text, chunks, disjoint=True)
    class_line = "class ResponseCache(OrderedDict):"

    own = by_symbol(chunks, "ResponseCache")
    assert all(c.kind == "class" for c in own)
    head = own[0]
    assert head.text.startswith(class_line) and head.header == ""
    assert "Least-recently-used" in head.text and "DEFAULT_TTL = 300" in head.text
    assert "def " not in head.text
    # the class attribute after the last method is a class chunk too, and knows its class
    (tail,) = [c for c in own if "SERIALIZATION_VERSION" in c.text]
    assert tail.header == class_line

    methods = [c for c in chunks if c.kind == "method" and c.parent == "ResponseCache"]
    names = {c.symbol for c in methods}
    assert {"ResponseCache.__init__", "ResponseCache.full", "ResponseCache.lookup",
            "ResponseCache.store", "ResponseCache._drop"} <= names
    assert all(c.header.startswith(class_line) for c in methods)
    (full,) = by_symbol(chunks, "ResponseCache.full")
    assert full.text.lstrip().startswith("@property")  # decorators stay with their def
    (lookup,) = by_symbol(chunks, "ResponseCache.lookup")
    assert lookup.text.lstrip().startswith("# Lookups move")  # leading comment stays too


def test_method_above_cap_splits_at_statements_with_class_and_signature_header():
    text = load("big_class.py")
    store = by_symbol(chunk_fixture("big_class.py").chunks, "ResponseCache.store")
    store_start, store_end = line_of(text, "def store("), line_of(text, "self.stats.revalidations += 1")
    assert len(store) >= 2
    assert store[0].start_line == store_start and store[-1].end_line == store_end
    assert store[0].header == "class ResponseCache(OrderedDict):"
    for piece in store[1:]:
        assert piece.header.split("\n") == [
            "class ResponseCache(OrderedDict):",
            "    def store(self, url: str, body: bytes, etag: str | None = None, now: float | None = None) -> None:",
        ]
        first_line = piece.text.split("\n")[0]
        # cut before a statement of the method body, never inside a nested block or expression
        assert re.match(r"^ {8}\S", first_line), first_line
    for before, after in zip(store, store[1:]):
        assert after.start_line > before.end_line


def test_nested_classes_inside_a_large_class():
    chunks = chunk_fixture("big_class.py").chunks
    (entry,) = by_symbol(chunks, "ResponseCache.Entry")  # small: one class chunk, methods inside
    assert entry.kind == "class" and entry.parent == "ResponseCache"
    assert "def __init__" in entry.text and entry.header == "class ResponseCache(OrderedDict):"
    # large nested class: its methods are chunks, headed by both class lines
    (reset,) = by_symbol(chunks, "ResponseCache.Stats.reset")
    assert reset.kind == "method" and reset.parent == "ResponseCache.Stats"
    assert reset.header == "class ResponseCache(OrderedDict):\n    class Stats:"
    (stats_own,) = by_symbol(chunks, "ResponseCache.Stats")
    assert stats_own.text.lstrip().startswith("class Stats:") and "def " not in stats_own.text


def test_huge_dict_constant_splits_at_entries_with_assignment_header():
    text = load("status_table.py")
    chunks = chunk_fixture("status_table.py").chunks
    assert_well_formed("status_table.py", text, chunks, disjoint=True)
    pieces = by_symbol(chunks, "STATUS_TABLE")
    assert len(pieces) >= 3 and all(p.kind == "constant" for p in pieces)
    assert pieces[0].text.startswith("# Every status code") and pieces[0].header == ""
    assert pieces[-1].text.endswith("}")
    for piece in pieces[1:]:
        assert piece.header == "STATUS_TABLE = {"
        assert re.match(r"^    \d{3}: \($", piece.text.split("\n")[0])  # an entry starts each piece


def test_single_line_longer_than_cap_is_cut_into_pieces_of_its_own():
    long_line = "    return " + repr("x" * (2 * CHUNK_CHAR_CAP))
    text = "def big():\n" + "    a = 1\n" * 3 + long_line + "\n    b = 2\n"
    chunks = chunk_file("big.py", text).chunks
    assert_well_formed("big.py", text, chunks, disjoint=True)
    pieces = [c for c in chunks if c.start_line == c.end_line == 5]
    assert len(pieces) == 3 and "".join(c.text for c in pieces) == long_line
    assert all(c.header == "def big():" for c in pieces)


# ---- line endings, empty files, dispatch ---------------------------------------------------

@pytest.mark.parametrize("name", ["settings.py", "guide.md", "changelog.txt"])
def test_crlf_and_missing_final_newline_give_the_same_chunks(name):
    text = load(name)
    key = lambda r: [(c.start_line, c.end_line, c.kind, c.symbol, c.header, c.text) for c in r.chunks]  # noqa: E731
    reference = key(chunk_file(name, text))
    assert key(chunk_file(name, text.replace("\n", "\r\n"))) == reference
    assert key(chunk_file(name, text.rstrip("\n"))) == reference


@pytest.mark.parametrize("name", ["a.py", "b.md", "c.txt", "d.pyi"])
@pytest.mark.parametrize("text", ["", "\n\n", "   \n\t\n", "\r\n"])
def test_empty_or_whitespace_file_has_no_chunks(name, text):
    assert chunk_file(name, text) == ChunkResult([], 0)


def test_dispatch_by_extension():
    assert chunker_for("pkg/mod.py") == chunker_for("pkg/stubs.pyi") == chunker_for("OLD.PY") == "python"
    assert chunker_for("docs/guide.md") == chunker_for("x.markdown") == "markdown"
    assert chunker_for("Makefile") == chunker_for("setup.cfg") == chunker_for("py/README") == "text"
    assert {c.kind for c in chunk_file("stubs.pyi", "def f(x: int) -> str: ...\n").chunks} == {"function"}
    assert {c.kind for c in chunk_file("notes.py.txt", "def f():\n    pass\n").chunks} == {"text"}


# ---- markdown ------------------------------------------------------------------------------

def test_markdown_sections_carry_heading_paths():
    text = load("guide.md")
    chunks = chunk_file("guide.md", text).chunks
    assert_well_formed("guide.md", text, chunks, disjoint=True)
    assert all(c.kind == "section" for c in chunks)
    headers = {c.symbol: c.header for c in chunks}
    assert headers["Install"] == "# Guide > ## Install"
    assert headers["From source"] == "# Guide > ## Install > ### From source"
    assert headers["Configure"] == "# Guide > ## Configure"
    assert headers["Troubleshooting"] == "# Guide > ## Troubleshooting"  # setext heading
    assert headers["Guide"] == ""  # a top-level path would only repeat the chunk's first line
    # '# this is a shell comment' is inside a code fence; front matter is not a setext heading
    assert "this is a shell comment" in by_symbol(chunks, "Install")[0].text
    (preamble,) = by_symbol(chunks, None)
    assert preamble.start_line == 1 and "Short intro" in preamble.text


def test_markdown_section_above_cap_splits_at_paragraphs_with_path_header():
    text = load("guide.md")
    pieces = by_symbol(chunk_file("guide.md", text).chunks, "Limits")  # "## Limits ##": closing hashes dropped
    assert len(pieces) >= 2
    assert all(p.header == "# Reference > ## Limits" for p in pieces)
    lines = text.split("\n")
    for piece in pieces[1:]:
        assert lines[piece.start_line - 2] == ""  # starts a paragraph
    assert pieces[-1].end_line == len(text.rstrip("\n").split("\n"))


# ---- plain text ----------------------------------------------------------------------------

def test_text_windows_overlap_and_fit_the_cap():
    text = load("changelog.txt")
    chunks = chunk_file("changelog.txt", text).chunks
    assert_well_formed("changelog.txt", text, chunks, disjoint=False)
    assert len(chunks) >= 3 and all(c.kind == "text" and c.header == "" for c in chunks)
    for before, after in zip(chunks, chunks[1:]):
        overlap = before.end_line - after.start_line + 1
        assert 1 <= overlap <= TEXT_OVERLAP_LINES
        assert after.end_line > before.end_line


def test_text_windows_progress_past_a_line_longer_than_the_cap():
    text = "short\n" * 20 + "y" * (3 * CHUNK_CHAR_CAP) + "\n" + "tail\n" * 5
    chunks = chunk_file("data.csv", text).chunks
    assert_well_formed("data.csv", text, chunks, disjoint=False)
    assert sum(1 for c in chunks if c.text.startswith("yyy")) == 1
    ends = [c.end_line for c in chunks]
    assert ends == sorted(set(ends))  # no window is a sub-window of the previous one


# ---- the naive baseline --------------------------------------------------------------------

@pytest.mark.parametrize("name", ["decorated.py", "big_class.py", "broken.py"])
def test_naive_chunker_splits_exactly_at_column_zero_def_and_class(name):
    text = load(name)
    chunks = naive_chunk_file(name, text)
    assert_well_formed(name, text, chunks, disjoint=True, capped=False)  # the baseline has no cap
    split_lines = [n for n, line in enumerate(text.split("\n"), 1) if line.startswith(("def ", "class "))]
    assert [c.start_line for c in chunks if c.start_line != 1] == [n for n in split_lines if n != 1]
    assert all(c.kind == "code" and c.header == "" and c.symbol is None for c in chunks)
    # nothing splits inside: no chunk holds a column-0 def/class line except as its first line
    for chunk in chunks:
        assert not any(line.startswith(("def ", "class ")) for line in chunk.text.split("\n")[1:])


# ---- property test over real sources -------------------------------------------------------

def real_python_files(count: int) -> list[Path]:
    """`count` installed .py files of useful size, spread over site-packages (deterministic order)."""
    site = Path(sysconfig.get_paths()["purelib"])
    candidates = sorted(p for p in site.glob("*/**/*.py") if 3_000 <= p.stat().st_size <= 60_000)
    if len(candidates) < count:
        pytest.skip("not enough installed sources")
    step = len(candidates) // count
    return candidates[::step][:count]


def test_real_files_are_fully_covered_by_disjoint_chunks_within_the_cap():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = real_python_files(20) + [stdlib / "argparse.py", stdlib / "dataclasses.py"]
    kinds: set[str] = set()
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace")
        path = file.name
        chunks = chunk_file(path, text).chunks
        assert_well_formed(path, text, chunks, disjoint=True)
        for chunk in chunks:
            kinds.add(chunk.kind)
            if chunk.kind == "method":  # a method always knows its class
                assert chunk.parent and chunk.symbol.startswith(chunk.parent + ".")
                assert chunk.header.lstrip().startswith("class ")
            if chunk.header:
                assert chunk.header.split("\n")[0] not in ("", chunk.text.split("\n")[0])
    assert {"function", "class", "method", "imports", "constant"} <= kinds


@pytest.mark.parametrize("name", ["data.py", "notes.md", "dump.txt"])
def test_file_ending_in_a_line_longer_than_the_cap(name):
    long_line = "BLOB = " + repr("z" * (2 * CHUNK_CHAR_CAP))
    text = "intro = 1\n\n" + long_line  # the oversized line is the last row of the file and of its unit
    chunks = chunk_file(name, text).chunks
    assert_well_formed(name, text, chunks, disjoint=False)
    assert "".join(c.text for c in chunks if c.start_line == c.end_line == 3) == long_line
