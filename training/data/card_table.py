#!/usr/bin/env python3
"""Print the two tables of the data card (training/data/README.md: "What it is" and "Sources") from card.json,
the build's own counts, so the README says what build.py counted and nothing else.

    python training/data/card_table.py            # paste the output over the README's two tables
Stdlib only.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import validate  # noqa: E402

CATEGORIES = ("exact_identifier", "semantic", "value_lookup", "cross_file")
LANGUAGE_NAMES = {"typescript": "TypeScript", "javascript": "JavaScript"}


def summary(card: dict) -> str:
    libs = card["libraries"]
    languages = Counter(facts["language"] for facts in libs.values())
    questions = {c: sum(f.get(f"question_{c}", 0) for f in libs.values()) for c in CATEGORIES}
    total_questions = sum(questions.values())
    zh = sum(f.get("question_zh", 0) for f in libs.values())
    reports = [r for path in sorted(validate.BUGREPORTS_DIR.glob("*.jsonl")) if path.stem in libs
               for _, r, _ in validate.read_jsonl(path) if r]
    report_zh = sum(r["lang"] == "zh" for r in reports)
    lengths = [len(r["query"]) for r in reports]
    totals = card["totals"]
    language_list = ", ".join(f"{n} {LANGUAGE_NAMES.get(name, name.capitalize())}"
                              for name, n in languages.most_common())
    rows = [
        ("libraries (pinned sources)", f"{len(libs)}: {language_list}"),
        ("written questions", f"{total_questions:,} ({zh:,} Chinese, {zh / total_questions:.0%}): "
                              + ", ".join(f"{c} {questions[c]:,}" for c in CATEGORIES)),
        ("training pairs from them", f"{totals['question']:,} (a cross_file question gives one pair per place)"),
        ("written bug reports", f"{len(reports):,} ({report_zh:,} Chinese): one line to a page with a traceback "
                                f"(median {statistics.median(lengths):.0f} characters, "
                                f"{sum(n > 1000 for n in lengths):,} over 1,000)"),
        ("docstring pairs (mined by build.py)", f"{totals.get('docstring', 0):,} (at most 400 per library: the "
                                                "first sentence of a public function's or class's docstring -> its chunk)"),
        ("held out for validation", ", ".join(card["split"]["holdout"])
         + " (whole libraries, pinned in holdout.json)"),
    ]
    return "\n".join(["| | count |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows])


def sources(card: dict) -> str:
    lines = ["| library | version | language | license | questions (zh) | bug reports (zh) | docstring pairs | sha256 |",
             "|---|---|---|---|---|---|---|---|"]
    for name, f in sorted(card["libraries"].items()):
        questions = f.get("question_en", 0) + f.get("question_zh", 0)
        reports = f.get("bug_report_en", 0) + f.get("bug_report_zh", 0)
        lines.append(f"| {name} | {f['version']} | {f['language']} | {f['license']} | {questions} "
                     f"({f.get('question_zh', 0)}) | {reports} ({f.get('bug_report_zh', 0)}) | "
                     f"{f.get('docstring', 0)} | `{f['sha256'][:16]}…` |")
    return "\n".join(lines)


def main() -> int:
    card = json.loads((HERE / "card.json").read_text(encoding="utf-8"))
    print(summary(card))
    print()
    print(sources(card))
    return 0


if __name__ == "__main__":
    sys.exit(main())
