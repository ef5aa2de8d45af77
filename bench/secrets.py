#!/usr/bin/env python3
"""What secret redaction (navigator.index.secrets) costs and what it takes away, on real trees (issue 25, part 1).

Per tree (click, werkzeug, a django release, or any TREE given): every file nav would index is read; printed
are the megabytes, the seconds redaction takes (best of three) per MB, and the same per MB for what the
chunk stage does to the same files without it (read + chunk + BM25 tokens), so the ratio is the slowdown of
the lexical index; then the redacted lines (false positives: none of these trees holds a real secret), each
with its file, and whether any of them lies inside an answer of an eval set over that tree.

Usage:  python bench/secrets.py [--tree DIR ...] [--queries FILE ...] [--show 20]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from chunkers import chunk_file  # noqa: E402
from navigator.index.secrets import REDACTION_MARKER, redact  # noqa: E402
from navigator.index.tokenize import document_tokens  # noqa: E402

REPEATS = 3
MAX_FILE_BYTES = 1 << 20


def tree_files(root: Path) -> list[tuple[str, str]]:
    from navigator.index.walk import walk_tree
    files = []
    for f in walk_tree(root, skip=[], max_file_bytes=MAX_FILE_BYTES).files:   # secret-shaped files left out
        raw = f.abs_path.read_bytes()
        if b"\0" in raw[:8192]:
            continue
        files.append((f.path, raw.decode("utf-8", errors="replace")))
    return files


def best(fn) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def answers_of(queries: list[Path]) -> list[tuple[str, str]]:
    out = []
    for path in queries:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                for item in record.get("expect_any") or record.get("expect_all") or []:
                    if item.get("text"):
                        out.append((item["path"], item["text"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", action="append", type=Path, default=[])
    ap.add_argument("--queries", action="append", type=Path, default=[])
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args()
    answers = answers_of(args.queries)
    for root in args.tree:
        files = tree_files(root.expanduser())
        megabytes = sum(len(text.encode("utf-8")) for _, text in files) / 1e6
        redact_s = best(lambda: [redact(path, text) for path, text in files])

        def lexical():
            for path, text in files:
                for chunk in chunk_file(path, text).chunks:
                    document_tokens(chunk.embed_text)
        lexical_s = best(lexical)
        redacted = []
        for path, text in files:
            result = redact(path, text)
            if result.count:
                for number, (before, after) in enumerate(zip(text.split("\n"), result.text.split("\n")), 1):
                    if before != after:
                        redacted.append((path, number, before.strip()[:110], after.strip()[:110]))
        in_answers = [(p, n, b) for p, n, b, _ in redacted if any(p == ap and t in b for ap, t in answers)]
        print(f"{root}: {len(files)} files, {megabytes:.1f} MB")
        print(f"  redaction {redact_s:.2f} s ({redact_s / megabytes:.3f} s/MB); chunking + BM25 tokens "
              f"{lexical_s:.2f} s ({lexical_s / megabytes:.3f} s/MB); redaction adds "
              f"{100 * redact_s / lexical_s:.1f}% to the lexical index")
        print(f"  lines redacted: {len(redacted)} in {len({p for p, *_ in redacted})} files; "
              f"inside an eval answer: {len(in_answers)}")
        for path, number, before, after in redacted[:args.show]:
            print(f"    {path}:{number}: {before}\n      -> {after}")
        for path, number, before in in_answers:
            print(f"  ANSWER REDACTED {path}:{number}: {before}")
        assert all(REDACTION_MARKER not in t for _, t in answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
