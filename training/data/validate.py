#!/usr/bin/env python3
"""Check the written training data of one library, or of all (`WRITING.md` says what is checked).

Usage:
    python training/data/validate.py attrs [httpx ...]     # or no name: every library with a source record
    NAV_TRAINING_SRC=~/.cache/nav/training-src python training/data/validate.py

Exit 0 when every record passes, 1 with one line per problem otherwise. Stdlib only, so a writer can run
it before nav's dependencies are installed; `training/data/build.py` and the tests call the same functions.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
REPO_ROOT = DATA_DIR.parents[1]
SOURCES_DIR = DATA_DIR / "sources"
QUESTIONS_DIR = DATA_DIR / "questions"
BUGREPORTS_DIR = DATA_DIR / "bugreports"
SOURCE_TREES_ENV = "NAV_TRAINING_SRC"
DEFAULT_SOURCE_TREES = Path("~/.cache/nav/training-src").expanduser()

QUESTION_CATEGORIES = frozenset({"exact_identifier", "semantic", "value_lookup", "cross_file"})
LANGS = frozenset({"en", "zh"})
# Every repository an evaluation uses, ours and the ones kept back from us (issue 24), plus nav itself.
FORBIDDEN_SOURCES = frozenset({
    "click", "werkzeug", "flask", "jinja2", "itsdangerous", "markupsafe", "django", "requests", "urllib3",
    "pytest", "seaborn", "pylint", "sphinx", "xarray", "sympy", "astropy", "scikit-learn", "sklearn",
    "matplotlib", "agentic-ai-engineering", "chi", "mobx", "clap", "nav", "twisted",
    # the other-language eval corpora (rag-eval/go, typescript, javascript, rust, java)
    "gin", "xterm", "acorn", "chrono", "jsoup",
})
# A question whose word set shares this much with an eval question is a near-copy (Jaccard on word sets).
NEAR_DUPLICATE_JACCARD = 0.8
MAX_OCCURRENCES = 3            # an expected text pins its place: it occurs 1-3 times in its file
MIN_NAMING_TOKEN_LEN = 4       # the rules of the eval sets (tests/test_rag_eval_werkzeug_queryset.py)
GENERIC_TOKENS = frozenset({"self", "str", "int", "bool", "float", "none", "true", "false", "optional", "return", "default",
                            "def", "class", "import", "from", "else", "elif", "while", "with", "lambda"})
_WORD = re.compile(r"[A-Za-z0-9_]+|[\u4e00-\u9fff]")
_BACKTICKED = re.compile(r"`([^`]+)`")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Problem:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def source_trees_root() -> Path:
    configured = os.environ.get(SOURCE_TREES_ENV)
    return Path(configured).expanduser() if configured else DEFAULT_SOURCE_TREES


def load_source(name: str) -> dict:
    return json.loads((SOURCES_DIR / f"{name}.json").read_text(encoding="utf-8"))


def tree_of(source: dict) -> Path:
    return source_trees_root() / f"{source['name']}-{source['version']}"


def read_jsonl(path: Path) -> list[tuple[int, dict | None, str]]:
    """(line number, record or None, error) per non-blank line."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            rows.append((number, None, f"not JSON ({exc.msg})"))
            continue
        rows.append((number, record if isinstance(record, dict) else None, "" if isinstance(record, dict) else "not an object"))
    return rows


def naming_tokens(text: str) -> set[str]:
    """The words an answer line names: identifiers and their snake_case and camelCase parts, 4+ letters."""
    tokens = set()
    for token in _IDENTIFIER.findall(text):
        parts = [token, *token.split("_"), *re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", token)]
        for part in parts:
            if len(part) >= MIN_NAMING_TOKEN_LEN and part.lower() not in GENERIC_TOKENS:
                tokens.add(part.lower())
    return tokens


def words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def eval_questions() -> list[tuple[str, frozenset[str], str]]:
    """(id, word set, normalised text) of every question under rag-eval/."""
    found = []
    for path in sorted((REPO_ROOT / "rag-eval").rglob("*.jsonl")):
        if "results" in path.parts:
            continue
        for _, record, _ in read_jsonl(path):
            if record and isinstance(record.get("query"), str):
                query = record["query"]
                found.append((f"{path.relative_to(REPO_ROOT)}:{record.get('id')}", words(query), " ".join(query.lower().split())))
    return found


def near_copy_of_eval(query: str, evals: list[tuple[str, frozenset[str], str]]) -> str | None:
    normalised = " ".join(query.lower().split())
    mine = words(query)
    for eval_id, theirs, text in evals:
        if normalised == text:
            return eval_id
        if mine and theirs:
            overlap = len(mine & theirs) / len(mine | theirs)
            if overlap >= NEAR_DUPLICATE_JACCARD:
                return eval_id
    return None


class _Files:
    """The pinned tree's files, read once each."""

    def __init__(self, root: Path):
        self.root = root
        self._cache: dict[str, str | None] = {}

    def text(self, rel: str) -> str | None:
        if rel not in self._cache:
            path = self.root / rel
            if ".." in Path(rel).parts or rel.startswith("/") or not path.is_file():
                self._cache[rel] = None
            else:
                self._cache[rel] = path.read_text(encoding="utf-8", errors="replace")
        return self._cache[rel]


def _check_item(item: object, files: _Files, where: str, *, need_text: bool, pin: bool = False) -> list[Problem]:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        return [Problem(where, "an item needs a string 'path'")]
    content = files.text(item["path"])
    if content is None:
        return [Problem(where, f"no such file in the pinned tree: {item['path']}")]
    text = item.get("text")
    if text is None:
        return [Problem(where, f"item {item['path']} needs 'text'")] if need_text else []
    if not isinstance(text, str) or not text.strip():
        return [Problem(where, "'text' must be a non-empty string")]
    count = content.count(text)
    if count == 0:
        return [Problem(where, f"text not in {item['path']}: {text!r}")]
    if pin and count > MAX_OCCURRENCES:
        return [Problem(where, f"text occurs {count}x in {item['path']} (at most {MAX_OCCURRENCES}): {text!r}")]
    return []


def check_library(name: str, evals: list | None = None) -> list[Problem]:
    """Every problem in one library's source record, questions and bug reports."""
    problems: list[Problem] = []
    if name.lower() in FORBIDDEN_SOURCES:
        return [Problem(name, "an evaluation corpus: never training data")]
    try:
        source = load_source(name)
    except (OSError, json.JSONDecodeError) as exc:
        return [Problem(f"sources/{name}.json", f"unreadable ({exc})")]
    for key in ("name", "version", "sha256", "license", "archive"):
        if not source.get(key):
            problems.append(Problem(f"sources/{name}.json", f"missing {key!r}"))
    root = tree_of(source)
    if not root.is_dir():
        return problems + [Problem(name, f"the pinned tree is not unpacked at {root}")]
    for part in root.rglob("*"):
        if part.is_dir() and part.name.lower() in FORBIDDEN_SOURCES - {"chi", "nav"}:
            problems.append(Problem(name, f"vendors an evaluation corpus: {part.relative_to(root)}"))
            break
    evals = eval_questions() if evals is None else evals
    files = _Files(root)
    seen: set[str] = set()
    for kind, folder in (("question", QUESTIONS_DIR), ("bug report", BUGREPORTS_DIR)):
        path = folder / f"{name}.jsonl"
        if not path.is_file():
            problems.append(Problem(str(path.relative_to(DATA_DIR)), "missing"))
            continue
        for number, record, error in read_jsonl(path):
            where = f"{path.relative_to(DATA_DIR)}:{number}"
            if record is None:
                problems.append(Problem(where, error))
                continue
            problems.extend(_check_record(record, kind, name, files, where, seen, evals))
    return problems


def _check_record(record: dict, kind: str, name: str, files: _Files, where: str, seen: set[str],
                  evals: list) -> list[Problem]:
    problems = []
    record_id = record.get("id")
    if not isinstance(record_id, str) or not record_id:
        problems.append(Problem(where, "missing 'id'"))
    elif record_id in seen:
        problems.append(Problem(where, f"duplicate id {record_id}"))
    else:
        seen.add(record_id)
    if record.get("source") != name:
        problems.append(Problem(where, f"'source' must be {name!r}"))
    if record.get("lang") not in LANGS:
        problems.append(Problem(where, f"'lang' must be one of {sorted(LANGS)}"))
    query = record.get("query")
    if not isinstance(query, str) or len(query.strip()) < 8:
        problems.append(Problem(where, "'query' must be a question of some length"))
    elif (copy := near_copy_of_eval(query, evals)) is not None:
        problems.append(Problem(where, f"a copy or near-copy of the eval question {copy}"))
    has_any, has_all = "expect_any" in record, "expect_all" in record
    if has_any == has_all:
        return problems + [Problem(where, "exactly one of expect_any / expect_all")]
    items = record.get("expect_any") or record.get("expect_all")
    if not isinstance(items, list) or not items:
        return problems + [Problem(where, "expectations must be a non-empty list")]
    if kind == "question":
        category = record.get("category")
        if category not in QUESTION_CATEGORIES:
            problems.append(Problem(where, f"'category' must be one of {sorted(QUESTION_CATEGORIES)}"))
        if category == "cross_file":
            if not has_all or len(items) < 2:
                problems.append(Problem(where, "cross_file needs expect_all over 2-4 places"))
            elif len({i.get('path') for i in items if isinstance(i, dict)}) < 2:
                problems.append(Problem(where, "cross_file items must lie in different files"))
        elif has_all:
            problems.append(Problem(where, "only cross_file uses expect_all"))
        for item in items:
            problems.extend(_check_item(item, files, where, need_text=True, pin=True))
        if isinstance(query, str):
            problems.extend(_category_rules(record, category, query, items, where))
    else:
        if record.get("category") != "bug_report":
            problems.append(Problem(where, "'category' must be 'bug_report'"))
        for item in items:
            problems.extend(_check_item(item, files, where, need_text=False))
        definition = record.get("definition")
        problems.extend(_check_item(definition, files, where + " definition", need_text=True))
        if isinstance(definition, dict) and not any(
            isinstance(i, dict) and i.get("path") == definition.get("path") for i in items
        ):
            problems.append(Problem(where, "the definition's file must be an expected file"))
    return problems


def _category_rules(record: dict, category: str, query: str, items: list, where: str) -> list[Problem]:
    """The eval sets' rules: exact_identifier names (in backticks) an identifier of its answer; semantic names
    none; value_lookup says none of the answer line's words."""
    texts = [i.get("text", "") for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)]
    if category == "exact_identifier":
        named = {name.replace("::", ".").split(".")[-1].strip("()") for name in _BACKTICKED.findall(query)}
        answer = {tok for text in texts for tok in _IDENTIFIER.findall(text)}
        if not named:
            return [Problem(where, "exact_identifier names its identifier in backticks")]
        if not named & answer:
            return [Problem(where, f"exact_identifier: {sorted(named)} is not in the expected text")]
    elif category == "semantic" and _BACKTICKED.search(query):
        return [Problem(where, "a semantic question names no identifier (no backticks)")]
    elif category == "value_lookup":
        asked = set(re.findall(r"[a-z0-9_]+", query.lower()))
        leaked = {tok for text in texts for tok in naming_tokens(text)} & asked
        if leaked:
            return [Problem(where, f"value_lookup says words of its answer line: {sorted(leaked)}")]
    return []


def all_libraries() -> list[str]:
    return sorted(p.stem for p in SOURCES_DIR.glob("*.json"))


def main(argv: list[str]) -> int:
    names = argv or all_libraries()
    evals = eval_questions()
    total = 0
    for name in names:
        problems = check_library(name, evals)
        for problem in problems:
            print(problem)
        total += len(problems)
        counts = []
        for folder in (QUESTIONS_DIR, BUGREPORTS_DIR):
            path = folder / f"{name}.jsonl"
            rows = [r for _, r, _ in read_jsonl(path)] if path.is_file() else []
            zh = sum(1 for r in rows if r and r.get("lang") == "zh")
            counts.append(f"{len(rows)} ({zh} zh)")
        print(f"{name}: questions {counts[0]}, bug reports {counts[1]}, problems {len(problems)}", file=sys.stderr)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
