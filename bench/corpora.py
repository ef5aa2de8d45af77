#!/usr/bin/env python3
"""Pinned benchmark corpora: real Python projects fetched as source distributions by pip, verified by
sha256, unpacked once under ~/.cache/nav/bench/src/ (override with NAV_BENCH_DIR).

    size    project           chunks (nav's chunker)   other version (for the checkout benchmark)
    small   click 8.1.8        ~1,900                   8.1.7
    medium  werkzeug 3.1.3     ~4,100                   3.0.6
    large   twisted 24.11.0    ~42,500                  none: re-embedding a release's diff of 40k chunks
                                                        is a full index in disguise, measured already

The hashes are the ones observed on the first download (PyPI serves immutable files; a different
hash means a different file and the figures would not be comparable, so it is refused).

Usage:  python bench/corpora.py [--sizes small,medium,large] [--count]
        prints each unpacked tree (and with --count its file and chunk counts as nav would index it)
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR_ENV = "NAV_BENCH_DIR"
DEFAULT_BENCH_DIR = Path("~/.cache/nav/bench")
MARKER_NAME = ".nav-bench-sha256"
DOWNLOAD_TIMEOUT_S = 600


class BenchError(RuntimeError):
    """A corpus could not be made available (download failed, hash mismatch, malformed archive)."""


@dataclass(frozen=True)
class Sdist:
    name: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}"


@dataclass(frozen=True)
class Corpus:
    size: str
    current: Sdist
    previous: Sdist | None  # another release of the same project, swapped in to time a checkout


CORPORA: dict[str, Corpus] = {
    "small": Corpus("small",
                    Sdist("click", "8.1.8", "ed53c9d8990d83c2a27deae68e4ee337473f6330c040a31d4225c9574d16096a"),
                    Sdist("click", "8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de")),
    "medium": Corpus("medium",
                     Sdist("werkzeug", "3.1.3", "60723ce945c19328679790e3282cc758aa4a6040e4bb330f53d30fa546d44746"),
                     Sdist("werkzeug", "3.0.6", "a8dd59d4de28ca70471a34cba79bed5f7ef2e036a76b3ab0835474246eb41f8d")),
    "large": Corpus("large",
                    Sdist("twisted", "24.11.0", "695d0556d5ec579dcc464d2856b634880ed1319f45b10d19043f2b57eb0115b5"),
                    None),
}
SIZES = tuple(CORPORA)


def bench_dir() -> Path:
    configured = os.environ.get(BENCH_DIR_ENV)
    return (Path(configured) if configured else DEFAULT_BENCH_DIR).expanduser()


def source_dir(sdist: Sdist) -> Path:
    return bench_dir() / "src" / sdist.label


def ensure_sdist(sdist: Sdist) -> Path:
    """The unpacked tree of `sdist`, downloading and verifying it first if needed. Idempotent: a marker
    holding the archive hash, written just before the atomic rename, marks a finished unpack."""
    root = source_dir(sdist)
    marker = root / MARKER_NAME
    if marker.is_file() and marker.read_text().strip() == sdist.sha256:
        return root
    if root.exists():
        shutil.rmtree(root)  # ours (under the bench dir) but unfinished or of another hash
    root.parent.mkdir(parents=True, exist_ok=True)
    fetch = _fetcher()
    with tempfile.TemporaryDirectory(prefix="nav-bench-", dir=root.parent) as scratch:
        scratch_dir = Path(scratch)
        (scratch_dir / "download").mkdir()
        (scratch_dir / "unpacked").mkdir()
        try:
            archive = fetch.download_sdist(sdist.name, sdist.version, scratch_dir / "download",
                                           timeout=DOWNLOAD_TIMEOUT_S)
            actual = fetch.sha256_of(archive)
            if actual != sdist.sha256:
                raise BenchError(f"{archive.name}: sha256 {actual}, expected {sdist.sha256}; refusing a different file")
            tree = fetch.safe_extract(archive, scratch_dir / "unpacked")
        except fetch.CorpusError as exc:
            raise BenchError(str(exc)) from exc
        (tree / MARKER_NAME).write_text(sdist.sha256 + "\n")
        os.replace(tree, root)
    return root


def _fetcher():
    """rag-eval/fetch_corpus.py, whose pip download, hashing and safe unpacking this module shares (the
    folder name has a hyphen, so it is loaded by path)."""
    import importlib.util
    path = Path(__file__).resolve().parent.parent / "rag-eval" / "fetch_corpus.py"
    spec = importlib.util.spec_from_file_location("nav_rag_eval_fetch_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def count_chunks(root: Path) -> tuple[int, int]:
    """(files, chunks) that `nav index` would produce for `root`, by nav's own walker and chunker."""
    from chunkers import chunk_file
    from navigator.core.config import Config
    from navigator.index.walk import read_source, walk_tree
    walked = walk_tree(root, skip=[MARKER_NAME], max_file_bytes=Config.from_env().max_file_bytes)
    files = chunks = 0
    for f in walked.files:
        source = read_source(f.abs_path)
        if source.skip_reason is not None or not source.text.strip():
            continue
        files += 1
        chunks += len(chunk_file(f.path, source.text).chunks)
    return files, chunks


def parse_sizes(text: str) -> list[str]:
    sizes = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in CORPORA]
    if unknown:
        raise SystemExit(f"unknown size(s) {unknown}; choose from {', '.join(SIZES)}")
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--count", action="store_true", help="also count files and chunks as nav would index them")
    args = parser.parse_args()
    for size in parse_sizes(args.sizes):
        corpus = CORPORA[size]
        for sdist in filter(None, (corpus.current, corpus.previous)):
            root = ensure_sdist(sdist)
            extra = ""
            if args.count:
                files, chunks = count_chunks(root)
                extra = f"  {files} files, {chunks} chunks"
            print(f"{size:<7} {sdist.label:<18} {root}{extra}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(1)
