"""One `nav tune` run: freeze candidates, split, calibrate, loop over trials, pair on the holdout, report."""
from __future__ import annotations

import difflib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from navigator.core.config import Config
from navigator.core.errors import UsageError
from navigator.tuning.sandbox import SandboxLimits
from navigator.tuning.supervisor import (KEEP, REJECT, PolicyScore, TrialLog, calibrate, holdout, judge,
                                         score_policy, split_queries)
from navigator.tuning.workers import Proposal, WorkerView

DEFAULT_TUNE_BUDGET = 2000
TOP_K_REFERENCE = 5


@dataclass
class TuneResult:
    out_dir: Path
    thresholds: dict
    trials: list[dict]
    start_dev: dict
    winner_dev: dict
    winner_trial: int | None
    holdout: dict | None
    reference: dict
    frontier: list[dict] = field(default_factory=list)
    # The dev frontier's policies on the holdout, each paired with plain top-5: where cuts start losing
    # held-out answers. Scored after the winner is chosen and never used to choose it.
    holdout_frontier: list[dict] = field(default_factory=list)
    winner_path: Path | None = None
    report_path: Path | None = None


def run_tune(queries_path: str, repo: str | None, worker, *, trials: int = 20, holdout_share: float = 0.25,
             seed: int = 0, budget: int = DEFAULT_TUNE_BUDGET, retriever: str | None = None,
             policy: str | None = None, out_dir: str | Path | None = None,
             limits: SandboxLimits = SandboxLimits(), on_trial=None) -> TuneResult:
    from navigator.context.build import CANDIDATE_DEPTH
    from navigator.context.policy import load_policy, shipped_policy_path
    from navigator.evaluation.commands import prepared_query_set
    from navigator.tuning.frozen import freeze
    from navigator.tuning.report import frontier, write_report
    from retrievers.registry import get_retriever, selected_name
    if trials < 0:
        raise UsageError(f"--trials must be 0 or more, got {trials}")
    if not 0.0 <= holdout_share < 1.0:
        raise UsageError(f"--holdout must be a share in [0, 1), got {holdout_share}")
    config = Config.from_env()
    name = selected_name(retriever, config)
    index, queries, _ = prepared_query_set(queries_path, repo, config)
    dev, held = split_queries(list(queries), holdout_share, seed)
    if len(dev) < 2:
        raise UsageError(f"the dev split has {len(dev)} queries; nav tune needs at least 2",
                         hint="use a larger query set or a smaller --holdout")
    start_file = Path(policy).expanduser() if policy else shipped_policy_path()
    load_policy(start_file if policy else None)     # fails here, with its message, if the start does not load
    policy_name = start_file.name
    out = Path(out_dir or Path(index.index_dir) / "tune" / time.strftime("%Y%m%d-%H%M%S")).expanduser()
    (out / "trials").mkdir(parents=True, exist_ok=True)

    ranker = get_retriever(name, index, config)
    frozen_dev = freeze(dev, ranker, CANDIDATE_DEPTH)
    frozen_held = freeze(held, ranker, CANDIDATE_DEPTH)

    start_source = start_file.read_text(encoding="utf-8")
    start_path = _write_trial(out, 0, policy_name, start_source)
    start_dev = score_policy(start_path, frozen_dev, budget, name, limits)
    if not start_dev.ok:
        raise UsageError(f"the starting policy does not run in the sandbox ({start_dev.status}: {start_dev.reason})",
                         hint="fix the starting policy file; nav tune judges edits against it")
    thresholds = calibrate(start_dev, seed=seed)
    # The thresholds and the split are written before the first trial, where the worker never writes.
    _write_json(out / "thresholds.json", thresholds.to_json())
    _write_json(out / "split.json", {"seed": seed, "holdout_share": holdout_share, "dev": [q.id for q in dev],
                                     "holdout": [q.id for q in held]})
    questions = {q.id: q.query for q in dev}
    log = TrialLog(out / "trials.jsonl")
    incumbent_source, incumbent_score, incumbent_path, winner_trial = start_source, start_dev, start_path, None
    scored: list[tuple[int, PolicyScore]] = [(0, start_dev)]

    for trial in range(1, trials + 1):
        view = WorkerView(policy_name, incumbent_source, thresholds.to_json(),
                          [{"id": q.id, "category": q.category, "question": questions[q.id], "answered": q.answered,
                            "tokens": q.tokens} for q in incumbent_score.queries],
                          list(log.entries), trial)
        proposal: Proposal | None = worker.propose(view)
        if proposal is None:
            break
        entry = {"trial": trial, "hypothesis": proposal.hypothesis, "family": proposal.family,
                 "path": proposal.path, "diff": "", "metrics": None}
        if proposal.error or proposal.source is None:
            entry.update(decision=REJECT, reason=proposal.error or "no file content")
        elif Path(proposal.path).name != policy_name:
            entry.update(decision=REJECT, reason=f"edits {proposal.path}; only {policy_name} may be edited")
        else:
            entry["diff"] = "".join(difflib.unified_diff(incumbent_source.splitlines(True),
                                                         proposal.source.splitlines(True),
                                                         f"a/{policy_name}", f"b/{policy_name}"))
            path = _write_trial(out, trial, policy_name, proposal.source)
            score = score_policy(path, frozen_dev, budget, name, limits)
            verdict = judge(score, incumbent_score, thresholds, start_dev)
            entry.update(decision=verdict.decision, reason=verdict.reason, metrics=score.summary(),
                         lost=verdict.flips, gained=verdict.gains, token_cut=verdict.token_cut)
            if score.ok:
                scored.append((trial, score))
            if verdict.decision == KEEP:
                incumbent_source, incumbent_score, incumbent_path, winner_trial = proposal.source, score, path, trial
        log.append(entry)
        if on_trial:
            on_trial(entry)

    held_result = None
    if frozen_held:
        start_held = score_policy(start_path, frozen_held, budget, name, limits)
        winner_held = score_policy(incumbent_path, frozen_held, budget, name, limits)
        held_result = holdout(start_held, winner_held, seed=seed).to_json()
        # The token target is set against plain top-5: pair the winner with it too, query by query.
        held_result["versus_top_k"] = holdout(_top_k_score(frozen_held), winner_held, seed=seed).to_json()
    winner_path = out / f"winner-{policy_name}"
    winner_path.write_text(incumbent_source, encoding="utf-8")
    dev_frontier = frontier(scored)
    held_frontier = _holdout_frontier(out, policy_name, dev_frontier, frozen_held, budget, name, limits, seed)
    result = TuneResult(out, thresholds.to_json(), log.entries, start_dev.summary(), incumbent_score.summary(),
                        winner_trial, held_result, _top_k_reference(frozen_dev, frozen_held),
                        dev_frontier, held_frontier, winner_path)
    result.report_path = write_report(result, budget=budget, retriever=name, queries_path=queries_path)
    return result


def _holdout_frontier(out: Path, policy_name: str, dev_frontier: list[dict], frozen_held: list, budget: int,
                      retriever: str, limits: SandboxLimits, seed: int) -> list[dict]:
    from navigator.tuning.supervisor import holdout
    if not frozen_held:
        return []
    top_k = _top_k_score(frozen_held)
    points = []
    for point in dev_frontier:
        score = score_policy(out / "trials" / f"{point['trial']:03d}" / policy_name, frozen_held, budget, retriever,
                             limits)
        if not score.ok:
            points.append({"trial": point["trial"], "status": score.status, "reason": score.reason})
            continue
        paired = holdout(top_k, score, seed=seed)
        points.append({"trial": point["trial"], "accuracy": round(score.accuracy, 4),
                       "mean_tokens": round(score.mean_tokens, 1), "versus_top_k": paired.token_change,
                       "lost": paired.lost, "gained": paired.gained})
    return points


def _write_trial(out: Path, trial: int, policy_name: str, source: str) -> Path:
    folder = out / "trials" / f"{trial:03d}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / policy_name
    path.write_text(source, encoding="utf-8")
    return path


def _write_json(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _top_k_score(frozen: list) -> PolicyScore:
    """Plain top-5 on the same frozen candidates: the yardstick of the issue's token target."""
    from navigator.evaluation import metrics
    from navigator.tuning.supervisor import QueryScore
    scores = []
    for fq in frozen:
        views = metrics.view_ranking(fq.candidates[:TOP_K_REFERENCE])
        recall = metrics.recall_at_budget(views, fq.query.items, fq.query.mode)
        scores.append(QueryScore(fq.id, fq.query.category, recall >= 1.0, sum(v.tokens for v in views)))
    return PolicyScore("ok", queries=scores)


def _top_k_reference(frozen_dev: list, frozen_held: list) -> dict:
    out = {}
    for label, frozen in (("dev", frozen_dev), ("holdout", frozen_held)):
        if frozen:
            score = _top_k_score(frozen)
            out[label] = {"k": TOP_K_REFERENCE, "accuracy": round(score.accuracy, 4),
                          "mean_tokens": round(score.mean_tokens, 1), "queries": len(frozen)}
    return out


def make_worker(spec: list[str] | tuple[str, ...], *, model: str | None = None):
    """`claude` (the default) or `patches DIR`: the worker a --worker option names."""
    from navigator.tuning.workers import ClaudeWorker, FolderWorker
    kind, *rest = list(spec) or ["claude"]
    if kind == "claude" and not rest:
        return ClaudeWorker(model=model)
    if kind == "patches" and len(rest) == 1:
        return FolderWorker(rest[0])
    raise UsageError(f"--worker takes `claude` or `patches DIR`, got {' '.join(spec)!r}",
                     hint="without an API key, feed candidate files with --worker patches DIR")


def render_summary(result: TuneResult) -> str:
    lines = [f"nav tune: {len(result.trials)} trials; kept {sum(t['decision'] == KEEP for t in result.trials)}",
             f"  dev: start accuracy {result.start_dev['accuracy']:.3f}, {result.start_dev['mean_tokens']:.0f} tokens; "
             f"winner (trial {result.winner_trial if result.winner_trial is not None else '-'}) accuracy "
             f"{result.winner_dev['accuracy']:.3f}, {result.winner_dev['mean_tokens']:.0f} tokens"]
    if result.holdout:
        lines.append(f"  holdout: {result.holdout['verdict']}")
    lines.append(f"  report: {result.report_path}")
    lines.append(f"  winner: {result.winner_path} (use it with NAV_POLICY=... or --policy)")
    return "\n".join(lines)
