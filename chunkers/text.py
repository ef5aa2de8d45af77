"""Line machinery shared by every chunker, and the plain-text chunker (overlapping line windows).

All chunkers work on `SourceLines` (0-based rows internally, 1-based lines in CodeChunks) and
cut oversized spans with `pack_rows`, so the one size cap below governs every chunk nav makes.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from chunkers.base import CodeChunk

# The size cap, in characters of header + "\n" + text. (embed_text also starts with a short context line,
# "path: symbol", typically 30-50 characters: measured in the eval, E1 in rag-eval/README.md, it helped
# more than the few tokens it pushes past the model's window cost.)
# all-MiniLM-L6-v2 reads at most 256 WordPiece tokens (incl. [CLS]/[SEP]) and drops the rest.
# Measured with the model's own tokenizer.json on 400 random non-test .py files of the CPython 3.11
# stdlib + this venv's site-packages (4.49 M chars -> 1.34 M tokens: 3.36 chars/token overall;
# full windows of N chars cut at line boundaries):
#     N=600: p50 165 tok, p90 217, 96.9% fit in 256     N=700: p50 193, p90 251, 91.5% fit
#     N=800: p50 222, p90 287, 77.4% fit                N=1000: p50 279, p90 358, 32.2% fit
# 700 chars keeps >90% of even full-size chunks (header included) inside the model's window while
# leaving chunks large enough to hold a whole typical function; most chunks are well below the cap.
CHUNK_CHAR_CAP = 700

# A header is context, not content: each component (class line, signature, heading) is cut to this.
HEADER_COMPONENT_MAX_CHARS = 120
HEADER_ELLIPSIS = " ..."

# When cutting an oversized span, a cut at a shallower syntax level wins, but only among cuts that
# keep the piece at least this full; otherwise a good boundary could leave a one-line sliver.
MIN_PIECE_FILL = 0.5

# Plain-text windows: as large as the cap allows; consecutive windows share up to this many lines
# (and never more than this share of the cap) so a sentence cut at a window edge is whole in one of them.
TEXT_OVERLAP_LINES = 3
TEXT_OVERLAP_MAX_FILL = 0.25

UNRANKED_ROW = 1 << 30  # depth of a row that starts no syntax unit: cut there only as a last resort


class SourceLines:
    """A file's lines with O(1) span sizes. Line endings are normalised (\\r\\n and \\r -> \\n)."""

    def __init__(self, text: str):
        normalised = text.replace("\r\n", "\n").replace("\r", "\n")
        rows = normalised.split("\n")
        if rows and rows[-1] == "":  # a trailing newline ends the last line, it does not start one
            rows.pop()
        self.normalised = normalised
        self.rows = rows
        self.blank = [not row.strip() for row in rows]
        self._prefix = [0]
        for row in rows:
            self._prefix.append(self._prefix[-1] + len(row) + 1)

    def __len__(self) -> int:
        return len(self.rows)

    def span_chars(self, first: int, last: int) -> int:
        """Characters of rows first..last joined with newlines."""
        return self._prefix[last + 1] - self._prefix[first] - 1

    def span_text(self, first: int, last: int) -> str:
        return "\n".join(self.rows[first:last + 1])

    def next_nonblank(self, row: int, limit: int) -> int | None:
        while row <= limit and self.blank[row]:
            row += 1
        return row if row <= limit else None

    def trim_end(self, first: int, last: int) -> int:
        while last > first and self.blank[last]:
            last -= 1
        return last

    def is_blank_span(self, first: int, last: int) -> bool:
        return all(self.blank[first:last + 1])


def shorten_component(text: str) -> str:
    """One header component (e.g. a multi-line signature) on one line, cut to HEADER_COMPONENT_MAX_CHARS.

    Continuation lines are joined with their indentation dropped (`def f(self,\n        x):` ->
    `def f(self, x):`); the first line keeps its indentation, which shows the nesting.
    """
    lines = text.split("\n")
    joined = lines[0].rstrip()
    for line in lines[1:]:
        part = line.strip()
        if not part:
            continue
        glue = "" if joined.endswith(("(", "[", "{")) or part.startswith((")", "]", "}")) else " "
        joined += glue + part
    if len(joined) <= HEADER_COMPONENT_MAX_CHARS:
        return joined
    keep = HEADER_COMPONENT_MAX_CHARS - len(HEADER_ELLIPSIS)
    return joined[:keep].rstrip() + HEADER_ELLIPSIS


def join_header(*components: str) -> str:
    return "\n".join(c for c in components if c)


def embed_chars(header: str, body_chars: int) -> int:
    return len(header) + 1 + body_chars if header else body_chars


@dataclass(frozen=True)
class Piece:
    first: int   # 0-based row, inclusive
    last: int    # 0-based row, inclusive
    header: str


def pack_rows(
    lines: SourceLines,
    first: int,
    last: int,
    header_for: Callable[[int], str],
    row_depth: Mapping[int, int] | None = None,
    cap: int = CHUNK_CHAR_CAP,
) -> list[Piece]:
    """Cut rows first..last into pieces whose header + text fit in `cap` characters.

    `header_for(row)` gives the header of a piece starting at `row`. `row_depth[row]` ranks a cut
    just before `row`: lower is a better boundary (a statement of the body beats a line inside an
    expression); rows missing from it are cut only when nothing better fits (plain line windows).
    A single row longer than the cap becomes a piece of its own here; chunk_file then cuts it (enforce_cap).
    Blank rows at piece edges are dropped; a span of only blank rows yields no piece.
    """
    depth = row_depth or {}
    pieces: list[Piece] = []
    row = lines.next_nonblank(first, last)
    while row is not None:
        header = header_for(row)
        budget = cap - embed_chars(header, 0)
        if row == last or lines.span_chars(row, last) <= budget:
            pieces.append(Piece(row, lines.trim_end(row, last), header))
            break
        # the longest run row..fit_end that fits (at least the row itself)
        fit_end = row
        while fit_end + 1 <= last and lines.span_chars(row, fit_end + 1) <= budget:
            fit_end += 1
        best_cut = fit_end + 1  # next piece starts here; default: a plain line window
        best_rank: tuple[int, int] | None = None
        min_chars = MIN_PIECE_FILL * budget
        for cut in range(row + 1, fit_end + 2):
            if lines.blank[cut] or lines.span_chars(row, cut - 1) < min_chars:
                continue
            rank = (depth.get(cut, UNRANKED_ROW), -cut)  # shallowest, then the largest piece
            if best_rank is None or rank < best_rank:
                best_rank, best_cut = rank, cut
        pieces.append(Piece(row, lines.trim_end(row, best_cut - 1), header))
        row = lines.next_nonblank(best_cut, last)
    return pieces


def make_chunk(path: str, lines: SourceLines, first: int, last: int, kind: str, *,
               symbol: str | None = None, parent: str | None = None, header: str = "") -> CodeChunk:
    return CodeChunk(path=path, start_line=first + 1, end_line=last + 1, kind=kind,
                     text=lines.span_text(first, last), symbol=symbol, parent=parent, header=header)


def chunk_text(path: str, text: str, cap: int = CHUNK_CHAR_CAP) -> list[CodeChunk]:
    """Overlapping line windows of at most `cap` characters (kind "text")."""
    lines = SourceLines(text)
    chunks: list[CodeChunk] = []
    row = lines.next_nonblank(0, len(lines) - 1) if len(lines) else None
    max_overlap_chars = TEXT_OVERLAP_MAX_FILL * cap
    while row is not None:
        end = row
        while end + 1 < len(lines) and lines.span_chars(row, end + 1) <= cap:
            end += 1
        last = lines.trim_end(row, end)
        chunks.append(make_chunk(path, lines, row, last, "text"))
        if end + 1 >= len(lines):
            break
        # step back up to TEXT_OVERLAP_LINES rows, but always move forward by at least one row
        next_row = end + 1
        while (next_row - 1 > row and end + 1 - (next_row - 1) <= TEXT_OVERLAP_LINES
               and lines.span_chars(next_row - 1, end) <= max_overlap_chars
               and lines.span_chars(next_row - 1, end + 1) <= cap):  # the next window must reach past this one
            next_row -= 1
        row = lines.next_nonblank(next_row, len(lines) - 1)
    return chunks


def enforce_cap(chunks: list[CodeChunk], cap: int = CHUNK_CHAR_CAP) -> list[CodeChunk]:
    """The hard cap: every chunk's header + text fits in `cap` characters. A chunk over it (a minified
    one-line bundle, a notebook's base64 output line, a huge literal: rows the chunkers never split) is cut at
    line ends where it can and inside a line where it must; the pieces keep the chunk's kind, symbol and
    header, and a piece cut from inside one line has that line as its start and end. Identical pieces of one
    file (a line of 5000 '=') are kept once."""
    out: list[CodeChunk] = []
    seen: set[str] = set()
    for chunk in chunks:
        if embed_chars(chunk.header, len(chunk.text)) <= cap:
            if chunk.id not in seen:
                seen.add(chunk.id)
                out.append(chunk)
            continue
        budget = max(cap - embed_chars(chunk.header, 0), cap // 2)
        for line_no, text in _cut(chunk.text, chunk.start_line, budget):
            first, last = line_no
            if not text.strip():
                continue
            piece = CodeChunk(path=chunk.path, start_line=first, end_line=last, kind=chunk.kind, text=text,
                              symbol=chunk.symbol, parent=chunk.parent, header=chunk.header)
            if piece.id not in seen:
                seen.add(piece.id)
                out.append(piece)
    return out


def _cut(text: str, start_line: int, budget: int):
    """((first line, last line), text) pieces of at most `budget` characters: whole lines packed greedily,
    a line longer than the budget cut into windows of it."""
    lines = text.split("\n")
    group: list[str] = []
    group_first = start_line
    size = 0
    for offset, line in enumerate(lines):
        number = start_line + offset
        if len(line) > budget:
            if group:
                yield (group_first, number - 1), "\n".join(group)
                group, size = [], 0
            for at in range(0, len(line), budget):
                yield (number, number), line[at:at + budget]
            continue
        extra = len(line) + (1 if group else 0)
        if group and size + extra > budget:
            yield (group_first, number - 1), "\n".join(group)
            group, size, extra = [], 0, len(line)
        if not group:
            group_first = number
        group.append(line)
        size += extra
    if group:
        yield (group_first, start_line + len(lines) - 1), "\n".join(group)
