"""Generate small but real repositories for index and CLI tests."""
from __future__ import annotations

import os
from pathlib import Path

MODULE_TEMPLATE = '''"""Module {n}: helpers for feature {n}."""
import os
import sys

# How many times feature {n} retries before giving up.
MAX_RETRIES_{n} = {n}
TIMEOUT_SECONDS_{n}: float = {n}.5


def compute_{n}(value, scale=2):
    """Scale a value for feature {n}."""
    result = value * scale + {n}
    return result


class Worker{n}:
    """Runs jobs for feature {n}."""

    def __init__(self, name):
        self.name = name

    def run(self, job):
        return compute_{n}(len(job)) + MAX_RETRIES_{n}
'''


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def make_repo(root: Path, modules: int = 6) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for n in range(modules):
        write(root, f"pkg/mod{n}.py", MODULE_TEMPLATE.format(n=n))
    write(root, "README.md", "# Demo\n\nA demo project.\n\n## Install\n\nRun the installer.\n")
    write(root, "docs/notes.txt", "\n".join(f"note line {i}" for i in range(40)) + "\n")
    write(root, ".gitignore", "*.log\ngenerated/\n")
    write(root, "debug.log", "ignored by .gitignore\n")
    write(root, "generated/out.py", "X = 1\n")
    write(root, "data/table.csv", "a,b\n1,2\n")
    write(root, "repos/other/lib.py", "def elsewhere():\n    return 1\n")
    write(root, "pkg/sub/.gitignore", "secret_*.py\n")
    write(root, "pkg/sub/secret_keys.py", "KEY = 'x'\n")
    write(root, "pkg/sub/visible.py", "def visible():\n    return 'v'\n")
    write(root, "image.bin", b"\x89PNG\r\n\x1a\n\0\0\0binary")
    write(root, "broken_utf8.py", b"def broken():\n    return '\xff\xfe caf\xe9'\n")
    write(root, "syntax_error.py", "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nVALUE = 3\n")
    write(root, "node_modules/dep/index.js", "module.exports = 1;\n")
    os.symlink(root, root / "loop")  # a symlink loop back to the root
    return root
