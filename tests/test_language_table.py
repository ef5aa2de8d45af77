"""rag-eval/language_table.py: the pooled rows pair each question with itself across two folders of runs."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("nav_language_table", REPO / "rag-eval" / "language_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(folder: Path, name: str, lang: str, scores: dict[str, tuple[str, float]]) -> None:
    queries = [{"id": q, "category": category, "mode": "all" if category == "cross_file" else "any",
                "scores": {"1": score, "5": score, "10": score}} for q, (category, score) in scores.items()]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}-{lang}-graph.json").write_text(json.dumps({"queries": queries}))


def test_pooled_rows_pair_questions_across_sets_and_languages(tmp_path):
    table = _module()
    before, after = tmp_path / "before", tmp_path / "after"
    _run(before, "click", "en", {"s1": ("semantic", 0.0), "s2": ("semantic", 1.0), "c1": ("cross_file", 0.5)})
    _run(after, "click", "en", {"s1": ("semantic", 1.0), "s2": ("semantic", 1.0), "c1": ("cross_file", 0.0)})
    _run(before, "werkzeug", "zh", {"s1": ("semantic", 1.0)})     # same id in another set: its own question
    _run(after, "werkzeug", "zh", {"s1": ("semantic", 0.0)})
    _run(before, "go", "en", {"s9": ("semantic", 0.0)})           # only in one folder: not paired
    rows = {tuple(cell.strip() for cell in line.strip("|").split("|")[:2]): line
            for line in table.pooled([before, after]).splitlines()[2:]}
    assert "| 3 | 0.667 -> 0.667 |" in rows[("semantic", "all")] and rows[("semantic", "all")].endswith("+1 / -1 |")
    assert "| 2 | 0.500 -> 1.000 |" in rows[("semantic", "en")]
    assert "| 1 | 1.000 -> 0.000 |" in rows[("semantic", "zh")]
    assert "| 1 | 0.500 -> 0.000 |" in rows[("cross cov", "en")] and rows[("cross cov", "en")].endswith("+0 / -1 |")
    assert ("exact", "all") not in rows
