#!/usr/bin/env python3
"""Fetch every pinned training source (training/data/sources/*.json) into the training-source folder.

A source is a PyPI sdist (fetched by `pip download`, like rag-eval/fetch_corpus.py fetches click) or, with a
"url", a file from a registry (a Debian orig tarball or .deb, an npm tarball); each is refused unless its
sha256 is the pinned one, then unpacked as <folder>/NAME-VERSION/ (the archive's single top-level folder, or
the record's "root" inside a .deb). A folder that holds the right marker is left alone.

    python training/data/fetch.py                 # all of them; NAV_TRAINING_SRC overrides ~/.cache/nav/training-src
    python training/data/fetch.py attrs httpx     # some
Exit 0 when every source is in place, 1 (one line per failure) otherwise. Stdlib only.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import validate  # noqa: E402

REPO = HERE.parents[1]


def _fetch_corpus():
    spec = importlib.util.spec_from_file_location("nav_fetch_corpus", REPO / "rag-eval" / "fetch_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def ensure_source(name: str, fc) -> Path:
    """The unpacked tree of one pinned source, fetched and checked if it is not there yet."""
    source = validate.load_source(name)
    root = validate.tree_of(source)
    if fc._is_ready(root, source["sha256"], sentinel=None):
        return root
    if root.is_dir() and any(root.iterdir()) and not (root / fc.MARKER_NAME).exists():
        # A tree a writer unpacked by hand: checked against a fresh download of the pinned archive.
        pass
    with tempfile.TemporaryDirectory(prefix="nav-train-src-") as scratch:
        scratch_dir = Path(scratch)
        if source.get("url"):
            archive = fc.download_url(source["url"], scratch_dir / source["archive"])
        else:
            download = scratch_dir / "download"
            download.mkdir()
            archive = fc.download_sdist(_pypi_name(source), source["version"], download)
        actual = fc.sha256_of(archive)
        if actual != source["sha256"]:
            raise fc.CorpusChecksumError(f"{name}: sha256 of {archive.name} is {actual}, pinned {source['sha256']}")
        unpacked = fc.extract_set_archive(archive, scratch_dir / "unpacked", source)
        if root.exists():
            import shutil
            shutil.rmtree(root)
        root.parent.mkdir(parents=True, exist_ok=True)
        fc._install_tree(unpacked, root, source["sha256"])
    return root


def _pypi_name(source: dict) -> str:
    """The sdist's project name: the archive's file name without its version (python_dateutil-4.0.0.tar.gz)."""
    archive = source.get("archive") or ""
    stem = archive[: -len(f"-{source['version']}.tar.gz")] if archive.endswith(f"-{source['version']}.tar.gz") else ""
    return stem or source["name"]


def main(argv: list[str]) -> int:
    fc = _fetch_corpus()
    names = argv or validate.all_libraries()
    failed = 0
    for name in names:
        try:
            print(ensure_source(name, fc))
        except (fc.CorpusError, OSError, json.JSONDecodeError) as exc:
            print(f"Error: {name}: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
