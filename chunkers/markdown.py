"""Markdown chunker: one chunk per heading section, headed by the heading path.

A section runs from its heading to the next heading of any level, so a parent's intro text and
each subsection are separate chunks; the header ("# Guide > ## Install") keeps the path. Text
before the first heading is a section without a symbol. A section above CHUNK_CHAR_CAP is cut
at paragraph boundaries (line windows as a last resort), every piece carrying the path.
Headings inside fenced code blocks and YAML front matter are not headings.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from chunkers.base import CodeChunk
from chunkers.text import (
    CHUNK_CHAR_CAP,
    SourceLines,
    make_chunk,
    pack_rows,
    shorten_component,
)

ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
ATX_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
FRONT_MATTER_DELIMITER = "---"
# A line that can not be a setext heading's text: list items, quotes, tables, indented code.
NOT_SETEXT_TEXT = re.compile(r"^(?: {0,3}(?:[-*+>|]|\d+[.)])(?:\s|$)| {4,}|\t)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
PATH_SEPARATOR = " > "

PARAGRAPH_DEPTH = 1   # cut before a paragraph or a code fence first
LIST_ITEM_DEPTH = 2   # then before a list item or a blank-separated line inside code


@dataclass(frozen=True)
class _Heading:
    row: int
    level: int
    title: str
    last_row: int  # the underline row of a setext heading, else == row


def _front_matter_end(lines: SourceLines) -> int:
    """Last row of YAML front matter (`---` ... `---` at the very top), or -1."""
    if not len(lines) or lines.rows[0].strip() != FRONT_MATTER_DELIMITER:
        return -1
    for row in range(1, len(lines)):
        if lines.rows[row].strip() in (FRONT_MATTER_DELIMITER, "..."):
            return row
    return -1


def _scan(lines: SourceLines) -> tuple[list[_Heading], dict[int, int]]:
    """Headings outside code fences, and cut preferences (row -> depth) for oversized sections."""
    headings: list[_Heading] = []
    depths: dict[int, int] = {}
    fence: str | None = None
    row = _front_matter_end(lines) + 1
    while row < len(lines):
        line = lines.rows[row]
        after_blank = row == 0 or lines.blank[row - 1]
        fence_match = FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence) \
                    and not line.strip()[len(fence_match.group(1)):].strip():
                fence = None
            elif after_blank and not lines.blank[row]:
                depths[row] = LIST_ITEM_DEPTH
            row += 1
            continue
        if fence_match:
            fence = fence_match.group(1)
            depths[row] = PARAGRAPH_DEPTH
            row += 1
            continue
        atx = ATX_HEADING.match(line)
        if atx:
            title = ATX_CLOSING_HASHES.sub("", atx.group(2)).strip()
            headings.append(_Heading(row, len(atx.group(1)), title, row))
            row += 1
            continue
        if (not lines.blank[row] and after_blank and row + 1 < len(lines)
                and SETEXT_UNDERLINE.match(lines.rows[row + 1]) and not NOT_SETEXT_TEXT.match(line)):
            level = 1 if lines.rows[row + 1].strip()[0] == "=" else 2
            headings.append(_Heading(row, level, line.strip(), row + 1))
            row += 2
            continue
        if not lines.blank[row]:
            if after_blank:
                depths[row] = PARAGRAPH_DEPTH
            elif LIST_ITEM.match(line):
                depths[row] = LIST_ITEM_DEPTH
        row += 1
    return headings, depths


def chunk_markdown(path: str, text: str, cap: int = CHUNK_CHAR_CAP) -> list[CodeChunk]:
    lines = SourceLines(text)
    if all(lines.blank):
        return []
    headings, depths = _scan(lines)
    chunks: list[CodeChunk] = []

    def emit(first: int, last: int, title: str | None, path_header: str, heading_rows: tuple[int, int] | None,
             redundant: bool) -> None:
        def header_for(row: int) -> str:
            # The first piece already shows its own heading; a top-level path would only repeat it.
            if heading_rows is not None and row <= heading_rows[1] and redundant:
                return ""
            return path_header

        for piece in pack_rows(lines, first, last, header_for, depths, cap):
            chunks.append(make_chunk(path, lines, piece.first, piece.last, "section",
                                     symbol=title, header=piece.header))

    first_heading_row = headings[0].row if headings else len(lines)
    if first_heading_row > 0:
        emit(0, first_heading_row - 1, None, "", None, False)
    stack: list[tuple[int, str]] = []  # (level, "## Title") of the open ancestors
    for index, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, shorten_component("#" * heading.level + " " + heading.title)))
        section_end = headings[index + 1].row - 1 if index + 1 < len(headings) else len(lines) - 1
        path_header = PATH_SEPARATOR.join(marker for _level, marker in stack)
        emit(heading.row, section_end, heading.title or None, path_header,
             (heading.row, heading.last_row), redundant=len(stack) == 1)
    return chunks
