#!/usr/bin/env python3
"""Build the training set of nav's models from the written data and the pinned source trees.

    .venv/bin/python training/data/build.py [--out training/out/data] [--seed 13]

Per library (training/data/sources/NAME.json, its tree fetched by training/data/fetch.py):
  - every file is read as `nav index` reads it (the same walk rules, secret redaction, chunkers.chunk_file),
    so a positive is exactly a chunk nav stores, with the text nav embeds (`embed_text`);
  - each written question (questions/NAME.jsonl) becomes one (query -> positive chunks) pair per expected
    place: the chunks of that file holding its text (an `expect_all` question gives one pair per place);
  - each bug report (bugreports/NAME.jsonl) becomes (the report as nav embeds a long query: its salient
    windows -> the chunk holding its definition), and keeps its file for the file-level models;
  - docstring pairs are mined from the Python files (the first sentence of a documented function's or
    class's docstring -> its chunk), as training/train_cross_encoder.py mines them.
A record that validate.py rejects is left out and counted. Whole libraries are held out for validation:
the ones holdout.json names (chosen once by seed 13 among the first 48 libraries, at least one not Python),
pinned so that a library added later trains and every model's held-out figures stay comparable.

Writes: chunks.jsonl (id, lib, path, kind, symbol, embed_text), pairs.jsonl (qid, lib, source, lang,
category, query, positives, path), split.json (train and held-out libraries), card.json (every count).
"""
from __future__ import annotations

import argparse
import ast
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))
import validate  # noqa: E402

DEFAULT_OUT = REPO / "training" / "out" / "data"
MAX_FILE_BYTES = 1 << 20
MAX_DOCSTRING_PAIRS_PER_LIB = 400


def read_tree(root: Path, excluded: set[str] = frozenset()):
    """(path, text) of every file nav would index under `root`, secrets redacted as the index stores them;
    `excluded` (copies of eval-corpus files, training/data/overlap.py) left out."""
    from navigator.index.secrets import redact
    from navigator.index.walk import read_source, walk_tree
    for f in walk_tree(root, skip=[], max_file_bytes=MAX_FILE_BYTES).files:
        if f.path in excluded:
            continue
        source = read_source(f.abs_path)
        if source.skip_reason is not None or not source.text.strip():
            continue
        yield f.path, redact(f.path, source.text).text


def chunk_library(lib: str, root: Path, excluded: set[str] = frozenset()) -> tuple[list[dict], dict[str, str]]:
    from chunkers import chunk_file
    chunks, texts = [], {}
    for path, text in read_tree(root, excluded):
        texts[path] = text
        for c in chunk_file(path, text).chunks:
            chunks.append({"id": f"{lib}:{c.id}", "lib": lib, "path": path, "kind": c.kind, "symbol": c.symbol,
                           "start_line": c.start_line, "end_line": c.end_line, "text": c.text,
                           "embed_text": c.embed_text})
    return chunks, texts


def positives_for(item: dict, by_path: dict[str, list[dict]], texts: dict[str, str]) -> list[str]:
    """The chunks of item's file that hold its text; when the text spans a chunk boundary, the chunk holding
    its first line."""
    chunks = by_path.get(item["path"], [])
    text = item.get("text")
    if not text:
        return []
    inside = [c["id"] for c in chunks if text in c["text"]]
    if inside:
        return inside
    content = texts.get(item["path"], "")
    at = content.find(text)
    if at < 0:
        return []
    line = content.count("\n", 0, at) + 1
    return [c["id"] for c in chunks if c["start_line"] <= line <= c["end_line"]][:1]


def report_query(text: str) -> str:
    """A bug report as nav's vector head reads it: its salient windows (retrievers.query_analysis)."""
    from retrievers.query_analysis import analyse_query, salient_windows
    return " ".join(salient_windows(analyse_query(text)))


def docstring_pairs(lib: str, texts: dict[str, str], by_path: dict[str, list[dict]], rng: random.Random) -> list[dict]:
    pairs = []
    for path, text in sorted(texts.items()):
        if not path.endswith(".py") or "/test" in f"/{path}" or path.startswith(("tests/", "test/", "docs/")):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc or node.name.startswith("_"):
                continue
            sentence = doc.strip().split("\n\n", 1)[0].replace("\n", " ").split(". ", 1)[0].strip()
            if not 20 <= len(sentence) <= 300:
                continue
            line = node.lineno
            heads = [c["id"] for c in by_path.get(path, []) if c["start_line"] <= line <= c["end_line"]]
            if heads:
                pairs.append({"lib": lib, "source": "docstring", "lang": "en", "category": "docstring",
                              "query": sentence, "positives": heads[:1], "path": path})
    rng.shuffle(pairs)
    return pairs[:MAX_DOCSTRING_PAIRS_PER_LIB]


HOLDOUT_FILE = Path(__file__).resolve().parent / "holdout.json"


def pinned_holdout() -> list[str]:
    """The held-out libraries: every model's held-out MRR is measured on these, so they never change."""
    return sorted(json.loads(HOLDOUT_FILE.read_text(encoding="utf-8"))["holdout"])


def build(out: Path, seed: int) -> dict:
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    evals = validate.eval_questions()
    card: dict = {"libraries": {}, "rejected": {}, "seed": seed, "excluded_files": {}}
    import importlib.util
    from overlap import EvalFiles, eval_trees
    spec = importlib.util.spec_from_file_location("nav_fetch_corpus", REPO / "rag-eval" / "fetch_corpus.py")
    fetch_corpus = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fetch_corpus
    spec.loader.exec_module(fetch_corpus)
    trees = eval_trees(fetch_corpus)
    card["eval_corpora_compared"] = [str(t.name) for t in trees]
    eval_files = EvalFiles(trees)
    all_pairs: list[dict] = []
    languages: dict[str, str] = {}
    with (out / "chunks.jsonl").open("w", encoding="utf-8") as chunk_file_out:
        for lib in validate.all_libraries():
            source = validate.load_source(lib)
            root = validate.tree_of(source)
            if not root.is_dir():
                card["rejected"][lib] = "tree not fetched (training/data/fetch.py)"
                continue
            problems = validate.check_library(lib, evals)
            bad_lines = {p.where for p in problems}
            copies = eval_files.copies_in(root)
            if copies:
                card["excluded_files"][lib] = copies
            chunks, texts = chunk_library(lib, root, set(copies))
            for c in chunks:
                chunk_file_out.write(json.dumps(c, ensure_ascii=False) + "\n")
            by_path: dict[str, list[dict]] = defaultdict(list)
            for c in chunks:
                by_path[c["path"]].append(c)
            languages[lib] = source.get("language", "python")
            counts: Counter = Counter()
            for kind, folder in (("question", validate.QUESTIONS_DIR), ("bug_report", validate.BUGREPORTS_DIR)):
                path = folder / f"{lib}.jsonl"
                if not path.is_file():
                    continue
                for number, record, _ in validate.read_jsonl(path):
                    where = f"{path.relative_to(validate.DATA_DIR)}:{number}"
                    if record is None or any(w == where or w.startswith(where + " ") for w in bad_lines):
                        counts[f"{kind}_rejected"] += 1
                        continue
                    if kind == "question":
                        items = record.get("expect_any") or record.get("expect_all") or []
                        groups = [items] if "expect_any" in record else [[i] for i in items]
                        for n, group in enumerate(groups):
                            positives = sorted({p for item in group for p in positives_for(item, by_path, texts)})
                            if not positives:
                                counts["question_unmapped"] += 1
                                continue
                            all_pairs.append({"qid": f"{record['id']}#{n}", "lib": lib, "source": "question",
                                              "lang": record["lang"], "category": record["category"],
                                              "query": record["query"], "positives": positives,
                                              "path": group[0]["path"]})
                        counts[f"question_{record['lang']}"] += 1
                        counts[f"question_{record['category']}"] += 1
                    else:
                        positives = positives_for(record["definition"], by_path, texts)
                        if not positives:
                            counts["bug_report_unmapped"] += 1
                            continue
                        all_pairs.append({"qid": record["id"], "lib": lib, "source": "bug_report",
                                          "lang": record["lang"], "category": "bug_report",
                                          "query": report_query(record["query"]), "report": record["query"],
                                          "positives": positives[:1], "path": record["definition"]["path"]})
                        counts[f"bug_report_{record['lang']}"] += 1
            docs = docstring_pairs(lib, texts, by_path, rng)
            for n, pair in enumerate(docs):
                pair["qid"] = f"{lib}-doc-{n:04d}"
            all_pairs.extend(docs)
            counts["docstring"] = len(docs)
            counts["chunks"] = len(chunks)
            counts["files"] = len(texts)
            card["libraries"][lib] = {"version": source["version"], "sha256": source["sha256"],
                                      "license": source.get("license"), "language": languages[lib], **counts}
    libs = sorted(card["libraries"])
    held = pinned_holdout()
    missing = [lib for lib in held if lib not in card["libraries"]]
    if missing:
        raise SystemExit(f"build: held-out libraries not built (fetch them first): {', '.join(missing)}")
    split = {"train": [lib for lib in libs if lib not in held], "holdout": held}
    (out / "split.json").write_text(json.dumps(split, indent=1) + "\n", encoding="utf-8")
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as handle:
        for pair in all_pairs:
            handle.write(json.dumps(pair, ensure_ascii=False) + "\n")
    totals = Counter()
    for pair in all_pairs:
        totals[pair["source"]] += 1
        totals[f"{pair['source']}_{pair['lang']}"] += 1
    card["totals"] = dict(totals)
    card["split"] = split
    (out / "card.json").write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")
    return card


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--seed", type=int, default=13)
    args = ap.parse_args(argv)
    card = build(args.out, args.seed)
    print(json.dumps({"totals": card["totals"], "split": card["split"], "rejected": card["rejected"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
