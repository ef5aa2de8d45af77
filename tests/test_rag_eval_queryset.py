"""The shipped evaluation query sets (rag-eval/queries.{en,zh}.jsonl) and their corpus fetcher.

Schema rules come from /work/shared/eval-format.md. The corpus checks need the click 8.1.8
sdist, fetched through pip by rag-eval/fetch_corpus.py; they skip only if that download fails.
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import keyword
import re
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
RAG_EVAL_DIR = REPO_ROOT / "rag-eval"
QUERY_FILES = {"en": RAG_EVAL_DIR / "queries.en.jsonl", "zh": RAG_EVAL_DIR / "queries.zh.jsonl"}
FETCHER_PATH = RAG_EVAL_DIR / "fetch_corpus.py"

CATEGORIES = ("exact_identifier", "semantic", "value_lookup", "cross_file")
MIN_PER_CATEGORY = 16
MIN_PER_LANGUAGE = 64
CROSS_FILE_MIN_ITEMS = 2
CROSS_FILE_MAX_ITEMS = 4
# An expected text found more often than this in its file no longer pins down one answer.
MAX_OCCURRENCES_PER_FILE = 3
EXPECTATION_KEYS = ("expect_any", "expect_all")
ITEM_KEYS = {"path", "text"}
# Identifier-like tokens in an answer line that are too generic to count as "naming" it.
GENERIC_TOKENS = {"self", "str", "int", "bool", "float", "none", "true", "false", "optional"}
MIN_NAMING_TOKEN_LEN = 4
IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BACKTICKED_RE = re.compile(r"`([^`]+)`")
CJK_RE = re.compile(r"[\u4e00-\u9fff]")


def _load_fetcher() -> ModuleType:
    # The folder name has a hyphen, so the script cannot be imported as a package module.
    spec = importlib.util.spec_from_file_location("nav_rag_eval_fetch_corpus", FETCHER_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fetch_corpus = _load_fetcher()


def _load(lang: str) -> list[dict[str, Any]]:
    records = []
    for lineno, line in enumerate(QUERY_FILES[lang].read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            pytest.fail(f"{QUERY_FILES[lang].name}:{lineno}: not JSON ({exc})")
        assert isinstance(record, dict), f"{QUERY_FILES[lang].name}:{lineno}: not an object"
        record["_line"] = lineno
        records.append(record)
    return records


@pytest.fixture(scope="module")
def queries() -> dict[str, list[dict[str, Any]]]:
    return {lang: _load(lang) for lang in QUERY_FILES}


def _items(record: dict[str, Any]) -> list[dict[str, Any]]:
    key = next(k for k in EXPECTATION_KEYS if k in record)
    return record[key]


def _where(record: dict[str, Any]) -> str:
    return f"{record.get('id')} (line {record['_line']})"


# ------------------------------------------------------------------------------------ schema


@pytest.mark.parametrize("lang", sorted(QUERY_FILES))
def test_records_have_required_fields(queries, lang):
    for record in queries[lang]:
        for field in ("id", "lang", "category", "query"):
            assert isinstance(record.get(field), str) and record[field].strip(), (
                f"{_where(record)}: field {field!r} missing or empty"
            )
        assert record["lang"] == lang, f"{_where(record)}: lang {record['lang']!r} in {lang} file"
        assert record["id"].startswith(f"{lang}-"), f"{_where(record)}: id lacks '{lang}-' prefix"
        assert record["category"] in CATEGORIES, f"{_where(record)}: unknown category"


@pytest.mark.parametrize("lang", sorted(QUERY_FILES))
def test_ids_are_unique(queries, lang):
    counts = Counter(record["id"] for record in queries[lang])
    duplicates = sorted(qid for qid, n in counts.items() if n > 1)
    assert not duplicates, f"duplicate ids in {lang}: {duplicates}"


@pytest.mark.parametrize("lang", sorted(QUERY_FILES))
def test_exactly_one_expectation_with_well_formed_items(queries, lang):
    for record in queries[lang]:
        present = [key for key in EXPECTATION_KEYS if key in record]
        assert len(present) == 1, f"{_where(record)}: has {present or 'no expectation'}"
        items = record[present[0]]
        assert isinstance(items, list) and items, f"{_where(record)}: empty {present[0]}"
        for item in items:
            assert isinstance(item, dict) and set(item) <= ITEM_KEYS, f"{_where(record)}: {item!r}"
            path = item.get("path")
            assert isinstance(path, str) and path, f"{_where(record)}: item without path"
            posix = PurePosixPath(path)
            assert not posix.is_absolute() and "\\" not in path and ".." not in posix.parts, (
                f"{_where(record)}: path {path!r} must be relative and '/'-separated"
            )
            # The shipped sets are chunk-level: every item pins a piece of code, not just a file.
            assert isinstance(item.get("text"), str) and item["text"].strip(), (
                f"{_where(record)}: item {path!r} has no text"
            )


@pytest.mark.parametrize("lang", sorted(QUERY_FILES))
def test_category_sizes(queries, lang):
    counts = Counter(record["category"] for record in queries[lang])
    assert len(queries[lang]) >= MIN_PER_LANGUAGE, f"{lang}: only {len(queries[lang])} queries"
    small = {cat: counts.get(cat, 0) for cat in CATEGORIES if counts.get(cat, 0) < MIN_PER_CATEGORY}
    assert not small, f"{lang}: categories below {MIN_PER_CATEGORY}: {small}"


def test_expectation_kind_follows_category(queries):
    for record in queries["en"]:
        if record["category"] == "cross_file":
            items = record.get("expect_all")
            assert items is not None, f"{_where(record)}: cross_file must use expect_all"
            assert CROSS_FILE_MIN_ITEMS <= len(items) <= CROSS_FILE_MAX_ITEMS, _where(record)
            paths = [item["path"] for item in items]
            assert len(set(paths)) == len(paths), f"{_where(record)}: two items share a file"
        else:
            assert "expect_any" in record, f"{_where(record)}: must use expect_any"


def test_zh_twins_match_en(queries):
    en, zh = queries["en"], queries["zh"]
    assert len(en) == len(zh), f"{len(en)} en queries vs {len(zh)} zh queries"
    for en_rec, zh_rec in zip(en, zh):
        assert zh_rec["id"] == "zh-" + en_rec["id"].removeprefix("en-"), (
            f"line {zh_rec['_line']}: {zh_rec['id']} is not the twin of {en_rec['id']}"
        )
        assert zh_rec["category"] == en_rec["category"], _where(zh_rec)
        for key in EXPECTATION_KEYS:
            assert zh_rec.get(key) == en_rec.get(key), f"{_where(zh_rec)}: {key} differs from en"
        assert CJK_RE.search(zh_rec["query"]), f"{_where(zh_rec)}: query is not Chinese"
        assert set(BACKTICKED_RE.findall(zh_rec["query"])) == set(
            BACKTICKED_RE.findall(en_rec["query"])
        ), f"{_where(zh_rec)}: identifiers in backticks must be kept as written"


def _naming_tokens(text: str) -> set[str]:
    """Identifier tokens of an answer line, and their underscore parts, that would give it away."""
    tokens: set[str] = set()
    for token in IDENTIFIER_RE.findall(text):
        for candidate in (token, *token.split("_")):
            lowered = candidate.lower()
            if (
                len(lowered) >= MIN_NAMING_TOKEN_LEN
                and lowered not in GENERIC_TOKENS
                and not keyword.iskeyword(lowered)
            ):
                tokens.add(lowered)
    return tokens


def test_value_lookup_queries_do_not_name_the_answer(queries):
    for record in queries["en"]:
        if record["category"] != "value_lookup":
            continue
        words = set(re.findall(r"[a-z0-9_]+", record["query"].lower()))
        for item in _items(record):
            leaked = _naming_tokens(item["text"]) & words
            assert not leaked, f"{_where(record)}: query contains {sorted(leaked)} from the answer"


def test_exact_identifier_queries_name_an_identifier_of_the_answer(queries):
    for record in queries["en"]:
        if record["category"] != "exact_identifier":
            continue
        named = {name.split(".")[-1] for name in BACKTICKED_RE.findall(record["query"])}
        assert named, f"{_where(record)}: no `identifier` in the query"
        answer_tokens = {tok for item in _items(record) for tok in IDENTIFIER_RE.findall(item["text"])}
        assert named & answer_tokens, f"{_where(record)}: {named} not in the expected text"


def test_semantic_queries_do_not_use_backticked_identifiers(queries):
    for record in queries["en"]:
        if record["category"] == "semantic":
            assert not BACKTICKED_RE.search(record["query"]), f"{_where(record)} names an identifier"


# ------------------------------------------------------------------------------------ corpus


@pytest.fixture(scope="module")
def corpus_root() -> Path:
    try:
        return fetch_corpus.ensure_corpus()
    except fetch_corpus.CorpusDownloadError as exc:
        pytest.skip(f"click sdist could not be downloaded with pip, corpus checks skipped: {exc}")


def _all_items(queries) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    # en and zh share expectations (checked above), so en covers every item.
    return [(record, item) for record in queries["en"] for item in _items(record)]


def test_every_expected_path_exists_in_corpus(queries, corpus_root):
    missing = sorted(
        {f"{record['id']}: {item['path']}" for record, item in _all_items(queries)
         if not (corpus_root / item["path"]).is_file()}
    )
    assert not missing, f"paths missing from {corpus_root}: {missing}"


def test_every_expected_text_occurs_in_its_file(queries, corpus_root):
    absent = []
    for record, item in _all_items(queries):
        file = corpus_root / item["path"]
        if file.is_file() and item["text"] not in file.read_text(encoding="utf-8"):
            absent.append(f"{record['id']}: {item['text']!r} not in {item['path']}")
    assert not absent, "\n".join(absent)


def test_expected_texts_are_specific_to_one_place(queries, corpus_root):
    frequent = []
    for record, item in _all_items(queries):
        file = corpus_root / item["path"]
        if not file.is_file():
            continue
        count = file.read_text(encoding="utf-8").count(item["text"])
        if count > MAX_OCCURRENCES_PER_FILE:
            frequent.append(f"{record['id']}: {item['text']!r} occurs {count}x in {item['path']}")
    assert not frequent, "expected texts too common to pin an answer:\n" + "\n".join(frequent)


def test_corpus_lies_outside_the_repository(corpus_root):
    assert REPO_ROOT not in corpus_root.resolve().parents


# ------------------------------------------------------------------------------------ fetcher


def test_corpus_dir_follows_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(fetch_corpus.CORPUS_DIR_ENV, str(tmp_path / "corpus"))
    assert fetch_corpus.corpus_dir() == tmp_path / "corpus"
    monkeypatch.delenv(fetch_corpus.CORPUS_DIR_ENV)
    default = fetch_corpus.corpus_dir()
    assert default.name == "click-8.1.8" and default.is_absolute()
    assert REPO_ROOT not in default.parents


def _fake_ready_corpus(root: Path, digest: str) -> None:
    (root / fetch_corpus.SENTINEL_PATH).parent.mkdir(parents=True)
    (root / fetch_corpus.SENTINEL_PATH).write_text("# core\n", encoding="utf-8")
    (root / fetch_corpus.MARKER_NAME).write_text(digest + "\n", encoding="utf-8")


def test_ensure_corpus_does_nothing_when_marker_matches(monkeypatch, tmp_path):
    root = tmp_path / "corpus"
    _fake_ready_corpus(root, fetch_corpus.SDIST_SHA256)
    monkeypatch.setenv(fetch_corpus.CORPUS_DIR_ENV, str(root))

    def no_pip(*args, **kwargs):
        raise AssertionError("pip must not run when the corpus is already unpacked")

    monkeypatch.setattr(fetch_corpus.subprocess, "run", no_pip)
    assert fetch_corpus.ensure_corpus() == root


def _serve_archive(monkeypatch, payload: bytes) -> None:
    """Make `pip download` drop `payload` as the sdist archive instead of reaching PyPI."""

    def fake_run(command, **kwargs):
        target = Path(command[command.index("-d") + 1])
        (target / "click-8.1.8.tar.gz").write_bytes(payload)
        return subprocess.CompletedProcess(command, 0, stdout="", stderr="")

    monkeypatch.setattr(fetch_corpus.subprocess, "run", fake_run)


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_ensure_corpus_refuses_an_archive_with_another_hash(monkeypatch, tmp_path):
    root = tmp_path / "corpus"
    monkeypatch.setenv(fetch_corpus.CORPUS_DIR_ENV, str(root))
    _serve_archive(monkeypatch, _tar_gz({"click-8.1.8/src/click/core.py": b"# tampered\n"}))
    with pytest.raises(fetch_corpus.CorpusChecksumError, match="sha256"):
        fetch_corpus.ensure_corpus()
    assert not root.exists()


def test_ensure_corpus_unpacks_a_matching_archive_and_marks_it(monkeypatch, tmp_path):
    root = tmp_path / "corpus"
    payload = _tar_gz({"click-8.1.8/src/click/core.py": b"# core\n", "click-8.1.8/PKG-INFO": b""})
    monkeypatch.setattr(fetch_corpus, "SDIST_SHA256", hashlib.sha256(payload).hexdigest())
    monkeypatch.setenv(fetch_corpus.CORPUS_DIR_ENV, str(root))
    _serve_archive(monkeypatch, payload)
    assert fetch_corpus.ensure_corpus() == root
    assert (root / "src/click/core.py").read_text(encoding="utf-8") == "# core\n"
    assert (root / fetch_corpus.MARKER_NAME).read_text(encoding="utf-8").strip() == (
        fetch_corpus.SDIST_SHA256
    )
    assert [p.name for p in tmp_path.iterdir()] == ["corpus"], "staging folder left behind"


def test_ensure_corpus_reports_a_failed_pip_download(monkeypatch, tmp_path):
    monkeypatch.setenv(fetch_corpus.CORPUS_DIR_ENV, str(tmp_path / "corpus"))

    def failing_run(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, stdout="", stderr="ERROR: no network")

    monkeypatch.setattr(fetch_corpus.subprocess, "run", failing_run)
    with pytest.raises(fetch_corpus.CorpusDownloadError, match="no network"):
        fetch_corpus.ensure_corpus()


def test_ensure_corpus_never_deletes_a_foreign_folder(monkeypatch, tmp_path):
    root = tmp_path / "mine"
    (root / "src/click").mkdir(parents=True)
    (root / "src/click/core.py").write_text("# my checkout\n", encoding="utf-8")
    monkeypatch.setenv(fetch_corpus.CORPUS_DIR_ENV, str(root))
    with pytest.raises(fetch_corpus.CorpusError, match="not a corpus unpacked"):
        fetch_corpus.ensure_corpus()
    assert (root / "src/click/core.py").read_text(encoding="utf-8") == "# my checkout\n"
