"""training/train_cross_encoder.py `written` (patches/0028): the written questions and bug reports become the
cross-encoder's training groups exactly as the rerank retriever will show them to the model."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "training"))

import train_cross_encoder as tce  # noqa: E402

from chunkers.base import CodeChunk  # noqa: E402
from retrievers.rerank import MAX_QUERY_CHARS, passage_text  # noqa: E402


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    chunks, pairs = [], []
    for lib in ("trainlib", "heldlib"):
        for i in range(14):
            text = f"def parse_value_{i}(config):\n    return config.value_{i} + {i}\n"
            chunks.append({"id": f"{lib}:{i}", "lib": lib, "path": f"{lib}/mod{i % 3}.py", "kind": "function",
                           "symbol": f"parse_value_{i}" if i % 4 else None, "start_line": 1, "end_line": 2,
                           "text": text, "embed_text": f"{lib}/mod{i % 3}.py\n{text}"})
    for i in range(6):
        pairs.append({"qid": f"q{i}#0", "lib": "trainlib", "source": "question", "lang": "en",
                      "category": "semantic", "query": f"which function parses value {i} from the config",
                      "positives": [f"trainlib:{i}"]})
    pairs.append({"qid": "zh#0", "lib": "trainlib", "source": "question", "lang": "zh", "category": "semantic",
                  "query": "如何解析配置文件中的值", "positives": ["trainlib:7", "trainlib:8"]})
    pairs.append({"qid": "bug#0", "lib": "trainlib", "source": "bug_report", "lang": "en", "category": "bug",
                  "query": "parse value returns the wrong config value\n" + "Traceback line\n" * 200,
                  "positives": ["trainlib:9"]})
    pairs.append({"qid": "doc#0", "lib": "trainlib", "source": "docstring", "lang": "en", "category": "semantic",
                  "query": "parse a value", "positives": ["trainlib:10"]})
    for i in range(3):
        pairs.append({"qid": f"h{i}#0", "lib": "heldlib", "source": "question", "lang": "en",
                      "category": "semantic", "query": f"where is value {i} parsed", "positives": [f"heldlib:{i}"]})
    with (data / "chunks.jsonl").open("w") as fh:
        fh.writelines(json.dumps(c, ensure_ascii=False) + "\n" for c in chunks)
    with (data / "pairs.jsonl").open("w") as fh:
        fh.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    (data / "split.json").write_text(json.dumps({"train": ["trainlib"], "holdout": ["heldlib"]}))
    return data


def test_written_groups_are_what_rerank_shows_the_model(tmp_path):
    data = _data(tmp_path)
    summary = tce.from_written(data, tmp_path / "out", {"question", "bug_report"}, 1.0, seed=3)
    rows = [json.loads(line) for line in (tmp_path / "out" / "train.jsonl").open()]
    valid = [json.loads(line) for line in (tmp_path / "out" / "valid.jsonl").open()]
    chunks = {c["id"]: c for c in map(json.loads, (data / "chunks.jsonl").open())}
    # the docstring pair is another source: left out
    assert summary["train_groups"] == len(rows) == 8 and summary["by_source"] == {"bug_report": 1, "question": 7}

    def shown(cid: str) -> str:    # what retrievers.rerank feeds the model for that chunk
        c = chunks[cid]
        return passage_text(CodeChunk(id=cid, path=c["path"], start_line=1, end_line=2, kind=c["kind"],
                                      symbol=c["symbol"], parent=None, header="", text=c["text"], tokens=1), True)

    by_query = {r["query"]: r for r in rows}
    zh = next(r for q, r in by_query.items() if q.startswith("如何"))
    assert zh["query"] != "如何解析配置文件中的值" and " parse" in zh["query"]         # the glossary's words appended
    assert zh["positive"] in (shown("trainlib:7"), shown("trainlib:8"))
    bug = next(r for r in rows if r["kind"] == "bug_report")
    assert len(bug["query"]) == MAX_QUERY_CHARS
    trainlib = {shown(cid) for cid in chunks if cid.startswith("trainlib")}
    for r in rows:
        assert len(r["negatives"]) == tce.NEGATIVES_PER_QUERY == len(set(r["negatives"]))
        assert r["positive"] in trainlib and set(r["negatives"]) <= trainlib and r["positive"] not in r["negatives"]
    assert zh["negatives"] and not {shown("trainlib:7"), shown("trainlib:8")} & set(zh["negatives"])
    held = {shown(cid) for cid in chunks if cid.startswith("heldlib")}
    assert len(valid) == 3 and all(len(v["candidates"]) == tce.VALIDATION_CANDIDATES for v in valid)
    assert all(set(v["candidates"]) <= held and len(set(v["candidates"])) == tce.VALIDATION_CANDIDATES for v in valid)
    positives = {f"where is value {i} parsed": shown(f"heldlib:{i}") for i in range(3)}
    assert all(v["candidates"][0] == positives[v["query"]] for v in valid)


def test_a_smaller_fraction_is_a_subset_of_a_larger_one(tmp_path):
    data = _data(tmp_path)
    tce.from_written(data, tmp_path / "half", {"question"}, 0.5, seed=3)
    tce.from_written(data, tmp_path / "all", {"question"}, 1.0, seed=3)
    half = {json.loads(line)["query"] for line in (tmp_path / "half" / "train.jsonl").open()}
    every = {json.loads(line)["query"] for line in (tmp_path / "all" / "train.jsonl").open()}
    assert len(half) == 4 and half < every
