"""nav's training data (training/data/, issue 24) never overlaps an evaluation: no source is an eval corpus or
holds a copy of one of its files (exact or near), no question or bug report is a copy or near-copy of an eval
question, and every record follows the brief (training/data/validate.py, against the pinned trees that
training/data/fetch.py fetches by sha256)."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "training" / "data"
sys.path.insert(0, str(DATA))
import validate  # noqa: E402

MIN_WRITTEN_QUESTIONS, MIN_BUG_REPORTS, MIN_LIBRARIES, MIN_ZH_SHARE = 4000, 1500, 20, 0.25


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fetch_corpus = _load(REPO / "rag-eval" / "fetch_corpus.py", "nav_fetch_corpus_training")
fetch_sources = _load(DATA / "fetch.py", "nav_fetch_training_sources")
LIBRARIES = validate.all_libraries()


def _records(folder: Path) -> list[dict]:
    return [r for path in sorted(folder.glob("*.jsonl")) for _, r, _ in validate.read_jsonl(path) if r]


def test_the_data_is_as_large_and_as_mixed_as_the_issue_asks():
    questions, reports = _records(validate.QUESTIONS_DIR), _records(validate.BUGREPORTS_DIR)
    assert len(LIBRARIES) >= MIN_LIBRARIES
    assert len(questions) >= MIN_WRITTEN_QUESTIONS and len(reports) >= MIN_BUG_REPORTS
    assert sum(q["lang"] == "zh" for q in questions) / len(questions) >= MIN_ZH_SHARE
    assert {q["category"] for q in questions} == validate.QUESTION_CATEGORIES
    assert len({q["source"] for q in questions}) >= MIN_LIBRARIES
    lengths = sorted(len(r["query"]) for r in reports)      # one line to a page (with a traceback)
    assert lengths[len(lengths) // 10] < 200 and sum(n > 1000 for n in lengths) >= len(lengths) // 20


def test_no_source_is_an_eval_corpus():
    eval_names = validate.FORBIDDEN_SOURCES | {fetch_corpus.load_set_spec(s)["name"].rsplit("/", 1)[-1].lower()
                                               for s in fetch_corpus.set_names()}
    for lib in LIBRARIES:
        source = validate.load_source(lib)
        assert source["name"].lower() not in eval_names and lib.lower() not in eval_names, lib
        assert re.fullmatch(r"[0-9a-f]{64}", source["sha256"]), lib


def test_no_question_or_report_copies_an_eval_question():
    evals = validate.eval_questions()
    assert len(evals) > 300          # every set under rag-eval/ is read
    copies = [(r["id"], hit) for r in _records(validate.QUESTIONS_DIR) + _records(validate.BUGREPORTS_DIR)
              if (hit := validate.near_copy_of_eval(r["query"], evals))]
    assert not copies, copies[:5]


@pytest.fixture(scope="module")
def training_trees():
    """Every pinned source, fetched and checked by sha256 (skipped only when the registries are unreachable)."""
    fc = fetch_sources._fetch_corpus()
    try:
        return {lib: fetch_sources.ensure_source(lib, fc) for lib in LIBRARIES}
    except fc.CorpusDownloadError as exc:
        pytest.skip(f"the training sources could not be fetched: {exc}")


def test_every_record_follows_the_brief_in_its_pinned_tree(training_trees):
    evals = validate.eval_questions()
    problems = [str(p) for lib in LIBRARIES for p in validate.check_library(lib, evals)]
    assert not problems, "\n".join(problems[:20])


def test_every_copy_of_an_eval_corpus_file_is_left_out_of_the_training_set(training_trees):
    """overlap.py finds the copies (exact, or half of the distinctive lines); build.py leaves them out and
    card.json lists them: a copy the card does not list fails here."""
    from overlap import EvalFiles, eval_trees
    try:
        eval_files = EvalFiles(eval_trees(fetch_corpus))
    except fetch_corpus.CorpusDownloadError as exc:
        pytest.skip(f"an eval corpus could not be fetched: {exc}")
    excluded = json.loads((DATA / "card.json").read_text(encoding="utf-8"))["excluded_files"]
    unlisted = [f"{lib}:{path} ~ {hit}" for lib, tree in training_trees.items()
                for path, hit in eval_files.copies_in(tree).items() if path not in excluded.get(lib, {})]
    assert not unlisted, "\n".join(unlisted[:20])
    written = {(r["source"], i["path"]) for r in _records(validate.QUESTIONS_DIR) + _records(validate.BUGREPORTS_DIR)
               for i in (r.get("expect_any") or r.get("expect_all") or [])}
    assert not [(lib, path) for lib, paths in excluded.items() for path in paths if (lib, path) in written]


def test_the_card_counts_what_is_there():
    card = json.loads((DATA / "card.json").read_text(encoding="utf-8"))
    assert set(card["libraries"]) == set(LIBRARIES)
    questions = defaultdict(int)
    for r in _records(validate.QUESTIONS_DIR):
        questions[r["source"]] += 1
    for lib, facts in card["libraries"].items():
        assert facts["question_en"] + facts["question_zh"] + facts.get("question_rejected", 0) == questions[lib], lib
    assert set(card["split"]["holdout"]) <= set(LIBRARIES) and not set(card["split"]["holdout"]) & set(card["split"]["train"])
    # the held-out libraries are the pinned ones: a library added later trains, it never moves the split
    pinned = json.loads((DATA / "holdout.json").read_text(encoding="utf-8"))["holdout"]
    assert card["split"]["holdout"] == sorted(pinned) and len(pinned) == 5
