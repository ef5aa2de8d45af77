#!/usr/bin/env python3
"""The compute ceiling of indexing: how fast this machine can do the embedder's matrix multiplies, and
how many of them one chunk needs. Indexing throughput is then reported as a fraction of that ceiling.

FLOPs of one chunk of n word pieces (n includes [CLS]/[SEP], truncated at max_seq_length) through a
BERT encoder with L layers, hidden size H and feed-forward size I, counting a multiply-add as 2 FLOPs:

    per layer   8·n·H²      Q, K, V and output projections (4 matmuls n×H by H×H)
              + 4·n²·H      attention scores Q·Kᵀ and the weighted sum of V (over all heads together)
              + 4·n·H·I     feed-forward up (n×H by H×I) and down (n×I by I×H)
    total       L · (8nH² + 4n²H + 4nHI)

Embedding look-ups, layer norms, softmax, GELU and pooling are left out (< 2% of the FLOPs). Padding
is not counted: FLOPs spent on padding are overhead, which is what the fraction is meant to expose.
all-MiniLM-L6-v2 (L=6, H=384, I=1536) needs 2.9 GFLOP for a 128-piece chunk.

The ceiling is model-shaped: each kind of matmul above is timed with torch at the shapes a 32-chunk
batch of n-piece texts gives it, and the ceiling is the rate at which those matmuls, in the model's
FLOP proportions, run back to back (total FLOPs / sum of each kind's FLOPs over its measured rate).
The largest single measured rate is printed too, as the machine's peak. The share of attention in the
FLOPs is n / (2H + I), 5.6% at n=128, so the ceiling hardly depends on n.

Each kind is timed on all torch threads and on one thread; its rate is the larger of the all-thread
rate and threads x the one-thread rate. One matmul of these shapes takes well under a millisecond at
bf16, so when another process holds one of the cores, every call waits for a descheduled thread and the
all-thread rate collapses (measured here: 150 instead of 2,800 GFLOP/s); the one-thread rate times the
core count is what the cores can do and is unaffected. Both are kept in the output.

Usage:  python bench/ceiling.py [--dtype bf16|fp32|both] [--seq 128]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

BATCH = 32              # texts per model call, as navigator.index.embedder.DOCUMENT_BATCH
DEFAULT_SEQ = 128       # word pieces per text for the printed example and the timed shapes
TIMING_WINDOW_S = 0.25  # each rate is the best of several windows at least this long
TIMING_WINDOWS = 5
WARMUP_CALLS = 3


@dataclass(frozen=True)
class ModelShape:
    layers: int
    hidden: int
    intermediate: int
    heads: int
    max_seq_length: int


def model_shape(model_name: str | None = None) -> ModelShape:
    """Read layers / hidden / intermediate / heads from the model's config.json and max_seq_length the way
    the ONNX export does (navigator.index.onnx_query.read_layout)."""
    from navigator.core.config import Config
    from navigator.index.embedder import resolve_model_path
    from navigator.index.onnx_query import read_layout
    name = model_name or Config.from_env().embed_model
    layout = read_layout(Path(resolve_model_path(name)))
    config = json.loads((layout.transformer_dir / "config.json").read_text())
    max_len = layout.max_seq_length or min(config.get("max_position_embeddings", 512), 512)
    return ModelShape(config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"],
                      config["num_attention_heads"], max_len)


def flops_per_sequence(shape: ModelShape, tokens: int) -> float:
    n, h, i = tokens, shape.hidden, shape.intermediate
    return shape.layers * (8 * n * h * h + 4 * n * n * h + 4 * n * h * i)


def token_counts(texts: list[str], model_name: str | None = None) -> list[int]:
    """Word pieces per text as the embedder sees them (special tokens included, truncated)."""
    from tokenizers import Tokenizer

    from navigator.core.config import Config
    from navigator.index.embedder import resolve_model_path
    from navigator.index.onnx_query import read_layout
    name = model_name or Config.from_env().embed_model
    layout = read_layout(Path(resolve_model_path(name)))
    shape = model_shape(name)
    tokenizer_file = layout.transformer_dir / "tokenizer.json"
    if tokenizer_file.is_file():
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    else:
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(str(layout.transformer_dir)).backend_tokenizer
    tokenizer.no_padding()
    tokenizer.enable_truncation(shape.max_seq_length)
    return [len(e.ids) for e in tokenizer.encode_batch(texts)]


def _rate(fn, flops: float) -> float:
    """Best GFLOP/s of `fn` (which performs `flops` FLOPs) over several timing windows."""
    for _ in range(WARMUP_CALLS):
        fn()
    best = 0.0
    for _ in range(TIMING_WINDOWS):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= TIMING_WINDOW_S:
                break
        best = max(best, flops * calls / elapsed / 1e9)
    return best


def measure_ceiling(dtype: str, shape: ModelShape, seq: int = DEFAULT_SEQ) -> dict:
    """GFLOP/s of each kind of matmul in the model at batch BATCH x seq, and the model-shaped ceiling."""
    import torch
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    m, h, i = BATCH * seq, shape.hidden, shape.intermediate
    head_dim = h // shape.heads
    g = torch.Generator().manual_seed(0)

    def rand(*dims):
        return torch.randn(*dims, generator=g).to(torch_dtype)

    x_h, x_i = rand(m, h), rand(m, i)
    w_hh, w_hi, w_ih = rand(h, h), rand(h, i), rand(i, h)
    q, k = rand(BATCH * shape.heads, seq, head_dim), rand(BATCH * shape.heads, head_dim, seq)
    p, v = rand(BATCH * shape.heads, seq, seq), rand(BATCH * shape.heads, seq, head_dim)
    # kind -> (operation, FLOPs of one call, that kind's FLOPs per layer for one BATCH x seq call)
    kinds = {
        "projection n×H·H×H": (lambda: x_h @ w_hh, 2 * m * h * h, 8 * m * h * h),
        "ffn up n×H·H×I": (lambda: x_h @ w_hi, 2 * m * h * i, 2 * m * h * i),
        "ffn down n×I·I×H": (lambda: x_i @ w_ih, 2 * m * i * h, 2 * m * i * h),
        "attention scores Q·Kᵀ": (lambda: torch.bmm(q, k), 2 * BATCH * seq * seq * h, 2 * BATCH * seq * seq * h),
        "attention values P·V": (lambda: torch.bmm(p, v), 2 * BATCH * seq * seq * h, 2 * BATCH * seq * seq * h),
    }
    threads = torch.get_num_threads()
    all_threads, one_thread = {}, {}
    with torch.inference_mode():
        for name, (fn, flops, _) in kinds.items():
            all_threads[name] = _rate(fn, flops)
        torch.set_num_threads(1)
        try:
            for name, (fn, flops, _) in kinds.items():
                one_thread[name] = _rate(fn, flops)
        finally:
            torch.set_num_threads(threads)
    rates = {name: max(all_threads[name], threads * one_thread[name]) for name in kinds}
    total = sum(share for _, _, share in kinds.values())
    seconds = sum(share / (rates[name] * 1e9) for name, (_, _, share) in kinds.items())
    return {"dtype": dtype, "threads": threads, "batch": BATCH, "seq": seq,
            "rates_gflops": {k: round(v, 1) for k, v in rates.items()},
            "all_threads_gflops": {k: round(v, 1) for k, v in all_threads.items()},
            "one_thread_gflops": {k: round(v, 1) for k, v in one_thread.items()},
            "peak_gflops": round(max(rates.values()), 1),
            "ceiling_gflops": round(total / seconds / 1e9, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description="matmul GFLOP/s of this machine at the embedder's shapes")
    parser.add_argument("--dtype", choices=("bf16", "fp32", "both"), default="both")
    parser.add_argument("--seq", type=int, default=DEFAULT_SEQ)
    args = parser.parse_args()
    shape = model_shape()
    per_chunk = flops_per_sequence(shape, args.seq)
    print(f"model {asdict(shape)}")
    print(f"FLOPs per {args.seq}-piece chunk: {per_chunk / 1e9:.2f} GFLOP")
    for dtype in (("bf16", "fp32") if args.dtype == "both" else (args.dtype,)):
        result = measure_ceiling(dtype, shape, args.seq)
        for name, rate in result["rates_gflops"].items():
            print(f"  {dtype} {name:<24} {rate:8.1f} GFLOP/s   (all threads {result['all_threads_gflops'][name]:.1f}, "
                  f"one thread {result['one_thread_gflops'][name]:.1f})")
        ceiling = result["ceiling_gflops"]
        print(f"{dtype}: peak {result['peak_gflops']:.1f} GFLOP/s, model-shaped ceiling {ceiling:.1f} GFLOP/s "
              f"= {ceiling * 1e9 / per_chunk:.0f} chunks/s of {args.seq} pieces ({result['threads']} threads)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
