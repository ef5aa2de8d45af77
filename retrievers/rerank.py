"""The rerank retriever: a cross-encoder re-scores the top of a base retriever's ranking.

Settings (environment, read through config):
  NAV_RERANK_MODEL     cross-encoder name or local directory (config.rerank_model). Loaded offline only.
                       A directory holding an ONNX export (cross_encoder.json, made by
                       retrievers.cross_encoder_onnx) runs on onnxruntime without torch; any other name or
                       directory is a sentence-transformers CrossEncoder. BUNDLED_MODEL names nav's own
                       code reranker, loaded from retrievers/data/cross_encoder (training/README.md); no
                       model is shipped there yet (patches/0006 and 0021: both runs lost to the default ranking).
  NAV_RERANK_BASE      the retriever whose ranking is re-scored (default graph, the default retriever: its
                       top 10 and 20 hold more of the answers than hybrid's on all four chunk sets,
                       patches/0022)
  NAV_RERANK_POOL      how many of its results are re-scored (default 20; at least k are)
  NAV_RERANK_CONTEXT   1 (default): the cross-encoder reads "path · symbol", the parent header and the text;
                       0: the text alone
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from navigator.core.errors import ModelError, UsageError
from retrievers.base import HeadHit, RetrievedChunk, Retriever
from retrievers.bm25 import NO_TERMS_NOTE
from retrievers.crosslingual import expand_query

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from retrievers.cross_encoder_onnx import OnnxCrossEncoder

    from chunkers.base import CodeChunk
    from navigator.core.config import Config
    from navigator.index.nav_index import NavIndex

HEAD = "rerank"
BASE_ENV = "NAV_RERANK_BASE"
POOL_ENV = "NAV_RERANK_POOL"
CONTEXT_ENV = "NAV_RERANK_CONTEXT"
DEFAULT_BASE = "graph"
DEFAULT_POOL = 20
# The query and the passage share the cross-encoder's input window (512 word pieces for MiniLM) and the
# tokenizer trims the longer side first; a pasted bug report would push the passage out entirely.
MAX_QUERY_CHARS = 1000
PREDICT_BATCH_SIZE = 16

# nav's own cross-encoder (training/train_cross_encoder.py), an int8 ONNX export shipped as package data.
BUNDLED_MODEL = "nav-code-reranker"
_BUNDLED_PACKAGE = "retrievers"
_BUNDLED_DIR = ("data", "cross_encoder")

# One loaded cross-encoder per model name and process: loading costs seconds, scoring milliseconds.
_MODEL_CACHE: dict[str, "CrossEncoder | OnnxCrossEncoder"] = {}


def bundled_model_dir() -> Path:
    """Where the package keeps nav's own cross-encoder export."""
    from importlib import resources
    return Path(str(resources.files(_BUNDLED_PACKAGE).joinpath(*_BUNDLED_DIR)))


def _download_hint(model: str) -> str:
    return ("nav loads rerank models offline only. On a machine with internet run "
            f"`hf download {model}` (older huggingface_hub: `huggingface-cli download {model}`) and copy "
            "~/.cache/huggingface/hub to this machine, or save a CrossEncoder with model.save(DIR) and set "
            "NAV_RERANK_MODEL=DIR")


def _looks_like_path(model: str) -> bool:
    # Hub ids are "name" or "org/name"; anything absolute, relative-dotted, home-based or deeper is a path.
    return model.startswith(("/", ".", "~")) or model.count("/") > 1 or "\\" in model


def load_cross_encoder(model: str) -> "CrossEncoder | OnnxCrossEncoder":
    """The cross-encoder `model` (BUNDLED_MODEL, a hub id from the local cache, or a directory), loaded once
    per process. Never downloads: a missing model raises ModelError at once instead of waiting on the network."""
    cached = _MODEL_CACHE.get(model)
    if cached is not None:
        return cached
    from retrievers.cross_encoder_onnx import OnnxCrossEncoder, is_cross_encoder_export

    if model == BUNDLED_MODEL:
        directory = bundled_model_dir()
        if not is_cross_encoder_export(directory):
            raise ModelError(f"nav's bundled cross-encoder is missing from this install ({directory})",
                             hint="reinstall nav, or set NAV_RERANK_MODEL to a saved CrossEncoder directory")
        _MODEL_CACHE[model] = OnnxCrossEncoder(directory)
        return _MODEL_CACHE[model]
    source = model
    if _looks_like_path(model):
        path = Path(model).expanduser()
        if not path.is_dir():
            raise ModelError(f"rerank model directory not found: {path}",
                             hint="NAV_RERANK_MODEL must name a directory holding a saved CrossEncoder "
                                  "(config.json, weights, tokenizer files), or a hub id already in the local cache")
        if is_cross_encoder_export(path):
            # An ONNX export: onnxruntime + tokenizers, no torch import.
            _MODEL_CACHE[model] = OnnxCrossEncoder(path)
            return _MODEL_CACHE[model]
        source = str(path)
    # Same offline switches as the embedder: set before the hub libraries read them, never overriding the user.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import CrossEncoder
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()   # weight-loading bars on stderr are noise in nav's output
    try:
        loaded = CrossEncoder(source, device="cpu", local_files_only=True)
    except (OSError, ValueError) as exc:
        # OSError: not in the local cache / missing files; ValueError: a directory that holds no model.
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        raise ModelError(f"rerank model {model!r} is not available locally ({type(exc).__name__}: {first_line})",
                         hint=_download_hint(model)) from exc
    _MODEL_CACHE[model] = loaded
    return loaded


def passage_text(chunk: "CodeChunk", with_context: bool) -> str:
    """What the cross-encoder reads for a chunk: with context, "path · symbol", the parent header, the text."""
    if not with_context:
        return chunk.text
    title = f"{chunk.path} · {chunk.symbol}" if chunk.symbol else chunk.path
    parts = [title, chunk.header, chunk.text] if chunk.header else [title, chunk.text]
    return "\n".join(parts)


def _parse_flag(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"{name} must be 0 or 1, got {value!r}", hint=f"set {name}=1 (the default) or {name}=0")


class RerankRetriever(Retriever):
    name = HEAD

    def __init__(self, index: "NavIndex", config: "Config", base: Retriever | None = None):
        """`base` is for tests and callers that already hold one; by default it comes from the registry."""
        super().__init__(index, config)
        extra = config.extra
        self.base_name = (extra.get(BASE_ENV) or DEFAULT_BASE).strip()
        if self.base_name == HEAD:
            raise UsageError(f"{BASE_ENV}=rerank would rerank its own output",
                             hint=f"set {BASE_ENV} to graph, hybrid, vector or bm25")
        pool = (extra.get(POOL_ENV) or str(DEFAULT_POOL)).strip()
        if not pool.isdigit() or int(pool) < 1:
            raise UsageError(f"{POOL_ENV} must be a positive whole number, got {pool!r}",
                             hint=f"unset it for the default ({DEFAULT_POOL})")
        self.pool = int(pool)
        self.with_context = _parse_flag(CONTEXT_ENV, extra.get(CONTEXT_ENV) or "1")
        self.model_name = config.rerank_model
        self._base = base
        self._query_notes: list[str] = []

    @property
    def base(self) -> Retriever:
        if self._base is None:
            from retrievers.registry import get_retriever

            self._base = get_retriever(self.base_name, self.index, self.config)
        return self._base

    @property
    def notes(self) -> list[str]:
        return list(self._query_notes) + list(getattr(self._base, "notes", []))

    def retrieve(self, query: str, k: int) -> list[RetrievedChunk]:
        self._query_notes = []
        if not query.strip():
            self._query_notes.append(NO_TERMS_NOTE)
            return []
        if k <= 0:
            return []
        # The model first: a missing one fails before the base spends time embedding the query.
        model = load_cross_encoder(self.model_name)
        # Re-score at least k so that every returned chunk carries a rerank score.
        candidates = self.base.retrieve(query, max(self.pool, k))
        if not candidates:
            return []
        # The cross-encoders nav can load read English: a Chinese question gets the glossary's English words
        # appended, as the BM25 head sees it (English text comes back unchanged).
        ce_query = expand_query(query)
        if len(ce_query) > MAX_QUERY_CHARS:
            self._query_notes.append(f"rerank: the cross-encoder read the first {MAX_QUERY_CHARS} of the "
                                     f"query's {len(ce_query)} characters")
            ce_query = ce_query[:MAX_QUERY_CHARS]
        pairs = [(ce_query, passage_text(c.chunk, self.with_context)) for c in candidates]
        scores = model.predict(pairs, batch_size=PREDICT_BATCH_SIZE, show_progress_bar=False)
        # Best cross-encoder score first; equal scores keep the base order.
        order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), i))[:k]
        base_head = self.base.name or self.base_name
        out = []
        for rank, i in enumerate(order, start=1):
            cand = candidates[i]
            score = float(scores[i])
            heads = dict(cand.heads)
            heads[base_head] = HeadHit(rank=cand.rank, score=cand.score)
            heads[HEAD] = HeadHit(rank=rank, score=score)
            out.append(RetrievedChunk(chunk=cand.chunk, score=score, rank=rank, heads=heads))
        return out
