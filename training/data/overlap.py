"""Which training files copy a file of an evaluation corpus, exactly or nearly (training/data/build.py leaves
them out; tests/test_training_data.py checks that every copy was left out).

A near copy shares at least NEAR_COPY_SHARE of its distinctive lines (40+ characters, stripped) with one
eval file. Found this way on the first build: Sphinx's generated docs/Makefile, make.bat and conf.py (django's
docs have the same), a GitHub CodeQL workflow template (gin's), and falcon's bench/dj/dj/settings.py, made by
django-admin from django's own project template. Legal files (LICENSE, COPYING, NOTICE, AUTHORS) are the same
texts everywhere and carry no code: not compared.
"""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

LONG_LINE = 40
NEAR_COPY_SHARE = 0.5
NEAR_COPY_MIN_LINES = 10
MIN_BYTES, MAX_BYTES = 200, 1 << 20
LEGAL = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|AUTHORS|PATENTS)", re.IGNORECASE)


def comparable_files(root: Path) -> Iterable[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and not LEGAL.match(path.name) and \
                MIN_BYTES <= path.stat().st_size <= MAX_BYTES:
            yield path


def long_lines(raw: bytes) -> set[bytes]:
    return {hashlib.blake2b(line.strip(), digest_size=8).digest() for line in raw.splitlines()
            if len(line.strip()) >= LONG_LINE}


class EvalFiles:
    """Every comparable file of the eval corpora, by content hash and by distinctive line."""

    def __init__(self, trees: Iterable[Path]):
        self.exact: dict[bytes, str] = {}
        self.by_line: dict[bytes, set[int]] = defaultdict(set)
        self.names: list[str] = []
        for tree in trees:
            for path in comparable_files(tree):
                raw = path.read_bytes()
                self.exact[hashlib.sha256(raw).digest()] = str(path)
                self.names.append(str(path))
                for line in long_lines(raw):
                    self.by_line[line].add(len(self.names) - 1)

    def copy_of(self, raw: bytes) -> str | None:
        """The eval file `raw` copies (exactly, or NEAR_COPY_SHARE of its long lines), else None."""
        hit = self.exact.get(hashlib.sha256(raw).digest())
        if hit is not None:
            return hit
        lines = long_lines(raw)
        if len(lines) < NEAR_COPY_MIN_LINES:
            return None
        shared: dict[int, int] = defaultdict(int)
        for line in lines:
            for index in self.by_line.get(line, ()):
                shared[index] += 1
        best, count = max(shared.items(), key=lambda item: item[1], default=(None, 0))
        return self.names[best] if count / len(lines) >= NEAR_COPY_SHARE else None

    def copies_in(self, root: Path) -> dict[str, str]:
        """relative path -> the eval file it copies, for every copy under `root`."""
        return {path.relative_to(root).as_posix(): hit for path in comparable_files(root)
                if (hit := self.copy_of(path.read_bytes())) is not None}


def eval_trees(fetch_corpus) -> list[Path]:
    """The eval corpora this machine can reach: click and every language set (fetched when missing), werkzeug
    and the django releases where they are unpacked (bench/corpora.py, shared/devsets/swe-django/fetch.sh)."""
    trees = [fetch_corpus.ensure_corpus(), *(fetch_corpus.ensure_set_corpus(n) for n in fetch_corpus.set_names())]
    werkzeug = Path.home() / ".cache" / "nav" / "bench" / "src" / "werkzeug-3.1.3"
    django = sorted((Path.home() / ".cache" / "nav-devsets").glob("django-*"))
    return trees + ([werkzeug] if werkzeug.is_dir() else []) + django
