"""Files as results, on a small real repository (a copy of nav's own chunkers/ and retrievers/ source), and the
query input of `nav search` / `nav context` from standard input and files."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from navigator.core.config import Config
from navigator.core.errors import InputError, UsageError
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from retrievers.file_rank import FileRanker, file_ranking_records
from retrievers.source_prior import is_non_source

SOURCE = Path(__file__).resolve().parent.parent


@pytest.fixture
def real_repo(tmp_path, nav_env):
    root = tmp_path / "repo"
    for folder in ("chunkers", "retrievers"):
        shutil.copytree(SOURCE / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "data"))
    # A test file that talks about BM25 more than the source does: the prior must keep it below the source.
    (root / "tests").mkdir()
    (root / "tests" / "test_scoring.py").write_text(
        '"""BM25 okapi idf scorer tests: BM25Scorer okapi_idf saturated_query_weights."""\n\n\n'
        "def test_bm25_okapi_idf_scorer():\n    assert okapi_idf and BM25Scorer and saturated_query_weights\n")
    build_index(root, Config.from_env())
    return root


def ranker(root: Path, base: str = "bm25") -> FileRanker:
    config = Config.from_env()
    return FileRanker(NavIndex.open(root, config), config, base=base)


def test_files_rank_by_their_evidence_and_tests_yield_unless_asked(real_repo):
    hits = ranker(real_repo).rank("how are okapi idf and the BM25 scorer computed for saturated query weights", 40)
    assert hits[0].path == "retrievers/bm25.py"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert len({h.path for h in hits}) == len(hits)                     # one row per file
    test_hit = next(h for h in hits if h.path == "tests/test_scoring.py")
    # dense in the query's words, so whole-file BM25 ranks it high; the prior moves it down
    assert test_hit.prior < 1 and test_hit.rank > test_hit.heads["file_bm25"]
    asked = ranker(real_repo).rank("which tests cover the okapi idf BM25 scorer", 40)
    assert next(h for h in asked if h.path == "tests/test_scoring.py").prior == 1.0


def test_a_bug_report_finds_the_file_its_names_and_frames_point_at(real_repo):
    report = ("Crash when fusing rankings with a zero weight.\n" + "We run a large deployment. " * 80 +
              'Traceback (most recent call last):\n'
              '  File "/srv/app/venv/lib/python3.11/site-packages/retrievers/hybrid.py", line 120, in retrieve\n'
              '  File "/srv/app/venv/lib/python3.11/site-packages/retrievers/fusion.py", line 40, in reciprocal_rank_fusion\n'
              "ValueError: head weight must be >= 0\n")
    hits = ranker(real_repo, base="bm25").rank(report, 10)
    top = hits[0]
    assert top.path == "retrievers/fusion.py"
    assert top.heads["mentioned"] == 1 and "reciprocal_rank_fusion" in top.defines
    assert top.heads["errors"] == 1          # "head weight must be >= 0" is a literal in fusion.py
    assert top.best_chunk is not None and top.best_chunk.path == "retrievers/fusion.py"
    assert "retrievers/hybrid.py" in [h.path for h in hits[:3]]


def test_records_for_the_harness_carry_one_row_per_file_and_each_evidence_as_a_head(real_repo):
    records = file_ranking_records(ranker(real_repo).rank("tree-sitter python chunker splits classes into methods", 5))
    assert records[0]["path"].startswith("chunkers/")
    assert all(set(r) == {"path", "text", "tokens", "heads"} for r in records)
    assert set(records[0]["heads"]) <= {"chunks", "file_bm25", "defines", "mentioned", "title", "errors"}


def test_non_source_paths():
    assert is_non_source("tests/forms/test_widgets.py") and is_non_source("docs/conf.py")
    assert is_non_source("pkg/test_utils.py") and is_non_source("examples/app.py") and is_non_source("a/conftest.py")
    assert not is_non_source("retrievers/bm25.py") and not is_non_source("django/contrib/testimony.py")


@pytest.mark.parametrize("path, kind", [
    ("tests/forms/test_widgets.py", "test"), ("docs/ref/models.txt", "docs"), ("CHANGES.rst", "docs"),
    ("HISTORY.rst", "docs"), ("doc/whats-new.rst", "docs"), ("NEWS", "docs"), ("changelog.md", "docs"),
    ("RELEASE-NOTES.txt", "docs"), (".github/ISSUE_TEMPLATE/BUG-REPORT.yml", "tooling"), ("pylintrc", "tooling"),
    ("tox.ini", "tooling"), ("setup.cfg", "tooling"), (".pre-commit-config.yaml", "tooling"),
    ("requests/packages/urllib3/connectionpool.py", "vendored"), ("pip/_vendor/rich/console.py", "vendored"),
    ("src/extern/lib.c", "vendored"), ("examples/app.py", "example"),
    ("packages/core/src/index.ts", None), ("src/changes.py", None), ("django/db/models/query.py", None),
    ("pyproject.toml", None), ("requests/sessions.py", None),
])
def test_non_source_kinds(path, kind):
    """patches/0026: release notes, CI and tool configuration, vendored copies are non-source too; a JS
    monorepo's top-level packages/ is source."""
    from retrievers.source_prior import non_source_kind
    assert non_source_kind(path) == kind


def test_a_query_counts_in_full_only_the_kinds_it_asks_for_and_a_report_only_through_its_title():
    from retrievers.source_prior import SourcePrior
    rule = SourcePrior.for_query(0.5, "where is chaining documented")
    assert rule.factor("docs/chaining.rst") == 1.0 and rule.factor("tests/test_chain.py") == 0.5
    assert rule.factor("src/chain.py") == 1.0
    report = "QuerySet.union() drops ordering\n\n" + ("The test in tests/queries fails and the docs say " * 20)
    rule = SourcePrior.for_query(0.5, report)
    assert rule.strength == 0.25 and rule.asked == frozenset()            # the body's words do not ask
    assert rule.factor("docs/releases/4.0.txt") == 0.25 and rule.factor("django/db/models/query.py") == 1.0
    titled = "Docs: the union() example is wrong\n\n" + "x " * 400
    assert SourcePrior.for_query(0.5, titled).factor("docs/ref/models/querysets.txt") == 1.0
    assert not SourcePrior.for_query(1.0, report).active


def test_the_prior_setting_is_checked_and_its_older_name_still_read():
    from retrievers.source_prior import NON_SOURCE_PRIOR, asks_for_non_source, prior_setting
    assert prior_setting({}) == NON_SOURCE_PRIOR and prior_setting({"NAV_SOURCE_PRIOR": "1"}) == 1.0
    assert prior_setting({"NAV_FILE_PRIOR": "0.8"}) == 0.8                                  # the name before 0015
    assert prior_setting({"NAV_SOURCE_PRIOR": "0.3", "NAV_FILE_PRIOR": "0.8"}) == 0.3
    for bad in ("0", "2", "x", "-0.5", "nan"):
        with pytest.raises(UsageError, match="NAV_SOURCE_PRIOR"):
            prior_setting({"NAV_SOURCE_PRIOR": bad})
    with pytest.raises(UsageError, match="NAV_FILE_PRIOR"):
        prior_setting({"NAV_FILE_PRIOR": "2"})
    assert asks_for_non_source("where is chaining documented and tested")
    assert asks_for_non_source("哪个测试覆盖了链式调用") and asks_for_non_source("文档在哪里")
    assert not asks_for_non_source("how is the latest value read") and not asks_for_non_source("contest results")


def test_chunk_rankings_discount_tests_unless_the_question_asks_for_them(real_repo, monkeypatch):
    """patches/0015: the test file repeats the query's words more densely than the source does; hybrid (and graph
    on top of it) rank it below the source unless the question speaks of tests, or the prior is turned off."""
    from retrievers.registry import get_retriever
    monkeypatch.setenv("NAV_PROSE_BM25", "1")      # random test vectors: keep BM25's evidence at full strength
    # The query names three definitions, which graph would put first (retrievers.named); this test is about
    # the prior, so that rule is off here (tests/test_named.py holds it).
    monkeypatch.setenv("NAV_NAMED_FIRST", "0")
    query = "BM25Scorer okapi_idf saturated_query_weights"
    test_path = "tests/test_scoring.py"

    def rank_of_test(name: str, text: str, **env: str) -> int:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        config = Config.from_env()
        ranked = get_retriever(name, NavIndex.open(real_repo, config), config).retrieve(text, 30)
        for key in env:
            monkeypatch.delenv(key)
        return next(r.rank for r in ranked if r.chunk.path == test_path)

    for name in ("hybrid", "graph"):
        unweighted = rank_of_test(name, query, NAV_SOURCE_PRIOR="1")
        assert unweighted <= 2                          # dense in the query's words: first or second on evidence
        assert rank_of_test(name, query) > unweighted   # the prior moves it below source chunks
        assert rank_of_test(name, query + " in the tests") <= 2


def test_evidence_ties_are_broken_by_path_not_by_hash_order():
    """The definitions of a name are a set, iterated in hash order that changes with each process
    (PYTHONHASHSEED): a tie must not decide a rank by it (django__django-10924 moved between rank 1 and 2)."""
    from types import SimpleNamespace
    from retrievers.file_rank import _definitions, _errors, _message_parts
    from retrievers.query_analysis import analyse_query
    analysis = analyse_query("FileField and ImageField both break: FileField.deconstruct drops ImageField.storage")
    for order in (["z/fields.py", "m/files.py", "a/forms.py"], ["a/forms.py", "z/fields.py", "m/files.py"]):
        catalog = SimpleNamespace(definitions={"FileField": order, "ImageField": list(reversed(order))})
        ranked, named = _definitions(analysis, catalog)
        assert ranked == ["a/forms.py", "m/files.py", "z/fields.py"]
    assert _message_parts("ValueError: cannot serialize 'x' because deconstruct failed") == \
        ["because deconstruct failed", "cannot serialize"]
    assert _message_parts("E: 'q' abcdefghijklmn 'r' abcdefghijklmm") == ["abcdefghijklmm", "abcdefghijklmn"]
    files = {"second message here": ["z.py", "a.py"]}
    catalog = SimpleNamespace(files_containing=lambda part: files.get(part, []))
    errors = SimpleNamespace(errors=["RuntimeError: second message here"])
    assert _errors(errors, catalog) == ["a.py", "z.py"]


def test_explain_says_how_the_heads_were_weighed_and_what_the_prior_did(real_repo):
    """The prose rule (0010) and the source prior (0015) change a ranking without a trace in the heads: --explain
    and the JSON result say which weights and which factor this query got."""
    from navigator.context.search import search
    prose = search(real_repo, "how are the rankings of several heads combined into one", 3, "graph")
    assert prose.fusion == {"weights": {"vector": 1.0, "bm25": 0.25}, "prose_rule": True, "non_source_factor": 0.5,
                            "non_source_counted_in_full": []}
    assert "fusion: bm25 x0.25, vector x1 (a prose question" in prose.render(explain=True)
    assert "fusion:" not in prose.render() and prose.to_json()["fusion"]["weights"]["bm25"] == 0.25
    code = search(real_repo, "which tests cover reciprocal_rank_fusion", 3, "hybrid")
    assert code.fusion == {"weights": {"vector": 1.0, "bm25": 1.0}, "prose_rule": False, "non_source_factor": 0.5,
                           "non_source_counted_in_full": ["test"]}     # patches/0026: only the kind it asks for
    assert "x0.5 (NAV_SOURCE_PRIOR), counted in full as asked: test" in code.render(explain=True)
    assert "fusion" not in search(real_repo, "reciprocal_rank_fusion", 3, "bm25").to_json()


def nav(*args: str, stdin: str | None = None):
    env = dict(os.environ, PYTHONPATH=str(SOURCE))
    return subprocess.run([sys.executable, "-m", "navigator", *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=300)


def test_search_reads_a_long_query_from_stdin_and_from_a_file(real_repo, tmp_path):
    report = "reciprocal_rank_fusion ValueError: head weight must be >= 0\n" + ("padding words here " * 9000)
    assert len(report.encode()) > 128 * 1024                # more than one shell argument may hold
    out = nav("search", "-", "--repo", str(real_repo), "--retriever", "bm25", "--level", "file", "-k", "3",
              "--json", stdin=report)
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["level"] == "file" and payload["results"][0]["path"] == "retrievers/fusion.py"
    qfile = tmp_path / "report.txt"
    qfile.write_text(report)
    out = nav("context", "--query-file", str(qfile), "--repo", str(real_repo), "--retriever", "bm25", "--json")
    assert out.returncode == 0, out.stderr
    assert any(p["path"] == "retrievers/fusion.py" for p in json.loads(out.stdout)["pieces"])
    missing = nav("search", "--query-file", str(tmp_path / "nope.txt"), "--repo", str(real_repo))
    assert missing.returncode == 2 and "cannot read the query file" in missing.stderr
    empty = nav("search", "-", "--repo", str(real_repo), stdin="  \n")
    assert empty.returncode == 2 and "the query is empty" in empty.stderr


def test_read_query_refuses_two_sources_and_none():
    from navigator.context.search import read_query
    with pytest.raises(UsageError):
        read_query("q", "f.txt")
    with pytest.raises(UsageError):
        read_query(None, None)
    with pytest.raises(InputError):
        read_query(None, "/nonexistent/q.txt")
