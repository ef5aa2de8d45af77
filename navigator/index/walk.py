"""Which files of a tree get indexed: .gitignore rules (via pathspec), a default skip list, --skip,
and per-file checks (symlinks, size, binary, readability, names that are not UTF-8, FIFOs / sockets /
devices as "special"). Every file passed over is counted by reason."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from navigator.core.config import Config

# Directories that are never source: VCS metadata, virtualenvs, dependency trees, build outputs, caches.
DEFAULT_SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", ".nav", ".venv", "venv", "node_modules", "__pycache__", "build", "dist",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs", ".idea", ".vscode",
    "site-packages", ".cache", ".ipynb_checkpoints",
})
# Files that are text but carry no meaning for a reader: lock files, minified bundles, source maps.
DEFAULT_SKIP_FILE_GLOBS = ("*.lock", "package-lock.json", "*.min.js", "*.min.css", "*.map", "*.svg", "*.pyc")
BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class SourceFile:
    path: str          # repo-relative, '/'-separated
    abs_path: str      # os.DirEntry.path as it came: a Path apiece cost 0.1 s of a no-op run at django's 5k files
    size: int
    mtime_ns: int


@dataclass
class WalkResult:
    files: list[SourceFile] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)          # reason -> count
    skipped_examples: dict[str, list[str]] = field(default_factory=dict)  # reason -> a few paths

    def skip(self, reason: str, path: str) -> None:
        self.skipped[reason] += 1
        examples = self.skipped_examples.setdefault(reason, [])
        if len(examples) < 5:
            examples.append(path)


def _spec(patterns):
    import pathspec
    return pathspec.GitIgnoreSpec.from_lines(list(patterns))


def _parse_skip(skip: list[str] | None) -> list[str]:
    out: list[str] = []
    for item in skip or []:
        out.extend(p.strip() for p in item.split(",") if p.strip())
    return out


def walk_tree(root: Path, *, skip: list[str] | None = None, max_file_bytes: int, extra_skip_dirs: tuple[Path, ...] = (),
              allow_secrets: bool = False) -> WalkResult:
    """List the indexable files under `root` without reading their content (stat only, plus a binary sniff
    for files not yet known). Honours nested .gitignore files and .git/info/exclude. Secret-shaped files
    (navigator.index.secrets: .env, private keys, credential files) are skipped as "secret" unless allowed."""
    from navigator.index.secrets import SKIP_REASON as SECRET, is_secret_file
    root = root.resolve()
    result = WalkResult()
    user_spec = _spec(_parse_skip(skip))
    default_file_spec = _spec(DEFAULT_SKIP_FILE_GLOBS)
    extra = {p.resolve() for p in extra_skip_dirs}
    # Only a folder of the same name can be one of them: resolving every folder costs ~0.1 ms apiece.
    extra_names = {p.name for p in extra}
    # Stack of (relative dir of the .gitignore, spec); a path is ignored when any ancestor's spec matches it.
    gitignores: list[tuple[str, object]] = []
    exclude = root / ".git" / "info" / "exclude"
    if exclude.is_file():
        gitignores.append(("", _spec(exclude.read_text(errors="replace").splitlines())))

    def ignored(rel: str, is_dir: bool) -> bool:
        probe = rel + "/" if is_dir else rel
        for base, spec in gitignores:
            if base and not rel.startswith(base + "/"):
                continue
            sub = probe[len(base) + 1:] if base else probe
            if spec.match_file(sub):
                return True
        return False

    def visit(dir_abs: str, dir_rel: str) -> None:
        try:
            entries = sorted(os.scandir(dir_abs), key=lambda e: e.name)
        except OSError:
            result.skip("unreadable", dir_rel or ".")
            entries = []
        pushed = False
        # Looked up among the entries already listed, not by a stat of its own in each of django's 3k folders.
        gi = next((e for e in entries if e.name == ".gitignore"), None)
        if gi is not None and gi.is_file():
            try:
                with open(gi.path, encoding="utf-8", errors="replace") as text:
                    gitignores.append((dir_rel, _spec(text.read().splitlines())))
                pushed = True
            except OSError:
                pass
        for entry in entries:
            rel = f"{dir_rel}/{entry.name}" if dir_rel else entry.name
            if not _utf8_name(entry.name):
                # A name that is not UTF-8 (x\xff.py) cannot be stored, shown or matched by nav: counted, not indexed.
                result.skip("non_utf8_name", os.fsencode(rel).decode("utf-8", "replace"))
                continue
            if entry.is_symlink():
                # Symlinks are not followed: that rules out loops and files outside the tree.
                result.skip("symlink", rel)
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name in DEFAULT_SKIP_DIRS or entry.name.endswith(".egg-info") or \
                        (entry.name in extra_names and Path(entry.path).resolve() in extra):
                    continue  # not counted: these are never source, and can hold millions of files
                if user_spec.match_file(rel + "/"):
                    result.skip("skip_rule", rel + "/")
                    continue
                if ignored(rel, True):
                    result.skip("ignored", rel + "/")
                    continue
                visit(entry.path, rel)
                continue
            if not entry.is_file(follow_symlinks=False):
                result.skip("special", rel)   # a FIFO, socket or device file: never read
                continue
            if user_spec.match_file(rel):
                result.skip("skip_rule", rel)
                continue
            if ignored(rel, False):
                result.skip("ignored", rel)
                continue
            if default_file_spec.match_file(rel):
                result.skip("skip_rule", rel)
                continue
            if not allow_secrets and is_secret_file(rel):
                result.skip(SECRET, rel)
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                result.skip("unreadable", rel)
                continue
            if st.st_size > max_file_bytes:
                result.skip("too_large", rel)
                continue
            result.files.append(SourceFile(rel, entry.path, st.st_size, st.st_mtime_ns))
        if pushed:
            gitignores.pop()

    visit(str(root), "")
    return result


def _utf8_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:   # os.scandir decodes undecodable bytes to lone surrogates
        return False
    return True


@dataclass(frozen=True)
class SourceText:
    text: str | None
    skip_reason: str | None
    raw: bytes
    decode_error: bool = False


def read_source(abs_path: str | Path) -> SourceText:
    """Read one file. Binary files (a NUL byte early on) are skipped; broken UTF-8 is decoded with U+FFFD
    replacements rather than dropped, and flagged so the summary can say so."""
    try:
        with open(abs_path, "rb") as file:
            raw = file.read()
    except OSError:
        return SourceText(None, "unreadable", b"")
    if b"\0" in raw[:BINARY_SNIFF_BYTES]:
        return SourceText(None, "binary", raw)
    try:
        return SourceText(raw.decode("utf-8"), None, raw)
    except UnicodeDecodeError:
        return SourceText(raw.decode("utf-8", errors="replace"), None, raw, decode_error=True)


def git_head(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def file_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def diff_tree(root: Path, conn: sqlite3.Connection, skip: list[str], config: Config) -> list[str]:
    """Paths added, modified or deleted since the index was built (stat first, hash only when stat differs)."""
    index_dir = config.index_dir_for(root)
    from navigator.index.secrets import secrets_allowed
    walked = walk_tree(root, skip=skip, max_file_bytes=config.max_file_bytes, extra_skip_dirs=(index_dir,),
                       allow_secrets=secrets_allowed(config.extra))
    known = {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, sha256, size, mtime_ns FROM files")}
    changed: list[str] = []
    seen = set()
    for f in walked.files:
        seen.add(f.path)
        old = known.get(f.path)
        if old is None:
            src = read_source(f.abs_path)
            if src.skip_reason is None and src.text.strip():
                changed.append(f.path)
            continue
        if (old[1], old[2]) == (f.size, f.mtime_ns):
            continue
        try:
            if file_hash(Path(f.abs_path).read_bytes()) != old[0]:
                changed.append(f.path)
        except OSError:
            changed.append(f.path)
    changed.extend(sorted(p for p in known if p not in seen))
    return changed
