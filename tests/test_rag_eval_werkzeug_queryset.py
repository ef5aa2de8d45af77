"""The werkzeug query sets (rag-eval/werkzeug/queries.{zh,en}.jsonl): the second Chinese set, written in Chinese
for a corpus the glossary was not written for, and its English twin of the same intents.

Schema rules come from /work/shared/eval-format.md. The corpus checks need the werkzeug 3.1.3 sdist, fetched
by bench/corpora.py (pip download, sha256-checked); they skip only if that download fails.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SET_DIR = REPO_ROOT / "rag-eval" / "werkzeug"
QUERY_FILES = {"en": SET_DIR / "queries.en.jsonl", "zh": SET_DIR / "queries.zh.jsonl"}
CORPORA_PATH = REPO_ROOT / "bench" / "corpora.py"
CORPUS_SIZE = "medium"     # bench/corpora.py's name for werkzeug 3.1.3

CATEGORIES = ("exact_identifier", "semantic", "value_lookup", "cross_file")
MIN_PER_CATEGORY = 10
CROSS_FILE_ITEMS = range(2, 5)
MAX_OCCURRENCES_PER_FILE = 3
EXPECTATION_KEYS = ("expect_any", "expect_all")
BACKTICKED_RE = re.compile(r"`([^`]+)`")
IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
MIN_NAMING_TOKEN_LEN = 4
GENERIC_TOKENS = {"self", "str", "int", "bool", "float", "none", "true", "false", "optional"}


def _load(lang: str) -> list[dict[str, Any]]:
    records = []
    for lineno, line in enumerate(QUERY_FILES[lang].read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            record = json.loads(line)
            record["_line"] = lineno
            records.append(record)
    return records


@pytest.fixture(scope="module")
def queries() -> dict[str, list[dict[str, Any]]]:
    return {lang: _load(lang) for lang in QUERY_FILES}


def _items(record: dict[str, Any]) -> list[dict[str, Any]]:
    return next(record[key] for key in EXPECTATION_KEYS if key in record)


@pytest.mark.parametrize("lang", sorted(QUERY_FILES))
def test_records_are_well_formed(queries, lang):
    ids = Counter(r["id"] for r in queries[lang])
    assert not [i for i, n in ids.items() if n > 1], "duplicate ids"
    for r in queries[lang]:
        where = f"{r.get('id')} (line {r['_line']})"
        assert r["lang"] == lang and r["id"].startswith(f"{lang}-"), where
        assert r["category"] in CATEGORIES and r["query"].strip(), where
        present = [key for key in EXPECTATION_KEYS if key in r]
        assert len(present) == 1, where
        for item in _items(r):
            assert set(item) == {"path", "text"} and item["text"].strip(), where
            posix = PurePosixPath(item["path"])
            assert not posix.is_absolute() and ".." not in posix.parts, where
        if r["category"] == "cross_file":
            paths = [item["path"] for item in r["expect_all"]]
            assert len(paths) in CROSS_FILE_ITEMS and len(set(paths)) == len(paths), where
        else:
            assert "expect_any" in r, where
    counts = Counter(r["category"] for r in queries[lang])
    assert all(counts[c] >= MIN_PER_CATEGORY for c in CATEGORIES), counts


def test_zh_and_en_are_twins_of_the_same_intents(queries):
    en, zh = queries["en"], queries["zh"]
    assert [r["id"].removeprefix("en-") for r in en] == [r["id"].removeprefix("zh-") for r in zh]
    for en_rec, zh_rec in zip(en, zh):
        assert zh_rec["category"] == en_rec["category"], zh_rec["id"]
        assert _items(zh_rec) == _items(en_rec), zh_rec["id"]
        assert CJK_RE.search(zh_rec["query"]) and not CJK_RE.search(en_rec["query"]), zh_rec["id"]
        assert set(BACKTICKED_RE.findall(zh_rec["query"])) == set(BACKTICKED_RE.findall(en_rec["query"])), (
            f"{zh_rec['id']}: both phrasings name the same identifiers"
        )


def _naming_tokens(text: str) -> set[str]:
    tokens = set()
    for token in IDENTIFIER_RE.findall(text):
        for part in (token, *token.split("_")):
            if len(part) >= MIN_NAMING_TOKEN_LEN and part.lower() not in GENERIC_TOKENS:
                tokens.add(part.lower())
    return tokens


@pytest.mark.parametrize("lang", sorted(QUERY_FILES))
def test_category_rules_hold_in_both_phrasings(queries, lang):
    for r in queries[lang]:
        words = set(re.findall(r"[a-z0-9_]+", r["query"].lower()))
        if r["category"] == "value_lookup":
            leaked = {tok for item in _items(r) for tok in _naming_tokens(item["text"])} & words
            assert not leaked, f"{r['id']}: the question names the answer line: {sorted(leaked)}"
        elif r["category"] == "exact_identifier":
            named = {name.split(".")[-1] for name in BACKTICKED_RE.findall(r["query"])}
            answer = {tok for item in _items(r) for tok in IDENTIFIER_RE.findall(item["text"])}
            assert named & answer, f"{r['id']}: {named} not in the expected text"
        elif r["category"] == "semantic":
            assert not BACKTICKED_RE.search(r["query"]), f"{r['id']} names an identifier"


@pytest.fixture(scope="module")
def corpus_root() -> Path:
    spec = importlib.util.spec_from_file_location("nav_bench_corpora", CORPORA_PATH)
    corpora = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = corpora     # its dataclasses look their module up there
    spec.loader.exec_module(corpora)
    try:
        return corpora.ensure_sdist(corpora.CORPORA[CORPUS_SIZE].current)
    except corpora.BenchError as exc:
        pytest.skip(f"werkzeug sdist could not be fetched, corpus checks skipped: {exc}")


def test_every_expected_text_occurs_in_its_file_and_pins_it(queries, corpus_root):
    assert REPO_ROOT not in corpus_root.resolve().parents, "answers must not live inside this repository"
    problems = []
    for r in queries["en"]:      # zh shares the expectations (checked above)
        for item in _items(r):
            file = corpus_root / item["path"]
            count = file.read_text(encoding="utf-8").count(item["text"]) if file.is_file() else 0
            if not 1 <= count <= MAX_OCCURRENCES_PER_FILE:
                problems.append(f"{r['id']}: {item['text']!r} occurs {count}x in {item['path']}")
    assert not problems, "\n".join(problems)
