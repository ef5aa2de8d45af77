"""User-extensible data files (abbreviations, glossary): where the user's file is, and reading it.

A user file is named by an environment variable; its mtime is part of the cache key of whatever is built
from it, so an edited file takes effect in the next call without a restart."""
from __future__ import annotations

import os
from pathlib import Path

from navigator.core.errors import InputError


def user_file_key(env_var: str) -> tuple[Path | None, int | None]:
    """(path, mtime_ns) of the file `env_var` names; (None, None) when unset. An unreadable path keeps
    mtime None so that reading it reports the error."""
    value = os.environ.get(env_var, "").strip()
    if not value:
        return None, None
    path = Path(value).expanduser()
    try:
        return path, path.stat().st_mtime_ns
    except OSError:
        return path, None


def read_user_file(path: Path, env_var: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{env_var} points to {path}, which cannot be read ({exc.strerror})",
                         hint=f"create that TSV file, or unset {env_var}") from exc
