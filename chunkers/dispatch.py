"""The one entry point of the chunkers stage: `chunk_file(path, text)`, dispatched by extension."""
from __future__ import annotations

from dataclasses import dataclass

from chunkers.base import CodeChunk
from chunkers.markdown import chunk_markdown
from chunkers.notebook import chunk_notebook
from chunkers.python import chunk_python
from chunkers.text import CHUNK_CHAR_CAP, chunk_text, enforce_cap

__all__ = ["CHUNK_CHAR_CAP", "ChunkResult", "chunk_file", "chunker_for"]

PYTHON_SUFFIXES = (".py", ".pyi")
MARKDOWN_SUFFIXES = (".md", ".markdown")
NOTEBOOK_SUFFIXES = (".ipynb",)


@dataclass
class ChunkResult:
    chunks: list[CodeChunk]
    parse_errors: int  # tree-sitter ERROR/MISSING nodes the parser recovered from; 0 if none or not parsed


def chunker_for(path: str) -> str:
    """"python", "markdown", "notebook" or "text": which chunker handles `path` (by extension, case-insensitive)."""
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith(PYTHON_SUFFIXES):
        return "python"
    if name.endswith(MARKDOWN_SUFFIXES):
        return "markdown"
    if name.endswith(NOTEBOOK_SUFFIXES):
        return "notebook"
    return "text"


def chunk_file(path: str, text: str) -> ChunkResult:
    """Chunks of one file. `path` is repo-relative and '/'-separated; `text` is the decoded content.

    Never raises on malformed source: tree-sitter recovers, and the error count is reported.
    An empty or whitespace-only file has no chunks.
    """
    if not text.strip():
        return ChunkResult([], 0)
    kind = chunker_for(path)
    errors = 0
    if kind == "python":
        chunks, errors = chunk_python(path, text)
    elif kind == "markdown":
        chunks = chunk_markdown(path, text)
    elif kind == "notebook" and (notebook := chunk_notebook(path, text)) is not None:
        chunks, errors = notebook      # cells only: outputs are not indexed
    else:
        chunks = chunk_text(path, text)
    # No chunk exceeds the cap, whatever the file: one-line minified bundles and notebook outputs included.
    return ChunkResult(enforce_cap(chunks), errors)
