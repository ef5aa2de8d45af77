"""Query sets for `nav eval` / `nav ceiling`: load and validate a JSONL file, find unanswerable items.

The format is a contract with other teams (docs: eval-format): one JSON object per line with
`id`, `lang`, `category`, `query` and exactly one of `expect_any` / `expect_all`, each a list of
`{"path": P}` or `{"path": P, "text": T}` items. Unknown fields are ignored so that richer sets
still run. Every malformed line is reported at once, with its line number, so a user fixes the
file in one pass instead of one error per run.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from navigator.core.errors import QueryFileError

MODE_ANY = "any"
MODE_ALL = "all"
MODES = (MODE_ANY, MODE_ALL)
EXPECT_FIELDS = {"expect_any": MODE_ANY, "expect_all": MODE_ALL}

# lang and category only group the report; a set that omits them still runs, grouped under this.
UNSPECIFIED = "(none)"

FORMAT_HINT = (
    'Each non-blank line must be one JSON object: {"id": ..., "lang": ..., "category": ..., "query": ..., '
    '"expect_any" or "expect_all": [{"path": "dir/file.py", "text": "optional snippet"}]}.'
)


@dataclass(frozen=True)
class ExpectItem:
    """One expected location: a repo-relative '/'-separated path, and optionally a text inside it.

    Without text the item is file-level: any chunk of the file matches.
    """
    path: str
    text: str | None = None

    def describe(self) -> str:
        return self.path if self.text is None else f"{self.path} {json.dumps(self.text, ensure_ascii=False)}"


@dataclass
class EvalQuery:
    id: str
    lang: str
    category: str
    query: str
    mode: str                 # MODE_ANY (expect_any) or MODE_ALL (expect_all); decides the metric
    items: list[ExpectItem]
    line: int                 # 1-based line in the query file, for messages


class Unanswerable(NamedTuple):
    query_id: str
    item: ExpectItem
    reason: str


class _Malformed(ValueError):
    """One problem on one line; collected, never shown alone."""


def load_queries(path: Path) -> list[EvalQuery]:
    """Parse and validate a query set. Raises QueryFileError listing every malformed line."""
    path = Path(path)
    if not path.is_file():
        raise QueryFileError(
            f"query file {path} does not exist or is not a file",
            hint="Pass --queries FILE with a JSONL query set.",
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # -sig: tolerate a byte-order mark written by some editors
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise QueryFileError(
            f"{path}: line {line} is not valid UTF-8 ({err.reason} at byte {err.start})",
            hint="Save the query file as UTF-8.",
        ) from err

    queries: list[EvalQuery] = []
    problems: list[str] = []
    first_line_of_id: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            query = _parse_line(line, number)
        except _Malformed as problem:
            problems.append(f"line {number}: {problem}")
            continue
        if query.id in first_line_of_id:
            problems.append(
                f"line {number}: duplicate id {json.dumps(query.id)} (first on line {first_line_of_id[query.id]})"
            )
            continue
        first_line_of_id[query.id] = number
        queries.append(query)

    if problems:
        count = f"{len(problems)} malformed line" + ("s" if len(problems) != 1 else "")
        raise QueryFileError(
            f"{path}: {count}; the run did not start:\n    " + "\n    ".join(problems),
            hint=FORMAT_HINT,
        )
    if not queries:
        raise QueryFileError(f"{path} holds no queries (it is empty or has only blank lines)", hint=FORMAT_HINT)
    return queries


def _parse_line(line: str, number: int) -> EvalQuery:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise _Malformed(f"not valid JSON ({err.msg} at column {err.colno})") from err
    if not isinstance(record, dict):
        raise _Malformed(f"a JSON {type(record).__name__} where an object {{...}} was expected")

    query_id = record.get("id")
    if isinstance(query_id, bool) or not isinstance(query_id, (str, int)) or str(query_id).strip() == "":
        raise _Malformed('"id" is missing or not a non-empty string')
    query = record.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _Malformed('"query" is missing or not a non-empty string')
    lang = _optional_label(record, "lang")
    category = _optional_label(record, "category")

    present = [name for name in EXPECT_FIELDS if name in record]
    if len(present) != 1:
        which = "both" if present else "neither of"
        raise _Malformed(f"has {which} expect_any and expect_all; give exactly one")
    field_name = present[0]
    items = _parse_items(record[field_name], field_name)
    return EvalQuery(
        id=str(query_id), lang=lang, category=category, query=query,
        mode=EXPECT_FIELDS[field_name], items=items, line=number,
    )


def _optional_label(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    if value is None:
        return UNSPECIFIED
    if not isinstance(value, str) or not value.strip():
        raise _Malformed(f'"{name}" must be a non-empty string')
    return value


def _parse_items(value: Any, field_name: str) -> list[ExpectItem]:
    if not isinstance(value, list) or not value:
        raise _Malformed(f'"{field_name}" must be a non-empty list of {{"path": ..., "text": ...}} items')
    items = []
    for position, entry in enumerate(value, start=1):
        where = f"{field_name} item {position}"
        if not isinstance(entry, dict):
            raise _Malformed(f"{where} is not an object")
        path = entry.get("path")
        if not isinstance(path, str) or not path.strip():
            raise _Malformed(f'{where}: "path" is missing or not a non-empty string')
        if path.startswith("/") or "\\" in path:
            raise _Malformed(f'{where}: path {json.dumps(path)} must be relative to the indexed root and /-separated')
        text = entry.get("text")
        if text is not None and (not isinstance(text, str) or text == ""):
            # An empty text would match every chunk of the file: omit it for a file-level item instead.
            raise _Malformed(f'{where}: "text" must be a non-empty string (omit it for a file-level item)')
        items.append(ExpectItem(path=path.removeprefix("./"), text=text))
    return items


def find_unanswerable(
    queries: Sequence[EvalQuery],
    corpus_files: Mapping[str, str],
    *,
    chunk_texts: Mapping[str, Sequence[str]] | None = None,
) -> list[Unanswerable]:
    """Items that no retriever could ever match in this corpus, with the reason.

    corpus_files maps repo-relative path -> file text (the indexed corpus). If chunk_texts
    (path -> the texts of that file's chunks) is given, an item whose text is in the file but
    inside no single chunk is reported too: by the format's rule a text straddling two chunks
    matches neither.
    """
    found: list[Unanswerable] = []
    for query in queries:
        for item in query.items:
            reason = _why_unanswerable(item, corpus_files, chunk_texts)
            if reason is not None:
                found.append(Unanswerable(query.id, item, reason))
    return found


def _why_unanswerable(
    item: ExpectItem,
    corpus_files: Mapping[str, str],
    chunk_texts: Mapping[str, Sequence[str]] | None,
) -> str | None:
    file_text = corpus_files.get(item.path)
    if file_text is None:
        return "path not in the indexed corpus" + _did_you_mean(item.path, corpus_files)
    if item.text is None:
        return None
    if item.text not in file_text:
        return "text not found in the file"
    if chunk_texts is not None and not any(item.text in chunk for chunk in chunk_texts.get(item.path, ())):
        return "text is in the file but spans a chunk boundary, so no chunk contains it whole"
    return None


def _did_you_mean(path: str, corpus_files: Mapping[str, str]) -> str:
    """A set written against another root (src/pkg/x.py vs pkg/x.py) is the usual cause; name the candidate."""
    candidates = [
        known for known in corpus_files
        if known.endswith("/" + path) or path.endswith("/" + known)
    ]
    return f" (did you mean {candidates[0]}?)" if len(candidates) == 1 else ""
