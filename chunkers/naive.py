"""The evaluation baseline: cut a file only at column-0 `def ` / `class ` lines.

No syntax tree, no size cap, no headers, kind "code" for everything. The eval harness compares
the real chunkers against this, so it must stay naive: decorators and comments above a def end up
in the previous chunk, and a huge class is one chunk.
"""
from __future__ import annotations

from chunkers.base import CodeChunk
from chunkers.text import SourceLines, make_chunk

SPLIT_PREFIXES = ("def ", "class ")


def naive_chunk_file(path: str, text: str) -> list[CodeChunk]:
    lines = SourceLines(text)
    starts = [0] + [row for row, line in enumerate(lines.rows) if row > 0 and line.startswith(SPLIT_PREFIXES)]
    chunks: list[CodeChunk] = []
    for index, first in enumerate(starts):
        last = starts[index + 1] - 1 if index + 1 < len(starts) else len(lines) - 1
        if last < first or lines.is_blank_span(first, last):
            continue
        chunks.append(make_chunk(path, lines, first, lines.trim_end(first, last), "code"))
    return chunks
