"""Refuse to evaluate when the answer key is itself in the index.

If the query file (or a copy of the set: its questions next to its expected texts) is indexed,
the retriever can find the answer key instead of the code, and every score is inflated. Two rules:

1. the query file lies inside the indexed root and was indexed;
2. an indexed file holds at least half of the set's expected needles (item texts, or paths for
   file-level items) AND the text of at least half of its queries.

A query file that sits inside the tree but was excluded from the index (`nav index --skip`) is fine:
the index cannot retrieve it. Texts are searched raw and JSON-escaped, so a JSONL copy written with
escaped quotes or \\uXXXX characters is still recognised.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from navigator.core.errors import LeakageError
from navigator.evaluation.queryset import EvalQuery

# A file holding this share (or more) of both the questions and the answers is a copy of the set.
LEAK_SHARE = 0.5


def check_leakage(
    queries_path: Path,
    queries: Sequence[EvalQuery],
    indexed_root: Path,
    indexed_files: Mapping[str, str],
) -> None:
    """Raise LeakageError naming every indexed file that leaks the set; return None when clean."""
    root = Path(indexed_root).resolve()
    leaks: dict[str, str] = {}  # indexed path -> why it leaks

    query_file = _relative_posix(Path(queries_path).resolve(), root)
    if query_file is not None and query_file in indexed_files:
        leaks[query_file] = "the query file itself"
    for path in _files_holding_the_set(queries, indexed_files):
        leaks.setdefault(path, "holds most of the set's queries and expected texts")

    if leaks:
        names = ", ".join(f"{path} ({why})" for path, why in leaks.items())
        raise LeakageError(
            f"the answer key is inside the indexed tree {root}: {names}. "
            "Retrieval would find the queries and answers instead of the code.",
            hint=f"Exclude it and re-index (e.g. `nav index --skip {next(iter(leaks))}`), or move it outside {root}.",
        )


def _relative_posix(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


def _files_holding_the_set(queries: Sequence[EvalQuery], indexed_files: Mapping[str, str]) -> list[str]:
    questions = [_spellings(q.query) for q in queries]
    needles = [_spellings(n) for n in sorted({it.text or it.path for q in queries for it in q.items})]
    need_questions = math.ceil(len(questions) * LEAK_SHARE)
    need_needles = math.ceil(len(needles) * LEAK_SHARE)
    # A file shorter than the shortest questions it would have to hold cannot qualify: this skips
    # nearly every file before any search when queries are long (e.g. whole bug reports).
    min_length = sum(sorted(len(q.query) for q in queries)[:need_questions])
    return [
        path for path, text in indexed_files.items()
        if len(text) >= min_length
        and _holds_at_least(text, questions, need_questions)
        and _holds_at_least(text, needles, need_needles)
    ]


def _spellings(text: str) -> tuple[str, ...]:
    """The text as written raw, and as a JSON string body (ASCII-escaped or not)."""
    forms = dict.fromkeys([text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]])
    return tuple(forms)


def _holds_at_least(text: str, wanted: Iterable[tuple[str, ...]], needed: int) -> bool:
    wanted = list(wanted)
    allowed_misses = len(wanted) - needed
    found = misses = 0
    for forms in wanted:
        if any(form in text for form in forms):
            found += 1
            if found >= needed:
                return True
        else:
            misses += 1
            if misses > allowed_misses:  # stop as soon as the share can no longer be reached
                return False
    return found >= needed
