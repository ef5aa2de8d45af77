"""What share of chunks the embed rule (navigator/index/embed_rule.py) leaves out, per corpus and category,
and whether any eval answer lives in a left-out file. Chunks as `nav index` makes them (walk + chunker),
no embedding. Usage: .venv/bin/python patches/0009-embed-skip-rule/share.py"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from chunkers import chunk_file  # noqa: E402
from navigator.core.config import Config  # noqa: E402
from navigator.index.embed_rule import category  # noqa: E402
from navigator.index.walk import read_source, walk_tree  # noqa: E402

DEVSET = Path("/work/shared/devsets/swe-django")
CORPORA = {
    "click-8.1.8": (Path("/root/.cache/nav/rag-eval/click-8.1.8"),
                    [ROOT / "rag-eval/queries.en.jsonl", ROOT / "rag-eval/queries.zh.jsonl"]),
    "werkzeug-3.1.3": (Path(os.path.expanduser("~/.cache/nav/bench/src/werkzeug-3.1.3")),
                       [ROOT / "rag-eval/werkzeug/queries.en.jsonl", ROOT / "rag-eval/werkzeug/queries.zh.jsonl"]),
    "django-3.0": (Path(os.path.expanduser("~/.cache/nav-devsets/django-3.0")), sorted(DEVSET.glob("django-*.jsonl"))),
}


def chunk_share(tree: Path) -> tuple[int, Counter, Counter]:
    config = Config.from_env()
    walked = walk_tree(tree, skip=[], max_file_bytes=config.max_file_bytes)
    total, by_cat, by_suffix = 0, Counter(), Counter()
    for f in walked.files:
        src = read_source(f.abs_path)
        if src.skip_reason is not None or not src.text.strip():
            continue
        n = len(chunk_file(f.path, src.text).chunks)
        total += n
        cat = category(f.path)
        if cat:
            by_cat[cat] += n
            by_suffix[Path(f.path).suffix or Path(f.path).name] += n
    return total, by_cat, by_suffix


def gold_paths(query_files) -> list[str]:
    paths = []
    for qf in query_files:
        for line in Path(qf).read_text(encoding="utf-8").splitlines():
            if line.strip():
                paths.extend(e["path"] for e in json.loads(line).get("expect_any", []) if e.get("path"))
    return paths


def main() -> None:
    for name, (tree, queries) in CORPORA.items():
        golds = gold_paths(queries)
        in_excluded = [p for p in golds if category(p)]
        print(f"{name}: {len(golds)} gold answers in {len(set(golds))} files; in left-out files: {len(in_excluded)} {sorted(set(in_excluded))[:5]}")
        if not tree.is_dir():
            print(f"  tree not present: {tree}")
            continue
        total, by_cat, by_suffix = chunk_share(tree)
        left = sum(by_cat.values())
        print(f"  chunks {total}, left out {left} ({100 * left / max(total, 1):.1f}%): "
              + ", ".join(f"{c} {n}" for c, n in by_cat.most_common()))
        print("  by suffix: " + ", ".join(f"{s} {n}" for s, n in by_suffix.most_common(8)))


if __name__ == "__main__":
    main()
