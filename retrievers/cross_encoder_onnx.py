"""Cross-encoder scoring without torch: a CrossEncoder exported to ONNX, run by onnxruntime + tokenizers.

The rerank retriever scores 10-50 (query, chunk) pairs per query; importing torch and sentence-transformers
for that costs seconds before the first score. An export made here needs only onnxruntime, tokenizers and
numpy at query time, and it can be shipped inside the package (nav's own model: training/README.md).

Layout of one export directory:
    model.onnx          inputs input_ids, attention_mask, token_type_ids (int64, batch x sequence);
                        output logits (batch x 1); int8 dynamically quantized when `quantize` was asked
    model.fp32.onnx     the unquantized graph (export staging only; not shipped)
    tokenizer.json      the model's fast tokenizer, truncating pairs longest-first at max_length
    cross_encoder.json  max_length, input names, activation, quantization: written last, so its presence
                        marks a complete export
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

from navigator.core.errors import ModelError

SPEC_FILE = "cross_encoder.json"
MODEL_FILE = "model.onnx"
FP32_MODEL_FILE = "model.fp32.onnx"
TOKENIZER_FILE = "tokenizer.json"
EXPORT_FORMAT = 1
ONNX_OPSET = 17
# The rerank pool is scored in one call; onnxruntime's own thread pool costs more than it saves on the
# small batches of one query (same finding as the query embedder).
SCORE_THREADS = 1
SCORE_BATCH = 16
# An fp32 export whose logits differ from torch's by more than this is refused.
EXPORT_MAX_LOGIT_DIFF = 1e-3
_PROBE_PAIRS = (("where is the retry policy configured", "def retry(times: int = 3):\n    return Policy(times)"),
                ("x", "y"),
                ("how are command line arguments parsed", "class Parser:\n    def parse_args(self, argv):\n        pass"))


def is_cross_encoder_export(directory: Path) -> bool:
    """True when `directory` holds a complete export made by `export_cross_encoder`."""
    directory = Path(directory)
    try:
        spec = json.loads((directory / SPEC_FILE).read_text())
    except (OSError, ValueError):
        return False
    return spec.get("format") == EXPORT_FORMAT and all((directory / f).is_file() for f in (MODEL_FILE, TOKENIZER_FILE))


def export_cross_encoder(model_dir: Path, out_dir: Path, *, max_length: int, quantize: bool = True) -> dict:
    """Export the saved CrossEncoder (or Hugging Face sequence-classification model) in `model_dir` with
    one output logit to `out_dir`. Needs torch, transformers, onnx (and onnxruntime's quantizer). Returns the
    spec written to cross_encoder.json plus the export's agreement with torch on probe pairs."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model_dir, out_dir = Path(model_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / SPEC_FILE).unlink(missing_ok=True)   # incomplete until the spec is written again
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    # Eager attention traces to plain MatMul/Softmax with no shape-dependent Python branches.
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), local_files_only=True,
                                                               attn_implementation="eager").eval()
    if model.config.num_labels != 1:
        raise ModelError(f"{model_dir} has {model.config.num_labels} labels; a reranker needs one score per pair")
    backend = tokenizer.backend_tokenizer
    backend.no_padding()
    backend.enable_truncation(max_length, strategy="longest_first")
    backend.save(str(out_dir / TOKENIZER_FILE))
    input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]
    probe = tokenizer([q for q, _ in _PROBE_PAIRS], [p for _, p in _PROBE_PAIRS], padding=True,
                      truncation="longest_first", max_length=max_length, return_tensors="pt")
    inputs = tuple(probe[n] for n in input_names)

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(input_names, args))).logits

    wrapper = Logits(model)
    axes = {n: {0: "batch", 1: "sequence"} for n in input_names}
    axes["logits"] = {0: "batch"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = wrapper(*inputs).numpy()[:, 0]
        torch.onnx.export(wrapper, inputs, str(out_dir / FP32_MODEL_FILE), dynamo=False, input_names=input_names,
                          output_names=["logits"], dynamic_axes=axes, opset_version=ONNX_OPSET,
                          do_constant_folding=True)
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic
        quantize_dynamic(str(out_dir / FP32_MODEL_FILE), str(out_dir / MODEL_FILE), weight_type=QuantType.QInt8)
    else:
        import shutil
        shutil.copy2(out_dir / FP32_MODEL_FILE, out_dir / MODEL_FILE)
    spec = {"format": EXPORT_FORMAT, "max_length": max_length, "input_names": input_names,
            "activation": "sigmoid", "quantized": "int8-dynamic" if quantize else None, "opset": ONNX_OPSET,
            "source": model_dir.name}
    (out_dir / SPEC_FILE).write_text(json.dumps(spec, indent=2) + "\n")
    feeds = {n: probe[n].numpy() for n in input_names}
    fp32 = OnnxCrossEncoder(out_dir, model_file=FP32_MODEL_FILE).logits(feeds)
    diff = float(np.max(np.abs(fp32 - expected)))
    if diff > EXPORT_MAX_LOGIT_DIFF:
        (out_dir / SPEC_FILE).unlink()
        raise ModelError(f"the ONNX export of {model_dir} disagrees with torch (logit difference {diff:.2e})")
    return dict(spec, probe_max_logit_diff_fp32=diff,
                size_bytes=(out_dir / MODEL_FILE).stat().st_size,
                fp32_size_bytes=(out_dir / FP32_MODEL_FILE).stat().st_size)


class OnnxCrossEncoder:
    """Scores (query, passage) pairs with an export made by `export_cross_encoder`. Imports only
    tokenizers, onnxruntime and numpy. `predict` mirrors sentence-transformers' CrossEncoder.predict for
    one-label models (sigmoid of the logit), so the rerank retriever can hold either."""

    def __init__(self, directory: Path, model_file: str = MODEL_FILE):
        self.directory = Path(directory)
        if not is_cross_encoder_export(self.directory):
            raise ModelError(f"no complete cross-encoder export in {self.directory}",
                             hint="export one with training/train_cross_encoder.py export, or point "
                                  "NAV_RERANK_MODEL at a saved CrossEncoder directory")
        self.spec = json.loads((self.directory / SPEC_FILE).read_text())
        import onnxruntime
        from tokenizers import Tokenizer

        self.max_length = int(self.spec["max_length"])
        self.tokenizer = Tokenizer.from_file(str(self.directory / TOKENIZER_FILE))
        self.tokenizer.enable_truncation(self.max_length, strategy="longest_first")
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = SCORE_THREADS
        options.inter_op_num_threads = SCORE_THREADS
        options.log_severity_level = 3
        try:
            self.session = onnxruntime.InferenceSession(str(self.directory / model_file), options,
                                                        providers=["CPUExecutionProvider"])
        except (RuntimeError, ValueError) as exc:   # a truncated or foreign file
            raise ModelError(f"onnxruntime cannot load {self.directory / model_file}: {exc}",
                             hint="reinstall nav, or export the model again") from exc
        self.input_names: list[str] = list(self.spec["input_names"])

    def logits(self, feeds: dict):
        import numpy as np
        feeds = {n: np.asarray(feeds[n], dtype=np.int64) for n in self.input_names}
        return self.session.run(None, feeds)[0][:, 0].astype(np.float64)

    def score(self, pairs, batch_size: int = SCORE_BATCH):
        """The raw logit of every (query, passage) pair, as float64 (higher: more relevant)."""
        import numpy as np
        out = []
        pairs = list(pairs)
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start:start + batch_size]
            encodings = self.tokenizer.encode_batch([(q, p) for q, p in batch])
            width = max(len(e.ids) for e in encodings)
            columns = {"input_ids": np.zeros((len(batch), width), dtype=np.int64),
                       "attention_mask": np.zeros((len(batch), width), dtype=np.int64),
                       "token_type_ids": np.zeros((len(batch), width), dtype=np.int64)}
            for row, e in enumerate(encodings):
                n = len(e.ids)
                columns["input_ids"][row, :n] = e.ids
                columns["attention_mask"][row, :n] = e.attention_mask
                columns["token_type_ids"][row, :n] = e.type_ids
            out.append(self.logits(columns))
        return np.concatenate(out) if out else np.zeros(0)

    def predict(self, pairs, batch_size: int = SCORE_BATCH, show_progress_bar: bool = False):
        """CrossEncoder.predict's contract for a one-label model: sigmoid(logit) per pair."""
        import numpy as np
        return 1.0 / (1.0 + np.exp(-self.score(pairs, batch_size)))
