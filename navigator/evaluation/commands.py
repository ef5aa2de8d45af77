"""Orchestration for `nav eval`, `nav ceiling` and `nav compare`: open the index, check the query set
(format, leakage, unanswerable items), run each retriever over it, and hand the runs to the harness."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from navigator.core.config import Config
from navigator.core.errors import IndexOutdatedError, InputError, UsageError

CEILING_DEPTH = 200


@dataclass
class EvalOutput:
    text: str
    payload: dict
    runs: dict = field(default_factory=dict)     # retriever -> EvalRun, for the HTML page


def _parse_ints(value: str, flag: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated whole numbers, got {value!r}") from None
    if not out or any(v <= 0 for v in out):
        raise UsageError(f"{flag} takes positive numbers, got {value!r}")
    return out


def prepared_query_set(queries_path: str, repo: str | None, config: Config):
    """The index of `repo` and the query set at `queries_path`, checked against it (leakage, answerability)."""
    from navigator.evaluation import prepare_query_set
    from navigator.index.nav_index import NavIndex
    path = Path(queries_path).expanduser()
    if not path.is_file():
        raise InputError(f"query file not found: {path}", hint="give a JSONL file in the format of shared/eval-format.md")
    index = NavIndex.open(repo, config)
    outdated = index.outdated()
    if outdated:
        raise IndexOutdatedError(f"the index at {index.index_dir} was built by an older nav: {'; '.join(outdated)}",
                                 hint=f"run `nav index {index.root}` first: a measurement on it would be neither "
                                      "that nav's figures nor this one's")
    chunk_texts: dict[str, list[str]] = {}
    for c in index.chunks():
        chunk_texts.setdefault(c.path, []).append(c.text)
    queries, unanswerable = prepare_query_set(path.resolve(), index.root, index.file_texts(), chunk_texts=chunk_texts)
    return index, queries, unanswerable


def _rank_fn(name: str, index, config: Config, file_rank: str | None = None):
    """rank_fn(query, depth) for the harness: the retriever's chunks, or with file_rank="evidence" its
    file ranking (retrievers.file_rank: one record per file, best first)."""
    if file_rank == "evidence":
        from retrievers.file_rank import FileRanker, file_ranking_records
        ranker = FileRanker(index, config, base=name)
        return lambda query, depth: file_ranking_records(ranker.rank(query, depth))
    from retrievers.registry import get_retriever
    retriever = get_retriever(name, index, config)
    return lambda query, depth: retriever.retrieve(query, depth)


def _file_rank_mode(level: str, file_rank: str | None) -> str | None:
    from retrievers.file_rank import FILE_RANK_MODES
    if file_rank is not None and file_rank not in FILE_RANK_MODES:
        raise UsageError(f"unknown --file-rank {file_rank!r}", hint=f"use one of: {', '.join(FILE_RANK_MODES)}")
    if level != "file":
        if file_rank == "evidence":
            raise UsageError("--file-rank evidence ranks files: use it with --level file")
        return None
    return file_rank or "evidence"


def run_named(queries_path: str, repo: str | None, retrievers: list[str], *, ks=(1, 3, 5, 10), level="chunk",
              depth: int | None = None, config: Config | None = None, file_rank: str | None = None):
    """file_rank (level file only): "evidence" ranks files by retrievers.file_rank (the default at level
    file), "first" places each file at its first chunk's rank in the chunk ranking (the SWE-bench convention)."""
    from navigator.evaluation import run_eval
    config = config or Config.from_env()
    mode = _file_rank_mode(level, file_rank)
    index, queries, unanswerable = prepared_query_set(queries_path, repo, config)
    depth = depth or max(max(ks), 10)
    meta = {"queries_file": str(Path(queries_path).resolve()), "repo": str(index.root),
            "index_built_at": index.manifest.get("built_at"), "git_head": index.manifest.get("git_head"),
            "chunk_count": index.chunk_count, "embedder": index.manifest.get("embedder")}
    if mode:
        meta["file_rank"] = mode
    return {name: run_eval(queries, _rank_fn(name, index, config, mode), ks=ks, depth=depth, level=level,
                           retriever=name, unanswerable=unanswerable, meta=meta)
            for name in retrievers}


def evaluate(queries_path: str, repo: str | None, retrievers: list[str] | None, *, k: str = "1,3,5,10",
             level: str = "chunk", heads: bool = False, depth: int | None = None,
             file_rank: str | None = None) -> EvalOutput:
    from navigator.evaluation import render_eval_table, with_head_views
    config = Config.from_env()
    names = retrievers or [config.retriever]
    runs = run_named(queries_path, repo, names, ks=_parse_ints(k, "--k"), level=level, depth=depth, config=config,
                     file_rank=file_rank)
    views: dict = {}
    for name, run in runs.items():
        views.update(with_head_views(run) if heads else {name: run})
    payload = {"runs": {name: run.to_json() for name, run in runs.items()}}
    if len(runs) == 1:
        payload = next(iter(runs.values())).to_json()
    return EvalOutput(render_eval_table(views), payload, runs)


def write_html(output: EvalOutput, path: str, queries_path: str) -> None:
    """The run as one self-contained HTML page (navigator.evaluation.html_report)."""
    from navigator.evaluation.html_report import render_html
    if not output.runs:
        raise UsageError("--html draws the retriever runs of nav eval; it does not apply with --budget")
    page = render_html(output.runs, f"nav eval: {Path(queries_path).name}")
    Path(path).write_text(page, encoding="utf-8")


def evaluate_budgets(queries_path: str, repo: str | None, retriever: str | None, budgets: str) -> EvalOutput:
    """Score `nav context` at each budget against plain top-5 from the same retriever, query by query."""
    from navigator.context.build import CANDIDATE_DEPTH
    from navigator.evaluation.budget import render_budget_table, run_budget_eval
    from navigator.evaluation.metrics import ChunkView
    from navigator.context.policy import POLICY_ENV, load_policy, select_with_policy
    from retrievers.registry import get_retriever
    config = Config.from_env()
    name = retriever or config.retriever
    index, queries, _ = prepared_query_set(queries_path, repo, config)
    ranker = get_retriever(name, index, config)
    policy = load_policy(config.extra.get(POLICY_ENV) or None)

    def select(question, candidates, budget):
        selection = select_with_policy(policy, question, candidates, budget, name)
        return [ChunkView(p.chunk.path, p.text, p.tokens) for p in selection.pieces]

    runs = run_budget_eval(queries, lambda q: ranker.retrieve(q, CANDIDATE_DEPTH), select,
                           _parse_ints(budgets, "--budget"))
    text = f"nav eval --budget: retriever {name}; {len(queries)} queries\n" + render_budget_table(runs)
    return EvalOutput(text, {"retriever": name, "runs": {k: v.to_json() for k, v in runs.items()}})


def ceiling(queries_path: str, repo: str | None, retriever: str | None, *, depth: int = CEILING_DEPTH,
            pools: str = "5,10,20,50,100") -> EvalOutput:
    from navigator.evaluation import render_ceiling_table
    config = Config.from_env()
    name = retriever or config.retriever
    run = run_named(queries_path, repo, [name], ks=(1, 3, 5, 10), depth=depth, config=config)[name]
    return EvalOutput(render_ceiling_table(run, pools=_parse_ints(pools, "--pools")), run.to_json())


def compare(a: str, b: str, *, k: int = 5, seed: int = 0, queries_path: str | None = None,
            repo: str | None = None) -> EvalOutput:
    """A and B are saved `nav eval --json` runs, or retriever names run now on --queries."""
    from navigator.evaluation import compare_runs, load_run, render_comparison
    from retrievers.registry import registered_names
    runs = []
    for side in (a, b):
        if Path(side).is_file():
            runs.append(load_run(Path(side)))
        elif side in registered_names():
            if not queries_path:
                raise UsageError(f"{side!r} is a retriever name: give --queries FILE (and --repo) to run it now")
            runs.append(run_named(queries_path, repo, [side], ks=(1, 3, 5, 10))[side])
        else:
            raise InputError(f"{side!r} is neither a saved run (JSON file) nor a registered retriever",
                             hint=f"registered retrievers: {', '.join(registered_names())}")
    comparison = compare_runs(runs[0], runs[1], k=k, seed=seed)
    return EvalOutput(render_comparison(comparison), json.loads(json.dumps(comparison, default=lambda o: o.__dict__)))
