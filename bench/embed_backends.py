#!/usr/bin/env python3
"""Index-time embedding backends side by side on one corpus's chunk texts (issue 10, part 3: throughput).

Each backend embeds the same texts (the `embed_text` of every distinct chunk of TREE, or the first --limit of
them in corpus order) in length-sorted batches of 32, as the indexer does, and is timed alone, one after the
other in one process. Printed per backend: texts/s, the ratio to torch bf16 (nav's index-time default
before this bench), and the cosine of each text's vector to torch fp32's (mean, 1st percentile, min), which
is what decides whether a faster backend may stand in for the reference.

Backends:
  torch-bf16   sentence-transformers, model in bfloat16 (Embedder(dtype="bf16"))
  torch-fp32   sentence-transformers, float32: the reference vectors
  onnx-fp32    nav's ONNX export (navigator/index/onnx_query.py), onnxruntime on all cores
  onnx-int8    that export with dynamically quantized int8 weights (onnxruntime.quantization)

Usage:  python bench/embed_backends.py TREE [--limit N] [--backends a,b,...] [--threads T]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ALL_BACKENDS = ("torch-bf16", "torch-fp32", "onnx-fp32", "onnx-int8")


def corpus_texts(tree: Path, limit: int | None) -> list[str]:
    from chunkers import chunk_file
    from navigator.core.config import Config
    from navigator.index.walk import read_source, walk_tree
    seen: dict[str, None] = {}
    walked = walk_tree(tree, max_file_bytes=Config.from_env().max_file_bytes)
    for f in walked.files:
        source = read_source(f.abs_path)
        if source.text is None:
            continue
        for chunk in chunk_file(f.path, source.text).chunks:
            seen.setdefault(chunk.embed_text)
        if limit and len(seen) >= limit:
            break
    texts = list(seen)
    return texts[:limit] if limit else texts


def torch_backend(dtype: str):
    from navigator.index.embedder import Embedder, limit_kernel_cache
    limit_kernel_cache()
    embedder = Embedder(dtype=dtype)
    return lambda texts: embedder.encode_documents(texts)


def onnx_backend(export_dir: Path, threads: int, model_path: Path | None = None):
    """nav's own batch encoder over the export; `model_path` swaps in another graph (the int8 one) with the
    same inputs, so both ONNX backends run the indexer's code."""
    import onnxruntime
    from navigator.index.onnx_query import OnnxQueryEncoder
    encoder = OnnxQueryEncoder(export_dir, threads=threads)
    if model_path is not None:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        encoder.session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    return lambda texts: encoder.encode_documents(texts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--backends", default=",".join(ALL_BACKENDS))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import numpy as np
    backends = [b for b in args.backends.split(",") if b]
    texts = corpus_texts(args.tree, args.limit)
    print(f"{len(texts)} distinct chunk texts from {args.tree}")

    with tempfile.TemporaryDirectory(prefix="nav-embed-backends-") as tmp:
        onnx_dir = Path(tmp) / "export"
        if any(b.startswith("onnx") for b in backends):
            from navigator.core.config import Config
            from navigator.index.onnx_query import MODEL_FILE, export_onnx
            export_onnx(Config.from_env().embed_model, onnx_dir)
            if "onnx-int8" in backends:
                from onnxruntime.quantization import QuantType, quantize_dynamic
                quantize_dynamic(str(onnx_dir / MODEL_FILE), str(Path(tmp) / "int8.onnx"), weight_type=QuantType.QInt8)
        results: dict[str, dict] = {}
        vectors: dict[str, object] = {}
        for name in backends:
            if name.startswith("torch"):
                encode = torch_backend(name.split("-")[1])
            else:
                encode = onnx_backend(onnx_dir, args.threads, None if name == "onnx-fp32" else Path(tmp) / "int8.onnx")
            encode(texts[:32])    # warm-up: model load, first kernels
            started = time.perf_counter()
            vectors[name] = np.asarray(encode(texts), dtype=np.float32)
            seconds = time.perf_counter() - started
            results[name] = {"seconds": seconds, "texts_per_s": len(texts) / seconds}
            print(f"  {name:11s} {seconds:7.1f} s  {len(texts) / seconds:7.1f} texts/s", flush=True)

    reference = vectors.get("torch-fp32")
    base = results.get("torch-bf16")
    print("\n| backend | texts/s | x torch-bf16 | cosine to torch-fp32: mean | p1 | min |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        ratio = f"{r['texts_per_s'] / base['texts_per_s']:.2f}" if base else "-"
        if reference is not None:
            cos = np.sum(vectors[name] * reference, axis=1)
            cols = f"{cos.mean():.5f} | {np.percentile(cos, 1):.5f} | {cos.min():.5f}"
        else:
            cols = "- | - | -"
        print(f"| {name} | {r['texts_per_s']:.1f} | {ratio} | {cols} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
