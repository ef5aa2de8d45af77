#!/usr/bin/env python3
"""The per-language table of rag-eval/README.md from one folder written by rag-eval/languages.sh, or the paired
before -> after table from two.

    python rag-eval/language_table.py OUT                 # every category at @1 / @5 / @10, chunks, index seconds
    python rag-eval/language_table.py BEFORE AFTER        # the same cells as "before -> after", and gained/lost @5,
                                                          # then each category pooled over the sets at @5

A cell is the mean score of the category's questions (expect_any: hit; cross_file, expect_all: coverage);
"any" pools every expect_any question of the set. Chunks and seconds come from OUT/<set>-index.json.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HOLDOUT = Path(__file__).resolve().parent.parent / "training" / "data" / "holdout.json"
# the eval sets, then the held-out training libraries (languages.sh SETS=heldout: no model of nav trains on them)
SETS = ("click", "werkzeug", "go", "typescript", "javascript", "rust", "java",
        *json.loads(HOLDOUT.read_text(encoding="utf-8"))["holdout"])
CATEGORIES = (("exact_identifier", "exact"), ("semantic", "semantic"), ("value_lookup", "value"),
              ("any", "any"), ("cross_file", "cross cov"))
KS = ("1", "5", "10")


def cells(run: dict) -> dict[str, dict]:
    """category -> {"n", k -> mean score, "scores" -> {query id -> score at 5}}."""
    groups: dict[str, list[dict]] = {}
    for q in run["queries"]:
        groups.setdefault(q["category"], []).append(q)
        if q["mode"] == "any":
            groups.setdefault("any", []).append(q)
    return {c: {"n": len(qs), **{k: sum(q["scores"][k] for q in qs) / len(qs) for k in KS},
                "at5": {q["id"]: q["scores"]["5"] for q in qs}} for c, qs in groups.items()}


def load(folder: Path, name: str, lang: str):
    path = folder / f"{name}-{lang}-graph.json"
    return cells(json.loads(path.read_text())) if path.is_file() else None


def index_facts(folder: Path, name: str) -> str:
    path = folder / f"{name}-index.json"
    if not path.is_file():
        return " | "
    s = json.loads(path.read_text())
    return f"{s['chunks']:,} | {s['seconds']:.0f}"


def table(folders: list[Path]) -> str:
    paired = len(folders) == 2
    head = ["set", "lang"] + [f"{label} @1 / @5 / @10" for _, label in CATEGORIES]
    lines = ["| " + " | ".join(head + (["gained / lost @5"] if paired else ["chunks", "index s"])) + " |",
             "|" + "---|" * (len(head) + (1 if paired else 2))]
    for name in SETS:
        for lang in ("en", "zh"):
            runs = [load(f, name, lang) for f in folders]
            if any(r is None for r in runs):
                continue
            row = [name, lang]
            for category, _ in CATEGORIES:
                if category not in runs[-1]:
                    row.append("")
                    continue
                n = runs[-1][category]["n"]
                if paired:
                    a, b = runs[0][category], runs[1][category]
                    row.append(f"n{n}: " + " / ".join(f"{a[k]:.2f}->{b[k]:.2f}" if abs(a[k] - b[k]) > 1e-9
                                                       else f"{b[k]:.2f}" for k in KS))
                else:
                    row.append(f"n{n}: " + " / ".join(f"{runs[0][category][k]:.2f}" for k in KS))
            if paired:
                gained = lost = 0
                for category in ("any", "cross_file"):
                    if category in runs[1]:
                        a, b = runs[0][category]["at5"], runs[1][category]["at5"]
                        gained += sum(1 for q in b if b[q] > a.get(q, 0) + 1e-9)
                        lost += sum(1 for q in b if b[q] < a.get(q, 0) - 1e-9)
                row.append(f"+{gained} / -{lost}")
            else:
                row.extend(index_facts(folders[0], name).split(" | "))
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def pooled(folders: list[Path]) -> str:
    """Each category's @5 pooled over every set and language both folders hold, paired question by question:
    before -> after, the paired bootstrap 95% CI of the difference (nav compare's), gained / lost."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from navigator.evaluation.compare import paired_bootstrap_ci

    pairs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for name in SETS:
        for lang in ("en", "zh"):
            a, b = (load(f, name, lang) for f in folders)
            if a is None or b is None:
                continue
            for category, _ in CATEGORIES:
                if category in a and category in b:
                    pairs.setdefault((category, lang), []).extend(
                        (score, b[category]["at5"][q]) for q, score in a[category]["at5"].items())
    lines = ["| pooled @5 | lang | n | before -> after | 95% CI of after - before | gained / lost |", "|---|---|---|---|---|---|"]
    for category, label in CATEGORIES:
        for lang in ("all", "en", "zh"):
            rows = pairs.get((category, "en"), []) + pairs.get((category, "zh"), []) if lang == "all" \
                else pairs.get((category, lang), [])
            if not rows:
                continue
            diffs = [after - before for before, after in rows]
            low, high = paired_bootstrap_ci(diffs)
            before, after = (sum(r[i] for r in rows) / len(rows) for i in (0, 1))
            lines.append(f"| {label} | {lang} | {len(rows)} | {before:.3f} -> {after:.3f} | {low:+.3f} .. {high:+.3f} | "
                         f"+{sum(d > 1e-9 for d in diffs)} / -{sum(d < -1e-9 for d in diffs)} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    folders = [Path(a) for a in argv]
    for folder in folders:
        if not folder.is_dir():
            print(f"language_table: no folder {folder}", file=sys.stderr)
            return 2
    print(table(folders))
    if len(folders) == 2:
        print()
        print(pooled(folders))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
