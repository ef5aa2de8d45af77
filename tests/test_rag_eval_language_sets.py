"""The query sets of the languages beside Python (rag-eval/<set>/, issue 23): well-formed, following the categories'
rules, and answered by their pinned corpus (fetched by rag-eval/fetch_corpus.py by URL and sha256, unpacked
outside this repository; the corpus checks skip only when the registry cannot be reached)."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
RAG_EVAL = REPO_ROOT / "rag-eval"
CATEGORIES = {"exact_identifier", "semantic", "value_lookup", "cross_file"}
MIN_EN_PER_CATEGORY, MIN_EN, MIN_ZH = 6, 24, 8
MAX_OCCURRENCES_PER_FILE = 3
BACKTICKED = re.compile(r"`([^`]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CJK = re.compile(r"[\u4e00-\u9fff]")
GENERIC = {"self", "str", "int", "bool", "float", "none", "true", "false", "optional", "func", "return", "const",
           "string", "public", "static", "final", "export", "function", "this", "null", "type", "struct"}


def _fetcher():
    spec = importlib.util.spec_from_file_location("nav_rag_eval_fetch_corpus_sets", RAG_EVAL / "fetch_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fetch_corpus = _fetcher()
SETS = fetch_corpus.set_names()


def _load(name: str, lang: str) -> list[dict]:
    path = RAG_EVAL / name / f"queries.{lang}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _items(record: dict) -> list[dict]:
    return record.get("expect_any") or record.get("expect_all") or []


def _naming_tokens(text: str) -> set[str]:
    tokens = set()
    for token in IDENTIFIER.findall(text):
        for part in (token, *token.split("_"), *re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", token)):
            if len(part) >= 4 and part.lower() not in GENERIC:
                tokens.add(part.lower())
    return tokens


def test_the_five_languages_of_issue_23_have_sets():
    assert {"go", "typescript", "javascript", "rust", "java"} <= set(SETS)


@pytest.mark.parametrize("name", SETS)
def test_a_set_is_well_formed_and_pins_its_corpus(name):
    spec = fetch_corpus.load_set_spec(name)
    assert re.fullmatch(r"[0-9a-f]{64}", spec["sha256"]) and spec["url"].startswith(("http://", "https://"))
    assert spec["name"].lower() not in {"chi", "mobx", "clap"}        # kept back for measurement
    en, zh = _load(name, "en"), _load(name, "zh")
    assert len(en) >= MIN_EN and len(zh) >= MIN_ZH
    for category in CATEGORIES:
        assert sum(r["category"] == category for r in en) >= MIN_EN_PER_CATEGORY, (name, category)
        assert any(r["category"] == category for r in zh), (name, category)
    ids = [r["id"] for r in en + zh]
    assert len(ids) == len(set(ids))
    for r in en + zh:
        assert r["lang"] == ("zh" if r in zh else "en") and r["category"] in CATEGORIES
        assert ("expect_all" in r) == (r["category"] == "cross_file") and ("expect_any" in r) != ("expect_all" in r)
        assert bool(CJK.search(r["query"])) == (r["lang"] == "zh"), r["id"]
        if r["category"] == "cross_file":
            assert len({i["path"] for i in r["expect_all"]}) >= 2, r["id"]


@pytest.mark.parametrize("name", SETS)
def test_the_category_rules_hold(name):
    for r in _load(name, "en") + _load(name, "zh"):
        texts = [i["text"] for i in _items(r)]
        if r["category"] == "exact_identifier":
            named = {n.replace("::", ".").split(".")[-1].strip("()") for n in BACKTICKED.findall(r["query"])}
            assert named & {t for text in texts for t in IDENTIFIER.findall(text)}, r["id"]
        elif r["category"] == "semantic":
            assert not BACKTICKED.search(r["query"]), r["id"]
        elif r["category"] == "value_lookup":
            words = set(re.findall(r"[a-z0-9_]+", r["query"].lower()))
            leaked = {t for text in texts for t in _naming_tokens(text)} & words
            assert not leaked, f"{r['id']}: the question says its answer line's words {sorted(leaked)}"


@pytest.mark.parametrize("name", SETS)
def test_every_expected_text_occurs_in_its_pinned_file(name):
    try:
        root = fetch_corpus.ensure_set_corpus(name)
    except fetch_corpus.CorpusDownloadError as exc:
        pytest.skip(f"the {name} corpus could not be fetched: {exc}")
    assert REPO_ROOT not in root.resolve().parents, "answers must not live inside this repository"
    problems = []
    for r in _load(name, "en") + _load(name, "zh"):
        for item in _items(r):
            file = root / item["path"]
            count = file.read_text(encoding="utf-8", errors="replace").count(item["text"]) if file.is_file() else 0
            if not 1 <= count <= MAX_OCCURRENCES_PER_FILE:
                problems.append(f"{r['id']}: {item['text']!r} occurs {count}x in {item['path']}")
    assert not problems, "\n".join(problems)
