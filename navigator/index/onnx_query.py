"""Query embeddings without torch: the embedding model exported once to ONNX, run by onnxruntime.

A cold `nav search` cannot afford to import torch + transformers + sentence-transformers (~2-3 s here) to
embed ten words. At index time (torch is loaded anyway) `export_onnx` traces the model's transformer with
mean pooling into one ONNX graph and saves it beside the tokenizer; at query time `OnnxQueryEncoder`
needs only `tokenizers` and `onnxruntime` (~0.5 s cold, a few ms warm).

Layout of one export, <index_dir>/onnx/<model-slug>-<hash of identity>/:
    model.onnx       inputs input_ids, attention_mask[, token_type_ids] (int64, dynamic batch x sequence);
                     output token-mean-pooled sentence embedding (not yet normalised)
    tokenizer.json   the exact fast tokenizer sentence-transformers uses (lower-casing applied if configured)
    export.json      what the query side needs to reproduce sentence-transformers: max_seq_length, input
                     names, dimension, pooling, model.onnx's size and sha256; written last, so its
                     presence marks a complete export
    verified.json    the (size, mtime) at which model.onnx last matched that sha256 (see export_problem)

The directory is built under a temporary name and renamed into place, so a crash or a concurrent export
never leaves a half-written model where a query would load it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from navigator.core.config import Config
from navigator.core.errors import ModelError
from navigator.index.embedder import DOCUMENT_BATCH

T = TypeVar("T")

ONNX_SUBDIR = "onnx"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
SPEC_FILE = "export.json"
VERIFIED_FILE = "verified.json"   # (size, mtime_ns) at which model.onnx last matched its recorded sha256
# Bump when the graph or export.json changes meaning: older exports are then ignored and redone.
EXPORT_FORMAT = 1
# 17 is the first opset with a native LayerNormalization, which keeps the BERT graph small.
ONNX_OPSET = 17
# An export whose output differs from torch's by more than this (cosine) is refused rather than used.
EXPORT_MIN_COSINE = 0.9999
# One query is a handful of tokens: a thread pool costs more than it saves (measured here: 1 thread
# ~5 ms per query, 2 threads ~15 ms on a 2-core machine busy with other work).
QUERY_THREADS = 1
# Texts traced through the graph and compared with torch at export time: different lengths, so padding
# and the attention mask are part of the check.
_PROBE_TEXTS = ("def parse_args(argv: list[str]) -> Namespace:", "where is the retry policy configured", "x")
_SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
_SLUG_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_SLUG_MAX = 40
_IDENTITY_HASH_CHARS = 12


def onnx_dir_for(index_dir: Path, model_identity: str) -> Path:
    """Where the export for `model_identity` lives inside an index: readable prefix, collision-free suffix."""
    slug = _SLUG_CHARS.sub("-", model_identity.rstrip("/\\").split("/")[-1]).strip("-")[:_SLUG_MAX] or "model"
    digest = hashlib.sha256(f"{EXPORT_FORMAT}\0{model_identity}".encode()).hexdigest()[:_IDENTITY_HASH_CHARS]
    return Path(index_dir) / ONNX_SUBDIR / f"{slug}-{digest}"


def is_exported(onnx_dir: Path) -> bool:
    """True when `onnx_dir` holds a complete, undamaged export of the current format (see export_problem)."""
    return _complete(onnx_dir) and export_problem(onnx_dir) is None


def _complete(onnx_dir: Path) -> bool:
    try:
        spec = json.loads((Path(onnx_dir) / SPEC_FILE).read_text())
    except (OSError, ValueError):
        return False
    return spec.get("format") == EXPORT_FORMAT and all((Path(onnx_dir) / f).is_file() for f in (MODEL_FILE, TOKENIZER_FILE))


def export_problem(onnx_dir: Path) -> str | None:
    """Why a complete-looking export must not be loaded, or None (also None when there is no export at all).

    export.json records model.onnx's size and sha256. The size is compared on every call; the hash (about
    0.1 s for the default model) only when the file's (size, mtime) differ from the last verified ones, which
    are kept in VERIFIED_FILE. A file overwritten in part keeps its size but gets a new mtime."""
    onnx_dir = Path(onnx_dir)
    if not _complete(onnx_dir):
        return None
    spec = json.loads((onnx_dir / SPEC_FILE).read_text())
    want_size, want_hash = spec.get("model_bytes"), spec.get("model_sha256")
    if want_size is None or want_hash is None:
        return "the export records no checksum of model.onnx (made by an older nav)"
    model = onnx_dir / MODEL_FILE
    st = model.stat()
    if st.st_size != want_size:
        return f"model.onnx has {st.st_size} bytes, the export wrote {want_size}"
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": want_hash}
    try:
        if json.loads((onnx_dir / VERIFIED_FILE).read_text()) == stamp:
            return None
    except (OSError, ValueError):
        pass
    if _sha256(model) != want_hash:
        return "model.onnx does not match the checksum recorded at export"
    try:
        (onnx_dir / VERIFIED_FILE).write_text(json.dumps(stamp))
    except OSError:
        pass  # a read-only index: verified again next time
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------------- export

@dataclass(frozen=True)
class SentenceModelLayout:
    """The parts of a sentence-transformers model directory that decide what an embedding is."""
    transformer_dir: Path
    max_seq_length: int | None      # None: the tokenizer's model_max_length, capped by the position table
    do_lower_case: bool


def read_layout(model_dir: Path) -> SentenceModelLayout:
    """Read modules.json, the pooling config and sentence_bert_config.json; refuse anything the ONNX graph
    would not reproduce (other pooling modes, Dense layers, ...). Needs no torch."""
    model_dir = Path(model_dir)
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        if not (model_dir / "config.json").is_file():
            raise ModelError(f"{model_dir} is not a sentence-transformers or Hugging Face model directory",
                             hint="set NAV_EMBED_MODEL to a local sentence-transformers model directory")
        # A plain Hugging Face model: sentence-transformers wraps it with mean pooling, and so do we.
        return SentenceModelLayout(model_dir, None, False)
    modules = _read_json(modules_file)
    kinds = {m["type"].rsplit(".", 1)[-1]: m for m in modules}
    unsupported = sorted(k for k in kinds if k not in _SUPPORTED_MODULES)
    if unsupported or "Transformer" not in kinds:
        raise ModelError(f"the model in {model_dir} has modules {sorted(kinds)}; the ONNX query path supports "
                         f"only Transformer + mean Pooling (+ Normalize)",
                         hint="queries of this model keep using the torch path (slower to start)")
    if "Pooling" in kinds:
        pooling = _read_json(model_dir / kinds["Pooling"]["path"] / "config.json")
        mode = pooling.get("pooling_mode")  # sentence-transformers >= 6
        if mode is None:                    # older configs: one boolean per mode, e.g. pooling_mode_mean_tokens
            enabled = sorted(k.removeprefix("pooling_mode_") for k, v in pooling.items()
                             if k.startswith("pooling_mode_") and v is True)
            mode = "mean" if enabled == ["mean_tokens"] else "+".join(enabled) or "none"
        if mode != "mean":
            raise ModelError(f"the model in {model_dir} pools with {mode!r}; the ONNX query path supports mean pooling",
                             hint="queries of this model keep using the torch path (slower to start)")
    transformer_dir = model_dir / kinds["Transformer"].get("path", "")
    sbert_file = transformer_dir / "sentence_bert_config.json"
    sbert = _read_json(sbert_file) if sbert_file.is_file() else {}
    return SentenceModelLayout(transformer_dir, sbert.get("max_seq_length"), bool(sbert.get("do_lower_case", False)))


def export_onnx(model_name: str, out_dir: Path) -> Path:
    """Export `model_name` (as nav names it: NAV_EMBED_MODEL or the bundled default) to `out_dir`, once.

    Returns `out_dir`. An existing complete export is reused as is. Needs torch and transformers: call it
    at index time. Raises ModelError when the model cannot be read, is not supported, or exports wrongly.
    """
    out_dir = Path(out_dir)
    if is_exported(out_dir):
        return out_dir
    model_dir = _local_model_dir(model_name)
    layout = read_layout(model_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(out_dir.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{STAGING_MARK}{os.getpid()}-", dir=out_dir.parent))
    try:
        _export_into(model_name, layout, staging)
        _publish(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


STAGING_MARK = ".tmp-"
# A staging folder named without its writer's pid (nav before it recorded one) counts as abandoned after this.
UNOWNED_STAGING_SECONDS = 24 * 3600


def remove_stale_staging(parent: Path) -> list[str]:
    """Delete the staging folders of exports whose process is gone (killed mid-export): each is named
    .<export>.tmp-<pid>-<random>; without a pid, when older than UNOWNED_STAGING_SECONDS. Returns their names."""
    import time
    removed: list[str] = []
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not (entry.name.startswith(".") and STAGING_MARK in entry.name and entry.is_dir()):
            continue
        owner = entry.name.rsplit(STAGING_MARK, 1)[1].split("-", 1)[0]
        if owner.isdigit():
            if _alive(int(owner)) and int(owner) != os.getpid():
                continue
            if int(owner) == os.getpid():
                continue   # this process's own export in progress (another thread)
        else:
            try:
                if time.time() - entry.stat().st_mtime < UNOWNED_STAGING_SECONDS:
                    continue
            except OSError:
                continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry.name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _local_model_dir(model_name: str) -> Path:
    from navigator.index.embedder import resolve_model_path
    path = Path(resolve_model_path(model_name)).expanduser()
    if path.is_dir():
        return path
    # A hub name: sentence-transformers would read it from the local Hugging Face cache; so do we.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError
    try:
        return Path(snapshot_download(repo_id=model_name, local_files_only=True))
    except (LocalEntryNotFoundError, ValueError, OSError) as exc:
        raise ModelError(f"cannot find the files of embedding model {model_name!r} to export it to ONNX ({exc.__class__.__name__})",
                         hint="NAV_EMBED_MODEL must be a local model directory or a model already in the Hugging Face cache") from exc


def _export_into(model_name: str, layout: SentenceModelLayout, staging: Path) -> None:
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        with _quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(str(layout.transformer_dir), local_files_only=True)
            # Eager attention traces to plain MatMul/Softmax with no shape-dependent Python branches.
            model = AutoModel.from_pretrained(str(layout.transformer_dir), local_files_only=True,
                                              attn_implementation="eager").eval().float()   # fp16-stored weights
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load embedding model {model_name!r} for the ONNX export: {exc.__class__.__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}",
                         hint="queries keep using the torch path; check NAV_EMBED_MODEL") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelError(f"the tokenizer of {model_name!r} has no fast (Rust) version, which the ONNX query path needs",
                         hint="queries of this model keep using the torch path (slower to start)")

    max_seq_length = layout.max_seq_length or _capped_length(tokenizer.model_max_length, model.config)
    backend = tokenizer.backend_tokenizer
    if layout.do_lower_case:
        _add_lowercase(backend)
    backend.no_padding()
    backend.enable_truncation(max_seq_length)
    backend.save(str(staging / TOKENIZER_FILE))

    input_names = ["input_ids", "attention_mask"]
    if "token_type_ids" in tokenizer.model_input_names:
        input_names.append("token_type_ids")
    wrapper = _mean_pooled_module(model, "token_type_ids" in input_names)
    probe = tokenizer(list(_PROBE_TEXTS), padding=True, truncation=True, max_length=max_seq_length, return_tensors="pt")
    probe_inputs = tuple(probe[name] for name in input_names)
    axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
    axes["embedding"] = {0: "batch"}
    try:
        # The tracer warns about every Python-level branch it freezes; the probe comparison below is the
        # check that matters, so the warnings would only alarm the user of `nav index`.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = wrapper(*probe_inputs).numpy()
            torch.onnx.export(wrapper, probe_inputs, str(staging / MODEL_FILE), dynamo=False,
                              input_names=input_names, output_names=["embedding"], dynamic_axes=axes,
                              opset_version=ONNX_OPSET, do_constant_folding=True)
    except (RuntimeError, ImportError, torch.onnx.OnnxExporterError) as exc:
        raise ModelError(f"exporting {model_name!r} to ONNX failed: {exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                         hint="`pip install onnx` (torch.onnx needs it to write the file); queries keep using the torch path meanwhile") from exc

    spec = {
        "format": EXPORT_FORMAT, "model_identity": model_name, "source": str(layout.transformer_dir),
        "max_seq_length": max_seq_length, "input_names": input_names, "dimension": int(expected.shape[1]),
        "pooling": "mean", "normalize": True, "opset": ONNX_OPSET, "torch": torch.__version__,
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model_bytes": (staging / MODEL_FILE).stat().st_size, "model_sha256": _sha256(staging / MODEL_FILE),
    }
    (staging / SPEC_FILE).write_text(json.dumps(spec, indent=2) + "\n")

    got = OnnxQueryEncoder(staging)._pooled({n: probe[n].numpy() for n in input_names})
    cosine = float(np.min(np.sum(_l2(got) * _l2(expected), axis=1)))
    if cosine < EXPORT_MIN_COSINE:
        raise ModelError(f"the ONNX export of {model_name!r} disagrees with torch (cosine {cosine:.6f} < {EXPORT_MIN_COSINE})",
                         hint="queries keep using the torch path; report the model name")


@contextmanager
def _quiet_transformers():
    """No "Loading weights" progress bar on the user's terminal while the model loads for export."""
    from transformers.utils import logging as hf_logging
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _capped_length(model_max_length: int, config) -> int:
    """sentence-transformers' default: the tokenizer's limit, capped by the model's position table."""
    positions = getattr(config, "max_position_embeddings", None)
    return min(model_max_length, positions) if positions and positions > 0 else model_max_length


def _add_lowercase(backend) -> None:
    """Lower-case before the tokenizer's own normaliser, as sentence-transformers does for do_lower_case."""
    from tokenizers.normalizers import Lowercase, Sequence
    described = json.dumps(json.loads(backend.to_str()).get("normalizer"))
    if '"Lowercase"' in described or '"lowercase": true' in described:
        return
    current = backend.normalizer
    backend.normalizer = Sequence([Lowercase(), current]) if current is not None else Lowercase()


def _publish(staging: Path, out_dir: Path) -> None:
    """Rename the finished export into place; if another process got there first, keep theirs."""
    if out_dir.exists() and not is_exported(out_dir):
        shutil.rmtree(out_dir)  # a stale, older-format or damaged export
    try:
        os.rename(staging, out_dir)
    except OSError:
        if not is_exported(out_dir):
            raise


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {path}: {exc}", hint="the model directory is incomplete; reinstall or re-download it") from exc


def _l2(matrix):
    import numpy as np
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.finfo(np.float32).tiny)


def _mean_pooled_module(model, with_token_types: bool):
    """The transformer plus sentence-transformers' mean pooling, as one torch module to trace."""
    import torch

    class MeanPooledEncoder(torch.nn.Module):
        """Masked sum of the token embeddings over the token count."""

        def __init__(self, model, with_token_types: bool):
            super().__init__()
            self.model = model
            self.with_token_types = with_token_types

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kwargs = {"token_type_ids": token_type_ids} if self.with_token_types else {}
            tokens = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            # Same floor as sentence-transformers' Pooling, so an all-padding row cannot divide by zero.
            return (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)

    return MeanPooledEncoder(model, with_token_types)


# ---------------------------------------------------------------------------------------------------- query

class OnnxQueryEncoder:
    """Embeds queries with an export made by `export_onnx`. Imports only tokenizers, onnxruntime, numpy."""

    def __init__(self, onnx_dir: Path, threads: int = QUERY_THREADS):
        self.onnx_dir = Path(onnx_dir)
        if not is_exported(self.onnx_dir):
            raise ModelError(f"no complete ONNX query model in {self.onnx_dir}",
                             hint="run `nav index PATH` to export it (or delete the directory to force a new export)")
        self.spec = json.loads((self.onnx_dir / SPEC_FILE).read_text())
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(self.onnx_dir / TOKENIZER_FILE))
        # Saved with these settings; set again because a tokenizer.json shipped with a model often pads to
        # a fixed 128 and truncates at 128, where sentence-transformers uses max_seq_length and no padding.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(self.spec["max_seq_length"]))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: onnxruntime warnings are not the user's business
        try:
            self.session = onnxruntime.InferenceSession(str(self.onnx_dir / MODEL_FILE), options,
                                                        providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's load failures (InvalidProtobuf, Fail, ...: a truncated or foreign file)
            raise ModelError(f"onnxruntime cannot load {self.onnx_dir / MODEL_FILE}: {exc}",
                             hint="delete that directory and run `nav index PATH` to export it again") from exc
        self.input_names: list[str] = list(self.spec["input_names"])

    @property
    def dimension(self) -> int:
        return int(self.spec["dimension"])

    def encode(self, text: str):
        """The L2-normalised float32 embedding of `text`, as sentence-transformers computes it (truncated
        to max_seq_length word pieces). Callers cut very long texts first, as Embedder.encode_query does."""
        import numpy as np
        encoding = self.tokenizer.encode(text)
        columns = {"input_ids": encoding.ids, "attention_mask": encoding.attention_mask,
                   "token_type_ids": encoding.type_ids}
        feeds = {name: np.asarray([columns[name]], dtype=np.int64) for name in self.input_names}
        return _l2(self._pooled(feeds))[0].astype(np.float32)

    def encode_documents(self, texts, on_batch: Callable[[int], None] | None = None, batch: int = DOCUMENT_BATCH):
        """L2-normalised float32 rows for `texts`, in their order, computed in length-sorted padded batches
        (the padding is masked out of the mean pooling, so a row does not depend on its batch). Same
        contract as Embedder.encode_documents, which the indexer uses instead where bf16 is native."""
        import numpy as np
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        self.tokenizer.enable_padding()   # to the longest text of each batch; one text is not padded at all
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            encodings = self.tokenizer.encode_batch([texts[i] for i in idx])
            columns = {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
                       "token_type_ids": [e.type_ids for e in encodings]}
            out[idx] = _l2(self._pooled({name: columns[name] for name in self.input_names}))
            if on_batch:
                on_batch(len(idx))
        return out

    def _pooled(self, feeds: dict):
        import numpy as np
        feeds = {name: np.asarray(value, dtype=np.int64) for name, value in feeds.items()}
        return self.session.run(None, feeds)[0]


def import_onnx_runtime() -> None:
    """Import what the ONNX encoder needs, on this thread: before a worker thread builds an encoder (see
    run_beside)."""
    import numpy  # noqa: F401
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401


def run_beside(background: Callable[[], T], foreground: Callable[[], object]) -> T:
    """Run `background` on a worker thread while `foreground` runs on this one; return background's result
    (its exception, if any, is raised here). Pays off for native work that releases the GIL (onnxruntime)
    beside pure-Python work (importing chromadb). `background` must import nothing `foreground` might be
    importing at the same moment: two threads importing the same modules can deadlock on the import locks."""
    import threading
    outcome: dict = {}

    def work() -> None:
        try:
            outcome["result"] = background()
        except BaseException as exc:  # re-raised on the calling thread below, whatever it is
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="nav-beside", daemon=True)
    worker.start()
    try:
        foreground()
    finally:
        worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


# Up to this many new chunk texts are embedded through the ONNX export when there is one: a small
# re-index then never imports torch (4+ s), at cosine >= 0.9999 to the torch embedding.
ONNX_SMALL_BATCH = 64


def onnx_enabled(config: Config) -> bool:
    return config.extra.get("NAV_ONNX", "1") != "0"


def embed_with_onnx_while_importing_chromadb(index_dir: Path, identity: str, texts: list[str], *,
                                             import_chromadb: bool = True):
    """text -> vector through the ONNX export, or None when there is none. onnxruntime loads the model and
    embeds on a worker thread while this one imports chromadb, when the sync after the commit needs it:
    ~0.15 s less than one after the other (see NavIndex._embed_query_while_opening_chroma)."""
    onnx_dir = onnx_dir_for(index_dir, identity)
    if not is_exported(onnx_dir):
        return None
    import_onnx_runtime()

    def embed() -> dict:
        encoder = OnnxQueryEncoder(onnx_dir)
        return {t: encoder.encode(t) for t in texts}

    if not import_chromadb:
        return embed()

    from navigator.index.vector_store import import_chromadb
    return run_beside(embed, import_chromadb)


def ensure_onnx_export(index_dir: Path, config: Config, identity: str) -> list[str]:
    """Export the embedder once for the torch-free query path. A failure only costs query speed."""
    from navigator.core.errors import ModelError
    onnx_dir = onnx_dir_for(index_dir, identity)
    notes = [f"removed {len(gone)} unfinished ONNX export folder(s) of an interrupted run"
             for gone in [remove_stale_staging(onnx_dir.parent)] if gone]
    if is_exported(onnx_dir):
        return notes
    damaged = export_problem(onnx_dir)
    if damaged:
        notes.append(f"the ONNX query model was damaged ({damaged}): exporting it again")
    try:
        export_onnx(config.embed_model, onnx_dir)
    except ModelError as exc:
        return notes + [f"no ONNX query model ({exc.message}); queries use sentence-transformers (slower start)"]
    return notes + [f"exported the embedder to ONNX for fast queries: {onnx_dir}"]
