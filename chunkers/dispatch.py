"""The one entry point of the chunkers stage: `chunk_file(path, text)`, dispatched by file name and content."""
from __future__ import annotations

from dataclasses import dataclass

from chunkers.base import CodeChunk
from chunkers.languages import LANGUAGES, PYTHON, GrammarUnavailable, language_for
from chunkers.markdown import chunk_markdown
from chunkers.notebook import chunk_notebook
from chunkers.python import chunk_python
from chunkers.syntax import chunk_syntax
from chunkers.text import CHUNK_CHAR_CAP, chunk_text, enforce_cap

__all__ = ["CHUNK_CHAR_CAP", "ChunkResult", "chunk_file", "chunker_for"]

MARKDOWN_SUFFIXES = (".md", ".markdown")
NOTEBOOK_SUFFIXES = (".ipynb",)


@dataclass
class ChunkResult:
    chunks: list[CodeChunk]
    parse_errors: int  # tree-sitter ERROR/MISSING nodes the parser recovered from; 0 if none or not parsed
    language: str | None = None   # the syntax the file was read as ("python", "go", ...); None for prose and data
    fallback: str | None = None   # why a file of that language was cut into line windows instead


def chunker_for(path: str, text: str | None = None) -> str:
    """Which chunker handles `path`: "python", "markdown", "notebook", a language of chunkers.languages
    ("go", "typescript", ...) or "text". The file name decides, case-insensitive; without a known suffix a
    shebang does (`text` given), and a `.h` is C or C++ by its content."""
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(MARKDOWN_SUFFIXES):
        return "markdown"
    if name.endswith(NOTEBOOK_SUFFIXES):
        return "notebook"
    return language_for(path, text) or "text"


def chunk_file(path: str, text: str) -> ChunkResult:
    """Chunks of one file. `path` is repo-relative and '/'-separated; `text` is the decoded content.

    Never raises on malformed source: tree-sitter recovers, and the error count is reported. A language whose
    grammar cannot be loaded is cut into line windows, and the result says why. An empty or whitespace-only
    file has no chunks.
    """
    if not text.strip():
        return ChunkResult([], 0)
    kind = chunker_for(path, text)
    errors = 0
    language = kind if kind == PYTHON or kind in LANGUAGES else None
    fallback = None
    if kind == PYTHON:
        chunks, errors = chunk_python(path, text)
    elif kind in LANGUAGES:
        try:
            chunks, errors = chunk_syntax(path, text, kind)
        except GrammarUnavailable as exc:
            chunks, fallback = chunk_text(path, text), str(exc)
    elif kind == "markdown":
        chunks = chunk_markdown(path, text)
    elif kind == "notebook" and (notebook := chunk_notebook(path, text)) is not None:
        chunks, errors = notebook      # cells only: outputs are not indexed
    else:
        chunks = chunk_text(path, text)
    # No chunk exceeds the cap, whatever the file: one-line minified bundles and notebook outputs included.
    return ChunkResult(enforce_cap(chunks), errors, language, fallback)
