"""Jupyter notebooks (.ipynb): chunked cell by cell, outputs dropped.

A notebook is JSON; chunking it as text would index its outputs (base64 images, long tables: a 600 KB
notebook is mostly output) and the JSON quoting of its code. Here each cell's source is decoded and chunked
by the chunker of its kind (code cells as Python, markdown cells as Markdown, raw cells as text), and each
chunk points at the rows of the .ipynb file that hold those source lines, so a location still opens the right
place of the file. A chunk's text is the decoded cell source, not the JSON rows. Outputs are never indexed.
A file that is not a notebook (not JSON, no cell list) returns None and is chunked as text.
"""
from __future__ import annotations

import json

from chunkers.base import CodeChunk

SOURCE_KEY = '"source":'


def chunk_notebook(path: str, text: str) -> tuple[list[CodeChunk], int] | None:
    """(chunks, parse errors of the code cells), or None when `text` is not a notebook."""
    try:
        notebook = json.loads(text)
    except ValueError:
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    from chunkers.markdown import chunk_markdown
    from chunkers.python import chunk_python
    from chunkers.text import chunk_text
    rows = _source_rows(text, cells)
    chunks: list[CodeChunk] = []
    errors = 0
    for cell, cell_rows in zip(cells, rows):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if not source.strip():
            continue
        kind = cell.get("cell_type")
        if kind == "code":
            pieces, cell_errors = chunk_python(path, source)
            errors += cell_errors
        elif kind == "markdown":
            pieces = chunk_markdown(path, source)
        else:
            pieces = chunk_text(path, source)
        for piece in pieces:
            chunks.append(CodeChunk(path=path, start_line=_row(cell_rows, piece.start_line),
                                    end_line=_row(cell_rows, piece.end_line), kind=piece.kind, text=piece.text,
                                    symbol=piece.symbol, parent=piece.parent, header=piece.header))
    return chunks, errors


def _source_rows(text: str, cells: list) -> list[list[int]]:
    """For each cell, the 1-based file row of each of its source lines. nbformat writes a source list one
    string per row after a `"source": [` row; a one-string source sits on the `"source":` row itself. When the
    file does not look like that (hand-written JSON), every line maps to row 1."""
    lines = text.split("\n")
    source_rows = [i for i, line in enumerate(lines) if line.lstrip().startswith(SOURCE_KEY)]
    if len(source_rows) != len(cells):
        return [[1] for _ in cells]
    out: list[list[int]] = []
    for row, cell in zip(source_rows, cells):
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        count = len(source) if isinstance(source, list) else 1
        if lines[row].rstrip().endswith("[") and count:
            out.append([row + 2 + i for i in range(count)])       # the strings follow, one per row
        else:
            out.append([row + 1])
    return out


def _row(cell_rows: list[int], line: int) -> int:
    """The file row of source line `line` (1-based) of a cell; a source string holding several lines (or a
    compact file) maps to its last known row."""
    return cell_rows[min(line, len(cell_rows)) - 1]
