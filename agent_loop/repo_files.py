"""read_file and list_files: repository-relative access that cannot leave the repository root.

A path is resolved against the root with symlinks followed and must still lie inside the root,
so `..`, absolute paths and symlinks pointing out are all refused the same way. Output is capped
so one call cannot flood the model's context.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

MAX_READ_LINES = 400          # lines returned by one read_file call
MAX_READ_CHARS = 24_000       # characters returned by one read_file call
MAX_LINE_CHARS = 2_000        # a minified line is cut, not returned whole
BINARY_SNIFF_BYTES = 8192
MAX_LIST_ENTRIES = 500
DEFAULT_LIST_DEPTH = 2
MAX_LIST_DEPTH = 8
# Directories list_files does not descend into: tool state, caches and dependencies, not the code.
SKIPPED_DIRECTORIES = frozenset({
    ".git", ".hg", ".svn", ".nav", "__pycache__", "node_modules", ".venv", "venv",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", "dist", "build", ".eggs",
})


class RepoAccessError(Exception):
    """A read_file/list_files request that cannot be served; the message goes back to the model."""


def resolve_inside(repo_root: Path, relative: str) -> Path:
    """The real path of `relative` under `repo_root`, or RepoAccessError if it leaves the root."""
    if not isinstance(relative, str) or not relative.strip():
        raise RepoAccessError("path must be a non-empty string, relative to the repository root")
    if "\0" in relative:
        raise RepoAccessError("path contains a NUL byte")
    if os.path.isabs(relative) or relative.startswith("~"):
        raise RepoAccessError(f"{relative!r} is absolute or home-relative, so outside the repository; "
                              "give a path relative to the repository root")
    root = repo_root.resolve()
    # Containment is decided before existence, so a refusal never tells whether an outside path exists.
    if not Path(os.path.normpath(root / relative)).is_relative_to(root):
        raise RepoAccessError(f"{relative!r} is outside the repository root; refused")
    try:
        resolved = (root / relative).resolve(strict=False)
    except (OSError, RuntimeError) as err:   # RuntimeError: a symlink loop
        raise RepoAccessError(f"{relative!r} cannot be resolved: {err}") from err
    if not resolved.is_relative_to(root):
        raise RepoAccessError(f"{relative!r} leads outside the repository root (through a symlink); refused")
    if not resolved.exists():
        raise RepoAccessError(f"{relative!r} does not exist in the repository")
    return resolved


def relative_name(repo_root: Path, path: Path) -> str:
    return path.relative_to(repo_root.resolve()).as_posix() or "."


@dataclass(frozen=True)
class FileExcerpt:
    path: str           # repository-relative, '/'-separated (the resolved file's name)
    start_line: int
    end_line: int       # last line returned (0 when the file is empty)
    total_lines: int
    truncated: bool
    text: str

    def render(self) -> str:
        if self.total_lines == 0:
            return f"{self.path}: empty file"
        header = f"{self.path} lines {self.start_line}-{self.end_line} of {self.total_lines}"
        body = self.text
        if self.truncated:
            body += (f"\n[cut at line {self.end_line} (limit {MAX_READ_LINES} lines / {MAX_READ_CHARS} characters); "
                     f"call read_file again with start_line={self.end_line + 1}]")
        return f"{header}\n{body}"


def refuse_secret_file(repo_root: Path, path: Path, allow_secrets: bool) -> None:
    """A secret-shaped file (navigator.index.secrets: .env, private keys, credential files) is never served."""
    from navigator.index.secrets import ALLOW_ENV, is_secret_file
    name = relative_name(repo_root, path)
    if not allow_secrets and is_secret_file(name):
        raise RepoAccessError(f"{name!r} is a secret-shaped file (keys, credentials, .env); nav does not read it "
                              f"out (the user can allow it with --allow-secrets or {ALLOW_ENV}=1)")


def read_file(repo_root: Path, relative: str, start_line: int | None = None,
              end_line: int | None = None, *, allow_secrets: bool = False) -> FileExcerpt:
    """Numbered lines of one file, with secret values redacted (navigator.index.secrets) unless allowed."""
    from navigator.index.secrets import LineRedactor
    path = resolve_inside(repo_root, relative)
    if not path.is_file():
        raise RepoAccessError(f"{relative!r} is not a regular file (use list_files for directories)")
    refuse_secret_file(repo_root, path, allow_secrets)
    redactor = None if allow_secrets else LineRedactor(relative_name(repo_root, path))
    first = 1 if start_line is None else start_line
    if first < 1:
        raise RepoAccessError("start_line must be 1 or more")
    if end_line is not None and end_line < first:
        raise RepoAccessError(f"end_line {end_line} is before start_line {first}")
    with path.open("rb") as handle:
        if b"\0" in handle.read(BINARY_SNIFF_BYTES):
            raise RepoAccessError(f"{relative!r} looks binary (it contains NUL bytes); not shown")
    last_wanted = first + MAX_READ_LINES - 1 if end_line is None else min(end_line, first + MAX_READ_LINES - 1)
    numbered: list[str] = []
    used_chars = 0
    last_returned = first - 1
    cut_by_size = False
    total = 0
    # Streamed line by line: a large file costs only the lines asked for, never a full read into memory.
    with path.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
        for total, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if redactor is not None:
                line = redactor(line)    # every line, so a key block that started above is known
            if total < first or total > last_wanted or cut_by_size:
                continue
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [line cut]"
            entry = f"{total:>6}| {line}"
            if used_chars + len(entry) + 1 > MAX_READ_CHARS and numbered:
                cut_by_size = True
                continue
            numbered.append(entry)
            used_chars += len(entry) + 1
            last_returned = total
    if total and first > total:
        raise RepoAccessError(f"start_line {first} is past the end of {relative!r} ({total} lines)")
    wanted_end = total if end_line is None else min(end_line, total)
    return FileExcerpt(
        path=relative_name(repo_root, path),
        start_line=first,
        end_line=last_returned,
        total_lines=total,
        truncated=last_returned < wanted_end,
        text="\n".join(numbered),
    )


@dataclass(frozen=True)
class Listing:
    root: str
    entries: list[str]
    truncated: bool

    def render(self) -> str:
        if not self.entries:
            return f"{self.root}: no matching entries"
        text = "\n".join(self.entries)
        if self.truncated:
            text += f"\n[listing cut at {MAX_LIST_ENTRIES} entries; list a subdirectory or pass a pattern]"
        return text


def list_files(repo_root: Path, relative: str = ".", *, max_depth: int = DEFAULT_LIST_DEPTH,
               pattern: str | None = None) -> Listing:
    """Entries under a directory, repository-relative, directories ending in '/'. Symlinked
    directories are listed but never entered, so the walk cannot leave the root."""
    directory = resolve_inside(repo_root, relative)
    if not directory.is_dir():
        raise RepoAccessError(f"{relative!r} is not a directory (use read_file for files)")
    if not 1 <= max_depth <= MAX_LIST_DEPTH:
        raise RepoAccessError(f"max_depth must be between 1 and {MAX_LIST_DEPTH}")
    root = repo_root.resolve()
    entries: list[str] = []
    truncated = False
    base_depth = len(directory.relative_to(root).parts)
    for current, dirnames, filenames in os.walk(directory, followlinks=False):
        current_path = Path(current)
        depth = len(current_path.relative_to(root).parts) - base_depth + 1
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRECTORIES)
        names = [(d, True) for d in dirnames] + [(f, False) for f in sorted(filenames)]
        for name, is_dir in names:
            rel = (current_path / name).relative_to(root).as_posix()
            if pattern and not (fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern)):
                continue
            entries.append(rel + "/" if is_dir else rel)
        if depth >= max_depth:
            dirnames[:] = []
        if len(entries) > MAX_LIST_ENTRIES:
            truncated = True
            break
    entries.sort()
    return Listing(root=relative_name(repo_root, directory), entries=list(islice(entries, MAX_LIST_ENTRIES)),
                   truncated=truncated)
